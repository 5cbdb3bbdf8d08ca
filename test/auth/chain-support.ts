// Test support: the real handler chain (src/filters/chain.ts) in process behind a real HTTPS server on a free
// loopback port, with an app that answers with the request's user; and a table-driven Authorizer.

import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { pino } from 'pino';
import type { Attributes, Authorizer } from '../../src/auth/authorizer.js';
import type { UnionAuthenticator } from '../../src/auth/union.js';
import { newRequestContext, respond } from '../../src/endpoints/context.js';
import { buildChain } from '../../src/filters/chain.js';
import { Metrics } from '../../src/server/metrics.js';
import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';

export interface Rule {
  readonly user: string;
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace?: string;
  /** Empty or absent: any name. */
  readonly names?: readonly string[];
}

/** Allows system:masters everything, every non-impersonate request, and impersonation by the rules only. */
export class TableAuthorizer implements Authorizer {
  readonly asked: Attributes[] = [];
  constructor(private readonly rules: readonly Rule[]) {}

  authorize(a: Attributes): Promise<{ decision: 'allow' | 'noOpinion'; reason: string }> {
    this.asked.push(a);
    if (a.user.groups.includes('system:masters') || a.verb !== 'impersonate')
      return Promise.resolve({ decision: 'allow', reason: '' });
    const match = this.rules.some(
      (r) =>
        r.user === a.user.name &&
        r.verb === a.verb &&
        r.group === a.apiGroup &&
        r.resource === a.resource &&
        (r.subresource ?? '') === a.subresource &&
        (r.namespace === undefined || r.namespace === a.namespace) &&
        (r.names === undefined || r.names.length === 0 || r.names.includes(a.name)),
    );
    return Promise.resolve({ decision: match ? 'allow' : 'noOpinion', reason: '' });
  }
}

export interface ChainServer {
  readonly url: string;
  readonly ca: string;
  close(): Promise<void>;
}

export interface Pki {
  readonly serverCa: CertificateAndKey;
  readonly serving: CertificateAndKey;
}

export async function servingPki(): Promise<Pki> {
  const serverCa = await createCertificateAuthority({ commonName: 'test-serving-ca' });
  const serving = await issueCertificate(serverCa, {
    commonName: 'localhost',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  return { serverCa, serving };
}

/** Starts the chain on 127.0.0.1:0. The app answers 200 with `{user}`. */
export async function startChain(
  authenticator: UnionAuthenticator,
  authorizer: Authorizer,
  tlsClientCaPem: string,
  pki: Pki,
): Promise<ChainServer> {
  const logger = pino({ level: 'silent' });
  const handler = buildChain(
    (ctx) => {
      respond(ctx, 200, { user: ctx.user });
      return Promise.resolve();
    },
    {
      logger,
      metrics: new Metrics(),
      authenticator,
      authorizer,
      authenticationGroup: 'authentication.svc.io',
      maxRequestsInflight: 0,
      maxMutatingRequestsInflight: 0,
    },
  );
  const server: Http2SecureServer = createSecureServer(
    {
      allowHTTP1: true,
      cert: pki.serving.certPem,
      key: pki.serving.keyPem,
      ca: tlsClientCaPem,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const ctx = newRequestContext(req, res, { compression: false, metaGroup: 'meta.svc.io' });
      void handler(ctx);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}`,
    ca: pki.serverCa.certPem,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Reply {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are read loosely in tests
  readonly body: any;
}

/** One HTTPS/1.1 request (headers may repeat: give arrays), optionally with a client certificate. */
export function call(
  server: ChainServer,
  path: string,
  options: { headers?: Record<string, string | string[]>; cert?: CertificateAndKey; method?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.url}${path}`,
      {
        method: options.method ?? 'GET',
        ca: server.ca,
        agent: false,
        headers: options.headers ?? {},
        ...(options.cert === undefined ? {} : { cert: options.cert.certPem, key: options.cert.keyPem }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
