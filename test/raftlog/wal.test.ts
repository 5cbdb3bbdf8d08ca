// Proves the segment WAL's recovery and lifecycle: a torn or garbage tail is cut back to the acknowledged saves,
// damage mid-file is Corrupt naming file and offset, segments rotate, are removed after a snapshot and reopen
// correctly, the LevelDB log of earlier versions migrates (also after a crash between its steps), and random
// save/snapshot/reopen sequences match an in-memory model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { RaftLogStore, type PersistedEntry } from '../../src/raftlog/store.js';
import { LevelDbRaftLog } from '../../src/raftlog/leveldb-log.js';
import { logIndex, nodeId, term } from '../../src/util/brand.js';
import { StorageError } from '../../src/storage/contract.js';
import { entry, snapshotAt, summary, tempDir } from './support.js';

async function segments(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.wal')).sort();
}

/** Where the records of a segment end (the first zero length). */
function recordsEnd(bytes: Buffer): number {
  let at = 0;
  while (at + 4 <= bytes.length && bytes.readUInt32LE(at) !== 0) at += 8 + bytes.readUInt32LE(at);
  return at;
}

test('a torn last write is cut off at every byte offset; a garbage or zero tail is dropped', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 64 * 1024;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  for (let i = 1; i <= 5; i++) await store.save({ entries: [entry(i, 1)] });
  const [name] = await segments(dir);
  assert.ok(name !== undefined);
  const before = recordsEnd(await readFile(join(dir, name)));
  // The last save: two entries and a hard state in one write.
  await store.save({
    entries: [entry(6, 1, 'x'.repeat(300)), entry(7, 1)],
    hardState: { term: term(1), vote: nodeId(1), commit: logIndex(7) },
  });
  await store.close();
  const full = await readFile(join(dir, name));
  const after = recordsEnd(full);
  assert.ok(after > before + 300);

  const check = async (bytes: Buffer, expectLast: number, why: string): Promise<void> => {
    const copy = await tempDir(t, 'stoa-wal-');
    await writeFile(join(copy, name), bytes);
    const { store: reopened, loaded } = await RaftLogStore.open(copy, { segmentBytes });
    try {
      assert.equal(loaded.entries.at(-1)?.index, expectLast, why);
      // Appends resume right after what survived, and survive a reopen themselves.
      await reopened.save({ entries: [entry(expectLast + 1, 2)] });
    } finally {
      await reopened.close();
    }
    const again = await RaftLogStore.open(copy, { segmentBytes });
    await again.store.close();
    assert.deepEqual(
      summary(again.loaded.entries).at(-1),
      `${expectLast + 1}:2:e${expectLast + 1}t2`,
      `${why}: reopen after the append`,
    );
    await rm(copy, { recursive: true, force: true });
  };

  // Cut the last write at many offsets (the rest of the preallocated file stays zero), and also shorten the file.
  const step = Math.max(1, Math.floor((after - before) / 40));
  for (let cut = before; cut < after; cut += step) {
    const zeroed = Buffer.from(full);
    zeroed.fill(0, cut);
    await check(zeroed, 5, `zeroed from ${cut}`);
  }
  await check(full.subarray(0, before + 5), 5, 'file cut inside a record header');
  await check(full.subarray(0, after), 7, 'file cut right after the last record');
  // Garbage after the end (a write whose later pages landed but not its first) is a torn tail too.
  const garbage = Buffer.from(full);
  garbage.fill(0x5a, after + 100, after + 200);
  await check(garbage, 7, 'garbage after the end');
  const garbageInWrite = Buffer.from(full);
  garbageInWrite.fill(0, before, before + 8);
  await check(garbageInWrite, 5, 'the first record header of the last write lost, the rest landed');
});

test('damage followed by valid records, or in an earlier segment, is Corrupt naming file and offset', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 1024;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  for (let i = 1; i <= 150; i++) await store.save({ entries: [entry(i, 1, `payload-${i}`)] });
  await store.close();
  const names = await segments(dir);
  assert.ok(names.length >= 3, `rotated into ${names.length} segments`);

  const expectCorrupt = async (target: string, offset: number): Promise<void> => {
    const path = join(dir, target);
    const original = await readFile(path);
    const damaged = Buffer.from(original);
    damaged[offset + 12] = (damaged[offset + 12] ?? 0) ^ 0x01;
    await writeFile(path, damaged);
    try {
      await assert.rejects(RaftLogStore.open(dir, { segmentBytes }), (error: unknown) => {
        assert.ok(error instanceof StorageError);
        assert.equal(error.code, 'Corrupt');
        assert.ok(error.message.includes(path), error.message);
        assert.ok(error.message.includes(`offset ${offset}`), error.message);
        return true;
      });
    } finally {
      await writeFile(path, original);
    }
  };
  // A record in the middle of the last segment (valid records follow it).
  const lastName = names.at(-1) as string;
  const last = await readFile(join(dir, lastName));
  const lastRecords: number[] = [];
  for (let at = 0; at < recordsEnd(last); at += 8 + last.readUInt32LE(at)) lastRecords.push(at);
  assert.ok(lastRecords.length >= 3);
  await expectCorrupt(lastName, lastRecords.at(-2) as number);
  // The last record of an earlier segment: nothing follows it there, but it is not the tail of the log.
  const firstName = names[0] as string;
  const first = await readFile(join(dir, firstName));
  const firstRecords: number[] = [];
  for (let at = 0; at < recordsEnd(first); at += 8 + first.readUInt32LE(at)) firstRecords.push(at);
  await expectCorrupt(firstName, firstRecords.at(-1) as number);
  // Untouched again: it opens.
  const { store: ok, loaded } = await RaftLogStore.open(dir, { segmentBytes });
  await ok.close();
  assert.equal(loaded.entries.length, 150);
});

test('segments rotate, are removed after an own snapshot (never the last), and reopen correctly', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 1024;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  await store.saveIdentity({ clusterId: 'c', nodeId: nodeId(1), name: 'n1' });
  for (let i = 1; i <= 100; i++) {
    await store.save({
      entries: [entry(i, 1, `value-${i}`)],
      hardState: { term: term(1), vote: nodeId(1), commit: logIndex(i) },
    });
  }
  await store.settled();
  const rotated = await segments(dir);
  assert.ok(rotated.length >= 4, `${rotated.length} segments`);
  // Segment names carry the index their entries start at, increasing.
  const firsts = rotated.map((name) => parseInt(name.slice(17, 33), 16));
  assert.equal(firsts[0], 1);
  assert.deepEqual(
    firsts,
    [...firsts].sort((a, b) => a - b),
  );
  await store.saveOwnSnapshot(snapshotAt(90), logIndex(80));
  await store.settled();
  const kept = await segments(dir);
  assert.ok(kept.length < rotated.length, 'old segments were removed');
  // Exactly those whose successor starts at or below the compaction point (81) went.
  const firstOf = (name: string): number => parseInt(name.slice(17, 33), 16);
  const expectKept = rotated.filter((name, i) => {
    const next = rotated[i + 1];
    return next === undefined || firstOf(next) - 1 > 80;
  });
  assert.deepEqual(kept, expectKept);
  assert.ok(firstOf(kept[0] as string) <= 81);
  await store.close();

  const { store: again, loaded } = await RaftLogStore.open(dir, { segmentBytes });
  assert.equal(loaded.snapshot?.metadata.index, 90);
  assert.deepEqual(
    summary(loaded.entries),
    Array.from({ length: 10 }, (_, i) => `${91 + i}:1:value-${91 + i}`),
  );
  assert.deepEqual(loaded.hardState, { term: 1, vote: 1, commit: 100 });
  assert.deepEqual(loaded.identity, { clusterId: 'c', nodeId: 1, name: 'n1' });
  // Compacting everything: only the last segment stays, and it reads alone.
  await again.saveOwnSnapshot(snapshotAt(100), logIndex(100));
  for (let i = 101; i <= 130; i++) await again.save({ entries: [entry(i, 2)] });
  await again.saveOwnSnapshot(snapshotAt(130, 2), logIndex(130));
  await again.settled();
  assert.equal((await segments(dir)).length, 1);
  await again.close();
  const alone = await RaftLogStore.open(dir, { segmentBytes });
  await alone.store.close();
  assert.equal(alone.loaded.snapshot?.metadata.index, 130);
  assert.deepEqual(alone.loaded.entries, []);
  assert.deepEqual(alone.loaded.identity, { clusterId: 'c', nodeId: 1, name: 'n1' });
  assert.deepEqual(alone.loaded.hardState, { term: 1, vote: 1, commit: 100 });
});

test('a snapshot from the leader replaces a rotated log; a conflicting suffix across segments is replaced', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 1024;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  for (let i = 1; i <= 50; i++) await store.save({ entries: [entry(i, 1)] });
  // A new leader overwrites from 20 (in an earlier segment) with a shorter log.
  await store.save({ entries: [entry(20, 2), entry(21, 2)] });
  await store.close();
  let opened = await RaftLogStore.open(dir, { segmentBytes });
  assert.deepEqual(summary(opened.loaded.entries).slice(-3), ['19:1:e19t1', '20:2:e20t2', '21:2:e21t2']);
  assert.equal(opened.loaded.entries.length, 21);
  await opened.store.save({ snapshot: snapshotAt(500, 3) });
  await opened.store.save({ entries: [entry(501, 3), entry(502, 3)] });
  // Its compaction lets every older segment go.
  await opened.store.saveOwnSnapshot(snapshotAt(501, 3), logIndex(501));
  await opened.store.settled();
  await opened.store.close();
  opened = await RaftLogStore.open(dir, { segmentBytes });
  await opened.store.close();
  assert.equal(opened.loaded.snapshot?.metadata.index, 501);
  assert.deepEqual(summary(opened.loaded.entries), ['502:3:e502t3']);
});

test('a segment started but never written (a crash during rotation) is dropped on open', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 1024;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  for (let i = 1; i <= 40; i++) await store.save({ entries: [entry(i, 1)] });
  await store.close();
  const names = await segments(dir);
  const last = names.at(-1) as string;
  const seq = parseInt(last.slice(0, 16), 16) + 1;
  const empty = `${seq.toString(16).padStart(16, '0')}-${(41).toString(16).padStart(16, '0')}.wal`;
  await writeFile(join(dir, empty), Buffer.alloc(segmentBytes));
  const { store: again, loaded } = await RaftLogStore.open(dir, { segmentBytes });
  assert.equal(loaded.entries.length, 40);
  assert.deepEqual(await segments(dir), names);
  for (let i = 41; i <= 80; i++) await again.save({ entries: [entry(i, 1)] });
  await again.close();
  const third = await RaftLogStore.open(dir, { segmentBytes });
  await third.store.close();
  assert.equal(third.loaded.entries.at(-1)?.index, 80);
  assert.equal(third.loaded.entries.length, 80);
});

test('a missing middle segment is Corrupt', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const { store } = await RaftLogStore.open(dir, { segmentBytes: 1024 });
  for (let i = 1; i <= 150; i++) await store.save({ entries: [entry(i, 1)] });
  await store.close();
  const names = await segments(dir);
  assert.ok(names.length >= 3);
  await rm(join(dir, names[1] as string));
  await assert.rejects(RaftLogStore.open(dir, { segmentBytes: 1024 }), (error: unknown) => {
    assert.ok(error instanceof StorageError);
    assert.equal(error.code, 'Corrupt');
    return true;
  });
});

async function writeLegacy(dir: string): Promise<void> {
  const { store } = await LevelDbRaftLog.open(dir);
  await store.saveIdentity({ clusterId: 'legacy', nodeId: nodeId(2), name: 'n2' });
  await store.save({
    entries: Array.from({ length: 30 }, (_, i) => entry(i + 1, 1)),
    hardState: { term: term(1), vote: nodeId(2), commit: logIndex(25) },
  });
  await store.saveOwnSnapshot(snapshotAt(20), logIndex(10));
  await store.save({
    entries: [entry(28, 2)],
    hardState: { term: term(2), vote: nodeId(3), commit: logIndex(27) },
  });
  await store.close();
}

test('the LevelDB log of earlier versions is migrated, also after a crash between the steps', async (t) => {
  const root = await tempDir(t, 'stoa-wal-');
  const legacy = join(root, 'raft');
  await writeLegacy(legacy);
  const expected = await LevelDbRaftLog.open(legacy);
  await expected.store.close();
  assert.equal(expected.loaded.entries.length, 8); // 21..28

  const compare = (loaded: typeof expected.loaded): void => {
    assert.deepEqual(summary(loaded.entries), summary(expected.loaded.entries));
    assert.deepEqual(loaded.hardState, expected.loaded.hardState);
    assert.deepEqual(loaded.identity, expected.loaded.identity);
    assert.deepEqual(loaded.snapshot?.metadata, expected.loaded.snapshot?.metadata);
  };
  const wal = join(root, 'raft-wal');
  // Crash after the WAL was written into the temp dir: the old log is still the log.
  await assert.rejects(
    RaftLogStore.open(wal, { legacyDir: legacy, migrationCrashAfter: 'written' }),
    /simulated/,
  );
  assert.deepEqual((await readdir(root)).sort(), ['raft', 'raft-wal.tmp']);
  // Crash after the rename (the commit point): the WAL is the log, the old one is removed on the next open.
  await assert.rejects(
    RaftLogStore.open(wal, { legacyDir: legacy, migrationCrashAfter: 'renamed' }),
    /simulated/,
  );
  assert.deepEqual((await readdir(root)).sort(), ['raft', 'raft-wal']);
  // Whatever the old dir holds now is ignored: the WAL is the commit point.
  await rm(join(legacy, 'CURRENT'));
  const { store, loaded } = await RaftLogStore.open(wal, { legacyDir: legacy });
  compare(loaded);
  assert.deepEqual((await readdir(root)).sort(), ['raft-wal']);
  await store.save({ entries: [entry(29, 2)] });
  await store.close();

  // A clean migration in one go.
  const root2 = await tempDir(t, 'stoa-wal-');
  await writeLegacy(join(root2, 'raft'));
  const once = await RaftLogStore.open(join(root2, 'raft-wal'), { legacyDir: join(root2, 'raft') });
  await once.store.close();
  compare(once.loaded);
  assert.deepEqual(await readdir(root2), ['raft-wal']);
  const again = await RaftLogStore.open(join(root2, 'raft-wal'), { legacyDir: join(root2, 'raft') });
  await again.store.close();
  compare(again.loaded);
});

test('segments are preallocated with zeros, and a prepared next segment is used at rotation', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 8192;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  t.after(() => store.close());
  const [first] = await segments(dir);
  assert.equal((await stat(join(dir, first as string))).size, segmentBytes);
  for (let i = 1; i <= 60; i++) await store.save({ entries: [entry(i, 1, 'y'.repeat(64))] });
  await store.settled();
  const names = await readdir(dir);
  assert.ok(names.includes('next.tmp'), names.join(','));
  for (const name of await segments(dir)) assert.equal((await stat(join(dir, name))).size, segmentBytes);
});

// ---- Property test ----------------------------------------------------------------------------------------

type Op =
  | { kind: 'append'; back: number; count: number; term: number }
  | { kind: 'hardState'; commit: number }
  | { kind: 'leaderSnapshot'; ahead: number }
  | { kind: 'ownSnapshot'; at: number; keep: number }
  | { kind: 'reopen' }
  | { kind: 'tear'; keep: number };

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      back: fc.nat(4),
      count: fc.integer({ min: 1, max: 6 }),
      term: fc.integer({ min: 1, max: 5 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('hardState' as const), commit: fc.nat(1000) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('leaderSnapshot' as const),
      ahead: fc.integer({ min: 0, max: 20 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('ownSnapshot' as const), at: fc.nat(20), keep: fc.nat(5) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tear' as const), keep: fc.nat(200) }) },
);

test('random save, snapshot, reopen and torn-tail sequences match an in-memory model', async (t) => {
  const root = await tempDir(t, 'stoa-wal-');
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArbitrary, { minLength: 5, maxLength: 60 }), async (ops) => {
      const dir = join(root, `run-${run++}`);
      await mkdir(dir);
      const segmentBytes = 600;
      let { store } = await RaftLogStore.open(dir, { segmentBytes });
      // The model: what a reopen must return.
      let entries: PersistedEntry[] = [];
      let snapshotIndex = 0;
      let hard = { term: term(0), vote: nodeId(0), commit: logIndex(0) };
      let lastIndex = 0;
      const verify = async (): Promise<void> => {
        await store.close();
        const opened = await RaftLogStore.open(dir, { segmentBytes });
        store = opened.store;
        assert.equal(opened.loaded.snapshot?.metadata.index ?? 0, snapshotIndex);
        assert.deepEqual(
          summary(opened.loaded.entries),
          summary(entries.filter((e) => e.index > snapshotIndex)),
        );
        assert.deepEqual(opened.loaded.hardState, hard);
        lastIndex = opened.loaded.entries.at(-1)?.index ?? snapshotIndex;
        entries = [...opened.loaded.entries];
      };
      try {
        for (const op of ops) {
          switch (op.kind) {
            case 'append': {
              const first = Math.max(snapshotIndex + 1, lastIndex + 1 - op.back);
              const batch = Array.from({ length: op.count }, (_, i) =>
                entry(first + i, op.term, `r${run}-${first + i}`),
              );
              await store.save({ entries: batch });
              entries = [...entries.filter((e) => e.index < first), ...batch];
              lastIndex = first + op.count - 1;
              break;
            }
            case 'hardState':
              hard = { term: term(op.commit % 7), vote: nodeId(op.commit % 3), commit: logIndex(op.commit) };
              await store.save({ hardState: hard, sync: op.commit % 2 === 0 });
              break;
            case 'leaderSnapshot': {
              const index = lastIndex + op.ahead;
              if (index === 0) break;
              await store.save({ snapshot: snapshotAt(index, 9) });
              entries = [];
              snapshotIndex = index;
              lastIndex = index;
              break;
            }
            case 'ownSnapshot': {
              const index = Math.min(lastIndex, snapshotIndex + op.at);
              if (index <= snapshotIndex) break;
              const compactTo = Math.max(snapshotIndex, index - op.keep);
              await store.saveOwnSnapshot(snapshotAt(index), logIndex(compactTo));
              snapshotIndex = index;
              break;
            }
            case 'reopen':
              await verify();
              break;
            case 'tear': {
              // A crash while the next write is under way: garbage after the end of the last segment.
              await store.close();
              const last = (await segments(dir)).at(-1) as string;
              const bytes = await readFile(join(dir, last));
              const end = recordsEnd(bytes);
              const junk = Buffer.alloc(Math.min(op.keep + 1, Math.max(0, bytes.length - end)), 0xa5);
              junk.copy(bytes, end);
              await writeFile(join(dir, last), bytes);
              ({ store } = await RaftLogStore.open(dir, { segmentBytes }));
              await verify();
              break;
            }
            default: {
              const never: never = op;
              throw new Error(`unknown op ${JSON.stringify(never)}`);
            }
          }
        }
        await verify();
      } finally {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 40, seed: 4242 },
  );
});

test('a file cut short of its preallocated size still opens and appends', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const { store } = await RaftLogStore.open(dir, { segmentBytes: 4096 });
  for (let i = 1; i <= 3; i++) await store.save({ entries: [entry(i, 1)] });
  await store.close();
  const [name] = await segments(dir);
  const path = join(dir, name as string);
  const end = recordsEnd(await readFile(path));
  await truncate(path, end);
  const { store: again, loaded } = await RaftLogStore.open(dir, { segmentBytes: 4096 });
  assert.equal(loaded.entries.length, 3);
  await again.save({ entries: [entry(4, 1)] });
  await again.close();
  const third = await RaftLogStore.open(dir, { segmentBytes: 4096 });
  await third.store.close();
  assert.equal(third.loaded.entries.length, 4);
});

test('unsynced hard states are written with the next synced save, or at close (even into a new segment)', async (t) => {
  const dir = await tempDir(t, 'stoa-wal-');
  const segmentBytes = 512;
  const { store } = await RaftLogStore.open(dir, { segmentBytes });
  await store.save({ entries: [entry(1, 1)] });
  for (let commit = 1; commit <= 60; commit++) {
    await store.save({
      hardState: { term: term(1), vote: nodeId(1), commit: logIndex(commit) },
      sync: false,
    });
  }
  await store.close();
  const { store: again, loaded } = await RaftLogStore.open(dir, { segmentBytes });
  assert.deepEqual(loaded.hardState, { term: 1, vote: 1, commit: 60 });
  assert.ok((await segments(dir)).length >= 2, 'the deferred records started a new segment at close');
  await again.save({ hardState: { term: term(2), vote: nodeId(2), commit: logIndex(1) }, sync: false });
  await again.save({ entries: [entry(2, 2)] });
  await again.close();
  const third = await RaftLogStore.open(dir, { segmentBytes });
  await third.store.close();
  assert.deepEqual(third.loaded.hardState, { term: 2, vote: 2, commit: 1 });
  assert.deepEqual(summary(third.loaded.entries), ['1:1:e1t1', '2:2:e2t2']);
});
