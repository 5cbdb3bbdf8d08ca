// The impersonation filter (after authentication, before authorization): Impersonate-* headers switch ctx.user
// to the requested identity once the chain's Authorizer allows the caller each `impersonate` (src/auth).

import { impersonate, impersonationRequests } from '../auth/impersonation.js';
import type { Authorizer } from '../auth/authorizer.js';
import { anonymousUser } from '../auth/user.js';
import type { Handler } from './handler.js';

export function withImpersonation(
  next: Handler,
  authorizer: Authorizer,
  authenticationGroup: string,
): Handler {
  return async (ctx) => {
    const requests = impersonationRequests(ctx.req);
    if (requests.length > 0) {
      ctx.user = await impersonate(requests, ctx.user ?? anonymousUser, authorizer, authenticationGroup);
      ctx.audit?.impersonatedUser(ctx.user);
    }
    await next(ctx);
  };
}
