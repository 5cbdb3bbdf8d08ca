// The Webhook authorizer: POSTs a SubjectAccessReview (v1 or v1beta1) to a remote service named by a
// kubeconfig file and uses its answer (allowed / denied / neither). Answers are cached (authorized and
// unauthorized TTLs), the call has a timeout, and a failed call follows the failure policy. Optional CEL
// match conditions over the v1 request decide whether the webhook is asked at all.

import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseCel } from '@marcbachmann/cel-js';
import { parse as parseYaml } from 'yaml';
import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';

export interface WebhookOptions {
  readonly name: string;
  /** `authorization.<domain>` */
  readonly group: string;
  readonly version: 'v1' | 'v1beta1';
  readonly authorizedTtlMs: number;
  readonly unauthorizedTtlMs: number;
  readonly timeoutMs: number;
  readonly failurePolicy: 'NoOpinion' | 'Deny';
  readonly kubeconfigFile: string;
  /** CEL expressions over `request` (a v1 SubjectAccessReviewSpec): all must be true to call the webhook. */
  readonly matchConditions: readonly string[];
}

interface Connection {
  readonly url: URL;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly token?: string;
  readonly insecure: boolean;
}

type Record_ = Record<string, unknown>;

function rec(value: unknown): Record_ {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record_) : {};
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Reads the webhook's kubeconfig: the current context's cluster (server, CA) and user (certificate, token). */
export function readWebhookKubeconfig(file: string): Connection {
  const config = rec(parseYaml(readFileSync(file, 'utf8')));
  const list = (key: string): Record_[] =>
    Array.isArray(config[key]) ? (config[key] as unknown[]).map(rec) : [];
  const current = text(config['current-context']);
  const context = rec((list('contexts').find((c) => c.name === current) ?? list('contexts')[0])?.context);
  const cluster = rec(
    (list('clusters').find((c) => c.name === context.cluster) ?? list('clusters')[0])?.cluster,
  );
  const user = rec((list('users').find((u) => u.name === context.user) ?? list('users')[0])?.user);
  const base = dirname(file);
  const fileOrData = (from: Record_, key: string): string | undefined => {
    const data = text(from[`${key}-data`]);
    if (data !== '') return Buffer.from(data, 'base64').toString('utf8');
    const path = text(from[key]);
    return path === '' ? undefined : readFileSync(isAbsolute(path) ? path : join(base, path), 'utf8');
  };
  const server = text(cluster.server);
  if (server === '') throw new Error(`${file}: no cluster server in the webhook kubeconfig`);
  const ca = fileOrData(cluster, 'certificate-authority');
  const cert = fileOrData(user, 'client-certificate');
  const key = fileOrData(user, 'client-key');
  const token = text(user.token);
  return {
    url: new URL(server),
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(token === '' ? {} : { token }),
    insecure: cluster['insecure-skip-tls-verify'] === true,
  };
}

/** The v1 SubjectAccessReviewSpec of a request (also what match conditions see as `request`). */
export function reviewSpec(a: Attributes): Record_ {
  const user = a.user;
  const subject = {
    ...(user.name === '' ? {} : { user: user.name }),
    ...(user.uid === '' ? {} : { uid: user.uid }),
    ...(user.groups.length === 0 ? {} : { groups: [...user.groups] }),
    ...(Object.keys(user.extra).length === 0 ? {} : { extra: user.extra }),
  };
  if (!a.isResourceRequest) return { nonResourceAttributes: { path: a.path, verb: a.verb }, ...subject };
  const selector = (requirements: Attributes['fieldRequirements']): Record_ | undefined =>
    requirements === undefined
      ? undefined
      : { requirements: requirements.map((r) => ({ ...r, values: [...r.values] })) };
  const field = selector(a.fieldRequirements);
  const label = selector(a.labelRequirements);
  return {
    resourceAttributes: {
      namespace: a.namespace,
      verb: a.verb,
      group: a.apiGroup,
      version: a.apiVersion,
      resource: a.resource,
      subresource: a.subresource,
      name: a.name,
      ...(field === undefined ? {} : { fieldSelector: field }),
      ...(label === undefined ? {} : { labelSelector: label }),
    },
    ...subject,
  };
}

interface CacheEntry {
  readonly result: AuthorizationResult;
  readonly expiresMs: number;
}

const cacheEntriesMax = 10_000;

export class WebhookAuthorizer implements Authorizer {
  private readonly connection: Connection;
  private readonly conditions: ((context: Record_) => unknown)[];
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly options: WebhookOptions,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.connection = readWebhookKubeconfig(options.kubeconfigFile);
    this.conditions = options.matchConditions.map((e) => compileCondition(e));
  }

  async authorize(attributes: Attributes): Promise<AuthorizationResult> {
    const spec = reviewSpec(attributes);
    if (this.conditions.length > 0) {
      let matched: boolean;
      try {
        matched = this.conditions.every((c) => evaluateCondition(c, spec));
      } catch (error) {
        return this.failed(`match condition evaluation failed: ${(error as Error).message}`);
      }
      if (!matched) return { decision: 'noOpinion', reason: '' };
    }
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached !== undefined && cached.expiresMs > this.nowMs()) return cached.result;
    let result: AuthorizationResult;
    try {
      result = await this.ask(spec);
    } catch (error) {
      return this.failed(
        `error contacting webhook ${JSON.stringify(this.options.name)}: ${(error as Error).message}`,
      );
    }
    const ttl = result.decision === 'allow' ? this.options.authorizedTtlMs : this.options.unauthorizedTtlMs;
    if (ttl > 0) {
      if (this.cache.size >= cacheEntriesMax) {
        const oldest = this.cache.keys().next().value;
        if (oldest !== undefined) this.cache.delete(oldest);
      }
      this.cache.set(key, { result, expiresMs: this.nowMs() + ttl });
    }
    return result;
  }

  /** The failure policy's decision, with the error (so the request is a 500 unless another mode allows it). */
  private failed(error: string): AuthorizationResult {
    return { decision: this.options.failurePolicy === 'Deny' ? 'deny' : 'noOpinion', reason: '', error };
  }

  private async ask(spec: Record_): Promise<AuthorizationResult> {
    const { version, group } = this.options;
    const wireSpec = { ...spec };
    if (version === 'v1beta1' && wireSpec.groups !== undefined) {
      wireSpec.group = wireSpec.groups;
      delete wireSpec.groups;
    }
    const body = JSON.stringify({
      apiVersion: `${group}/${version}`,
      kind: 'SubjectAccessReview',
      spec: wireSpec,
      status: { allowed: false },
    });
    const response = await this.post(body);
    const status = rec(rec(response).status);
    const reason = text(status.reason);
    if (status.allowed === true) return { decision: 'allow', reason };
    if (status.denied === true) return { decision: 'deny', reason };
    return { decision: 'noOpinion', reason };
  }

  private post(body: string): Promise<unknown> {
    const c = this.connection;
    const send = c.url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        c.url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'content-length': Buffer.byteLength(body),
            ...(c.token === undefined ? {} : { authorization: `Bearer ${c.token}` }),
          },
          ...(c.ca === undefined ? {} : { ca: c.ca }),
          ...(c.cert === undefined ? {} : { cert: c.cert }),
          ...(c.key === undefined ? {} : { key: c.key }),
          rejectUnauthorized: !c.insecure,
          agent: false,
          timeout: this.options.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > 1_048_576) req.destroy(new Error('webhook response larger than 1 MiB'));
            else chunks.push(chunk);
          });
          res.on('end', () => {
            const code = res.statusCode ?? 0;
            if (code < 200 || code > 299) {
              reject(new Error(`webhook answered HTTP ${code}`));
              return;
            }
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch {
              reject(new Error('webhook answer is not JSON'));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.options.timeoutMs}ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

export function compileCondition(expression: string): (context: Record_) => unknown {
  const compiled = parseCel(expression);
  return (context) => compiled(context);
}

function evaluateCondition(condition: (context: Record_) => unknown, request: Record_): boolean {
  const value = condition({ request });
  if (typeof value !== 'boolean') throw new Error(`expression returned ${typeof value}, want bool`);
  return value;
}
