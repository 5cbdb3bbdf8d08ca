/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Test harness: starts the built server (dist/src/server/main.js) as a real process on a free port with a temp
// data dir, and talks HTTPS to it with the admin client certificate from the generated kubeconfig.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface Response {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The body as received (for binary media types: protobuf, CBOR). */
  readonly bytes: Buffer;
  /** The body parsed as JSON (undefined if it is not JSON). */
  readonly body: any;
}

export interface Credentials {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export interface TestServer {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly kubeconfig: string;
  readonly admin: Credentials;
  readonly process: ChildProcess;
  readonly stderr: () => string;
  request(method: string, path: string, options?: RequestOptions): Promise<Response>;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s); keeps the data dir unless `removeData`. */
  stop(removeData?: boolean): Promise<void>;
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly rawBody?: string | Buffer;
  readonly headers?: Record<string, string>;
  /** Send no client certificate (anonymous, or with a bearer token in headers). */
  readonly anonymous?: boolean;
}

const mainPath = join(process.cwd(), 'dist', 'src', 'server', 'main.js');

export async function startTestServer(flags: readonly string[] = [], dataDir?: string): Promise<TestServer> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'stoa-e2e-')));
  const child = spawn(
    process.execPath,
    [mainPath, 'serve', '--secure-port', '0', '--data-dir', dir, '--v', 'warn', ...flags],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (stderr.length > 1_000_000) stderr = stderr.slice(-500_000);
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s: ${stderr}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /port (\d+)\)/.exec(stdout);
      if (m !== null) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${stderr}`));
    });
  });
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const config = parse(await readFile(kubeconfig, 'utf8'));
  const b64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');
  const admin = {
    ca: b64(config.clusters[0].cluster['certificate-authority-data']),
    cert: b64(config.users[0].user['client-certificate-data']),
    key: b64(config.users[0].user['client-key-data']),
  };
  const url = `https://127.0.0.1:${port}`;
  const server: TestServer = {
    url,
    port,
    dataDir: dir,
    kubeconfig,
    admin,
    process: child,
    stderr: () => stderr,
    request: (method, path, options = {}) => send(url, admin, method, path, options),
    stop: async (removeData = true) => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      if (removeData && dataDir === undefined) await rm(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export function send(
  url: string,
  creds: Credentials,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Response> {
  const body =
    options.rawBody ??
    (options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body));
  const headers: Record<string, string> = {
    ...(body === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
    ...(options.headers ?? {}),
  };
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${url}${path}`,
      {
        method,
        headers,
        ca: creds.ca,
        ...(options.anonymous === true ? {} : { cert: creds.cert, key: creds.key }),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const text = raw.toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes: raw, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** A reply as bytes with its content type, for binary media types (protobuf, CBOR). */
export interface RawResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
}

/** One request with the admin certificate and the given headers; the body comes back as bytes. */
export async function rawRequest(
  target: TestServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<RawResponse> {
  const reply = await target.request(method, path, {
    headers,
    ...(body === undefined ? {} : { rawBody: body }),
  });
  return {
    status: reply.status,
    contentType: String(reply.headers['content-type'] ?? ''),
    body: reply.bytes,
  };
}

/** A watch stream over HTTPS: events arrive as parsed JSON lines. */
export interface WatchStream {
  readonly status: Promise<number>;
  next(timeoutMs?: number): Promise<any>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

export function watch(server: TestServer, path: string, headers: Record<string, string> = {}): WatchStream {
  const queue: any[] = [];
  const waiters: ((v: any) => void)[] = [];
  let resolveStatus: (n: number) => void = () => {};
  let resolveEnded: () => void = () => {};
  const status = new Promise<number>((r) => (resolveStatus = r));
  const ended = new Promise<void>((r) => (resolveEnded = r));
  let buffer = '';
  const req = httpsRequest(
    `${server.url}${path}`,
    {
      method: 'GET',
      headers,
      ca: server.admin.ca,
      cert: server.admin.cert,
      key: server.admin.key,
      agent: false,
    },
    (res) => {
      resolveStatus(res.statusCode ?? 0);
      res.on('data', (c: Buffer) => {
        buffer += c.toString('utf8');
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (line === '') continue;
          const event = JSON.parse(line);
          const w = waiters.shift();
          if (w !== undefined) w(event);
          else queue.push(event);
        }
      });
      res.on('end', () => resolveEnded());
      res.on('close', () => resolveEnded());
    },
  );
  req.on('error', () => resolveEnded());
  req.end();
  return {
    status,
    ended,
    next: (timeoutMs = 10_000) => {
      const queued = queue.shift();
      if (queued !== undefined) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no watch event within ${timeoutMs} ms on ${path}`)),
          timeoutMs,
        );
        waiters.push((v) => {
          clearTimeout(timer);
          resolve(v);
        });
      });
    },
    close: () => req.destroy(),
  };
}

export async function writeTemp(dir: string, name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** Who a bearer token authenticates as: the username a SelfSubjectReview answers (201), or the status code. */
export async function whoami(server: TestServer, token: string): Promise<string | number> {
  const r = await server.request('POST', '/apis/authentication.svc.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' },
    anonymous: true,
    headers: { authorization: `Bearer ${token}` },
  });
  if (r.status !== 201) return r.status;
  const body = r.body as { status: { userInfo: { username: string } } };
  return body.status.userInfo.username;
}
