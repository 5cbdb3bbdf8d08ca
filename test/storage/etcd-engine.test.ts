// Proves the etcd engine maps a lost etcd onto Unavailable: requests fail, watches end, open refuses a dead endpoint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openEtcdStore } from '../../src/storage/etcd/engine.js';
import { StorageError } from '../../src/storage/contract.js';
import { freePort, startEtcd } from '../support/etcd.js';
import { recordWatch } from '../support/watch.js';

const unavailable = (error: unknown): boolean =>
  error instanceof StorageError && error.code === 'Unavailable';

test('when etcd goes away, requests fail and watches end with Unavailable', async (t) => {
  const etcd = await startEtcd();
  t.after(() => etcd.stop());
  const store = await openEtcdStore({ endpoints: etcd.endpoints });
  t.after(() => store.close());
  const watch = recordWatch(store, { prefix: '/gone/' }, {});
  await watch.watch.ready;
  await etcd.stop();
  await assert.rejects(store.range({ key: '/gone/a' }), unavailable);
  await assert.rejects(
    store.txn({
      compare: [],
      success: [{ type: 'put', key: '/gone/a', value: Buffer.from('x') }],
      failure: [],
    }),
    unavailable,
  );
  await watch.waitFor((r) => r.some((x) => x.type === 'canceled'), 10_000, 'the watch to end');
  const canceled = watch.responses.find((r) => r.type === 'canceled');
  assert.ok(canceled?.type === 'canceled' && canceled.error.code === 'Unavailable', JSON.stringify(canceled));
});

test('opening the etcd engine on an endpoint where nothing listens fails with Unavailable', async () => {
  const port = await freePort();
  await assert.rejects(openEtcdStore({ endpoints: [`http://127.0.0.1:${port}`] }), unavailable);
});
