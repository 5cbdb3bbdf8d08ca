// Proves the Raft log (the segment WAL) persists what a Ready hands it and reads back exactly that: appends,
// suffix truncation, snapshots, compaction, identity, a newer format and corrupt records refused, and nothing
// acknowledged lost when the process is SIGKILLed (with large and with tiny, constantly rotating segments).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeWalRecord, RaftLogStore, RecordType } from '../../src/raftlog/store.js';
import { logIndex, nodeId, term } from '../../src/util/brand.js';
import { StorageError } from '../../src/storage/contract.js';
import { entry, summary, tempDir } from './support.js';

test('entries and hard state survive a reopen; a conflicting suffix is replaced', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  await store.save({
    entries: [1, 2, 3, 4].map((i) => entry(i, 1)),
    hardState: { term: term(1), vote: nodeId(2), commit: logIndex(2) },
  });
  // A new leader in term 2 overwrites from index 3 with a shorter log.
  await store.save({
    entries: [entry(3, 2)],
    hardState: { term: term(2), vote: nodeId(3), commit: logIndex(3) },
  });
  await store.close();
  const reopened = await RaftLogStore.open(dir);
  t.after(() => reopened.store.close());
  assert.deepEqual(summary(reopened.loaded.entries), ['1:1:e1t1', '2:1:e2t1', '3:2:e3t2']);
  assert.deepEqual(reopened.loaded.hardState, { term: 2, vote: 3, commit: 3 });
  assert.equal(reopened.loaded.snapshot, undefined);
});

test('a received snapshot replaces the log; later entries follow it', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  await store.save({ entries: [1, 2, 3].map((i) => entry(i, 1)) });
  const confState = { voters: [nodeId(1), nodeId(2), nodeId(3)], learners: [nodeId(4)] };
  await store.save({
    snapshot: { metadata: { index: logIndex(10), term: term(3), confState }, data: Buffer.from('state@10') },
  });
  await store.save({ entries: [entry(11, 3), entry(12, 3)] });
  await store.close();
  const { store: again, loaded } = await RaftLogStore.open(dir);
  t.after(() => again.close());
  assert.deepEqual(summary(loaded.entries), ['11:3:e11t3', '12:3:e12t3']);
  assert.equal(loaded.snapshot?.metadata.index, 10);
  assert.deepEqual(loaded.snapshot?.metadata.confState, confState);
  assert.equal(Buffer.from(loaded.snapshot?.data ?? []).toString(), 'state@10');
});

test('an own snapshot compacts entries up to the given index and keeps the rest', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  await store.save({ entries: [1, 2, 3, 4, 5, 6].map((i) => entry(i, 1)) });
  const confState = { voters: [nodeId(1)], learners: [] };
  await store.saveOwnSnapshot(
    { metadata: { index: logIndex(4), term: term(1), confState }, data: Buffer.from('s4') },
    logIndex(2),
  );
  await store.save({ entries: [entry(7, 1)] });
  await store.close();
  const { store: again, loaded } = await RaftLogStore.open(dir);
  t.after(() => again.close());
  assert.equal(loaded.snapshot?.metadata.index, 4);
  assert.deepEqual(summary(loaded.entries), ['5:1:e5t1', '6:1:e6t1', '7:1:e7t1']);
});

test('a second open of a directory in use is refused', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  t.after(() => store.close());
  await assert.rejects(RaftLogStore.open(dir), /lock/i);
});

test('the identity is kept', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  await store.saveIdentity({ clusterId: 'c-1', nodeId: nodeId(7), name: 'node-7' });
  await store.close();
  const { store: again, loaded } = await RaftLogStore.open(dir);
  t.after(() => again.close());
  assert.deepEqual(loaded.identity, { clusterId: 'c-1', nodeId: 7, name: 'node-7' });
});

test('a corrupt record and a newer format are refused with the file named', async (t) => {
  const dir = await tempDir(t);
  const { store } = await RaftLogStore.open(dir);
  await store.save({ entries: [entry(1, 1), entry(2, 1)] });
  await store.save({ entries: [entry(3, 1)] });
  await store.close();
  const [segment] = (await readdir(dir)).filter((name) => name.endsWith('.wal'));
  assert.ok(segment !== undefined);
  const path = join(dir, segment);
  const bytes = await readFile(path);
  // The records: u32 length, u32 CRC, then that many bytes. Flip a payload byte of the second to last one.
  const offsets: number[] = [];
  for (let at = 0; bytes.readUInt32LE(at) !== 0; at += 8 + bytes.readUInt32LE(at)) offsets.push(at);
  const victim = offsets.at(-2) ?? 0;
  bytes[victim + 10] = (bytes[victim + 10] ?? 0) ^ 0xff;
  await writeFile(path, bytes);
  await assert.rejects(RaftLogStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StorageError);
    assert.equal(error.code, 'Corrupt');
    assert.ok(error.message.includes(path), error.message);
    assert.ok(error.message.includes(`offset ${victim}`), error.message);
    return true;
  });

  const dir2 = await tempDir(t);
  const header = encodeWalRecord(RecordType.header, { format: 99, seq: 0, firstIndex: 1 }, 0, true);
  await writeFile(join(dir2, `${'0'.repeat(16)}-${'0'.repeat(15)}1.wal`), header.bytes);
  await assert.rejects(RaftLogStore.open(dir2), (error: unknown) => {
    assert.ok(error instanceof StorageError);
    assert.equal(error.code, 'UnsupportedFormat');
    assert.match(error.message, /format 99/);
    assert.ok(error.message.includes(dir2));
    return true;
  });
});

for (const segmentBytes of [0, 2048]) {
  test(`nothing acknowledged is lost when the writer is SIGKILLed (segments: ${segmentBytes || 'default'})`, async (t) => {
    const dir = await tempDir(t);
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./raftlog-child.js', import.meta.url)), dir, String(segmentBytes)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let acknowledged = 0;
    let buffered = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) acknowledged = Number(line);
        if (acknowledged >= 200 && child.signalCode === null) {
          child.kill('SIGKILL');
        }
      });
      child.on('exit', (code, signal) =>
        signal === 'SIGKILL' ? resolve() : reject(new Error(`child exited ${code}`)),
      );
    });
    const { store, loaded } = await RaftLogStore.open(dir, segmentBytes > 0 ? { segmentBytes } : {});
    t.after(() => store.close());
    const last = loaded.entries.at(-1)?.index ?? 0;
    assert.ok(last >= acknowledged, `acknowledged ${acknowledged} but only ${last} survived`);
    loaded.entries.forEach((e, i) => assert.equal(Buffer.from(e.data).toString(), `entry-${i + 1}`));
    assert.ok(loaded.hardState.commit >= acknowledged);
  });
}
