// Impersonation: Impersonate-User, Impersonate-Group (repeatable), Impersonate-Extra-<key> (repeatable; key
// lower-case, percent-decoded) and Impersonate-Uid. Group, extra and uid need a user. Each requested value is
// authorized for the caller with verb `impersonate` (users, groups, serviceaccounts in the core group;
// userextras/<key> and uids in authentication.DOMAIN), the value as the resource name; then the request runs as
// the impersonated user.

import type { Http2ServerRequest } from 'node:http2';
import { errors } from '../apimachinery/status.js';
import { unreachable } from '../util/assert.js';
import type { Attributes, Authorizer } from './authorizer.js';
import { extraKeyOf, headersWithPrefix, headerValues } from './request-header.js';
import { anonymousUser, serviceAccountGroups, splitServiceAccountUsername, type UserInfo } from './user.js';

export type ImpersonationRequest =
  | { readonly kind: 'User'; readonly name: string }
  | { readonly kind: 'ServiceAccount'; readonly namespace: string; readonly name: string }
  | { readonly kind: 'Group'; readonly name: string }
  | { readonly kind: 'UserExtra'; readonly key: string; readonly value: string }
  | { readonly kind: 'UID'; readonly uid: string };

export const impersonateUserHeader = 'Impersonate-User';
export const impersonateGroupHeader = 'Impersonate-Group';
export const impersonateUidHeader = 'Impersonate-Uid';
export const impersonateExtraPrefix = 'Impersonate-Extra-';

function describe(r: ImpersonationRequest): string {
  switch (r.kind) {
    case 'User':
    case 'Group':
      return `${r.kind} ${r.name}`;
    case 'ServiceAccount':
      return `ServiceAccount ${r.namespace}/${r.name}`;
    case 'UserExtra':
      return `UserExtra ${r.key}=${r.value}`;
    case 'UID':
      return `UID ${r.uid}`;
    default:
      return unreachable(r);
  }
}

/** The requests in the headers; an error when group, extra or uid come without a user. */
export function impersonationRequests(req: Http2ServerRequest): ImpersonationRequest[] {
  const out: ImpersonationRequest[] = [];
  const user = headerValues(req, impersonateUserHeader)[0] ?? '';
  if (user !== '') {
    const sa = splitServiceAccountUsername(user);
    out.push(
      sa === undefined
        ? { kind: 'User', name: user }
        : { kind: 'ServiceAccount', namespace: sa[0], name: sa[1] },
    );
  }
  let others = false;
  for (const group of headerValues(req, impersonateGroupHeader)) {
    others = true;
    out.push({ kind: 'Group', name: group });
  }
  for (const [suffix, value] of headersWithPrefix(req, impersonateExtraPrefix)) {
    others = true;
    out.push({ kind: 'UserExtra', key: extraKeyOf(suffix), value });
  }
  const uid = headerValues(req, impersonateUidHeader)[0];
  if (uid !== undefined && uid !== '') {
    others = true;
    out.push({ kind: 'UID', uid });
  }
  if (others && user === '') {
    throw errors.internal(`requested [${out.map(describe).join(' ')}] without impersonating a user`);
  }
  return out;
}

function attributesOf(r: ImpersonationRequest, requestor: UserInfo, authenticationGroup: string): Attributes {
  const base = {
    user: requestor,
    verb: 'impersonate',
    isResourceRequest: true,
    path: '',
    apiVersion: '',
    subresource: '',
    namespace: '',
  };
  switch (r.kind) {
    case 'User':
      return { ...base, apiGroup: '', resource: 'users', name: r.name };
    case 'ServiceAccount':
      return { ...base, apiGroup: '', resource: 'serviceaccounts', namespace: r.namespace, name: r.name };
    case 'Group':
      return { ...base, apiGroup: '', resource: 'groups', name: r.name };
    case 'UserExtra':
      return {
        ...base,
        apiGroup: authenticationGroup,
        resource: 'userextras',
        subresource: r.key,
        name: r.value,
      };
    case 'UID':
      return { ...base, apiGroup: authenticationGroup, resource: 'uids', name: r.uid };
    default:
      return unreachable(r);
  }
}

/**
 * Authorizes every request for the caller and returns the impersonated user, or throws 403 naming the first
 * refused one. `authenticationGroup` is `authentication.DOMAIN`.
 */
export async function impersonate(
  requests: readonly ImpersonationRequest[],
  requestor: UserInfo,
  authorizer: Authorizer,
  authenticationGroup: string,
): Promise<UserInfo> {
  let name = '';
  let uid = '';
  let groups: string[] = [];
  const extra: Record<string, string[]> = {};
  const groupsSpecified = requests.some((r) => r.kind === 'Group');
  for (const r of requests) {
    const attributes = attributesOf(r, requestor, authenticationGroup);
    const { decision } = await authorizer.authorize(attributes);
    if (decision !== 'allow') {
      throw errors.forbiddenSubresource(
        requestor.name,
        'impersonate',
        { group: attributes.apiGroup, resource: attributes.resource },
        attributes.subresource,
        attributes.namespace,
        attributes.name,
      );
    }
    switch (r.kind) {
      case 'User':
        name = r.name;
        break;
      case 'ServiceAccount':
        name = `system:serviceaccount:${r.namespace}:${r.name}`;
        if (!groupsSpecified) groups = serviceAccountGroups(r.namespace);
        break;
      case 'Group':
        groups.push(r.name);
        break;
      case 'UserExtra':
        (extra[r.key] ??= []).push(r.value);
        break;
      case 'UID':
        uid = r.uid;
        break;
      default:
        return unreachable(r);
    }
  }
  if (name !== anonymousUser.name) {
    if (!groups.includes('system:authenticated') && !groups.includes('system:unauthenticated'))
      groups.push('system:authenticated');
  } else if (!groups.includes('system:unauthenticated')) {
    groups.push('system:unauthenticated');
  }
  return { name, uid, groups, extra };
}
