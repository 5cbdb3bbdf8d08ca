// Proves a member takes its snapshots beside the Ready loop: writes keep being acknowledged and applied while
// one is in progress, one runs at a time, and SIGKILL during or after one loses no acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { KVStore } from '../../src/storage/contract.js';
import { ReplicatedStore, type ReplicaOptions } from '../../src/replica/engine.js';
import { nodeIdFromName } from '../../src/replica/ids.js';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.js';
import { freePort } from '../support/etcd.js';
import { startReplicaCluster, testTuning } from '../support/replica.js';
import type { ReplicaWriterConfig } from '../support/replica-writer-child.js';
import { tempDir } from '../support/tmp.js';

const childScript = fileURLToPath(new URL('../support/replica-writer-child.js', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function put(store: KVStore, key: string): Promise<number> {
  const result = await store.txn({
    compare: [],
    success: [{ type: 'put', key, value: Buffer.from(key) }],
    failure: [],
  });
  return result.header.revision;
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('writes are acknowledged and applied on every member while snapshots are in progress, one at a time', async () => {
  const snapshotCount = 40;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let gated = true;
  /** The index of every snapshot that made its MVCC state durable and reached the hook. */
  const synced: number[] = [];
  const cluster = await startReplicaCluster(3, {
    ...testTuning,
    snapshotCount,
    snapshotCatchUpEntries: 10,
    // Each member's first snapshot stops after its MVCC sync, before the log is compacted, until released.
    snapshotHook: async (step, index) => {
      if (step !== 'synced') return;
      synced.push(index);
      if (gated) await released;
    },
  });
  try {
    const leader = await cluster.leader();
    const nodes = cluster.nodes.filter((n): n is ReplicatedStore => n !== undefined);
    let n = 0;
    const written = async (count: number): Promise<void> => {
      for (let end = n + count; n < end; n++) await put(leader, `/bg/${n}`);
    };
    await written(snapshotCount);
    await until('every member to start a snapshot', () => synced.length === 3);
    // Five snapshot intervals more, all acknowledged while every member's snapshot is held in the middle.
    await written(5 * snapshotCount);
    const target = leader.replicaStatus().commitIndex;
    await until('every member to apply every write', () =>
      nodes.every((node) => node.replicaStatus().appliedIndex >= target),
    );
    assert.equal(synced.length, 3, 'a member started a second snapshot while its first was in progress');
    for (const node of nodes) assert.equal(node.replicaStatus().snapshotIndex, 0);

    gated = false;
    release();
    await until('the held snapshots to complete', () =>
      nodes.every((node) => node.replicaStatus().snapshotIndex > 0),
    );
    await written(3 * snapshotCount);
    const last = leader.replicaStatus().commitIndex;
    await until('later snapshots', () =>
      nodes.every((node) => node.replicaStatus().snapshotIndex >= last - 2 * snapshotCount),
    );
    // A member restarts from its compacted log and snapshot with every write.
    await cluster.stop(2);
    const restarted = await cluster.start(2);
    await until('the restarted member to catch up', () => restarted.replicaStatus().appliedIndex >= last);
    const { kvs } = await restarted.range({ prefix: '/bg/' }, { serializable: true });
    assert.equal(kvs.length, n);
    assert.ok(restarted.replicaStatus().snapshotIndex >= last - 2 * snapshotCount);
  } finally {
    gated = false;
    release();
    await cluster.close();
  }
});

test('SIGKILL during or after a background snapshot loses no acknowledged write', async (t) => {
  const dir = await tempDir('snapshot-crash');
  t.after(() => dir.remove());
  const ca = await createCertificateAuthority({ commonName: 'stoa-test-peers' });
  const name = 'node-1';
  const port = await freePort();
  const cert = await issueCertificate(ca, { commonName: name, ipAddresses: ['127.0.0.1'], usage: 'peer' });
  const replica: ReplicaWriterConfig['replica'] = {
    name,
    dataDir: join(dir.path, name),
    initialCluster: [{ id: nodeIdFromName(name), name, peerUrl: `https://127.0.0.1:${port}` }],
    initialClusterState: 'new',
    clusterToken: 'snapshot-crash',
    listenPeer: { host: '127.0.0.1', port },
    tls: { certPem: cert.certPem, keyPem: cert.keyPem, trustedCaPem: ca.certPem },
    heartbeatIntervalMs: 50,
    electionTimeoutMs: 500,
    retentionMs: 0,
    snapshotCount: 100,
    snapshotCatchUpEntries: 20,
  };
  const acked = new Map<string, number>();
  // Killed: with the first snapshot held before it wrote anything; held after its MVCC sync, before the log
  // compaction; and with snapshots running freely, after several completed.
  const runs: { block?: 'start' | 'synced'; snapshotsBeforeKill: number }[] = [
    { block: 'start', snapshotsBeforeKill: 1 },
    { block: 'synced', snapshotsBeforeKill: 1 },
    { snapshotsBeforeKill: 3 },
  ];
  for (const [run, { block, snapshotsBeforeKill }] of runs.entries()) {
    const configPath = join(dir.path, `run-${run}.json`);
    const config: ReplicaWriterConfig = { replica, prefix: `/crash/r${run}/` };
    await writeFile(configPath, JSON.stringify(config));
    const args = [childScript, configPath, ...(block !== undefined ? ['--block', block] : [])];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    t.after(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    const step = block ?? 'synced';
    let snapshots = 0;
    let ackedSince = 0;
    const lines = createInterface({ input: child.stdout });
    // Kill once the snapshots reached their step and 100 more writes were acknowledged (or fail after 30 s).
    const killed = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 30_000);
      lines.on('line', (line) => {
        const [word, a, b] = line.split(' ');
        if (word === 'snapshot' && a === step) {
          snapshots++;
          ackedSince = 0;
        } else if (word === 'ack' && a !== undefined) {
          acked.set(a, Number(b));
          if (snapshots >= snapshotsBeforeKill && ++ackedSince === 100) {
            child.kill('SIGKILL'); // by the child's PID
            clearTimeout(timer);
            resolve(true);
          }
        }
      });
    });
    await exited;
    assert.ok(killed, `run ${run}: ${snapshots} snapshots reached "${step}", ${ackedSince} acks after`);
    assert.equal(child.signalCode, 'SIGKILL');
  }

  const options: ReplicaOptions = {
    ...replica,
    onFatal: (error) => {
      throw error;
    },
  };
  const store = await ReplicatedStore.open(options);
  t.after(() => store.close());
  const all = await store.range({ prefix: '/crash/' }); // linearizable: once elected and caught up
  const found = new Map(all.kvs.map((kv) => [kv.key, kv]));
  for (const [key, revision] of acked) {
    const kv = found.get(key);
    assert.ok(kv !== undefined, `acknowledged ${key} at revision ${revision} is lost`);
    assert.equal(kv.modRevision, revision, `${key} was applied twice or out of order`);
  }
  // Nothing was applied twice: one revision per write, no gaps.
  const revisions = all.kvs.map((kv) => kv.modRevision).sort((a, b) => a - b);
  assert.deepEqual(
    revisions,
    Array.from({ length: all.count }, (_, i) => (revisions[0] ?? 0) + i),
  );
  assert.ok(store.replicaStatus().snapshotIndex > 0, 'the last run completed snapshots');
  assert.ok(acked.size >= 300);
});
