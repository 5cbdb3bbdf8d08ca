// Proves the audit filter's stages on a real HTTP server with handlers that misbehave: a handler that throws a
// programming error gets a Panic event (500, "APIServer panic'd: ...") instead of ResponseComplete; a watch
// that ends before writing anything gets kube's faked ResponseStarted and ResponseComplete ("Connection closed
// early"); a level-None request writes nothing but still answers Audit-ID.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Auditor } from '../../src/audit/auditor.js';
import { newLogBackend } from '../../src/audit/log-backend.js';
import { parseAuditPolicy, PolicyChecker } from '../../src/audit/policy.js';
import { newRequestContext, respondError } from '../../src/endpoints/context.js';
import { withAudit, withAuditInit } from '../../src/filters/audit.js';
import type { Handler } from '../../src/filters/handler.js';

const lines: string[] = [];
let server: Server;
let port = 0;

const policy = parseAuditPolicy(
  `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: [/quiet]
  - level: Metadata
`,
  'audit.k8s.io',
);

const app: Handler = async (ctx) => {
  if (ctx.url.pathname === '/api/v1/namespaces/default/pods/broken') throw new TypeError('x is undefined');
  // A watch that returns without writing a byte (its client went away).
  if (ctx.info.verb === 'watch') return;
  ctx.res.statusCode = 204;
  ctx.res.end();
};

before(async () => {
  const auditor = new Auditor(
    new PolicyChecker(policy),
    newLogBackend({ write: (line) => lines.push(line), close: () => {} }, 'blocking', () => {}),
    'json',
    'audit.k8s.io/v1',
    () => Date.now() * 1000,
  );
  const chain = withAuditInit(withAudit(app, auditor));
  server = createServer((req, res) => {
    const ctx = newRequestContext(req as never, res as never, {
      compression: false,
      metaGroup: 'meta.k8s.io',
    });
    ctx.user = { name: 'tester', uid: '', groups: ['system:authenticated'], extra: {} };
    chain(ctx)
      .catch((error: unknown) => {
        respondError(ctx, error);
      })
      .finally(() => {
        if (!res.writableEnded) res.end();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(() => {
  server.close();
});

function get(path: string, auditId: string): Promise<{ status: number; auditId: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { 'audit-id': auditId } }, (res) => {
      res.resume();
      res.on('end', () => {
        const header = res.headers['audit-id'];
        resolve({ status: res.statusCode ?? 0, auditId: typeof header === 'string' ? header : undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function eventsOf(auditId: string): Record<string, unknown>[] {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.auditID === auditId);
}

test('a programming error in a handler: RequestReceived, then Panic with 500', async () => {
  const r = await get('/api/v1/namespaces/default/pods/broken', 'panic');
  assert.equal(r.status, 500);
  const events = eventsOf('panic');
  assert.deepEqual(
    events.map((e) => e.stage),
    ['RequestReceived', 'Panic'],
  );
  assert.deepEqual(events[1]?.responseStatus, {
    metadata: {},
    status: 'Failure',
    message: "APIServer panic'd: x is undefined",
    reason: 'InternalError',
    code: 500,
  });
});

test('a watch that writes nothing: faked ResponseStarted and ResponseComplete, "Connection closed early"', async () => {
  await get('/api/v1/namespaces/default/pods?watch=true', 'early').catch(() => undefined);
  const events = eventsOf('early');
  assert.deepEqual(
    events.map((e) => e.stage),
    ['RequestReceived', 'ResponseStarted', 'ResponseComplete'],
  );
  assert.deepEqual(events[2]?.responseStatus, {
    metadata: {},
    status: 'Success',
    message: 'Connection closed early',
    code: 200,
  });
});

test('a plain response: its code; level None: no events, the Audit-ID still answered', async () => {
  const r = await get('/api/v1/namespaces/default/pods/fine', 'fine');
  assert.equal(r.status, 204);
  assert.deepEqual(eventsOf('fine')[1]?.responseStatus, { metadata: {}, code: 204 });
  const quiet = await get('/quiet', 'quiet');
  assert.equal(quiet.auditId, 'quiet');
  assert.deepEqual(eventsOf('quiet'), []);
});
