/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves server-level behaviour that needs its own server process: inflight limits (429 + Retry-After, watches not
// counted), graceful shutdown (readyz fails first during --shutdown-delay-duration), continue tokens expiring with
// compaction (410 Expired), and a restart on the same data dir keeping objects and certificates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, watch } from './harness.js';

const cm = (name: string): unknown => ({ metadata: { name }, data: { k: 'v' } });

test('inflight limits: 429 with Retry-After beyond the limit; watches do not count; a disabled gate turns gzip off', async (t) => {
  const server = await startTestServer([
    '--max-mutating-requests-inflight',
    '1',
    '--max-requests-inflight',
    '1',
    '--feature-gates',
    'APIResponseCompression=false',
  ]);
  t.after(() => server.stop());
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm(`c${i}`) }),
    ),
  );
  const codes = results.map((r) => r.status);
  assert.ok(codes.includes(429), `expected some 429 in ${codes.join(',')}`);
  assert.ok(codes.every((c) => c === 201 || c === 429));
  const limited = results.find((r) => r.status === 429);
  assert.equal(limited?.headers['retry-after'], '1');
  assert.equal(limited?.body.reason, 'TooManyRequests');
  const watches = [1, 2, 3].map(() =>
    watch(
      server,
      '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dnone',
    ),
  );
  try {
    for (const w of watches) assert.equal(await w.status, 200);
    const list = await server.request('GET', '/api/v1/namespaces/default/configmaps', {
      headers: { 'accept-encoding': 'gzip' },
    });
    assert.equal(list.status, 200);
    // With the APIResponseCompression gate off, no gzip even when asked.
    assert.equal(list.headers['content-encoding'], undefined);
  } finally {
    for (const w of watches) w.close();
  }
});

test('graceful shutdown: readyz fails during the delay while livez passes, then the process exits', async (t) => {
  const server = await startTestServer(['--shutdown-delay-duration', '2s']);
  t.after(() => server.stop());
  assert.equal((await server.request('GET', '/readyz')).status, 200);
  const exited = new Promise<void>((resolve) => server.process.once('exit', () => resolve()));
  server.process.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  const ready = await server.request('GET', '/readyz?verbose');
  assert.equal(ready.status, 500);
  assert.match(ready.text, /^\[-\]shutdown failed: reason withheld$/m);
  assert.match(ready.text, /readyz check failed/);
  assert.equal((await server.request('GET', '/livez')).status, 200);
  await exited;
});

test('a continue token expires with compaction: 410 Expired', async (t) => {
  const server = await startTestServer(['--storage-retention', '1s']);
  t.after(() => server.stop());
  for (let i = 0; i < 3; i++)
    await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm(`e${i}`) });
  const first = await server.request('GET', '/api/v1/namespaces/default/configmaps?limit=1');
  const token = first.body.metadata.continue;
  assert.ok(token);
  let expired: any;
  for (let i = 0; i < 40 && expired === undefined; i++) {
    await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm(`later${i}`) });
    await new Promise((r) => setTimeout(r, 150));
    const next = await server.request(
      'GET',
      `/api/v1/namespaces/default/configmaps?limit=1&continue=${token}`,
    );
    if (next.status === 410) expired = next.body;
    else assert.equal(next.status, 200);
  }
  assert.ok(expired, 'the token never expired');
  assert.equal(expired.reason, 'Expired');
  assert.match(
    expired.message,
    /^The provided continue parameter is too old to display a consistent list result/,
  );
  const exact = await server.request(
    'GET',
    `/api/v1/namespaces/default/configmaps?resourceVersion=${first.body.metadata.resourceVersion}&resourceVersionMatch=Exact`,
  );
  assert.equal(exact.status, 410);
});

test('restart on the same data dir keeps objects, certificates and the kubeconfig', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-restart-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const first = await startTestServer([], dir);
  let created: any;
  try {
    created = (await first.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('kept') }))
      .body;
  } finally {
    await first.stop();
  }
  const ca = await readFile(join(dir, 'pki', 'ca.crt'), 'utf8');
  const second = await startTestServer([], dir);
  try {
    assert.equal(await readFile(join(dir, 'pki', 'ca.crt'), 'utf8'), ca);
    const got = await second.request('GET', '/api/v1/namespaces/default/configmaps/kept');
    assert.equal(got.status, 200);
    assert.equal(got.body.metadata.uid, created.metadata.uid);
    assert.equal(got.body.metadata.resourceVersion, created.metadata.resourceVersion);
    const next = await second.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('after') });
    assert.ok(Number(next.body.metadata.resourceVersion) > Number(created.metadata.resourceVersion));
  } finally {
    await second.stop();
  }
});

test('the same API over a real etcd (--etcd-servers): CRUD, list, watch', async (t) => {
  const { startEtcd } = await import('../support/etcd.js');
  const etcd = await startEtcd({ progressNotifyIntervalMs: 1000 });
  t.after(() => etcd.stop());
  const server = await startTestServer(['--etcd-servers', etcd.endpoints.join(',')]);
  t.after(() => server.stop());
  const namespaces = await server.request('GET', '/api/v1/namespaces');
  assert.ok(namespaces.body.items.some((n: any) => n.metadata.name === 'kube-system'));
  const w = watch(
    server,
    `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${namespaces.body.metadata.resourceVersion}`,
  );
  try {
    const created = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('on-etcd'),
    });
    assert.equal(created.status, 201);
    const e = await w.next();
    assert.deepEqual(
      [e.type, e.object.metadata.name, e.object.metadata.resourceVersion],
      ['ADDED', 'on-etcd', created.body.metadata.resourceVersion],
    );
    const stale = await server.request('PUT', '/api/v1/namespaces/default/configmaps/on-etcd', {
      body: { ...created.body, metadata: { ...created.body.metadata, resourceVersion: '1' } },
    });
    assert.equal(stale.status, 409);
    const list = await server.request('GET', '/api/v1/namespaces/default/configmaps?limit=1');
    assert.equal(list.body.items[0].metadata.name, 'on-etcd');
  } finally {
    w.close();
  }
});
