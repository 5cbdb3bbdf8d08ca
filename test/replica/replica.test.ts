// Proves the replicated engine keeps every acknowledged write through failures: writes from any node, a lost
// leader, a follower caught up by snapshot, membership changes, no quorum (no false success), a data dir
// that contradicts the node's flags or is in use, and a data dir with the LevelDB Raft log of an earlier version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StorageError, type KVStore } from '../../src/storage/contract.js';
import type { ReplicatedStore } from '../../src/replica/engine.js';
import { nodeIdFromName } from '../../src/replica/ids.js';
import { revision as toRevision } from '../../src/util/brand.js';
import { startReplicaCluster, testTuning, type ReplicaCluster } from '../support/replica.js';
import { RaftLogStore } from '../../src/raftlog/store.js';
import { LevelDbRaftLog } from '../../src/raftlog/leveldb-log.js';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function put(store: KVStore, key: string, value: string): Promise<number> {
  const result = await store.txn({
    compare: [],
    success: [{ type: 'put', key, value: Buffer.from(value) }],
    failure: [],
  });
  return result.header.revision;
}

/** Every key under the prefix with its value, read locally from one node. */
async function localContent(store: KVStore, prefix: string): Promise<Record<string, string>> {
  const { kvs } = await store.range({ prefix }, { serializable: true });
  return Object.fromEntries(kvs.map((kv) => [kv.key, Buffer.from(kv.value).toString()]));
}

/** Waits until every running node has applied what the leader has committed. */
async function converged(cluster: ReplicaCluster): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const running = cluster.nodes.filter(
      (n): n is ReplicatedStore => n !== undefined && n.replicaStatus().role !== 'removed',
    );
    const leader = running.find((n) => n.replicaStatus().role === 'leader');
    const target = leader?.replicaStatus().commitIndex ?? Infinity;
    if (running.every((n) => n.replicaStatus().appliedIndex >= target)) return;
    if (Date.now() > deadline)
      throw new Error(`not converged: ${JSON.stringify(running.map((n) => n.replicaStatus()))}`);
    await sleep(25);
  }
}

async function withCluster(
  n: number,
  tuning: typeof testTuning,
  body: (cluster: ReplicaCluster) => Promise<void>,
) {
  const cluster = await startReplicaCluster(n, tuning);
  try {
    await body(cluster);
  } finally {
    await cluster.close();
  }
}

test('writes from every node are applied by all nodes in the same order', async () => {
  await withCluster(3, testTuning, async (cluster) => {
    await cluster.leader();
    const nodes = cluster.nodes as ReplicatedStore[];
    const revisions = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        put(nodes[i % 3] as ReplicatedStore, `/k/${String(i).padStart(2, '0')}`, `v${i}`),
      ),
    );
    assert.equal(new Set(revisions).size, 30, 'every write has its own revision');
    await converged(cluster);
    const contents = await Promise.all(nodes.map((n) => localContent(n, '/k/')));
    assert.equal(Object.keys(contents[0] ?? {}).length, 30);
    for (const content of contents) assert.deepEqual(content, contents[0]);
    const statuses = await Promise.all(nodes.map((n) => n.status()));
    assert.deepEqual(
      statuses.map((s) => s.revision),
      statuses.map(() => Math.max(...revisions)),
    );
  });
});

test('after the leader fails a new one is elected, writes resume, and nothing acknowledged is lost', async () => {
  await withCluster(3, testTuning, async (cluster) => {
    const oldLeader = await cluster.leader();
    const oldIndex = cluster.nodes.indexOf(oldLeader);
    const writers = cluster.nodes.filter((n): n is ReplicatedStore => n !== undefined && n !== oldLeader);
    const acknowledged = new Map<string, string>();
    let stop = false;
    const writing = (async () => {
      for (let i = 0; i < 2_000 && !stop; i++) {
        const key = `/fail/${String(i).padStart(4, '0')}`;
        try {
          await put(writers[i % writers.length] as ReplicatedStore, key, `v${i}`);
          acknowledged.set(key, `v${i}`);
        } catch (error) {
          assert.ok(error instanceof StorageError && error.code === 'Unavailable', String(error));
        }
      }
    })();
    await sleep(300);
    const beforeFailure = acknowledged.size;
    await cluster.stop(oldIndex);
    const newLeader = await cluster.leader();
    assert.notEqual(newLeader, oldLeader);
    while (acknowledged.size < beforeFailure + 20) await sleep(20);
    await cluster.start(oldIndex); // the old leader comes back and catches up
    await sleep(200);
    stop = true;
    await writing;
    await converged(cluster);
    for (const node of cluster.nodes as ReplicatedStore[]) {
      const content = await localContent(node, '/fail/');
      for (const [key, value] of acknowledged) assert.equal(content[key], value, `${node.name} lost ${key}`);
    }
  });
});

test('a write is seen at once by a serializable read and a new watch on the member that acknowledged it', async () => {
  await withCluster(3, testTuning, async (cluster) => {
    const leader = await cluster.leader();
    const follower = cluster.nodes.find((n) => n !== undefined && n !== leader)!;
    // Answers go out while the applied entries' local LevelDB write is still running: reads wait for it.
    for (const node of [leader, follower]) {
      for (let i = 0; i < 150; i++) {
        const key = `/ryw/${node.name}/${i % 10}`;
        const revision = await put(node, key, `v${i}`);
        const { kvs, header } = await node.range({ key }, { serializable: true });
        assert.equal(Buffer.from(kvs[0]?.value ?? []).toString(), `v${i}`, `${node.name} read ${key}`);
        assert.ok(header.revision >= revision);
        if (i % 50 === 0) {
          // A watch from the write's revision is given that write (catch-up reads the same state).
          const event = await new Promise<string>((resolve, reject) => {
            const watch = node.watch({ key }, { afterRevision: toRevision(revision - 1) }, (response) => {
              if (response.type === 'events') resolve(Buffer.from(response.events[0]!.kv.value).toString());
              else if (response.type === 'canceled') reject(response.error);
            });
            setTimeout(() => {
              watch.close();
              reject(new Error('no event'));
            }, 5000).unref();
          });
          assert.equal(event, `v${i}`);
        }
      }
    }
  });
});

test('a follower that fell far behind is caught up through a streamed snapshot, and restarts from it', async () => {
  const tuning = { ...testTuning, snapshotCount: 20, snapshotCatchUpEntries: 5, snapshotChunkBytes: 4096 };
  await withCluster(3, tuning, async (cluster) => {
    const leader = await cluster.leader();
    const laggard = cluster.nodes.findIndex((n) => n !== undefined && n !== leader);
    await put(leader, '/snap/first', 'x');
    await converged(cluster);
    const laggardSnapshotBefore = cluster.nodes[laggard]?.replicaStatus().snapshotIndex ?? 0;
    assert.equal(cluster.nodes[laggard]?.replicaStatus().snapshotsRestored, 0);
    await cluster.stop(laggard);
    // More sequential writes than the leader keeps in flight to one follower (256 appends): the appends queued
    // for the stopped follower cannot carry it all the way, and the rest of the log is compacted away.
    for (let i = 0; i < 400; i++) await put(leader, `/snap/${String(i).padStart(3, '0')}`, `v${i}`);
    assert.ok(
      leader.replicaStatus().snapshotIndex > laggardSnapshotBefore + 50,
      'the leader compacted its log',
    );
    const restarted = await cluster.start(laggard);
    await converged(cluster);
    assert.equal(restarted.replicaStatus().snapshotsRestored, 1, 'the follower was sent a snapshot');
    // The state is installed first; the core records the snapshot's metadata in the Ready after.
    for (let i = 0; i < 200 && restarted.replicaStatus().snapshotIndex <= laggardSnapshotBefore + 350; i++) {
      await sleep(25);
    }
    assert.ok(restarted.replicaStatus().snapshotIndex > laggardSnapshotBefore + 350);
    // The state came in several chunks of about 4 KiB, streamed beside the Raft core.
    assert.ok(
      restarted.replicaStatus().snapshotChunksReceived > 5,
      `chunks: ${restarted.replicaStatus().snapshotChunksReceived}`,
    );
    assert.equal(leader.replicaStatus().snapshotStreamsSent, 1);
    assert.deepEqual(await localContent(restarted, '/snap/'), await localContent(leader, '/snap/'));
    // History came with it: the revision of every key matches the leader's.
    const { kvs: theirs } = await leader.range({ prefix: '/snap/' }, { serializable: true });
    const { kvs: ours } = await restarted.range({ prefix: '/snap/' }, { serializable: true });
    assert.deepEqual(ours, theirs);
    // And it keeps applying what comes after the snapshot.
    await put(leader, '/snap/after', 'y');
    await converged(cluster);
    assert.equal((await localContent(restarted, '/snap/'))['/snap/after'], 'y');

    // Restarts after snapshots: the caught-up follower (from the installed state and the log after the
    // snapshot it was handed) and the leader (from its own snapshot, which carries no data).
    const expected = await localContent(leader, '/snap/');
    for (const index of [laggard, cluster.nodes.indexOf(leader)]) {
      await cluster.stop(index);
      const again = await cluster.start(index);
      await cluster.leader();
      await converged(cluster);
      assert.equal(again.replicaStatus().snapshotsRestored, 0, 'restarted from its own data');
      assert.deepEqual(await localContent(again, '/snap/'), expected);
    }
    const writer = await cluster.leader();
    await put(writer, '/snap/after-restarts', 'z');
    await converged(cluster);
    for (const node of cluster.nodes as ReplicatedStore[]) {
      assert.equal((await localContent(node, '/snap/'))['/snap/after-restarts'], 'z', node.name);
    }
  });
});

test('a member joins as a learner, is promoted, and a removed member stops serving', async () => {
  await withCluster(3, testTuning, async (cluster) => {
    let leader = await cluster.leader();
    for (let i = 0; i < 20; i++) await put(leader, `/m/${i}`, `v${i}`);
    const joinerIndex = await cluster.reserveMember('node-4');
    const joinerMember = cluster.members[joinerIndex]!;
    await leader.addMember(joinerMember.name, joinerMember.peerUrl);
    const joiner = await cluster.start(joinerIndex, 'existing');
    await converged(cluster);
    assert.equal(joiner.replicaStatus().role, 'learner');
    assert.deepEqual(await localContent(joiner, '/m/'), await localContent(leader, '/m/'));
    for (let attempt = 0; ; attempt++) {
      try {
        await leader.promoteMember(joinerMember.id);
        break;
      } catch (error) {
        if (attempt > 50) throw error;
        await sleep(100);
      }
    }
    const voters = leader
      .replicaStatus()
      .members.filter((m) => m.role === 'voter')
      .map((m) => m.name);
    assert.deepEqual(voters.sort(), ['node-1', 'node-2', 'node-3', 'node-4']);

    const victimIndex = cluster.nodes.findIndex((n) => n !== undefined && n !== leader && n !== joiner);
    const victim = cluster.nodes[victimIndex]!;
    await leader.removeMember(nodeIdFromName(victim.name));
    await assert.rejects(
      (async () => {
        for (let i = 0; i < 100; i++) {
          await put(victim, '/m/from-removed', 'no');
          await sleep(50);
        }
      })(),
      (error: unknown) => error instanceof StorageError && /removed/.test(error.message),
    );
    leader = await cluster.leader();
    await put(leader, '/m/after-removal', 'ok');
    assert.equal((await localContent(leader, '/m/'))['/m/after-removal'], 'ok');
    assert.deepEqual(
      leader
        .replicaStatus()
        .members.map((m) => m.name)
        .sort(),
      ['node-1', 'node-2', 'node-3', 'node-4'].filter((name) => name !== victim.name),
    );
  });
});

test('without a quorum a write fails with Unavailable instead of succeeding, and local reads still work', async () => {
  await withCluster(3, { ...testTuning, requestTimeoutMs: 1_500 }, async (cluster) => {
    const leader = await cluster.leader();
    await put(leader, '/q/before', 'v');
    await converged(cluster);
    const survivor = cluster.nodes.findIndex((n) => n !== undefined && n !== leader);
    for (let i = 0; i < 3; i++) if (i !== survivor) await cluster.stop(i);
    const alone = cluster.nodes[survivor]!;
    await assert.rejects(
      put(alone, '/q/lost', 'v'),
      (error: unknown) => error instanceof StorageError && error.code === 'Unavailable',
    );
    await assert.rejects(
      alone.range({ key: '/q/before' }),
      (error: unknown) => error instanceof StorageError && error.code === 'Unavailable',
    );
    assert.equal((await localContent(alone, '/q/'))['/q/before'], 'v');
    assert.equal((await localContent(alone, '/q/'))['/q/lost'], undefined);
    // Disaster recovery: a backup needs a quorum, unless it is explicitly local.
    await assert.rejects(
      alone.backup(),
      (error: unknown) => error instanceof StorageError && error.code === 'Unavailable',
    );
    assert.ok((await alone.backup({ local: true })).length > 0);
  });
});

test('a data dir refuses a node started with another name or cluster token, or while in use', async () => {
  await withCluster(3, testTuning, async (cluster) => {
    const leader = await cluster.leader();
    await put(leader, '/before/a', 'one');
    await converged(cluster);
    // A second open of a running member's data dir: its MVCC LevelDB lock guards the whole dir.
    const { ReplicatedStore: InUse } = await import('../../src/replica/engine.js');
    await assert.rejects(InUse.open(await cluster.optionsFor(1)), (error: unknown) => {
      assert.ok(error instanceof StorageError);
      assert.equal(error.code, 'Unavailable');
      assert.match(error.message, /node-2 is in use by another process/);
      return true;
    });
    await cluster.stop(0);
    const options = await cluster.optionsFor(0);
    const { ReplicatedStore: Store } = await import('../../src/replica/engine.js');
    await assert.rejects(
      Store.open({ ...options, name: 'node-2' }),
      /belongs to member "node-1".*--name=node-2/,
    );
    await assert.rejects(
      Store.open({ ...options, clusterToken: 'other' }),
      /belongs to cluster .*initial-cluster-token="other"/,
    );
    await assert.rejects(
      Store.open({ ...options, dataDir: `${options.dataDir}-fresh`, name: 'stranger' }),
      /--initial-cluster does not name this member \(--name=stranger\)/,
    );
    // The Raft log of an earlier version (LevelDB, `raft/`) is migrated when the member starts.
    const { dataDir } = await cluster.optionsFor(0);
    const wal = await RaftLogStore.open(join(dataDir, 'raft-wal'));
    await wal.store.close();
    const legacy = await LevelDbRaftLog.open(join(dataDir, 'raft'));
    if (wal.loaded.identity !== undefined) await legacy.store.saveIdentity(wal.loaded.identity);
    if (wal.loaded.snapshot !== undefined) await legacy.store.save({ snapshot: wal.loaded.snapshot });
    await legacy.store.save({ entries: wal.loaded.entries, hardState: wal.loaded.hardState });
    await legacy.store.close();
    await rm(join(dataDir, 'raft-wal'), { recursive: true });
    const restarted = await cluster.start(0);
    assert.deepEqual(await readdir(dataDir).then((names) => names.filter((n) => n.startsWith('raft'))), [
      'raft-wal',
    ]);
    await put(await cluster.leader(), '/before/b', 'two');
    await converged(cluster);
    assert.deepEqual(await localContent(restarted, '/before/'), { '/before/a': 'one', '/before/b': 'two' });
  });
});
