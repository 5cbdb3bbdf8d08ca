// The authenticator chain: request authenticators (proxy headers, client certificates, bearer tokens) asked in
// order; the first that finds a user decides and `system:authenticated` is added. When none does: any invalid
// credential makes the request 401; with no credential at all the request is anonymous when anonymous access
// is on for its path, and 401 otherwise.

import type { Http2ServerRequest } from 'node:http2';
import { unreachable } from '../util/assert.js';
import type { AnonymousConfig } from './anonymous.js';
import {
  anonymousUser,
  withAuthenticatedGroup,
  type AuthenticationResult,
  type Authenticator,
  type TokenAuthenticator,
  type UserInfo,
} from './user.js';

/** A bearer token longer than this is refused without asking any method: it must fit an HTTP header, and Node's
 * HTTP parser refuses more than 16 KiB of headers in all (431, before any filter runs). */
export const bearerTokenBytesMax = 12 * 1024;

/** The token of `Authorization: Bearer <token>`, or undefined when the header is absent or another scheme. */
export function bearerToken(req: Http2ServerRequest): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const parts = header.trim().split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] ?? '';
  return token === '' ? undefined : token;
}

/** The bearer-token methods as one request authenticator: a present token nobody accepts is invalid. */
export class BearerTokenAuthenticator implements Authenticator {
  readonly name = 'bearer-token';
  constructor(private readonly methods: readonly TokenAuthenticator[]) {}

  async authenticate(req: Http2ServerRequest): Promise<AuthenticationResult> {
    const token = bearerToken(req);
    if (token === undefined) return { kind: 'none' };
    return this.authenticateToken(token);
  }

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    if (Buffer.byteLength(token) > bearerTokenBytesMax) return { kind: 'invalid', reason: 'token too large' };
    const reasons: string[] = [];
    for (const method of this.methods) {
      const result = await method.authenticateToken(token);
      if (result.kind === 'user') return result;
      if (result.kind === 'invalid') reasons.push(`[${method.name}] ${result.reason}`);
    }
    return { kind: 'invalid', reason: reasons.length > 0 ? reasons.join(', ') : 'invalid bearer token' };
  }
}

export type Authentication =
  | { readonly kind: 'user'; readonly user: UserInfo; readonly method: string }
  | { readonly kind: 'anonymous'; readonly user: UserInfo }
  | { readonly kind: 'unauthorized'; readonly reasons: readonly string[] };

export class UnionAuthenticator {
  constructor(
    private readonly authenticators: readonly Authenticator[],
    private readonly anonymous: AnonymousConfig,
  ) {}

  async authenticate(req: Http2ServerRequest, path: string): Promise<Authentication> {
    const reasons: string[] = [];
    for (const authenticator of this.authenticators) {
      const result = await authenticator.authenticate(req);
      switch (result.kind) {
        case 'user':
          return { kind: 'user', user: withAuthenticatedGroup(result.user), method: authenticator.name };
        case 'invalid':
          reasons.push(`[${authenticator.name}] ${result.reason}`);
          break;
        case 'none':
          break;
        default:
          return unreachable(result);
      }
    }
    if (reasons.length === 0 && this.anonymous.allows(path))
      return { kind: 'anonymous', user: anonymousUser };
    return { kind: 'unauthorized', reasons };
  }
}
