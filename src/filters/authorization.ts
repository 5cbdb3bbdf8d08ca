// Authorization until RBAC lands: group system:masters may do everything; the public paths (health, version)
// are open to everyone; anyone else is denied (403), and an anonymous request is told to authenticate (401).

import { errors, groupResourceString } from '../apimachinery/status.js';
import type { Handler } from './handler.js';
import { anonymousUser } from './authentication.js';

const publicPaths = ['/healthz', '/livez', '/readyz', '/version'];

function isPublic(path: string): boolean {
  return publicPaths.some((p) => path === p || path.startsWith(`${p}/`));
}

export function withAuthorization(next: Handler): Handler {
  return async (ctx) => {
    const user = ctx.user ?? anonymousUser;
    if (user.groups.includes('system:masters') || (!ctx.info.isResourceRequest && isPublic(ctx.info.path))) {
      await next(ctx);
      return;
    }
    if (user.name === anonymousUser.name) throw errors.unauthorized();
    const info = ctx.info;
    if (!info.isResourceRequest) throw errors.forbiddenPath(user.name, info.verb, info.path);
    const resource = info.subresource === '' ? info.resource : `${info.resource}/${info.subresource}`;
    void groupResourceString;
    throw errors.forbidden(user.name, info.verb, { group: info.group, resource }, info.namespace, info.name);
  };
}
