// Proves the etcd test support starts a real 3-member cluster on loopback, replicating writes, and cleans up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { openEtcdStore } from '../../src/storage/etcd/engine.js';
import { startEtcdCluster } from './etcd.js';

test('a 3-member etcd cluster replicates a write to every member and stop() removes everything', async (t) => {
  const cluster = await startEtcdCluster(3);
  t.after(() => cluster.stop());
  assert.equal(cluster.members.length, 3);
  assert.equal(new Set(cluster.endpoints).size, 3);
  const first = await openEtcdStore({ endpoints: [cluster.endpoints[0]!] });
  const written = await first.txn({
    compare: [],
    success: [{ type: 'put', key: '/replicated', value: Buffer.from('yes') }],
    failure: [],
  });
  await first.close();
  for (const endpoint of cluster.endpoints) {
    const store = await openEtcdStore({ endpoints: [endpoint] });
    try {
      const range = await store.range({ key: '/replicated' });
      assert.equal(Buffer.from(range.kvs[0]!.value).toString(), 'yes');
      assert.equal(range.kvs[0]!.modRevision, written.header.revision);
    } finally {
      await store.close();
    }
  }
  await cluster.stop();
  for (const member of cluster.members) {
    assert.ok(!existsSync(member.dataDir), `${member.dataDir} left behind`);
    assert.throws(() => process.kill(member.pid, 0), 'member process still running');
  }
});
