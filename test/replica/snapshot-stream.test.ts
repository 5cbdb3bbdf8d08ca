// Proves a leader's state streams to a follower in bounded chunks from one LevelDB snapshot (writes during the
// stream do not leak in, lost chunks are resent), and that a staged state is installed exactly when it should
// be: ahead of the state, or after an interrupted install; a partial or stale one is discarded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClassicLevel } from 'classic-level';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { logIndex, nodeId } from '../../src/util/brand.js';
import { silentLogger } from '../../src/transport/options.js';
import {
  SnapshotReceiver,
  SnapshotSender,
  appliedFrom,
  appliedKey,
  installStaged,
  stagingDirs,
  u64,
  type MsgSnapData,
  type MsgSnapDataResp,
} from '../../src/replica/snapshot-stream.js';
import type { Db } from '../../src/storage/mvcc/mvcc.js';
import { tempDir } from '../support/tmp.js';

const leaderId = nodeId(1);
const followerId = nodeId(2);

async function openDb(path: string): Promise<Db> {
  const db = new ClassicLevel<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  return db;
}

async function content(db: Db): Promise<Map<string, string>> {
  const all = new Map<string, string>();
  for await (const [key, value] of db.iterator()) all.set(key.toString('latin1'), value.toString('hex'));
  return all;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** A state at applied index `applied`: `keys` MVCC-like records of about 100 bytes each. */
async function fill(db: Db, applied: number, keys: number, tag: string): Promise<void> {
  const ops = [];
  for (let i = 0; i < keys; i++) {
    ops.push({
      type: 'put' as const,
      key: Buffer.from(`m/${String(i).padStart(5, '0')}`),
      value: Buffer.from(`${tag}-${i}-`.padEnd(100, 'x')),
    });
  }
  ops.push({ type: 'put' as const, key: appliedKey, value: u64(applied) });
  await db.batch(ops);
}

test('a state streams in chunks from one LevelDB snapshot, survives lost chunks, and is staged', async (t) => {
  const dir = await tempDir('stream');
  t.after(() => dir.remove());
  const source = await openDb(join(dir.path, 'leader'));
  t.after(() => source.close());
  await fill(source, 500, 2000, 'v1');
  const expected = await content(source);

  let followerApplied = 10;
  let staged = 0;
  let dropped = 0;
  let chunksSent = 0;
  let largestChunkBytes = 0;
  const followerDir = join(dir.path, 'follower');
  await mkdir(followerDir);
  // The "network": delivers every message on a later turn, and loses the first copy of chunk 3.
  const sender: SnapshotSender = new SnapshotSender({
    selfId: leaderId,
    incarnation: 7,
    db: source,
    chunkBytes: 8 * 1024,
    ackTimeoutMs: 200,
    completedRetainMs: 60_000,
    logger: silentLogger,
    send: (m: MsgSnapData) => {
      chunksSent++;
      largestChunkBytes = Math.max(
        largestChunkBytes,
        m.pairs.reduce((sum, [k, v]) => sum + k.length + v.length, 0),
      );
      if (m.seq === 3 && dropped === 0) {
        dropped++;
        return;
      }
      setImmediate(() => receiver.onChunk(m));
    },
  });
  const receiver: SnapshotReceiver = new SnapshotReceiver({
    selfId: followerId,
    dataDir: followerDir,
    applied: () => followerApplied,
    onStaged: () => staged++,
    logger: silentLogger,
    send: (m: MsgSnapDataResp) => setImmediate(() => sender.onResponse(m)),
  });
  sender.offer(followerId, logIndex(400));
  // Writes after the stream started are not part of it: it reads one LevelDB snapshot.
  await new Promise((resolve) => setImmediate(resolve));
  await fill(source, 600, 2000, 'v2');
  sender.offer(followerId, logIndex(400)); // a resent MsgSnap while streaming: no second stream

  const deadline = Date.now() + 20_000;
  while (staged === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(staged, 1);
  assert.equal(sender.streamsCompleted, 1);
  assert.equal(dropped, 1);
  assert.ok(receiver.chunksReceived > 20, `chunks: ${receiver.chunksReceived}`);
  assert.equal(chunksSent, receiver.chunksReceived + 1, 'only the lost chunk was sent twice');
  assert.ok(largestChunkBytes < 8 * 1024 + 200, `a chunk holds ${largestChunkBytes} bytes`);
  const dirs = stagingDirs(followerDir);
  assert.equal(await exists(dirs.incoming), false);
  const stagedDb = await openDb(dirs.ready);
  assert.deepEqual(await content(stagedDb), expected);
  await stagedDb.close();

  // A later offer at or below what was sent sends nothing; a follower already there answers "have".
  sender.offer(followerId, logIndex(450));
  assert.equal(chunksSent, receiver.chunksReceived + 1);
  followerApplied = 700;
  sender.offer(followerId, logIndex(650));
  while (sender.streamsCompleted < 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(sender.streamsCompleted, 2);
  assert.equal(staged, 1, 'nothing staged for a follower that is ahead');
  await sender.close();
  await receiver.close();
});

test('a staged state is installed when ahead, discarded when stale, and an interrupted install is redone', async (t) => {
  const dir = await tempDir('install');
  t.after(() => dir.remove());
  const dirs = stagingDirs(dir.path);
  const live = await openDb(join(dir.path, 'mvcc'));
  t.after(() => live.close());
  await fill(live, 100, 50, 'live');
  await live.put(Buffer.from('m/only-live'), Buffer.from('gone after an install'));

  // A partial stream (the node stopped while receiving) is dropped; nothing staged: nothing happens.
  await (await openDb(dirs.incoming)).close();
  assert.equal(await installStaged(live, dir.path, 100, () => assert.fail('nothing to replace')), undefined);
  assert.equal(await exists(dirs.incoming), false);

  // A staged state behind the applied one is stale: discarded, the live state untouched.
  const stale = await openDb(dirs.ready);
  await fill(stale, 90, 10, 'stale');
  await stale.close();
  assert.equal(await installStaged(live, dir.path, 100, () => assert.fail('stale')), undefined);
  assert.equal(await exists(dirs.ready), false);
  assert.equal(appliedFrom(await live.get(appliedKey)), 100);

  // A staged state ahead replaces the whole live state.
  const ahead = await openDb(dirs.ready);
  await fill(ahead, 200, 30, 'ahead');
  const expected = await content(ahead);
  await ahead.close();
  let replaced = 0;
  assert.equal(await installStaged(live, dir.path, 100, () => replaced++), 200);
  assert.equal(replaced, 1);
  assert.deepEqual(await content(live), expected);
  assert.equal(await exists(dirs.ready), false);

  // An install interrupted half way (the live state is partly replaced) is redone, whatever it says it applied.
  const installing = await openDb(dirs.installing);
  await fill(installing, 300, 40, 'redo');
  const redone = await content(installing);
  await installing.close();
  await live.put(appliedKey, u64(999));
  assert.equal(await installStaged(live, dir.path, 999, () => undefined), 300);
  assert.deepEqual(await content(live), redone);
  assert.equal(await exists(dirs.installing), false);
});
