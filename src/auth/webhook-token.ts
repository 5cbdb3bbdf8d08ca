// Webhook token authentication (--authentication-token-webhook-config-file): the bearer token is sent as a
// TokenReview (authentication.k8s.io v1 or v1beta1) to an external HTTPS service described by a kubeconfig
// file (server, its CA, a client certificate or token). Answers are cached for
// --authentication-token-webhook-cache-ttl (default 2m), keyed by the token's SHA-256; failures to reach the
// service are not cached.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { AuthenticationResult, TokenAuthenticator, UserInfo } from './user.js';

const requestTimeoutMs = 10_000;
const responseBytesMax = 1024 * 1024;
const cacheEntriesMax = 10_000;

export interface WebhookConnection {
  readonly server: string;
  readonly caPem?: string;
  readonly certPem?: string;
  readonly keyPem?: string;
  readonly token?: string;
}

type Json = Record<string, unknown>;

async function fileOrData(
  entry: Json,
  fileKey: string,
  dataKey: string,
  base: string,
  field: string,
): Promise<string | undefined> {
  const data = entry[dataKey];
  if (typeof data === 'string') return Buffer.from(data, 'base64').toString('utf8');
  const file = entry[fileKey];
  if (typeof file !== 'string') return undefined;
  try {
    return await readFile(resolve(base, file), 'utf8');
  } catch (error) {
    throw new Error(`${field}.${fileKey}: cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Reads the kubeconfig: the current context's (or the first) cluster and user. Errors name the field. */
export async function loadWebhookKubeconfig(path: string): Promise<WebhookConnection> {
  let doc: Json;
  try {
    doc = (parseYaml(await readFile(path, 'utf8')) ?? {}) as Json;
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`);
  }
  const named = (list: unknown, key: string): { name?: string; [k: string]: unknown }[] =>
    Array.isArray(list)
      ? (list as { name?: string; [k: string]: unknown }[]).filter((e) => typeof e[key] === 'object')
      : [];
  const contexts = named(doc.contexts, 'context');
  const current = contexts.find((c) => c.name === doc['current-context'])?.context as Json | undefined;
  const clusters = named(doc.clusters, 'cluster');
  const users = named(doc.users, 'user');
  const cluster = (clusters.find((c) => c.name === current?.cluster) ?? clusters[0])?.cluster as
    Json | undefined;
  if (cluster === undefined) throw new Error(`${path}: clusters: Required value: a cluster with a server`);
  const server = cluster.server;
  if (typeof server !== 'string' || server === '')
    throw new Error(`${path}: clusters[0].cluster.server: Required value`);
  if (!server.startsWith('https://'))
    throw new Error(`${path}: clusters[0].cluster.server: Invalid value: "${server}": must use https`);
  const base = dirname(path);
  const caPem = await fileOrData(
    cluster,
    'certificate-authority',
    'certificate-authority-data',
    base,
    `${path}: clusters[0].cluster`,
  );
  const user = ((users.find((u) => u.name === current?.user) ?? users[0])?.user ?? {}) as Json;
  const certPem = await fileOrData(
    user,
    'client-certificate',
    'client-certificate-data',
    base,
    `${path}: users[0].user`,
  );
  const keyPem = await fileOrData(user, 'client-key', 'client-key-data', base, `${path}: users[0].user`);
  if ((certPem === undefined) !== (keyPem === undefined))
    throw new Error(`${path}: users[0].user: client-certificate and client-key must be given together`);
  const token = typeof user.token === 'string' ? user.token : undefined;
  return {
    server,
    ...(caPem === undefined ? {} : { caPem }),
    ...(certPem === undefined ? {} : { certPem }),
    ...(keyPem === undefined ? {} : { keyPem }),
    ...(token === undefined ? {} : { token }),
  };
}

function post(connection: WebhookConnection, body: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolvePromise, reject) => {
    const req = httpsRequest(
      connection.server,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(connection.token === undefined ? {} : { authorization: `Bearer ${connection.token}` }),
        },
        ...(connection.caPem === undefined ? {} : { ca: connection.caPem }),
        ...(connection.certPem === undefined ? {} : { cert: connection.certPem, key: connection.keyPem }),
        timeout: requestTimeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > responseBytesMax) req.destroy(new Error('webhook response too large'));
          else chunks.push(c);
        });
        res.on('end', () => {
          try {
            resolvePromise({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            });
          } catch (error) {
            reject(new Error(`webhook response is not JSON: ${(error as Error).message}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('webhook request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

export class WebhookTokenAuthenticator implements TokenAuthenticator {
  readonly name = 'webhook';
  private readonly cache = new Map<string, { result: AuthenticationResult; expiresAtMs: number }>();

  constructor(
    private readonly connection: WebhookConnection,
    private readonly options: { cacheTtlMs: number; version: 'v1' | 'v1beta1'; nowMs: () => number },
  ) {}

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    const key = createHash('sha256').update(token).digest('base64');
    const now = this.options.nowMs();
    const cached = this.cache.get(key);
    if (cached !== undefined && cached.expiresAtMs > now) return cached.result;
    let result: AuthenticationResult;
    try {
      result = await this.review(token);
    } catch (error) {
      return { kind: 'invalid', reason: `webhook: ${(error as Error).message}` };
    }
    if (this.cache.size >= cacheEntriesMax) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.delete(key);
    this.cache.set(key, { result, expiresAtMs: now + this.options.cacheTtlMs });
    return result;
  }

  private async review(token: string): Promise<AuthenticationResult> {
    const body = JSON.stringify({
      apiVersion: `authentication.k8s.io/${this.options.version}`,
      kind: 'TokenReview',
      spec: { token },
    });
    const response = await post(this.connection, body);
    if (response.status < 200 || response.status >= 300) throw new Error(`HTTP ${response.status}`);
    const status = ((response.body as Json | undefined)?.status ?? {}) as {
      authenticated?: boolean;
      user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
      error?: string;
    };
    if (status.authenticated !== true) {
      return { kind: 'invalid', reason: status.error ?? 'the webhook did not authenticate the token' };
    }
    const u = status.user ?? {};
    if (typeof u.username !== 'string' || u.username === '')
      return { kind: 'invalid', reason: 'webhook: no username' };
    const user: UserInfo = {
      name: u.username,
      uid: typeof u.uid === 'string' ? u.uid : '',
      groups: Array.isArray(u.groups) ? u.groups.filter((g) => typeof g === 'string') : [],
      extra: typeof u.extra === 'object' ? u.extra : {},
    };
    return { kind: 'user', user };
  }
}
