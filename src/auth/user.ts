// Who a request is from: the user an authenticator found, and the authenticator interface every method
// (client certificate, token file, bootstrap token, service account JWT, OIDC, webhook, proxy headers) implements.

import type { Http2ServerRequest } from 'node:http2';

export interface UserInfo {
  readonly name: string;
  readonly uid: string;
  readonly groups: readonly string[];
  /** Extra attributes (scopes, credential id, ...): lower-case keys, each a list of values. */
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** What an authenticator says about a request. */
export type AuthenticationResult =
  /** The credential it understands is present and valid: this is the user. */
  | { readonly kind: 'user'; readonly user: UserInfo; readonly audiences?: readonly string[] }
  /** Its kind of credential is absent (or not for it): ask the next one. */
  | { readonly kind: 'none' }
  /** Its kind of credential is present and invalid: the request is 401 (never anonymous). */
  | { readonly kind: 'invalid'; readonly reason: string };

export interface Authenticator {
  readonly name: string;
  authenticate(req: Http2ServerRequest): Promise<AuthenticationResult>;
}

export const anonymousUser: UserInfo = {
  name: 'system:anonymous',
  uid: '',
  groups: ['system:unauthenticated'],
  extra: {},
};

/** Adds `system:authenticated` to every authenticated user (as kube-apiserver's group adder does). */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  return user.groups.includes('system:authenticated') || user.name === anonymousUser.name
    ? user
    : { ...user, groups: [...user.groups, 'system:authenticated'] };
}

/** What a bearer-token method says about a token: `none` = not its kind of token (the next one is asked). */
export interface TokenAuthenticator {
  readonly name: string;
  authenticateToken(token: string): Promise<AuthenticationResult>;
}

export const serviceAccountUsernamePrefix = 'system:serviceaccount:';

/** `system:serviceaccount:NS:NAME` → [NS, NAME], or undefined when the name is not a service account's. */
export function splitServiceAccountUsername(name: string): [string, string] | undefined {
  if (!name.startsWith(serviceAccountUsernamePrefix)) return undefined;
  const parts = name.slice(serviceAccountUsernamePrefix.length).split(':');
  if (parts.length !== 2) return undefined;
  const [namespace = '', account = ''] = parts;
  const valid = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
  if (!valid.test(namespace) || !valid.test(account)) return undefined;
  return [namespace, account];
}

export function serviceAccountGroups(namespace: string): string[] {
  return ['system:serviceaccounts', `system:serviceaccounts:${namespace}`];
}
