// The authorization filter: builds the request's attributes and asks the authorizer; allow goes on, deny or
// no opinion is a 403 worded as kube-apiserver words it (an anonymous request is told to authenticate: 401).

import { errors, type ApiError } from '../apimachinery/status.js';
import { anonymousUser, type UserInfo } from '../auth/user.js';
import { nonResourceAttributes, type Attributes, type Authorizer } from '../auth/authorizer.js';
import { groupDomainOf, type RequestContext } from '../endpoints/context.js';
import type { Handler } from './handler.js';

/** `metadata.name=X` (or `==`) in a list or watch's field selector names the object, as kube-apiserver's request
 * info does, so `resourceNames` rules can allow a list or watch of one object. */
function nameFromFieldSelector(fieldSelector: string | null): string {
  if (fieldSelector === null) return '';
  for (const term of fieldSelector.split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    if (m !== null) return m[1] ?? '';
  }
  return '';
}

export function requestAttributes(ctx: RequestContext, user: UserInfo): Attributes {
  const info = ctx.info;
  // Group-version discovery (`/api/v1`, `/apis/G/V`) is a non-resource request to authorization, as in
  // kube-apiserver's request info (system:discovery grants `/api/*` and `/apis/*`).
  if (!info.isResourceRequest || info.resource === '') {
    return nonResourceAttributes(user, (ctx.req.method ?? 'GET').toLowerCase(), info.path);
  }
  const fieldSelector = ctx.query.get('fieldSelector');
  const labelSelector = ctx.query.get('labelSelector');
  return {
    user,
    verb: info.verb,
    isResourceRequest: true,
    path: info.path,
    apiGroup: info.group,
    apiVersion: info.version,
    resource: info.resource,
    subresource: info.subresource,
    namespace: info.namespace,
    name:
      info.name === '' && (info.verb === 'list' || info.verb === 'watch')
        ? nameFromFieldSelector(fieldSelector)
        : info.name,
    ...(fieldSelector === null ? {} : { fieldSelector }),
    ...(labelSelector === null ? {} : { labelSelector }),
  };
}

export function withAuthorization(next: Handler, authorizer: Authorizer): Handler {
  return async (ctx) => {
    const user = ctx.user ?? anonymousUser;
    const attributes = requestAttributes(ctx, user);
    const { decision, reason, error } = await authorizer.authorize(attributes);
    // kube-apiserver's audit annotations of the decision (keys in the authorization group of the domain).
    const group = `authorization.${groupDomainOf(ctx)}`;
    if (decision === 'allow') {
      ctx.audit?.annotate(`${group}/decision`, 'allow');
      ctx.audit?.annotate(`${group}/reason`, reason);
      await next(ctx);
      return;
    }
    if (error !== undefined) {
      ctx.audit?.annotate(`${group}/reason`, 'internal error');
      throw errors.internal(error);
    }
    ctx.audit?.annotate(`${group}/decision`, 'forbid');
    ctx.audit?.annotate(`${group}/reason`, reason);
    throw forbiddenError(attributes, reason);
  };
}

/** The 403 for a request that was not allowed, worded as kube-apiserver (with the authorizers' reason). */
export function forbiddenError(attributes: Attributes, reason: string): ApiError {
  const user = attributes.user.name;
  if (!attributes.isResourceRequest)
    return errors.forbiddenPath(user, attributes.verb, attributes.path, reason);
  return errors.forbidden(
    user,
    attributes.verb,
    { group: attributes.apiGroup, resource: attributes.resource },
    attributes.namespace,
    attributes.name,
    attributes.subresource,
    reason,
  );
}
