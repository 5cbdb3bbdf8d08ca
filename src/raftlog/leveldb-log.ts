// The Raft log as Stoa kept it before the segment WAL (src/raftlog/store.ts): LevelDB, format 1. It stays so that
// a data dir written by an older version is migrated on first open (LevelDbRaftLog.open reads it with this class),
// and so that the micro bench (bench/raftlog.ts) can compare the two. Nothing new is written in this format.
//
// Persistence of the Raft log in LevelDB: entries, hard state, the latest snapshot, and the node's identity.
//
// The node calls save() with what a Ready asks to persist and awaits it BEFORE it sends that Ready's messages:
// save() resolves only once one LevelDB batch holding all of it is written with sync (fsync). Every record
// carries a CRC32; a record that fails it makes open() fail with `Corrupt`, naming the directory and key.
//
// Layout (keys are bytes):
//   "f"             format record {format}
//   "i"             identity {clusterId, nodeId, name}: a node never joins another cluster with the same data dir
//   "h"             hard state {term, vote, commit}
//   "s"             latest snapshot {index, term, confState, data}
//   "e" + u64 BE    entry {term, type, data} at that index
// Invariant: the entries stored are exactly (snapshot.index, lastIndex], contiguous.

import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { crc32 } from 'node:zlib';
import { mkdir } from 'node:fs/promises';
import type { LogIndex } from '../util/brand.js';
import { logIndex, nodeId, term } from '../util/brand.js';
import { assert } from '../util/assert.js';
import { StorageError } from '../storage/contract.js';
import type { LoadedLog, NodeIdentity, PersistedEntry, PersistedSnapshot, SaveRequest } from './types.js';
import { appendStart } from './types.js';

/** The format this code writes; a directory with a higher one is refused. */
export const levelDbRaftLogFormat = 1;

const formatKey = Buffer.from('f');
const identityKey = Buffer.from('i');
const hardStateKey = Buffer.from('h');
const snapshotKey = Buffer.from('s');
const entryPrefix = 0x65; // 'e'

function entryKey(index: number): Buffer {
  const key = Buffer.alloc(9);
  key[0] = entryPrefix;
  key.writeBigUInt64BE(BigInt(index), 1);
  return key;
}

const packr = new Packr({ useRecords: false, moreTypes: false });

/** msgpack payload followed by the CRC32 of the payload (4 bytes, big endian). */
function encodeRecord(value: unknown): Buffer {
  const payload = packr.pack(value);
  const record = Buffer.alloc(payload.length + 4);
  payload.copy(record, 0);
  record.writeUInt32BE(crc32(payload), payload.length);
  return record;
}

export class LevelDbRaftLog {
  private lastIndex: LogIndex;
  private snapshotIndex: LogIndex;
  private saving: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    readonly dir: string,
    loaded: LoadedLog,
  ) {
    this.snapshotIndex = loaded.snapshot?.metadata.index ?? logIndex(0);
    this.lastIndex = loaded.entries.at(-1)?.index ?? this.snapshotIndex;
  }

  /** Opens (creating if needed) and reads everything back, checking format and checksums. */
  static async open(dir: string): Promise<{ store: LevelDbRaftLog; loaded: LoadedLog }> {
    await mkdir(dir, { recursive: true });
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    try {
      await db.open();
    } catch (error) {
      const cause = (error as { cause?: Error }).cause?.message ?? '';
      if (/lock/i.test(cause)) {
        throw new StorageError(
          'Unavailable',
          `raft log ${dir} is in use by another process (its LevelDB lock is held)`,
        );
      }
      throw error;
    }
    try {
      const loaded = await LevelDbRaftLog.load(db, dir);
      return { store: new LevelDbRaftLog(db, dir, loaded), loaded };
    } catch (error) {
      await db.close();
      throw error;
    }
  }

  private static decode(dir: string, key: Buffer, record: Buffer): unknown {
    if (record.length < 4) throw corrupt(dir, key, 'record too short');
    const payload = record.subarray(0, record.length - 4);
    if (crc32(payload) !== record.readUInt32BE(record.length - 4))
      throw corrupt(dir, key, 'checksum mismatch');
    try {
      return packr.unpack(payload);
    } catch (error) {
      throw corrupt(dir, key, `undecodable (${(error as Error).message})`);
    }
  }

  private static async load(db: ClassicLevel<Buffer, Buffer>, dir: string): Promise<LoadedLog> {
    const read = async (key: Buffer): Promise<unknown> => {
      const record = await db.get(key);
      return record === undefined ? undefined : LevelDbRaftLog.decode(dir, key, record);
    };
    const format = (await read(formatKey)) as { format: number } | undefined;
    if (format === undefined) {
      await db.put(formatKey, encodeRecord({ format: levelDbRaftLogFormat }), { sync: true });
    } else if (format.format > levelDbRaftLogFormat) {
      throw new StorageError(
        'UnsupportedFormat',
        `raft log ${dir} was written in format ${format.format}; this version of Stoa reads format ${levelDbRaftLogFormat} and older`,
      );
    }
    const identity = (await read(identityKey)) as
      { clusterId: string; nodeId: number; name: string } | undefined;
    const hard = (await read(hardStateKey)) as { term: number; vote: number; commit: number } | undefined;
    const snap = (await read(snapshotKey)) as
      { index: number; term: number; voters: number[]; learners: number[]; data: Uint8Array } | undefined;
    const snapshot: PersistedSnapshot | undefined =
      snap === undefined
        ? undefined
        : {
            metadata: {
              index: logIndex(snap.index),
              term: term(snap.term),
              confState: { voters: snap.voters.map(nodeId), learners: snap.learners.map(nodeId) },
            },
            data: snap.data,
          };
    const entries: PersistedEntry[] = [];
    let expected = (snapshot?.metadata.index ?? 0) + 1;
    for await (const [key, record] of db.iterator({ gt: entryKey(0), lt: Buffer.from([entryPrefix + 1]) })) {
      const index = Number(key.readBigUInt64BE(1));
      if (index < expected && entries.length === 0) continue; // compacted away in the same batch as the snapshot
      if (index !== expected) throw corrupt(dir, key, `log gap: expected entry ${expected}, found ${index}`);
      const value = LevelDbRaftLog.decode(dir, key, record) as {
        term: number;
        type: 'normal' | 'confChange';
        data: Uint8Array;
      };
      entries.push({ term: term(value.term), index: logIndex(index), type: value.type, data: value.data });
      expected++;
    }
    return {
      identity:
        identity === undefined
          ? undefined
          : { clusterId: identity.clusterId, nodeId: nodeId(identity.nodeId), name: identity.name },
      hardState:
        hard === undefined
          ? { term: term(0), vote: nodeId(0), commit: logIndex(0) }
          : { term: term(hard.term), vote: nodeId(hard.vote), commit: logIndex(hard.commit) },
      snapshot,
      entries,
    };
  }

  /** Records who this node is; written once, when the node first starts. */
  async saveIdentity(identity: NodeIdentity): Promise<void> {
    await this.db.put(identityKey, encodeRecord({ ...identity }), { sync: true });
  }

  /**
   * Persists a Ready's hard state, entries and snapshot in one synced batch. Calls are serialized: each one
   * starts after the previous one is durable, so the log on disk always has the order the core produced.
   */
  save(request: SaveRequest): Promise<void> {
    const run = this.saving.then(() => this.write(request));
    this.saving = run.catch(() => undefined);
    return run;
  }

  private async write(request: SaveRequest): Promise<void> {
    const batch = this.db.batch();
    let lastIndex = this.lastIndex;
    let snapshotIndex = this.snapshotIndex;
    if (request.snapshot !== undefined) {
      const { metadata, data } = request.snapshot;
      batch.put(snapshotKey, snapshotRecord(metadata, data));
      // A snapshot from the leader replaces the log: drop every entry we hold.
      for (let index = snapshotIndex + 1; index <= lastIndex; index++) batch.del(entryKey(index));
      snapshotIndex = metadata.index;
      lastIndex = metadata.index;
    }
    const entries = request.entries ?? [];
    if (entries.length > 0) {
      const first = appendStart(entries, snapshotIndex, lastIndex);
      entries.forEach((entry) => {
        batch.put(
          entryKey(entry.index),
          encodeRecord({ term: entry.term, type: entry.type, data: entry.data }),
        );
      });
      const newLast = first + entries.length - 1;
      for (let index = newLast + 1; index <= lastIndex; index++) batch.del(entryKey(index)); // conflicting suffix
      lastIndex = logIndex(newLast);
    }
    if (request.hardState !== undefined) {
      const { term: hardTerm, vote, commit } = request.hardState;
      batch.put(hardStateKey, encodeRecord({ term: hardTerm, vote, commit }));
    }
    if (batch.length === 0) {
      await batch.close();
      return;
    }
    await batch.write({ sync: request.sync ?? true });
    this.lastIndex = lastIndex;
    this.snapshotIndex = snapshotIndex;
  }

  /**
   * Records a snapshot this node took of its own state at `snapshot.metadata.index` and drops the entries up to
   * `compactTo` (<= that index; keeping some lets slow followers catch up from the log instead of a snapshot).
   */
  saveOwnSnapshot(snapshot: PersistedSnapshot, compactTo: LogIndex): Promise<void> {
    const run = this.saving.then(async () => {
      const { metadata, data } = snapshot;
      assert(compactTo <= metadata.index && metadata.index <= this.lastIndex, 'snapshot beyond the log');
      const batch = this.db.batch();
      batch.put(snapshotKey, snapshotRecord(metadata, data));
      for (let index = this.snapshotIndex + 1; index <= compactTo; index++) batch.del(entryKey(index));
      await batch.write({ sync: true });
      // Entries between compactTo and the snapshot's index stay on disk and are skipped at load.
      this.snapshotIndex = metadata.index;
    });
    this.saving = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.saving;
    await this.db.close();
  }
}

function snapshotRecord(metadata: PersistedSnapshot['metadata'], data: Uint8Array): Buffer {
  const { index, term: snapshotTerm, confState } = metadata;
  return encodeRecord({
    index,
    term: snapshotTerm,
    voters: confState.voters,
    learners: confState.learners,
    data,
  });
}

function corrupt(dir: string, key: Buffer, why: string): StorageError {
  return new StorageError(
    'Corrupt',
    `raft log ${dir}: record ${JSON.stringify(key.toString('latin1'))} is corrupt: ${why}`,
  );
}
