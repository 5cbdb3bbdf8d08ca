// SelfSubjectReview (authentication.DOMAIN/v1, and v1beta1 when enabled): a virtual kind. Creating one answers who the request is from
// (after impersonation): status.userInfo with username, uid, groups and extra. Nothing is stored.

import { domainGroup, type DomainContext, type KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema, type ApiObject } from '../../apimachinery/meta.js';
import { s, type Schema } from '../../apimachinery/schema.js';
import type { UserInfo } from '../../auth/user.js';
import { timestamp } from '../../registry/objects.js';

export const userInfoSchema: Schema = s.obj({
  username: s.str(),
  uid: s.str(),
  groups: s.listAtomic(s.str()),
  extra: s.map(s.listAtomic(s.str())),
});

/** authentication/v1 UserInfo as kube-apiserver writes it: empty fields are left out. */
export function userInfoJson(user: UserInfo): Record<string, unknown> {
  const extra = Object.entries(user.extra);
  return {
    ...(user.name === '' ? {} : { username: user.name }),
    ...(user.uid === '' ? {} : { uid: user.uid }),
    ...(user.groups.length === 0 ? {} : { groups: [...user.groups] }),
    ...(extra.length === 0 ? {} : { extra: Object.fromEntries(extra.map(([k, v]) => [k, [...v]])) }),
  };
}

export function selfSubjectReviewKind(ctx: DomainContext, nowMs: () => number = Date.now): KindDeclaration {
  return {
    group: domainGroup(ctx, 'authentication'),
    // v1beta1 as kube-apiserver 1.32 has it: off by default (--runtime-config turns it on), deprecated in 1.30.
    versions: ['v1', 'v1beta1'],
    versionLifecycle: { v1beta1: { deprecated: [1, 30], removed: [1, 33] } },
    kind: 'SelfSubjectReview',
    plural: 'selfsubjectreviews',
    singular: 'selfsubjectreview',
    shortNames: [],
    categories: [],
    namespaced: false,
    nameRule: 'path-segment',
    schema: objectSchema({ status: s.obj({ userInfo: userInfoSchema }) }),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    virtual: {
      create: (_object, request): Promise<ApiObject> =>
        Promise.resolve({
          metadata: { creationTimestamp: timestamp(nowMs()) },
          status: { userInfo: userInfoJson(request.user) },
        }),
    },
  };
}
