// Proves a backup holds every write acknowledged before it, is refused when corrupt, and restores into fresh
// members that form a new cluster with the old data and go on from its revision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBackup, encodeBackup, restoreBackup } from '../../src/replica/backup.js';
import type { KVStore } from '../../src/storage/contract.js';
import { startReplicaCluster, testTuning } from '../support/replica.js';
import { tempDir } from '../support/tmp.js';

async function put(store: KVStore, key: string, value: string): Promise<number> {
  return (
    await store.txn({ compare: [], success: [{ type: 'put', key, value: Buffer.from(value) }], failure: [] })
  ).header.revision;
}

async function content(store: KVStore, prefix: string): Promise<Record<string, string>> {
  const { kvs } = await store.range({ prefix });
  return Object.fromEntries(kvs.map((kv) => [kv.key, Buffer.from(kv.value).toString()]));
}

test('a backup restores into a new cluster that keeps the data and goes on from its revision', async () => {
  const source = await startReplicaCluster(3, testTuning);
  let backupBytes: Buffer;
  let expected: Record<string, string>;
  let lastRevision = 0;
  try {
    const leader = await source.leader();
    const follower = source.nodes.find((n) => n !== undefined && n !== leader)!;
    for (let i = 0; i < 30; i++)
      lastRevision = await put(i % 2 === 0 ? leader : follower, `/b/${i}`, `v${i}`);
    await leader.txn({ compare: [], success: [{ type: 'delete', span: { key: '/b/0' } }], failure: [] });
    expected = await content(follower, '/b/');
    backupBytes = await follower.backup(); // taken on a follower: still every acknowledged write
  } finally {
    await source.close();
  }
  const backup = decodeBackup(backupBytes, 'backup');
  assert.ok(backup.revision >= lastRevision + 1, `backup revision ${backup.revision}`);
  assert.equal(Object.keys(expected).length, 29);

  const restored = await startReplicaCluster(3, testTuning, (dataDir) => restoreBackup(backup, dataDir));
  try {
    const leader = await restored.leader();
    assert.deepEqual(await content(leader, '/b/'), expected);
    const status = await leader.status();
    assert.equal(status.revision, backup.revision);
    const next = await put(leader, '/b/new', 'after restore');
    assert.equal(next, backup.revision + 1);
    for (const node of restored.nodes) assert.equal((await content(node!, '/b/'))['/b/new'], 'after restore');
  } finally {
    await restored.close();
  }
});

test('a corrupt or foreign backup is refused, and restore never overwrites a member', async () => {
  const bytes = encodeBackup({ revision: 7, takenAt: 'now', pairs: [[Buffer.from('mA'), Buffer.from('x')]] });
  assert.equal(decodeBackup(bytes, 'f').revision, 7);
  const flipped = Buffer.from(bytes);
  flipped[20] = (flipped[20] ?? 0) ^ 0x01;
  assert.throws(() => decodeBackup(flipped, 'backup.db'), /backup\.db is corrupt/);
  assert.throws(() => decodeBackup(Buffer.from('hello world, not a backup'), 'x.txt'), /not a Stoa backup/);
  const dir = await tempDir('restore');
  try {
    await restoreBackup(decodeBackup(bytes, 'f'), dir.path);
    await assert.rejects(restoreBackup(decodeBackup(bytes, 'f'), dir.path), /already holds a member's state/);
  } finally {
    await dir.remove();
  }
});
