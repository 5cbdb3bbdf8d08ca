// The handler chain, built in one function, inside out: each filter wraps the next. Errors thrown anywhere
// become Status responses in the outermost filter, which also logs and measures every request.

import type { Logger } from 'pino';
import { respondError, type RequestContext } from '../endpoints/context.js';
import type { Metrics } from '../server/metrics.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { UnionAuthenticator } from '../auth/union.js';
import { withAuthentication } from './authentication.js';
import { withImpersonation } from './impersonation.js';
import { withAuthorization } from './authorization.js';
import type { Handler } from './handler.js';
import { withInflightLimit } from './limits.js';
import { withAudit, withAuditInit, withFailedAuthenticationAudit } from './audit.js';
import type { Auditor } from '../audit/auditor.js';

export interface ChainDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly authenticator: UnionAuthenticator;
  readonly authorizer: Authorizer;
  /** `authentication.DOMAIN`: the group of the userextras and uids impersonation resources. */
  readonly authenticationGroup: string;
  readonly maxRequestsInflight: number;
  readonly maxMutatingRequestsInflight: number;
  /** Set when --audit-policy-file and --audit-log-path turn auditing on. */
  readonly auditor?: Auditor;
}

function withLogAndMetrics(next: Handler, deps: ChainDeps): Handler {
  return async (ctx: RequestContext) => {
    let code = 500;
    try {
      await next(ctx);
      code = ctx.res.statusCode;
    } catch (error) {
      const apiError = respondError(ctx, error);
      code = apiError.code;
      if (apiError.code >= 500) deps.logger.error({ err: error }, 'request failed');
    } finally {
      const info = ctx.info;
      const latencyMs = performance.now() - ctx.startMs;
      const group = info.isResourceRequest ? info.group : '';
      const subresource = info.isResourceRequest ? info.subresource : '';
      const verb = info.verb.toUpperCase();
      deps.metrics.requests.inc({
        verb,
        group,
        resource: ctx.metricResource,
        subresource,
        code: String(code),
      });
      if (info.verb !== 'watch') {
        deps.metrics.requestDuration.observe(
          { verb, group, resource: ctx.metricResource, subresource },
          latencyMs / 1000,
        );
      }
      deps.logger.info(
        {
          verb: info.verb,
          path: ctx.url.pathname,
          user: ctx.user?.name ?? '',
          status: code,
          latencyMs: Math.round(latencyMs * 1000) / 1000,
        },
        'request',
      );
    }
  };
}

export function buildChain(app: Handler, deps: ChainDeps): Handler {
  let handler = app;
  handler = withAuthorization(handler, deps.authorizer);
  handler = withInflightLimit(handler, deps.maxRequestsInflight, deps.maxMutatingRequestsInflight, {
    set: (kind, value) => deps.metrics.inflight.set({ request_kind: kind }, value),
  });
  handler = withImpersonation(handler, deps.authorizer, deps.authenticationGroup);
  if (deps.auditor !== undefined) handler = withAudit(handler, deps.auditor);
  handler = withAuthentication(handler, deps.authenticator, {
    observe: (method, reasons) => {
      if (method === undefined) deps.logger.debug({ reasons }, 'unauthorized');
    },
  });
  if (deps.auditor !== undefined) handler = withFailedAuthenticationAudit(handler, deps.auditor);
  handler = withAuditInit(handler);
  handler = withLogAndMetrics(handler, deps);
  return handler;
}
