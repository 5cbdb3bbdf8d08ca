// Authentication until the full authenticator chain lands: client certificates from the client CA (subject CN =
// user, O = groups) and static tokens from --token-auth-file. An invalid bearer token is 401; a request with no
// credentials is anonymous (system:anonymous), which authorization then only lets through to public paths.

import { readFile } from 'node:fs/promises';
import type { TLSSocket } from 'node:tls';
import { errors } from '../apimachinery/status.js';
import type { RequestContext } from '../endpoints/context.js';
import { anonymousUser, withAuthenticatedGroup, type UserInfo } from '../auth/user.js';
import type { Handler } from './handler.js';

export { anonymousUser };

/** Parses the token file: CSV `token,user,uid[,"group1,group2"]`; blank lines and `#` comments are skipped. */
export function parseTokenFile(text: string): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '' || line.trim().startsWith('#')) return;
    const fields: string[] = [];
    const re = /\s*("((?:[^"]|"")*)"|[^,]*)\s*(,|$)/gy;
    let m: RegExpExecArray | null;
    while (re.lastIndex < line.length && (m = re.exec(line)) !== null) {
      fields.push(m[2] !== undefined ? m[2].replace(/""/g, '"') : (m[1] ?? '').trim());
      if (m[3] === '') break;
    }
    const [token, name, uid, ...groupFields] = fields;
    if (token === undefined || token === '' || name === undefined || name === '' || uid === undefined) {
      throw new Error(`token file line ${index + 1}: needs at least token, user name and uid`);
    }
    const groups = groupFields
      .flatMap((g) => g.split(','))
      .map((g) => g.trim())
      .filter((g) => g !== '');
    tokens.set(token, { name, uid, groups, extra: {} });
  });
  return tokens;
}

export async function loadTokenFile(path: string | undefined): Promise<Map<string, UserInfo>> {
  return path === undefined ? new Map() : parseTokenFile(await readFile(path, 'utf8'));
}

/** One TLS connection carries one client certificate: its user is computed once per connection. */
const usersBySocket = new WeakMap<object, UserInfo | null>();

function fromCertificate(ctx: RequestContext): UserInfo | undefined {
  // HTTP/2 requests expose the session's socket through a per-request proxy; key the cache by the real one.
  const http2Socket = (ctx.req as unknown as { stream?: { session?: { socket?: TLSSocket } } }).stream
    ?.session?.socket;
  const socket = http2Socket ?? (ctx.req.socket as TLSSocket);
  const cached = usersBySocket.get(socket);
  if (cached !== undefined) return cached ?? undefined;
  const user = certificateUser(socket);
  usersBySocket.set(socket, user ?? null);
  return user;
}

function certificateUser(socket: TLSSocket): UserInfo | undefined {
  if (socket.authorized !== true || typeof socket.getPeerCertificate !== 'function') return undefined;
  const cert = socket.getPeerCertificate();
  const subject = cert.subject as Record<string, string | string[] | undefined> | undefined;
  const cn = subject?.CN;
  if (typeof cn !== 'string' || cn === '') return undefined;
  const o = subject?.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return withAuthenticatedGroup({ name: cn, uid: '', groups, extra: {} });
}

export function withAuthentication(next: Handler, tokens: ReadonlyMap<string, UserInfo>): Handler {
  return async (ctx) => {
    const header = ctx.req.headers.authorization;
    if (typeof header === 'string' && /^bearer\s/i.test(header)) {
      const user = tokens.get(header.slice(7).trim());
      if (user === undefined) throw errors.unauthorized();
      ctx.user = withAuthenticatedGroup(user);
    } else {
      ctx.user = fromCertificate(ctx) ?? anonymousUser;
    }
    await next(ctx);
  };
}
