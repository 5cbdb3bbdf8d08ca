// The authorization filter: builds the request's attributes and asks the authorizer; allow goes on, deny or
// no opinion is a 403 worded as kube-apiserver words it (an anonymous request is told to authenticate: 401).
// Until the authorization modes land, the stand-in authorizer allows system:masters and the public paths only.

import { errors } from '../apimachinery/status.js';
import { anonymousUser, type UserInfo } from '../auth/user.js';
import type { Attributes, Authorizer } from '../auth/authorizer.js';
import type { RequestContext } from '../endpoints/context.js';
import type { Handler } from './handler.js';

const publicPaths = ['/healthz', '/livez', '/readyz', '/version'];

function isPublic(path: string): boolean {
  return publicPaths.some((p) => path === p || path.startsWith(`${p}/`));
}

/** The stand-in: system:masters may do everything; everyone may read the public paths; no opinion otherwise. */
export const standInAuthorizer: Authorizer = {
  authorize(attributes) {
    if (attributes.user.groups.includes('system:masters')) {
      return Promise.resolve({ decision: 'allow', reason: '' });
    }
    if (!attributes.isResourceRequest && attributes.verb === 'get' && isPublic(attributes.path)) {
      return Promise.resolve({ decision: 'allow', reason: '' });
    }
    return Promise.resolve({ decision: 'noOpinion', reason: '' });
  },
};

export function requestAttributes(ctx: RequestContext, user: UserInfo): Attributes {
  const info = ctx.info;
  if (!info.isResourceRequest) {
    return {
      user,
      verb: info.verb,
      isResourceRequest: false,
      path: info.path,
      apiGroup: '',
      apiVersion: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
    };
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
    name: info.name,
    ...(fieldSelector === null ? {} : { fieldSelector }),
    ...(labelSelector === null ? {} : { labelSelector }),
  };
}

export function withAuthorization(next: Handler, authorizer: Authorizer): Handler {
  return async (ctx) => {
    const user = ctx.user ?? anonymousUser;
    const attributes = requestAttributes(ctx, user);
    const { decision } = await authorizer.authorize(attributes);
    if (decision === 'allow') {
      await next(ctx);
      return;
    }
    if (user.name === anonymousUser.name) throw errors.unauthorized();
    const info = ctx.info;
    if (!info.isResourceRequest) throw errors.forbiddenPath(user.name, info.verb, info.path);
    const resource = info.subresource === '' ? info.resource : `${info.resource}/${info.subresource}`;
    throw errors.forbidden(user.name, info.verb, { group: info.group, resource }, info.namespace, info.name);
  };
}
