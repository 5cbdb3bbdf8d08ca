/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves spec 3.2 on the embedded store: a server stopped, garbage written under an object's key through the
// engine, then started again, starts despite the corrupt object, answers its reads (gate off, then on) as
// kube-apiserver 1.32 does, and with the gate on removes it with ignoreStoreReadErrorWithClusterBreakingPotential
// although a finalizer holds it; then lists and watches work again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/storage/index.js';
import { startTestServer, watch, type TestServer } from './harness.js';

const gateOn = ['--feature-gates', 'AllowUnsafeMalformedObjectDeletion=true'];
const key = '/registry/core/configmaps/default/held';

test('a corrupt object written while the server was down: reads, then unsafe delete', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-unsafe-embedded-'));
  let server: TestServer | undefined;
  t.after(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  server = await startTestServer([], dir);
  for (const [name, finalizers] of [
    ['held', ['example.com/hold']],
    ['other', []],
  ] as const) {
    const r = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { metadata: { name, finalizers }, data: { k: 'v' } },
    });
    assert.equal(r.status, 201, r.text);
  }
  await server.stop();
  server = undefined;

  const store = await openStore({ engine: 'embedded', dataDir: join(dir, 'store') });
  const garbage = await store.txn({
    compare: [],
    success: [{ type: 'put', key, value: new Uint8Array([0xff, 0x00, 0x7b]) }],
    failure: [],
  });
  await store.close();
  const modRevision = garbage.header.revision;

  // Gate off: the server starts; the object reads as the decoder's 500.
  server = await startTestServer([], dir);
  const off = await server.request('GET', '/api/v1/namespaces/default/configmaps/held');
  assert.equal(off.status, 500);
  assert.equal(off.body.reason, undefined);
  assert.match(off.body.message, /JSON/);
  assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/other')).status, 200);
  await server.stop();

  server = await startTestServer(gateOn, dir);
  const get = await server.request('GET', '/api/v1/namespaces/default/configmaps/held');
  assert.equal(get.status, 500);
  assert.equal(get.body.reason, 'InternalError');
  assert.match(
    get.body.message,
    new RegExp(
      `^Internal error occurred: StorageError: corrupt object, Code: 7, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=${modRevision}: `,
    ),
  );
  const list = await server.request('GET', '/api/v1/namespaces/default/configmaps');
  assert.equal(list.status, 500);
  assert.equal(list.body.reason, 'StorageReadError');
  assert.deepEqual(
    list.body.details.causes.map((c: any) => c.field),
    [key],
  );
  const refused = await server.request('GET', '/api/v1/configmaps?watch=true');
  assert.equal(refused.status, 429);

  const del = await server.request(
    'DELETE',
    '/api/v1/namespaces/default/configmaps/held?ignoreStoreReadErrorWithClusterBreakingPotential=true',
  );
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.body.details, { name: 'held', kind: 'ConfigMap' });
  assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/held')).status, 404);
  const after = await server.request('GET', '/api/v1/namespaces/default/configmaps');
  assert.equal(after.status, 200);
  assert.deepEqual(
    after.body.items.map((o: any) => o.metadata.name),
    ['other'],
  );
  const w = watch(server, '/api/v1/namespaces/default/configmaps?watch=true');
  assert.equal(await w.status, 200);
  const added = await w.next();
  assert.deepEqual([added.type, added.object.metadata.name], ['ADDED', 'other']);
  w.close();
});
