// Proves writes issued together on one member (proposed to the core as one batch) all commit, in the order issued, from a follower and the leader, also when the batch is split by size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplicatedStore } from '../../src/replica/engine.js';
import type { KVStore } from '../../src/storage/contract.js';
import { startReplicaCluster, testTuning } from '../support/replica.js';

const put = (store: KVStore, key: string, value: Uint8Array): Promise<number> =>
  store
    .txn({ compare: [], success: [{ type: 'put', key, value }], failure: [] })
    .then((r) => r.header.revision);

test('writes issued in one turn commit in issue order, from a follower and from the leader', async (t) => {
  const cluster = await startReplicaCluster(3, testTuning);
  t.after(() => cluster.close());
  const leader = await cluster.leader();
  const follower = (cluster.nodes as ReplicatedStore[]).find((n) => n !== leader)!;

  for (const [name, node] of [
    ['follower', follower],
    ['leader', leader],
  ] as const) {
    // 40 small writes in one synchronous loop: one batch.
    const small = await Promise.all(
      Array.from({ length: 40 }, (_, i) => put(node, `/batch/${name}/${i}`, Buffer.from(`v${i}`))),
    );
    for (let i = 1; i < small.length; i++) assert.equal(small[i], small[0]! + i, `${name}: issue order kept`);

    // Four 400 KiB writes (over the 1 MiB batch limit together): split into batches, still in order.
    const big = await Promise.all(
      Array.from({ length: 4 }, (_, i) => put(node, `/big/${name}/${i}`, Buffer.alloc(400 * 1024, i))),
    );
    for (let i = 1; i < big.length; i++) assert.equal(big[i], big[0]! + i, `${name}: big writes in order`);
    const { kvs } = await node.range({ prefix: `/big/${name}/` }, {});
    assert.deepEqual(
      kvs.map((kv) => [kv.key, kv.value.length, kv.value[0]]),
      [0, 1, 2, 3].map((i) => [`/big/${name}/${i}`, 400 * 1024, i]),
    );
  }
  // Every member applied all of it.
  for (const node of cluster.nodes as ReplicatedStore[]) {
    const deadline = Date.now() + 10_000;
    while (node.replicaStatus().appliedIndex < leader.replicaStatus().commitIndex && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const { count } = await node.range({ prefix: '/batch/' }, { serializable: true, countOnly: true });
    assert.equal(count, 80);
  }
});
