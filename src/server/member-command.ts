// `stoa member list|add|remove|promote|transfer-leader`: cluster membership through the admin API of any node,
// with the server and client certificate of a kubeconfig context.

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import YAML from 'yaml';

export const memberUsage = `usage: stoa member <command> [flags]

commands:
  list                              the members, their roles and peer URLs
  add NAME --peer-url URL           add a member as a learner; then start it with --initial-cluster-state=existing
  promote NAME                      make a caught-up learner a voter
  remove NAME                       remove a member (it stops serving)
  transfer-leader NAME              hand leadership to a member

flags:
  --kubeconfig FILE   credentials and server (default: $KUBECONFIG, ./data/cluster/admin.kubeconfig, ./data/admin.kubeconfig)
  --context NAME      kubeconfig context (default: its current context)
`;

export interface Connection {
  readonly server: string;
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
  readonly token: string | undefined;
}

type Named<T> = { name: string } & T;

export async function connectionFrom(path: string, contextName: string | undefined): Promise<Connection> {
  const config = YAML.parse(await readFile(path, 'utf8')) as {
    'current-context'?: string;
    contexts?: Named<{ context: { cluster: string; user: string } }>[];
    clusters?: Named<{ cluster: { server: string; 'certificate-authority-data'?: string } }>[];
    users?: Named<{
      user: { 'client-certificate-data'?: string; 'client-key-data'?: string; token?: string };
    }>[];
  };
  const wanted = contextName ?? config['current-context'];
  const context = config.contexts?.find((c) => c.name === wanted);
  if (context === undefined) throw new Error(`${path} has no context "${wanted ?? ''}"`);
  const cluster = config.clusters?.find((c) => c.name === context.context.cluster)?.cluster;
  const user = config.users?.find((u) => u.name === context.context.user)?.user;
  if (cluster === undefined) throw new Error(`${path}: context ${wanted} names a missing cluster`);
  const decode = (b64: string | undefined): string | undefined =>
    b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
  return {
    server: cluster.server,
    ca: decode(cluster['certificate-authority-data']),
    cert: decode(user?.['client-certificate-data']),
    key: decode(user?.['client-key-data']),
    token: user?.token,
  };
}

function call(
  connection: Connection,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      new URL(path, connection.server),
      {
        method,
        ...(connection.ca !== undefined ? { ca: connection.ca } : {}),
        ...(connection.cert !== undefined ? { cert: connection.cert } : {}),
        ...(connection.key !== undefined ? { key: connection.key } : {}),
        headers: {
          accept: 'application/json',
          ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(connection.token !== undefined ? { authorization: `Bearer ${connection.token}` } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${connection.server} did not answer in 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export function defaultKubeconfig(): string {
  const fromEnv = process.env['KUBECONFIG'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv.split(':')[0] ?? fromEnv;
  return existsSync('./data/cluster/admin.kubeconfig')
    ? './data/cluster/admin.kubeconfig'
    : './data/admin.kubeconfig';
}

interface MemberRow {
  id: string;
  name: string;
  peerUrl: string;
  role: string;
}

function table(rows: readonly MemberRow[]): string {
  const lines = [['ID', 'NAME', 'ROLE', 'PEER URL'], ...rows.map((r) => [r.id, r.name, r.role, r.peerUrl])];
  const widths = [0, 1, 2, 3].map((i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return (
    lines
      .map((l) =>
        l
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export async function runMemberCommand(argv: readonly string[]): Promise<number> {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') {
      process.stdout.write(memberUsage);
      return 0;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (!['kubeconfig', 'context', 'peer-url'].includes(name)) {
        process.stderr.write(`stoa member: unknown flag: --${name}\n\n${memberUsage}`);
        return 2;
      }
      const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) {
        process.stderr.write(`stoa member: flag needs an argument: --${name}\n`);
        return 2;
      }
      flags.set(name, value);
    } else {
      positional.push(arg);
    }
  }
  const [command, name] = positional;
  const needsName =
    command === 'add' || command === 'remove' || command === 'promote' || command === 'transfer-leader';
  if (
    command === undefined ||
    (needsName && name === undefined) ||
    (command === 'add' && !flags.has('peer-url'))
  ) {
    process.stderr.write(memberUsage);
    return 2;
  }
  const connection = await connectionFrom(
    flags.get('kubeconfig') ?? defaultKubeconfig(),
    flags.get('context'),
  );
  let reply: { status: number; body: unknown };
  switch (command) {
    case 'list':
      reply = await call(connection, 'GET', '/stoa/admin/v1/members');
      break;
    case 'add':
      reply = await call(connection, 'POST', '/stoa/admin/v1/members', {
        name,
        peerURL: flags.get('peer-url'),
      });
      break;
    case 'promote':
      reply = await call(
        connection,
        'POST',
        `/stoa/admin/v1/members/${encodeURIComponent(name ?? '')}/promote`,
      );
      break;
    case 'remove':
      reply = await call(connection, 'DELETE', `/stoa/admin/v1/members/${encodeURIComponent(name ?? '')}`);
      break;
    case 'transfer-leader':
      reply = await call(connection, 'POST', '/stoa/admin/v1/leader', { name });
      break;
    default:
      process.stderr.write(`stoa member: unknown command "${command}"\n\n${memberUsage}`);
      return 2;
  }
  if (reply.status >= 300) {
    const message = (reply.body as { message?: string }).message ?? JSON.stringify(reply.body);
    process.stderr.write(`stoa member ${command}: ${reply.status}: ${message}\n`);
    return 1;
  }
  const body = reply.body as { members?: MemberRow[]; leader?: string } & Partial<MemberRow>;
  if (body.members !== undefined) process.stdout.write(table(body.members));
  else if (command === 'add') {
    process.stdout.write(
      `added ${body.name ?? ''} (${body.id ?? ''}) as a learner; start it with --initial-cluster-state=existing, ` +
        `then run: stoa member promote ${body.name ?? ''}\n`,
    );
  } else if (body.leader !== undefined) process.stdout.write(`leader: ${body.leader}\n`);
  return 0;
}
