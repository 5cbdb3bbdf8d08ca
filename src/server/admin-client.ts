// The client side of the admin API for `stoa member` and `stoa snapshot`: a kubeconfig context's server and
// credentials, HTTPS requests with them, and the argument parsing the two commands share.

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import YAML from 'yaml';

export interface Connection {
  readonly server: string;
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
  readonly token: string | undefined;
}

type Named<T> = { name: string } & T;

export function defaultKubeconfig(): string {
  const fromEnv = process.env['KUBECONFIG'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv.split(':')[0] ?? fromEnv;
  return existsSync('./data/cluster/admin.kubeconfig')
    ? './data/cluster/admin.kubeconfig'
    : './data/admin.kubeconfig';
}

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

export interface HttpsReply {
  readonly status: number;
  readonly body: Buffer;
}

/** One HTTPS request with a connection's credentials; a JSON body is sent as application/json. */
export function httpsRequest(
  url: string,
  credentials: Omit<Connection, 'server'>,
  options: { method?: string; json?: unknown; timeoutMs?: number } = {},
): Promise<HttpsReply> {
  const method = options.method ?? 'GET';
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const payload = options.json === undefined ? undefined : JSON.stringify(options.json);
    const req = request(
      url,
      {
        method,
        ...(credentials.ca !== undefined ? { ca: credentials.ca } : {}),
        ...(credentials.cert !== undefined ? { cert: credentials.cert } : {}),
        ...(credentials.key !== undefined ? { key: credentials.key } : {}),
        timeout: timeoutMs,
        headers: {
          accept: 'application/json',
          // An explicit length: for a DELETE, Node sends a body with neither a length nor chunking otherwise.
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
          ...(credentials.token !== undefined ? { authorization: `Bearer ${credentials.token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms: ${method} ${url}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The body as JSON when it is JSON, else as text. */
export function parseBody(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The message of a Status body, or the body itself. */
export function errorMessage(reply: HttpsReply): string {
  const parsed = parseBody(reply.body);
  const message =
    typeof parsed === 'object' && parsed !== null ? (parsed as { message?: unknown }).message : undefined;
  return `${reply.status}: ${typeof message === 'string' ? message : reply.body.toString('utf8')}`;
}

export interface CommandArgs {
  readonly positional: readonly string[];
  readonly values: ReadonlyMap<string, string>;
  readonly switches: ReadonlySet<string>;
  readonly help: boolean;
}

/** `--flag value`, `--flag=value` for `valued` flags, bare `--switch` for `switches`; throws on anything else. */
export function parseCommandArgs(
  argv: readonly string[],
  valued: readonly string[],
  switchNames: readonly string[] = [],
): CommandArgs {
  const positional: string[] = [];
  const values = new Map<string, string>();
  const switches = new Set<string>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (switchNames.includes(name) && eq < 0) {
      switches.add(name);
      continue;
    }
    if (!valued.includes(name)) throw new Error(`unknown flag: --${name}`);
    const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new Error(`flag needs an argument: --${name}`);
    values.set(name, value);
  }
  return { positional, values, switches, help };
}
