// Stoa's cluster administration API, under /stoa/admin/v1 (for `stoa member`, `stoa cluster status`, operators):
//   GET    /stoa/admin/v1/status                         this node: role, term, leader, indexes, members
//   GET    /stoa/admin/v1/members                        the members
//   POST   /stoa/admin/v1/members  {name, peerURL}       add a member as a learner
//   POST   /stoa/admin/v1/members/NAME/promote           make a caught-up learner a voter
//   DELETE /stoa/admin/v1/members/NAME                   remove a member
//   POST   /stoa/admin/v1/leader   {name}                hand leadership to a member
//   GET    /stoa/admin/v1/snapshot[?local=true]          a backup of the data (stoa snapshot save [--local])
// Like every non-resource path it passes authorization first (the verb is the lower-case HTTP method); with the
// default policy only system:masters may use it.

import { errors } from '../apimachinery/status.js';
import type { ReplicatedStore } from '../replica/engine.js';
import { respond, type RequestContext } from './context.js';
import { readBody } from './resource.js';

export const adminPrefix = '/stoa/admin/v1';

async function jsonBody(ctx: RequestContext): Promise<Record<string, unknown>> {
  const body = await readBody(ctx);
  try {
    const value: unknown = JSON.parse(body.toString('utf8') || '{}');
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch (error) {
    throw errors.badRequest(`the body must be a JSON object: ${(error as Error).message}`);
  }
}

function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '')
    throw errors.badRequest(`field "${field}" is required (a string)`);
  return value;
}

/** The handler of /stoa/admin/v1/...; `replica` is undefined on a single-node (embedded or etcd) server. */
export function adminHandler(replica: ReplicatedStore | undefined, engine: string) {
  return async (ctx: RequestContext): Promise<void> => {
    const method = ctx.req.method ?? 'GET';
    const parts = ctx.url.pathname
      .slice(adminPrefix.length)
      .split('/')
      .filter((p) => p !== '');
    const [collection, name, action] = parts;
    if (replica === undefined) {
      if (method === 'GET' && collection === 'status' && parts.length === 1) {
        respond(ctx, 200, { engine, role: 'standalone' });
        return;
      }
      throw errors.badRequest(
        `this server runs the ${engine} store, not a cluster member: no membership to manage`,
      );
    }
    const findMember = (memberName: string) => {
      const member = replica.memberByName(memberName);
      if (member === undefined)
        throw errors.notFound({ group: 'admin.stoa', resource: 'members' }, memberName);
      return member;
    };
    if (collection === 'status' && parts.length === 1 && method === 'GET') {
      respond(ctx, 200, { engine, ...replica.replicaStatus() });
      return;
    }
    if (collection === 'members' && parts.length === 1 && method === 'GET') {
      respond(ctx, 200, { members: replica.replicaStatus().members });
      return;
    }
    if (collection === 'members' && parts.length === 1 && method === 'POST') {
      const body = await jsonBody(ctx);
      const memberName = requireString(body, 'name');
      const peerUrl = requireString(body, 'peerURL');
      let url: URL;
      try {
        url = new URL(peerUrl);
      } catch {
        throw errors.badRequest(`peerURL "${peerUrl}" is not a URL`);
      }
      if (url.protocol !== 'https:' || url.port === '')
        throw errors.badRequest('peerURL must be https://host:port');
      const member = await replica.addMember(memberName, peerUrl);
      respond(ctx, 201, {
        id: member.id.toString(16),
        name: member.name,
        peerUrl: member.peerUrl,
        role: 'learner',
      });
      return;
    }
    if (
      collection === 'members' &&
      name !== undefined &&
      action === 'promote' &&
      parts.length === 3 &&
      method === 'POST'
    ) {
      await replica.promoteMember(findMember(name).id);
      respond(ctx, 200, { members: replica.replicaStatus().members });
      return;
    }
    if (collection === 'members' && name !== undefined && parts.length === 2 && method === 'DELETE') {
      await replica.removeMember(findMember(name).id);
      respond(ctx, 200, { members: replica.replicaStatus().members });
      return;
    }
    if (collection === 'snapshot' && parts.length === 1 && method === 'GET') {
      const backup = await replica.backup({ local: ctx.query.get('local') === 'true' });
      ctx.res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': backup.length });
      ctx.res.end(backup);
      return;
    }
    if (collection === 'leader' && parts.length === 1 && method === 'POST') {
      const body = await jsonBody(ctx);
      await replica.transferLeadership(findMember(requireString(body, 'name')).id);
      respond(ctx, 200, { leader: replica.replicaStatus().leader });
      return;
    }
    throw errors.pathNotFound();
  };
}
