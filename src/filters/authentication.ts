// The authentication filter: asks the authenticator chain (src/auth/union.ts) who the request is from. A user
// or an anonymous request goes on with ctx.user set; otherwise the answer is 401 with an Unauthorized Status.

import { errors } from '../apimachinery/status.js';
import { unreachable } from '../util/assert.js';
import type { UnionAuthenticator } from '../auth/union.js';
import { anonymousUser } from '../auth/user.js';
import type { Handler } from './handler.js';

export { anonymousUser };

export interface AuthenticationHooks {
  /** Called once per request with the method that decided ('' for anonymous, undefined for 401). */
  readonly observe?: (method: string | undefined, reasons: readonly string[]) => void;
}

export function withAuthentication(
  next: Handler,
  authenticator: UnionAuthenticator,
  hooks: AuthenticationHooks = {},
): Handler {
  return async (ctx) => {
    const result = await authenticator.authenticate(ctx.req, ctx.url.pathname);
    switch (result.kind) {
      case 'user':
        hooks.observe?.(result.method, []);
        ctx.user = result.user;
        break;
      case 'anonymous':
        hooks.observe?.('', []);
        ctx.user = result.user;
        break;
      case 'unauthorized':
        hooks.observe?.(undefined, result.reasons);
        throw errors.unauthorized();
      default:
        return unreachable(result);
    }
    await next(ctx);
  };
}
