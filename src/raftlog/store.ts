// Persistence of the Raft log: a segment write-ahead log of our own (etcd's wal package is the model).
//
// The node calls save() with what a Ready asks to persist and awaits it BEFORE it sends that Ready's messages:
// save() resolves only once the records holding all of it are durable: ONE write on a file opened with O_DSYNC
// (measured no slower than write + fdatasync here, and one thread-pool round trip instead of two). A save with
// `sync: false` (a commit-index-only hard state) is not written at once: its records go out with the next synced
// write, or at close; a crash may lose it, as it may lose any unsynced write. Calls are serialized in order.
//
// Layout: <dir>/<seq:16 hex>-<firstIndex:16 hex>.wal, segments of `segmentBytes` (16 MiB), preallocated with
// zeros by a background step before they are needed (`next.tmp`). Segment N+1 is started when N is full; its
// name carries the index its entries start at. Each segment begins with the state needed to read it alone
// (header with the format, identity, hard state, snapshot), so that once an own snapshot's compaction point
// covers every entry of the older segments, they are unlinked (never the last one), in the background.
//
// Record: u32 LE length (of type + payload, >= 1) | u32 LE CRC32 | u8 type | msgpack payload. The CRC covers type
// and payload, seeded with the previous record's stored CRC (the header's seed is 0): records are chained, so a
// record that fails its CRC but is followed by one that checks against it is damage, not a torn write. The last
// record of each write (one save) has the type's high bit set: a write counts only once its last record is read,
// so a save torn half way (say its entries but not its hard state) is dropped whole.
// A zero length marks the end of the written part (the rest of the segment is still zeros).
//
// Recovery (open): segments are read in order and replayed; an entry record truncates whatever follows its
// index (Raft's conflicting suffix), a snapshot from the leader clears the log, an own snapshot moves the
// compaction point. In the LAST segment a torn tail (an incomplete record, a bad CRC that nothing valid
// follows, garbage after the end) is cut off and zeroed: it is a write that crashed before its fdatasync, so it
// was never acknowledged. A bad record followed by a valid one, or any bad record in an earlier segment, is
// `StorageError('Corrupt')` naming the file and offset. After load, the entries are exactly
// (snapshot.index, lastIndex], contiguous.
//
// Locking: a directory is open at most once per process (checked here); across processes the replicated engine
// opens its MVCC LevelDB first, whose LOCK guards the whole data dir.
//
// Migration: a data dir with the LevelDB log of earlier versions (`legacyDir`, format 1) is converted on first
// open: read with src/raftlog/leveldb-log.ts, written as one segment into `<dir>.tmp`, fsynced, renamed to
// `<dir>` (the commit point), then the old directory is removed. A crash at any step leaves a readable data dir.

import { Packr } from 'msgpackr';
import { crc32 } from 'node:zlib';
import { constants, writeSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { LogIndex } from '../util/brand.js';
import { logIndex, nodeId, term } from '../util/brand.js';
import { assert, unreachable } from '../util/assert.js';
import { StorageError } from '../storage/contract.js';
import type {
  LoadedLog,
  NodeIdentity,
  PersistedEntry,
  PersistedHardState,
  PersistedSnapshot,
  SaveRequest,
} from './types.js';
import { appendStart } from './types.js';
import { LevelDbRaftLog } from './leveldb-log.js';

export type {
  LoadedLog,
  NodeIdentity,
  PersistedConfState,
  PersistedEntry,
  PersistedHardState,
  PersistedSnapshot,
  SaveRequest,
} from './types.js';

/** The format this code writes (1 was the LevelDB log); a directory with a higher one is refused. */
export const raftLogFormat = 2;

/** The default segment size (etcd uses 64 MB; ours is smaller as every member on one machine preallocates). */
export const defaultSegmentBytes = 16 * 1024 * 1024;

export interface RaftLogOptions {
  /** Segment size; a segment is started when the next records would not fit (tests use a few KiB). */
  readonly segmentBytes?: number;
  /** The directory of the LevelDB log of earlier versions, migrated on first open when it exists. */
  readonly legacyDir?: string;
  /**
   * Write with a synchronous call on the event loop instead of through the thread pool (default: the
   * environment variable STOA_RAFTLOG_SYNC_IO=1; off). Blocks the loop for the fsync; saves a pool round trip.
   */
  readonly syncIo?: boolean;
  /** Tests only: stop the migration after this step, as a crash there would. */
  readonly migrationCrashAfter?: 'written' | 'renamed';
}

/** Record types (the byte after the CRC). */
export const RecordType = { header: 1, identity: 2, hardState: 3, snapshot: 4, entry: 5 } as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];
const recordTypes: ReadonlySet<number> = new Set(Object.values(RecordType));

const recordHeaderBytes = 9;
/** Set in the type byte of the last record of a write. */
const batchEnd = 0x80;
const packr = new Packr({ useRecords: false, moreTypes: false });
const segmentPattern = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;
const nextSegmentName = 'next.tmp';
/** The segment being appended to: every write is durable when it returns (one call instead of write + fdatasync). */
const segmentFlags = constants.O_RDWR | constants.O_DSYNC;

const hex16 = (n: number): string => n.toString(16).padStart(16, '0');
const segmentName = (seq: number, firstIndex: number): string => `${hex16(seq)}-${hex16(firstIndex)}.wal`;

/** One record, chained on `prevCrc`; returns the record and its CRC (the next record's seed). Exported for tests. */
export function encodeWalRecord(
  type: RecordType,
  value: unknown,
  prevCrc: number,
  lastOfWrite = false,
): { bytes: Buffer; crc: number } {
  const payload = packr.pack(value);
  const bytes = Buffer.allocUnsafe(recordHeaderBytes + payload.length);
  bytes.writeUInt32LE(payload.length + 1, 0);
  bytes[8] = lastOfWrite ? type | batchEnd : type;
  payload.copy(bytes, recordHeaderBytes);
  const crc = crc32(bytes.subarray(8), prevCrc);
  bytes.writeUInt32LE(crc, 4);
  return { bytes, crc };
}

/**
 * Accumulates the records of one write (one save). Its last record carries `batchEnd` in its type byte: replay
 * applies a save's records only once it has read that one, so a save torn half way is dropped as a whole.
 */
class RecordWriter {
  readonly parts: Buffer[] = [];
  length = 0;
  private seedOfLast = 0;
  constructor(public crc: number) {}
  add(type: RecordType, value: unknown): void {
    const { bytes, crc } = encodeWalRecord(type, value, this.crc);
    this.parts.push(bytes);
    this.length += bytes.length;
    this.seedOfLast = this.crc;
    this.crc = crc;
  }
  /** Marks the last record as the end of the batch (before the bytes are written). */
  finish(): this {
    const last = this.parts.at(-1);
    if (last !== undefined && ((last[8] ?? 0) & batchEnd) === 0) {
      last[8] = (last[8] ?? 0) | batchEnd;
      this.crc = crc32(last.subarray(8), this.seedOfLast);
      last.writeUInt32LE(this.crc, 4);
    }
    return this;
  }
  /** Appends the (finished) records of a later write. */
  absorb(later: RecordWriter): void {
    this.parts.push(...later.parts);
    this.length += later.length;
    this.crc = later.crc;
  }
  bytes(): Buffer {
    return this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.length);
  }
}

const entryValue = (e: PersistedEntry): unknown => [e.index, e.term, e.type === 'normal' ? 0 : 1, e.data];
const hardStateValue = (h: PersistedHardState): unknown => [h.term, h.vote, h.commit];
const identityValue = (i: NodeIdentity): unknown => ({
  clusterId: i.clusterId,
  nodeId: i.nodeId,
  name: i.name,
});
function snapshotValue(snapshot: PersistedSnapshot, replace: boolean): unknown {
  const { index, term: snapshotTerm, confState } = snapshot.metadata;
  return {
    index,
    term: snapshotTerm,
    voters: confState.voters,
    learners: confState.learners,
    data: snapshot.data,
    replace,
  };
}

interface Segment {
  readonly seq: number;
  readonly firstIndex: number;
  readonly path: string;
}

/** What replaying the segments produced. */
interface Replayed {
  identity: NodeIdentity | undefined;
  hardState: PersistedHardState;
  snapshot: PersistedSnapshot | undefined;
  entries: PersistedEntry[];
  /** Index of entries[0] (meaningful when entries is not empty). */
  first: number;
}

const openDirs = new Set<string>();

export class RaftLogStore {
  private saving: Promise<void> = Promise.resolve();
  private background: Promise<void> = Promise.resolve();
  private preparing: Promise<void> | undefined;
  private closed = false;
  /** Records of saves with `sync: false`, not written yet (they go with the next synced write). */
  private deferred: RecordWriter | undefined;
  /** Where the current segment's header ends. */
  private segmentStart = 0;

  private constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
    private readonly syncIo: boolean,
    private readonly segments: Segment[],
    private file: FileHandle,
    private offset: number,
    private crc: number,
    private identity: NodeIdentity | undefined,
    private hardState: PersistedHardState,
    private snapshot: PersistedSnapshot | undefined,
    private lastIndex: LogIndex,
  ) {}

  private get snapshotIndex(): LogIndex {
    return this.snapshot?.metadata.index ?? logIndex(0);
  }

  /** Opens (creating, or migrating the LevelDB log, if needed) and reads everything back. */
  static async open(
    dir: string,
    options: RaftLogOptions = {},
  ): Promise<{ store: RaftLogStore; loaded: LoadedLog }> {
    const key = resolve(dir);
    if (openDirs.has(key)) {
      throw new StorageError('Unavailable', `raft log ${dir} is in use (this process holds its lock)`);
    }
    openDirs.add(key);
    try {
      const segmentBytes = options.segmentBytes ?? defaultSegmentBytes;
      assert(segmentBytes >= 512, 'segments of at least 512 bytes');
      await RaftLogStore.migrate(dir, segmentBytes, options);
      await mkdir(dir, { recursive: true });
      return await RaftLogStore.load(
        dir,
        segmentBytes,
        options.syncIo ?? process.env['STOA_RAFTLOG_SYNC_IO'] === '1',
      );
    } catch (error) {
      openDirs.delete(key);
      throw error;
    }
  }

  // ---- Migration from the LevelDB log -------------------------------------------------------------------

  private static async migrate(dir: string, segmentBytes: number, options: RaftLogOptions): Promise<void> {
    const legacy = options.legacyDir;
    if (legacy === undefined || !(await exists(legacy))) return;
    if (await exists(dir)) {
      // Renamed into place before a crash: the WAL is the log; finish by removing the old one.
      await rm(legacy, { recursive: true, force: true });
      await fsyncDir(dirname(legacy));
      return;
    }
    const temp = `${dir}.tmp`;
    await rm(temp, { recursive: true, force: true });
    const { store: old, loaded } = await LevelDbRaftLog.open(legacy);
    await old.close();
    await mkdir(temp, { recursive: true });
    const firstIndex = (loaded.snapshot?.metadata.index ?? 0) + 1;
    const writer = new RecordWriter(0);
    RaftLogStore.writeHeader(writer, 0, firstIndex, loaded);
    for (const entry of loaded.entries) writer.add(RecordType.entry, entryValue(entry));
    writer.finish();
    const name = segmentName(0, firstIndex);
    await writeZeros(join(temp, name), Math.max(segmentBytes, writer.length));
    const file = await open(join(temp, name), 'r+');
    try {
      await file.write(writer.bytes(), 0, writer.length, 0);
      await file.datasync();
    } finally {
      await file.close();
    }
    await fsyncDir(temp);
    if (options.migrationCrashAfter === 'written')
      throw new Error('simulated crash after the WAL was written');
    await rename(temp, dir);
    await fsyncDir(dirname(dir));
    if (options.migrationCrashAfter === 'renamed') throw new Error('simulated crash after the rename');
    await rm(legacy, { recursive: true, force: true });
    await fsyncDir(dirname(legacy));
  }

  // ---- Reading ------------------------------------------------------------------------------------------

  private static async load(
    dir: string,
    segmentBytes: number,
    syncIo: boolean,
  ): Promise<{ store: RaftLogStore; loaded: LoadedLog }> {
    const segments: Segment[] = [];
    for (const name of (await readdir(dir)).sort()) {
      const match = segmentPattern.exec(name);
      if (match === null) {
        if (name === nextSegmentName) await unlink(join(dir, name)); // prepared, never used: prepared again
        continue;
      }
      segments.push({
        seq: parseInt(match[1] as string, 16),
        firstIndex: parseInt(match[2] as string, 16),
        path: join(dir, name),
      });
    }
    segments.forEach((segment, i) => {
      const first = segments[0] as Segment;
      if (segment.seq !== first.seq + i) {
        throw new StorageError(
          'Corrupt',
          `raft log ${dir}: segment ${basename(segment.path)} is out of sequence`,
        );
      }
    });
    const state: Replayed = {
      identity: undefined,
      hardState: { term: term(0), vote: nodeId(0), commit: logIndex(0) },
      snapshot: undefined,
      entries: [],
      first: 0,
    };
    let offset = 0;
    let crc = 0;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i] as Segment;
      const last = i === segments.length - 1;
      const read = await RaftLogStore.replaySegment(segment, last, state);
      if (last && read.end === 0) {
        // A segment started by a crash before its first record was written holds nothing: drop it, and append
        // to the one before (read in full above, its end intact: it was synced before this one was started).
        await unlink(segment.path);
        await fsyncDir(dir);
        segments.pop();
        break;
      }
      offset = read.end;
      crc = read.crc;
    }
    // Entries at or below the snapshot are covered by it.
    const snapshotIndex = state.snapshot?.metadata.index ?? 0;
    let entries = state.entries;
    if (entries.length > 0 && state.first <= snapshotIndex) {
      entries = entries.slice(Math.min(entries.length, snapshotIndex - state.first + 1));
    }
    const firstLoaded = entries[0];
    if (firstLoaded !== undefined && firstLoaded.index !== snapshotIndex + 1) {
      throw new StorageError(
        'Corrupt',
        `raft log ${dir}: log gap: the snapshot is at ${snapshotIndex} but the entries start at ${firstLoaded.index}`,
      );
    }
    const lastIndex = logIndex(entries.at(-1)?.index ?? snapshotIndex);
    const loaded: LoadedLog = {
      identity: state.identity,
      hardState: state.hardState,
      snapshot: state.snapshot,
      entries,
    };
    let file: FileHandle;
    let headerEnd = 0;
    if (segments.length === 0) {
      // A new log: its first segment.
      const segment: Segment = {
        seq: 0,
        firstIndex: lastIndex + 1,
        path: join(dir, segmentName(0, lastIndex + 1)),
      };
      await writeZeros(segment.path, segmentBytes);
      file = await open(segment.path, segmentFlags);
      const writer = new RecordWriter(0);
      RaftLogStore.writeHeader(writer, 0, segment.firstIndex, loaded);
      writer.finish();
      await file.write(writer.bytes(), 0, writer.length, 0);
      await fsyncDir(dir);
      segments.push(segment);
      offset = writer.length;
      crc = writer.crc;
      headerEnd = writer.length;
    } else {
      file = await open((segments.at(-1) as Segment).path, segmentFlags);
    }
    const store = new RaftLogStore(
      dir,
      segmentBytes,
      syncIo,
      segments,
      file,
      offset,
      crc,
      state.identity,
      state.hardState,
      state.snapshot,
      lastIndex,
    );
    store.segmentStart = headerEnd;
    store.maybePrepare();
    return { store, loaded };
  }

  /**
   * Replays one segment into `state`; returns where its written part ends and the last record's CRC. A torn
   * tail of the last segment is zeroed on disk.
   */
  private static async replaySegment(
    segment: Segment,
    last: boolean,
    state: Replayed,
  ): Promise<{ end: number; crc: number }> {
    const data = await readFile(segment.path);
    const name = segment.path;
    const corrupt = (offset: number, why: string): StorageError =>
      new StorageError('Corrupt', `raft log segment ${name} is corrupt at offset ${offset}: ${why}`);
    /** The record at `offset` chained on `seed`, if it is complete and its CRC checks. */
    const validAt = (offset: number, seed: number): { length: number; crc: number } | undefined => {
      if (offset + recordHeaderBytes > data.length) return undefined;
      const length = data.readUInt32LE(offset);
      if (length === 0 || offset + 8 + length > data.length) return undefined;
      const stored = data.readUInt32LE(offset + 4);
      return crc32(data.subarray(offset + 8, offset + 8 + length), seed) === stored
        ? { length: 8 + length, crc: stored }
        : undefined;
    };
    let offset = 0;
    let crc = 0;
    let records = 0;
    let torn: string | undefined;
    // Records of the write being read, applied once its last one is read; where the last complete write ends.
    let pending: { type: RecordType; value: unknown; offset: number }[] = [];
    let committedEnd = 0;
    let committedCrc = 0;
    while (offset < data.length) {
      if (offset + 4 > data.length) {
        if (data.subarray(offset).some((b) => b !== 0)) torn = 'an incomplete record header';
        break;
      }
      const length = data.readUInt32LE(offset);
      if (length === 0) {
        // The end of what was written, unless non-zero bytes follow (a torn write that hit later pages first).
        if (!isZero(data, offset)) torn = 'non-zero bytes after the end of the records';
        break;
      }
      if (offset + recordHeaderBytes > data.length || offset + 8 + length > data.length) {
        torn = 'an incomplete record';
        break;
      }
      const stored = data.readUInt32LE(offset + 4);
      const body = data.subarray(offset + 8, offset + 8 + length);
      if (crc32(body, crc) !== stored) {
        // Damage if a valid record follows it (the chain continues from its stored CRC); a torn write otherwise.
        if (!last || validAt(offset + 8 + length, stored) !== undefined)
          throw corrupt(offset, 'checksum mismatch');
        torn = 'a record that fails its checksum';
        break;
      }
      let value: unknown;
      try {
        value = packr.unpack(body.subarray(1));
      } catch (error) {
        throw corrupt(offset, `undecodable record (${(error as Error).message})`);
      }
      const type = (body[0] ?? 0) & ~batchEnd;
      if (!recordTypes.has(type)) throw corrupt(offset, `unknown record type ${type}`);
      if (records === 0 && type !== RecordType.header) {
        throw corrupt(offset, 'the segment does not start with a header');
      }
      pending.push({ type: type as RecordType, value, offset });
      crc = stored;
      offset += 8 + length;
      records++;
      if (((body[0] ?? 0) & batchEnd) !== 0) {
        for (const record of pending) RaftLogStore.apply(state, record.type, record.value, segment);
        pending = [];
        committedEnd = offset;
        committedCrc = crc;
      }
    }
    if (pending.length > 0) {
      // A write whose last record is missing: torn in the last segment (cut at its start), damage elsewhere.
      torn ??= 'a write whose last record is missing';
      offset = committedEnd;
    }
    if (torn !== undefined) offset = committedEnd;
    crc = committedCrc;
    if (torn !== undefined) {
      if (!last) throw corrupt(offset, torn);
      // A write that crashed before its fdatasync returned: never acknowledged. Zero it so that appends resume here.
      const file = await open(segment.path, 'r+');
      try {
        const zeros = Buffer.alloc(Math.min(1 << 20, data.length - offset));
        for (let at = offset; at < data.length; at += zeros.length) {
          await file.write(zeros, 0, Math.min(zeros.length, data.length - at), at);
        }
        await file.datasync();
      } finally {
        await file.close();
      }
    }
    return { end: committedEnd, crc: committedCrc };
  }

  private static apply(state: Replayed, type: RecordType, value: unknown, segment: Segment): void {
    switch (type) {
      case RecordType.header: {
        const header = value as { format: number; seq: number };
        if (header.format > raftLogFormat) {
          throw new StorageError(
            'UnsupportedFormat',
            `raft log ${dirname(segment.path)} was written in format ${header.format}; this version of Stoa reads format ${raftLogFormat} and older`,
          );
        }
        if (header.seq !== segment.seq) {
          throw new StorageError(
            'Corrupt',
            `raft log segment ${segment.path} says it is segment ${header.seq}, not ${segment.seq}`,
          );
        }
        return;
      }
      case RecordType.identity: {
        const id = value as { clusterId: string; nodeId: number; name: string };
        state.identity = { clusterId: id.clusterId, nodeId: nodeId(id.nodeId), name: id.name };
        return;
      }
      case RecordType.hardState: {
        const [t, vote, commit] = value as [number, number, number];
        state.hardState = { term: term(t), vote: nodeId(vote), commit: logIndex(commit) };
        return;
      }
      case RecordType.snapshot: {
        const s = value as {
          index: number;
          term: number;
          voters: number[];
          learners: number[];
          data: Uint8Array;
          replace: boolean;
        };
        state.snapshot = {
          metadata: {
            index: logIndex(s.index),
            term: term(s.term),
            confState: { voters: s.voters.map(nodeId), learners: s.learners.map(nodeId) },
          },
          data: s.data,
        };
        if (s.replace) state.entries = []; // a snapshot from the leader replaces the log
        return;
      }
      case RecordType.entry: {
        const [index, entryTerm, kind, data] = value as [number, number, number, Uint8Array];
        const entry: PersistedEntry = {
          index: logIndex(index),
          term: term(entryTerm),
          type: kind === 0 ? 'normal' : 'confChange',
          data,
        };
        const entries = state.entries;
        const next = state.first + entries.length;
        if (entries.length > 0 && index >= state.first && index <= next) {
          entries.length = index - state.first; // a conflicting suffix from here on is replaced
          entries.push(entry);
        } else {
          // The first entry read, one below all we hold (everything is replaced), or one after older segments
          // that were removed (the snapshot read later must cover the gap; checked at the end).
          state.entries = [entry];
          state.first = index;
        }
        return;
      }
      default:
        unreachable(type);
    }
  }

  private static writeHeader(
    writer: RecordWriter,
    seq: number,
    firstIndex: number,
    state: {
      identity: NodeIdentity | undefined;
      hardState: PersistedHardState;
      snapshot: PersistedSnapshot | undefined;
    },
  ): void {
    writer.add(RecordType.header, { format: raftLogFormat, seq, firstIndex });
    if (state.identity !== undefined) writer.add(RecordType.identity, identityValue(state.identity));
    writer.add(RecordType.hardState, hardStateValue(state.hardState));
    if (state.snapshot !== undefined) writer.add(RecordType.snapshot, snapshotValue(state.snapshot, false));
  }

  // ---- Writing ------------------------------------------------------------------------------------------

  /** Records who this node is; written once, when the node first starts. */
  saveIdentity(identity: NodeIdentity): Promise<void> {
    return this.enqueue(async () => {
      const writer = new RecordWriter(this.crc);
      writer.add(RecordType.identity, identityValue(identity));
      await this.append(writer, true);
      this.identity = identity;
    });
  }

  /**
   * Persists a Ready's hard state, entries and snapshot in one durable write (deferred if `sync: false`). Calls
   * are serialized: each one starts after the previous one is durable, so the log has the order the core produced.
   */
  save(request: SaveRequest): Promise<void> {
    return this.enqueue(() => this.write(request));
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError('Closed', `raft log ${this.dir} is closed`));
    const run = this.saving.then(step);
    this.saving = run.catch(() => undefined);
    return run;
  }

  private async write(request: SaveRequest): Promise<void> {
    const writer = new RecordWriter(this.crc);
    let lastIndex = this.lastIndex;
    let snapshotIndex = this.snapshotIndex;
    if (request.snapshot !== undefined) {
      writer.add(RecordType.snapshot, snapshotValue(request.snapshot, true));
      snapshotIndex = request.snapshot.metadata.index;
      lastIndex = snapshotIndex;
    }
    const entries = request.entries ?? [];
    if (entries.length > 0) {
      const first = appendStart(entries, snapshotIndex, lastIndex);
      for (const entry of entries) writer.add(RecordType.entry, entryValue(entry));
      lastIndex = logIndex(first + entries.length - 1);
    }
    if (request.hardState !== undefined) writer.add(RecordType.hardState, hardStateValue(request.hardState));
    if (writer.length === 0) return;
    await this.append(writer, request.sync ?? true);
    this.lastIndex = lastIndex;
    if (request.snapshot !== undefined) this.snapshot = request.snapshot;
    if (request.hardState !== undefined) this.hardState = request.hardState;
  }

  /**
   * Records a snapshot this node took of its own state at `snapshot.metadata.index`; entries up to `compactTo`
   * (<= that index; keeping some lets slow followers catch up from the log instead of a snapshot) may go: the
   * older segments that hold only such entries are unlinked in the background.
   */
  saveOwnSnapshot(snapshot: PersistedSnapshot, compactTo: LogIndex): Promise<void> {
    return this.enqueue(async () => {
      const { metadata } = snapshot;
      assert(compactTo <= metadata.index && metadata.index <= this.lastIndex, 'snapshot beyond the log');
      const writer = new RecordWriter(this.crc);
      writer.add(RecordType.snapshot, snapshotValue(snapshot, false));
      await this.append(writer, true);
      this.snapshot = snapshot;
      this.removeSegmentsUpTo(compactTo);
    });
  }

  /** Writes the records at the end of the current segment, starting a new segment first if they do not fit. */
  private async append(writer: RecordWriter, sync: boolean): Promise<void> {
    writer.finish();
    if (!sync) {
      // Nothing is promised about it: it goes out with the next synced write (or at close), in one write.
      if (this.deferred === undefined) this.deferred = writer;
      else this.deferred.absorb(writer);
      this.crc = writer.crc;
      return;
    }
    if (this.deferred !== undefined) {
      this.deferred.absorb(writer);
      writer = this.deferred;
      this.deferred = undefined;
    }
    await this.writeOut(writer);
  }

  /** One write (the segment is open with O_DSYNC: durable when it returns), after a rotation if needed. */
  private async writeOut(writer: RecordWriter): Promise<void> {
    let rotated = false;
    // A batch larger than a segment goes into the current one if it holds nothing else (the file grows).
    if (this.offset + writer.length > this.segmentBytes && this.offset > this.segmentStart) {
      await this.rotate(writer);
      rotated = true;
    }
    const bytes = writer.bytes();
    if (this.syncIo) writeSync(this.file.fd, bytes, 0, bytes.length, this.offset);
    else await this.file.write(bytes, 0, bytes.length, this.offset);
    if (rotated) await fsyncDir(this.dir);
    this.offset += bytes.length;
    this.crc = writer.crc;
    this.maybePrepare();
  }

  /**
   * Starts the next segment: the prepared file is renamed into place and the records of `writer` are re-chained
   * after its header (the state as of now: the records being written come after it).
   */
  private async rotate(writer: RecordWriter): Promise<void> {
    const current = this.segments.at(-1) as Segment;
    const seq = current.seq + 1;
    const firstIndex = this.lastIndex + 1;
    const path = join(this.dir, segmentName(seq, firstIndex));
    if (this.preparing === undefined) this.maybePrepare(true);
    await this.preparing;
    await rename(join(this.dir, nextSegmentName), path);
    this.preparing = undefined;
    const file = await open(path, segmentFlags);
    const header = new RecordWriter(0);
    RaftLogStore.writeHeader(header, seq, firstIndex, {
      identity: this.identity,
      hardState: this.hardState,
      snapshot: this.snapshot,
    });
    header.finish();
    const old = this.file;
    this.file = file;
    this.segments.push({ seq, firstIndex, path });
    this.offset = 0;
    // The pending records follow the header: re-chain their CRCs on it.
    let crc = header.crc;
    for (const record of writer.parts) {
      crc = crc32(record.subarray(8), crc);
      record.writeUInt32LE(crc, 4);
    }
    writer.parts.unshift(...header.parts);
    writer.length += header.length;
    writer.crc = crc;
    this.segmentStart = header.length;
    await old.close();
  }

  /** Prepares (zero-fills) the next segment in the background once the current one is half full. */
  private maybePrepare(now = false): void {
    if (this.preparing !== undefined) return;
    if (!now && (this.closed || this.offset < this.segmentBytes / 2)) return;
    const path = join(this.dir, nextSegmentName);
    const run = this.background.then(() => writeZeros(path, this.segmentBytes));
    this.preparing = run;
    this.background = run.catch(() => undefined);
  }

  private removeSegmentsUpTo(compactTo: LogIndex): void {
    const removable: Segment[] = [];
    while (this.segments.length > 1 && (this.segments[1] as Segment).firstIndex - 1 <= compactTo) {
      removable.push(this.segments.shift() as Segment);
    }
    if (removable.length === 0) return;
    // Oldest first, so that a crash half way leaves a contiguous run of segments.
    const run = this.background.then(async () => {
      for (const segment of removable) await unlink(segment.path);
      await fsyncDir(this.dir);
    });
    this.background = run.catch(() => undefined);
  }

  /** The segment files, oldest first (for tests and status). */
  segmentFiles(): string[] {
    return this.segments.map((s) => s.path);
  }

  /** Resolves once background preparation and removals are done (for tests). */
  async settled(): Promise<void> {
    await this.saving;
    await this.background;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.saving;
    const deferred = this.deferred;
    this.deferred = undefined;
    if (deferred !== undefined) await this.writeOut(deferred);
    await this.background;
    await this.file.close();
    openDirs.delete(resolve(this.dir));
  }
}

function isZero(data: Buffer, from: number): boolean {
  const chunk = 64 * 1024;
  const zeros = Buffer.alloc(chunk);
  for (let at = from; at < data.length; at += chunk) {
    const end = Math.min(data.length, at + chunk);
    if (!data.subarray(at, end).equals(zeros.subarray(0, end - at))) return false;
  }
  return true;
}

/** Creates `path` (replacing it) filled with `bytes` zeros, fsynced: later writes then allocate nothing. */
async function writeZeros(path: string, bytes: number): Promise<void> {
  const file = await open(path, 'w');
  try {
    const zeros = Buffer.alloc(Math.min(bytes, 1 << 20));
    for (let at = 0; at < bytes; at += zeros.length) {
      await file.write(zeros, 0, Math.min(zeros.length, bytes - at), at);
    }
    await file.datasync();
  } finally {
    await file.close();
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
