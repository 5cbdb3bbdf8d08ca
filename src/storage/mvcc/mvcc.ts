// The deterministic MVCC state machine over LevelDB: no clock, no randomness, no ordering logic.
//
// The boundary with the engines that drive it (embedded today, replicated later):
// - `Mvcc.open(db, dataDir)` reads (or creates) the meta record and refuses a newer format.
// - A writer opens an `MvccBatch` (`mvcc.begin()`), applies txns into it one after another with
//   `mvcc.applyTxn(batch, request)` (each gets its own revision; later txns see the effects of earlier ones),
//   may add a logical compaction (`mvcc.compact`) or a physical compaction step (`mvcc.compactStep`), may add
//   ITS OWN keys to `batch.ops` (any key whose first byte is not 'm'), then calls `batch.finish()` to get every
//   op including the meta record, writes them in ONE LevelDB batch, and only AFTER that write succeeded calls
//   `mvcc.committed(batch)` (or `mvcc.abandoned(batch)` if the write failed). Exactly one writer at a time;
//   reads run concurrently from LevelDB snapshots and so never see a batch that is not written.
// - Optional: `mvcc.prefetch(batch, requests)` reads a group's keys in one call before applying it; and
//   `mvcc.begin(parent)` opens the next batch over one whose write is still in flight (pipelining), provided
//   batches are written and committed in the order they were begun.
// - Reads: `range` (any retained revision) and `readChanges` (watch catch-up) read durable state only.
// A replicated driver applies each committed Raft entry's txn with applyTxn, adds its applied index to
// `batch.ops` under its own key, and on reopen reads that key: the MVCC state and the index are always atomic.

import type { ClassicLevel } from 'classic-level';
import { revision as toRevision, type Revision } from '../../util/brand.js';
import { assert, unreachable } from '../../util/assert.js';
import {
  StorageError,
  type Compare,
  type KeySpan,
  type KeyValue,
  type RangeOptions,
  type RangeResult,
  type TxnOp,
  type TxnOpResult,
  type TxnRequest,
  type TxnResult,
  type WatchEvent,
} from '../contract.js';
import {
  changeKey,
  changePrefix,
  decodeHistory,
  decodeLatest,
  decodeRecord,
  encodeHistory,
  encodeLatest,
  encodeRecord,
  type LatestRecord,
  historyBounds,
  historyKey,
  latestKey,
  latestPrefix,
  metaKey,
  parseHistoryKey,
  prefixEnd,
  readRevisionBytes,
} from './layout.js';

/** The on-disk format this code writes; it reads this one and older ones. */
export const formatVersion = 1;

export type Db = ClassicLevel<Buffer, Buffer>;

/**
 * How an MVCC LevelDB is opened for serving. A 16 MiB memtable (LevelDB's default is 4 MiB): every write puts a
 * key's latest record and its history record, so a 4 MiB memtable fills every ~1,000 writes of 2 KiB and its
 * flushes and level-0 compactions took the CPU the writes needed. Measured on the 3-node bench (docs/benchmarks.md):
 * 64 clients x 2 KiB +24 %, follower watch p99 lower, in 4 of 4 alternating pairs. Not persisted: any size opens
 * any data dir.
 */
export function mvccDbOptions(): { keyEncoding: 'buffer'; valueEncoding: 'buffer'; writeBufferSize: number } {
  return { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: 16 * 1024 * 1024 };
}
export type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };
type Snapshot = ReturnType<Db['snapshot']>;

/**
 * Writes `ops` as ONE LevelDB batch. Through a chained batch, not `db.batch(array)`: abstract-level's array path
 * clones and re-validates every op in JavaScript before the native call, which cost about as much CPU as the
 * native write itself (a quarter of a replicated member's busy time under 64 writers; see docs/benchmarks.md,
 * "CPU per write"). Same atomicity: the chained batch is one native WriteBatch, written in one call.
 */
export function writeBatch(
  db: Db,
  ops: readonly BatchOp[],
  options: { readonly sync: boolean },
): Promise<void> {
  const chained = db.batch();
  try {
    for (const op of ops) {
      if (op.type === 'put') chained.put(op.key, op.value);
      else chained.del(op.key);
    }
  } catch (error) {
    void chained.close();
    throw error;
  }
  return chained.write({ sync: options.sync });
}

interface Meta {
  readonly formatVersion: number;
  /** invariant: compactRevision <= revision; physicalRevision <= compactRevision */
  readonly revision: number;
  /** Reads and watches below this revision fail with Compacted. */
  readonly compactRevision: number;
  /** History up to here is physically deleted; (physicalRevision, compactRevision] is still to delete. */
  readonly physicalRevision: number;
}

/** A change-log entry: 0 = put, 1 = delete; the key; the mod revision of the key's previous state (0 = none). */
type Change = [kind: 0 | 1, key: string, prevModRevision: number];

const emptyValue = Buffer.alloc(0);
/** Most point reads done synchronously in one go (more go to one asynchronous getMany). */
const syncReadsMax = 64;
/** Bytes one native iterator step may buffer (classic-level's default is 16 KiB). */
const iteratorBytesMax = 4 * 1024 * 1024;
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Pending writes of one LevelDB batch; owned by the single writer. */
export class MvccBatch {
  /** LevelDB ops so far; a driver may append its own (keys not starting with 'm'). */
  readonly ops: BatchOp[] = [];
  /** The latest state of keys written in this batch (null = deleted), over the committed state. */
  readonly latest = new Map<string, KeyValue | null>();
  /** Committed latest states read ahead by `Mvcc.prefetch` (null = absent); the committed state cannot change
   * while the batch is open, because its writer is the only one. */
  readonly committedCache = new Map<string, KeyValue | null>();
  private journal: Array<[string, KeyValue | null | undefined]> = [];
  private finished = false;
  /** Set by Mvcc.begin: counts the write as in flight until `committed` or `abandoned`. */
  onFinish: (() => void) | undefined;

  get isFinished(): boolean {
    return this.finished;
  }

  constructor(
    public revision: number,
    public compactRevision: number,
    public physicalRevision: number,
    /**
     * A batch applied before this one whose write may not have returned yet (pipelining: the next group is
     * applied while the previous one is written). Its pending writes shadow the committed state. The writer
     * MUST write batches in order, and MUST drop this link (`detach()`) once the parent is committed.
     */
    private parent: MvccBatch | undefined = undefined,
  ) {}

  /** The pending state of a key in this batch or its in-flight parent: a KeyValue, null (deleted), or undefined. */
  pending(key: string): KeyValue | null | undefined {
    const own = this.latest.get(key);
    return own !== undefined ? own : this.parent?.pending(key);
  }

  /** Every key with a pending state in this batch or its parent, with that state. */
  pendingEntries(): Map<string, KeyValue | null> {
    const entries = new Map(this.parent?.pendingEntries() ?? []);
    for (const [key, kv] of this.latest) entries.set(key, kv);
    return entries;
  }

  /** The parent is committed: its writes are now in LevelDB. */
  detach(): void {
    this.parent = undefined;
  }

  get empty(): boolean {
    return this.ops.length === 0;
  }

  setLatest(key: string, kv: KeyValue | null): void {
    this.journal.push([key, this.latest.get(key)]);
    this.latest.set(key, kv);
  }

  /** A point to roll back to if applying the next txn fails half way. */
  mark(): { ops: number; journal: number; revision: number } {
    return { ops: this.ops.length, journal: this.journal.length, revision: this.revision };
  }

  rollback(mark: { ops: number; journal: number; revision: number }): void {
    this.ops.length = mark.ops;
    while (this.journal.length > mark.journal) {
      const [key, previous] = this.journal.pop()!;
      if (previous === undefined) this.latest.delete(key);
      else this.latest.set(key, previous);
    }
    this.revision = mark.revision;
  }

  /** Every op of the batch, with the meta record last. Call once, then write them in ONE LevelDB batch. */
  finish(): BatchOp[] {
    assert(!this.finished, 'MvccBatch.finish called twice');
    this.finished = true;
    this.onFinish?.();
    const meta: Meta = {
      formatVersion,
      revision: this.revision,
      compactRevision: this.compactRevision,
      physicalRevision: this.physicalRevision,
    };
    this.ops.push({ type: 'put', key: metaKey, value: encodeRecord(metaKey, meta) });
    return this.ops;
  }
}

export interface ApplyResult {
  readonly result: TxnResult;
  /** The changes of this txn, all at `result.header.revision`, each with prevKv when the key existed. */
  readonly events: readonly WatchEvent[];
}

/** Events of one revision, as read back from the change log. */
export interface RevisionChanges {
  readonly revision: Revision;
  readonly events: readonly WatchEvent[];
}

function keyValue(key: string, record: LatestRecord): KeyValue {
  return {
    key,
    createRevision: toRevision(record.createRevision),
    modRevision: toRevision(record.modRevision),
    version: record.version,
    value: record.value,
  };
}

function compareOp(order: number, op: '=' | '!=' | '<' | '>'): boolean {
  switch (op) {
    case '=':
      return order === 0;
    case '!=':
      return order !== 0;
    case '<':
      return order < 0;
    case '>':
      return order > 0;
    default:
      return unreachable(op);
  }
}

/** The [from, to) bytes a span covers, starting at startKey when that is later; to undefined = no end. */
function spanBounds(span: KeySpan, startKey: string | undefined): { from: Buffer; to: Buffer | undefined } {
  if ('key' in span) {
    const key = utf8(span.key);
    const from = startKey !== undefined && Buffer.compare(utf8(startKey), key) > 0 ? utf8(startKey) : key;
    return { from, to: Buffer.concat([key, Buffer.from([0])]) };
  }
  const prefix = utf8(span.prefix);
  const start = startKey !== undefined ? utf8(startKey) : undefined;
  const from = start !== undefined && Buffer.compare(start, prefix) > 0 ? start : prefix;
  return { from, to: prefixEnd(prefix) };
}

const inBounds = (key: Buffer, from: Buffer, to: Buffer | undefined): boolean =>
  Buffer.compare(key, from) >= 0 && (to === undefined || Buffer.compare(key, to) < 0);

interface RangeBody {
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export class Mvcc {
  private constructor(
    readonly db: Db,
    /** Named in every Corrupt and UnsupportedFormat message. */
    readonly dataDir: string,
    private meta: Meta,
  ) {}

  /** Batches finished (handed to LevelDB) and not yet committed or abandoned. */
  private writesInFlight = 0;

  /** Opens the MVCC state in `db` (already open), creating the meta record of an empty store (revision 1). */
  static async open(db: Db, dataDir: string): Promise<Mvcc> {
    const stored = await db.get(metaKey);
    if (stored === undefined) {
      const meta: Meta = { formatVersion, revision: 1, compactRevision: 0, physicalRevision: 0 };
      await db.put(metaKey, encodeRecord(metaKey, meta), { sync: true });
      return new Mvcc(db, dataDir, meta);
    }
    const meta = Mvcc.decodeMeta(stored, dataDir);
    if (meta.formatVersion > formatVersion) {
      throw new StorageError(
        'UnsupportedFormat',
        `data dir ${dataDir} was written by storage format version ${meta.formatVersion}; ` +
          `this Stoa reads format version ${formatVersion} and older`,
      );
    }
    return new Mvcc(db, dataDir, meta);
  }

  private static decodeMeta(stored: Buffer, dataDir: string): Meta {
    const meta = decodeRecord(metaKey, stored, dataDir) as Partial<Meta> | null;
    if (
      meta === null ||
      typeof meta !== 'object' ||
      typeof meta.formatVersion !== 'number' ||
      typeof meta.revision !== 'number' ||
      typeof meta.compactRevision !== 'number' ||
      typeof meta.physicalRevision !== 'number'
    ) {
      throw new StorageError('Corrupt', `corrupt meta record in LevelDB data dir ${dataDir}`);
    }
    return meta as Meta;
  }

  /** The committed (durable) revision. */
  get revision(): Revision {
    return toRevision(this.meta.revision);
  }

  get compactRevision(): Revision {
    return toRevision(this.meta.compactRevision);
  }

  /** True while a compaction's history is not yet physically deleted (drive it with compactStep). */
  get compactionPending(): boolean {
    return this.meta.physicalRevision < this.meta.compactRevision;
  }

  /**
   * Opens a batch over the committed state, or over `parent`, a batch whose write was issued but may not have
   * returned (pipelining). Batches MUST be written, and `committed` called, in the order they were begun.
   */
  begin(parent?: MvccBatch): MvccBatch {
    const batch =
      parent !== undefined
        ? new MvccBatch(parent.revision, parent.compactRevision, parent.physicalRevision, parent)
        : new MvccBatch(this.meta.revision, this.meta.compactRevision, this.meta.physicalRevision);
    batch.onFinish = () => this.writesInFlight++;
    return batch;
  }

  /** Call when a finished batch's write failed: it is not in flight any more (and never committed). */
  abandoned(batch: MvccBatch): void {
    if (batch.isFinished) this.writesInFlight--;
  }

  /** Call after the batch's ops were written; the batch's state becomes the committed state. */
  committed(batch: MvccBatch): void {
    assert(batch.revision >= this.meta.revision, 'committed batch goes back in revision');
    if (batch.isFinished) this.writesInFlight--;
    this.meta = {
      formatVersion,
      revision: batch.revision,
      compactRevision: batch.compactRevision,
      physicalRevision: batch.physicalRevision,
    };
  }

  // ---- reads of durable state ----

  private decodeLatest(stored: Buffer, value: Buffer): LatestRecord {
    return decodeLatest(stored, value, this.dataDir);
  }

  /**
   * The meta record as of a snapshot taken in the same tick. With no batch write in flight, LevelDB holds exactly
   * the committed state, so the in-memory meta is the snapshot's; otherwise the write may or may not be in the
   * snapshot, and the meta record is read through it.
   */
  private async snapshotMeta(snapshot: Snapshot): Promise<Meta> {
    return this.writesInFlight === 0 ? this.meta : this.readMeta(snapshot);
  }

  private async readMeta(snapshot: Snapshot): Promise<Meta> {
    const stored = this.db.getSync(metaKey, { snapshot });
    assert(stored !== undefined, 'meta record missing');
    return Mvcc.decodeMeta(stored, this.dataDir);
  }

  private checkRevision(revision: number, meta: { revision: number; compactRevision: number }): void {
    if (revision > meta.revision) {
      throw new StorageError(
        'FutureRevision',
        `revision ${revision} is ahead of the current revision ${meta.revision}`,
        toRevision(meta.revision),
      );
    }
    if (revision < meta.compactRevision) {
      throw new StorageError(
        'Compacted',
        `revision ${revision} is compacted (compacted revision ${meta.compactRevision})`,
        toRevision(meta.compactRevision),
      );
    }
  }

  /** A range at the current or any retained revision, from one consistent snapshot of durable state. */
  async range(span: KeySpan, options: RangeOptions = {}): Promise<RangeResult> {
    const snapshot = this.db.snapshot();
    try {
      const meta = await this.snapshotMeta(snapshot);
      const revision =
        options.revision !== undefined && options.revision > 0 ? options.revision : meta.revision;
      this.checkRevision(revision, meta);
      const { from, to } = spanBounds(span, options.startKey);
      const limit = options.limit ?? 0;
      const countOnly = options.countOnly ?? false;
      let body: RangeBody;
      if (revision === meta.revision && 'key' in span && options.startKey === undefined) {
        body = await this.getLatest(span.key, countOnly, snapshot); // the common single-key get: no iterator
      } else if (revision === meta.revision) {
        body = await this.rangeLatest(from, to, limit, countOnly, snapshot);
      } else {
        body = await this.rangeHistory(from, to, revision, limit, countOnly, snapshot);
      }
      return { header: { revision: toRevision(meta.revision) }, ...body };
    } finally {
      await snapshot.close();
    }
  }

  private async getLatest(key: string, countOnly: boolean, snapshot: Snapshot): Promise<RangeBody> {
    const stored = latestKey(utf8(key));
    const value = this.db.getSync(stored, { snapshot });
    if (value === undefined) return { kvs: [], more: false, count: 0 };
    return { kvs: countOnly ? [] : [keyValue(key, this.decodeLatest(stored, value))], more: false, count: 1 };
  }

  private async rangeLatest(
    from: Buffer,
    to: Buffer | undefined,
    limit: number,
    countOnly: boolean,
    snapshot: Snapshot | undefined,
  ): Promise<RangeBody> {
    const bounds = {
      gte: Buffer.concat([latestPrefix, from]),
      lt: to === undefined ? prefixEnd(latestPrefix)! : Buffer.concat([latestPrefix, to]),
      ...(snapshot !== undefined ? { snapshot } : {}),
    };
    if (countOnly) return { kvs: [], more: false, count: await countKeys(this.db, bounds) };
    const kvs: KeyValue[] = [];
    let more = false;
    // A large high-water mark: one native call returns a whole page instead of 16 KiB at a time.
    const iterator = this.db.iterator({
      ...bounds,
      ...(limit > 0 ? { limit: limit + 1 } : {}),
      highWaterMarkBytes: iteratorBytesMax,
    });
    try {
      for (;;) {
        const entries = await iterator.nextv(1000);
        if (entries.length === 0) break;
        for (const [stored, value] of entries) {
          if (limit > 0 && kvs.length === limit) {
            more = true;
            break;
          }
          const key = stored.subarray(latestPrefix.length).toString('utf8');
          kvs.push(keyValue(key, this.decodeLatest(stored, value)));
        }
      }
    } finally {
      await iterator.close();
    }
    if (!more) return { kvs, more, count: kvs.length };
    // Count the rest without reading values.
    const { gte: _gte, ...rest } = bounds;
    const after = latestKey(utf8(kvs[kvs.length - 1]!.key));
    return { kvs, more, count: kvs.length + (await countKeys(this.db, { ...rest, gt: after })) };
  }

  private async rangeHistory(
    from: Buffer,
    to: Buffer | undefined,
    revision: number,
    limit: number,
    countOnly: boolean,
    snapshot: Snapshot,
  ): Promise<RangeBody> {
    const kvs: KeyValue[] = [];
    let count = 0;
    // The newest record at or below `revision` of the key being scanned.
    let current: { key: Buffer; stored: Buffer; value: Buffer; revision: number } | undefined;
    let currentKey: Buffer | undefined;
    const flush = (): void => {
      if (current === undefined) return;
      const record = decodeHistory(current.stored, current.value, this.dataDir);
      if (record !== null) {
        count++;
        if (!countOnly && (limit === 0 || kvs.length < limit)) {
          kvs.push({
            key: current.key.toString('utf8'),
            createRevision: toRevision(record.createRevision),
            modRevision: toRevision(current.revision),
            version: record.version,
            value: record.value,
          });
        }
      }
      current = undefined;
    };
    const iterator = this.db.iterator({
      ...historyBounds(from, to),
      snapshot,
      highWaterMarkBytes: iteratorBytesMax,
    });
    try {
      for (;;) {
        const entries = await iterator.nextv(1000);
        if (entries.length === 0) break;
        for (const [stored, value] of entries) {
          const parsed = parseHistoryKey(stored);
          if (currentKey === undefined || !parsed.key.equals(currentKey)) {
            flush();
            currentKey = parsed.key;
          }
          if (parsed.revision <= revision)
            current = { key: parsed.key, stored, value, revision: parsed.revision };
        }
      }
      flush();
    } finally {
      await iterator.close();
    }
    return { kvs, more: limit > 0 && count > kvs.length && !countOnly, count };
  }

  /**
   * The changes of revisions after `afterRevision`, at most `maxRevisions` revisions with changes, for watch
   * catch-up; each event carries prevKv when the key existed and that state is not compacted. `throughRevision`
   * is the revision up to which every change has been returned.
   */
  async readChanges(
    afterRevision: number,
    maxRevisions: number,
  ): Promise<{ changes: RevisionChanges[]; throughRevision: Revision }> {
    const snapshot = this.db.snapshot();
    try {
      const meta = await this.snapshotMeta(snapshot);
      if (afterRevision + 1 < meta.compactRevision) {
        throw new StorageError(
          'Compacted',
          `watch from revision ${afterRevision + 1} is below the compacted revision ${meta.compactRevision}`,
          toRevision(meta.compactRevision),
        );
      }
      const changes: RevisionChanges[] = [];
      const iterator = this.db.iterator({
        gt: changeKey(afterRevision),
        lte: changeKey(meta.revision),
        limit: maxRevisions,
        snapshot,
      });
      try {
        for (;;) {
          const entries = await iterator.nextv(100);
          if (entries.length === 0) break;
          for (const [stored, value] of entries) {
            const revision = readRevisionBytes(stored, changePrefix.length);
            const list = decodeRecord(stored, value, this.dataDir) as Change[];
            changes.push({
              revision: toRevision(revision),
              events: await this.changeEvents(list, revision, snapshot),
            });
          }
        }
      } finally {
        await iterator.close();
      }
      const throughRevision =
        changes.length === maxRevisions ? changes[changes.length - 1]!.revision : meta.revision;
      return { changes, throughRevision: toRevision(throughRevision) };
    } finally {
      await snapshot.close();
    }
  }

  private async historyKv(key: string, revision: number, snapshot: Snapshot): Promise<KeyValue | undefined> {
    const stored = historyKey(utf8(key), revision);
    const value = this.db.getSync(stored, { snapshot });
    if (value === undefined) return undefined;
    const record = decodeHistory(stored, value, this.dataDir);
    if (record === null) return undefined;
    return {
      key,
      createRevision: toRevision(record.createRevision),
      modRevision: toRevision(revision),
      version: record.version,
      value: record.value,
    };
  }

  private async changeEvents(list: Change[], revision: number, snapshot: Snapshot): Promise<WatchEvent[]> {
    const events: WatchEvent[] = [];
    for (const [kind, key, prevModRevision] of list) {
      const prevKv = prevModRevision > 0 ? await this.historyKv(key, prevModRevision, snapshot) : undefined;
      let kv: KeyValue;
      if (kind === 0) {
        const found = await this.historyKv(key, revision, snapshot);
        if (found === undefined) {
          throw new StorageError(
            'Corrupt',
            `LevelDB data dir ${this.dataDir}: history record of key ${JSON.stringify(key)} at revision ${revision} is missing`,
          );
        }
        kv = found;
      } else {
        kv = deletedKv(key, revision);
      }
      events.push(
        prevKv !== undefined
          ? { type: kind === 0 ? 'put' : 'delete', kv, prevKv }
          : { type: kind === 0 ? 'put' : 'delete', kv },
      );
    }
    return events;
  }

  // ---- the writer's side: apply into a batch ----

  /** The latest state of a key as the batch sees it (its own pending writes over the committed state). */
  private async latestInBatch(batch: MvccBatch, key: string): Promise<KeyValue | undefined> {
    const pending = batch.pending(key);
    if (pending !== undefined) return pending ?? undefined;
    return this.latestCommitted(batch, key);
  }

  private async latestCommitted(batch: MvccBatch, key: string): Promise<KeyValue | undefined> {
    const cached = batch.committedCache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const stored = latestKey(utf8(key));
    const value = this.db.getSync(stored);
    return value === undefined ? undefined : keyValue(key, this.decodeLatest(stored, value));
  }

  private async evaluate(batch: MvccBatch, compare: Compare): Promise<boolean> {
    const kv = await this.latestInBatch(batch, compare.key);
    switch (compare.target) {
      case 'exists':
        return (kv !== undefined) === compare.value;
      case 'value':
        if (kv === undefined) return false;
        return compareOp(Buffer.compare(Buffer.from(kv.value), Buffer.from(compare.value)), compare.op);
      case 'version':
      case 'createRevision':
      case 'modRevision': {
        const actual = kv === undefined ? 0 : kv[compare.target];
        return compareOp(Math.sign(actual - compare.value), compare.op);
      }
      default:
        return unreachable(compare);
    }
  }

  /** Live keys of a span as the batch sees them, in key order. */
  private async rangeInBatch(
    batch: MvccBatch,
    span: KeySpan,
    options: { limit?: number; startKey?: string; countOnly?: boolean },
  ): Promise<RangeBody> {
    const { from, to } = spanBounds(span, options.startKey);
    const limit = options.limit ?? 0;
    const countOnly = options.countOnly ?? false;
    const overlay = [...batch.pendingEntries()].filter(([key]) => inBounds(utf8(key), from, to));
    if (overlay.length === 0) return this.rangeLatest(from, to, limit, countOnly, undefined);
    // One snapshot for the committed side: an in-flight parent may become committed meanwhile.
    const snapshot = this.db.snapshot();
    let committed: RangeBody;
    let count: number;
    try {
      // Committed keys, enough of them that the overlay's deletes cannot leave fewer than `limit`.
      committed = await this.rangeLatest(
        from,
        to,
        limit > 0 ? limit + overlay.length : 0,
        countOnly,
        snapshot,
      );
      count = committed.count;
      const existed = await this.db.getMany(
        overlay.map(([key]) => latestKey(utf8(key))),
        { snapshot },
      );
      overlay.forEach(([, kv], i) => {
        if (kv !== null && existed[i] === undefined) count++;
        if (kv === null && existed[i] !== undefined) count--;
      });
    } finally {
      await snapshot.close();
    }
    if (countOnly) return { kvs: [], more: false, count };
    const merged = new Map<string, KeyValue>(committed.kvs.map((kv) => [kv.key, kv]));
    const last = committed.kvs[committed.kvs.length - 1];
    for (const [key, kv] of overlay) {
      // Beyond the committed window, an overlay key could sort after keys that were not read.
      if (committed.more && last !== undefined && Buffer.compare(utf8(key), utf8(last.key)) > 0) continue;
      if (kv === null) merged.delete(key);
      else merged.set(key, kv);
    }
    const sorted = [...merged.values()].sort((a, b) => Buffer.compare(utf8(a.key), utf8(b.key)));
    const kvs = limit > 0 ? sorted.slice(0, limit) : sorted;
    return { kvs, more: kvs.length < count, count };
  }

  /**
   * Reads ahead, in ONE LevelDB call, the committed state of every key the txns put or compare, so that applying
   * a group does not wait for one read per key. Optional: applyTxn reads what is not prefetched.
   */
  async prefetch(batch: MvccBatch, requests: readonly TxnRequest[]): Promise<void> {
    const wanted = new Set<string>();
    for (const request of requests) {
      for (const compare of request.compare) wanted.add(compare.key);
      for (const op of [...request.success, ...request.failure]) if (op.type === 'put') wanted.add(op.key);
    }
    const keys = [...wanted].filter(
      (key) => !batch.committedCache.has(key) && batch.pending(key) === undefined,
    );
    if (keys.length === 0) return;
    const stored = keys.map((key) => latestKey(utf8(key)));
    // Point reads are served from the memtable, block cache or page cache in microseconds: done synchronously
    // they save a thread-pool round trip per group; a large group reads in one asynchronous call instead.
    const values =
      stored.length <= syncReadsMax
        ? stored.map((key) => this.db.getSync(key))
        : await this.db.getMany(stored);
    keys.forEach((key, i) => {
      const value = values[i];
      batch.committedCache.set(
        key,
        value === undefined ? null : keyValue(key, this.decodeLatest(stored[i]!, value)),
      );
    });
  }

  /** Range ops may name a revision; it is checked for both branches before anything is applied (as etcd). */
  private checkRangeRevisions(batch: MvccBatch, ops: readonly TxnOp[]): void {
    for (const op of ops) {
      if (op.type !== 'range' || op.options?.revision === undefined || op.options.revision <= 0) continue;
      this.checkRevision(op.options.revision, batch);
      // A read at an older revision inside a batch reads committed history: the writer flushes first.
      assert(
        op.options.revision === batch.revision || op.options.revision <= this.meta.revision,
        'range at a pending revision: the writer must flush before this txn',
      );
    }
  }

  /** Applies one txn into the batch at the next revision (if it writes), as etcd applies it. */
  async applyTxn(batch: MvccBatch, request: TxnRequest): Promise<ApplyResult> {
    this.checkRangeRevisions(batch, request.success);
    this.checkRangeRevisions(batch, request.failure);
    const mark = batch.mark();
    try {
      return await this.applyTxnUnchecked(batch, request);
    } catch (error) {
      batch.rollback(mark);
      throw error;
    }
  }

  private async applyTxnUnchecked(batch: MvccBatch, request: TxnRequest): Promise<ApplyResult> {
    let succeeded = true;
    for (const compare of request.compare) {
      if (!(await this.evaluate(batch, compare))) {
        succeeded = false;
        break;
      }
    }
    const revision = batch.revision + 1;
    const responses: TxnOpResult[] = [];
    const events: WatchEvent[] = [];
    const changes: Change[] = [];
    for (const op of succeeded ? request.success : request.failure) {
      switch (op.type) {
        case 'put': {
          const prev = await this.latestInBatch(batch, op.key);
          const kv: KeyValue = {
            key: op.key,
            value: op.value,
            createRevision: toRevision(prev?.createRevision ?? revision),
            modRevision: toRevision(revision),
            version: (prev?.version ?? 0) + 1,
          };
          this.writePut(batch, kv);
          changes.push([0, op.key, prev?.modRevision ?? 0]);
          events.push(prev !== undefined ? { type: 'put', kv, prevKv: prev } : { type: 'put', kv });
          responses.push(
            op.prevKv === true && prev !== undefined ? { type: 'put', prevKv: prev } : { type: 'put' },
          );
          break;
        }
        case 'delete': {
          const { kvs } = await this.rangeInBatch(batch, op.span, {});
          for (const prev of kvs) {
            this.writeDelete(batch, prev.key, revision);
            changes.push([1, prev.key, prev.modRevision]);
            events.push({ type: 'delete', kv: deletedKv(prev.key, revision), prevKv: prev });
          }
          responses.push({ type: 'delete', deleted: kvs.length, prevKvs: op.prevKv === true ? kvs : [] });
          break;
        }
        case 'range': {
          const options = op.options ?? {};
          const at = options.revision;
          const result =
            at !== undefined && at > 0 && at < batch.revision + (changes.length > 0 ? 1 : 0)
              ? await this.rangeCommittedAt(op.span, options, at)
              : await this.rangeInBatch(batch, op.span, options);
          responses.push({ type: 'range', result });
          break;
        }
        default:
          unreachable(op);
      }
    }
    if (changes.length > 0) {
      batch.revision = revision;
      const stored = changeKey(revision);
      batch.ops.push({ type: 'put', key: stored, value: encodeRecord(stored, changes) });
    }
    return {
      result: { header: { revision: toRevision(batch.revision) }, succeeded, responses },
      events,
    };
  }

  private async rangeCommittedAt(
    span: KeySpan,
    options: Omit<RangeOptions, 'serializable'>,
    at: number,
  ): Promise<RangeBody> {
    const snapshot = this.db.snapshot();
    try {
      const { from, to } = spanBounds(span, options.startKey);
      return at === this.meta.revision
        ? await this.rangeLatest(from, to, options.limit ?? 0, options.countOnly ?? false, snapshot)
        : await this.rangeHistory(from, to, at, options.limit ?? 0, options.countOnly ?? false, snapshot);
    } finally {
      await snapshot.close();
    }
  }

  private writePut(batch: MvccBatch, kv: KeyValue): void {
    const key = utf8(kv.key);
    const latest = latestKey(key);
    batch.ops.push({ type: 'put', key: latest, value: encodeLatest(latest, kv, kv.value) });
    const history = historyKey(key, kv.modRevision);
    batch.ops.push({ type: 'put', key: history, value: encodeHistory(history, kv, kv.value) });
    batch.setLatest(kv.key, kv);
  }

  private writeDelete(batch: MvccBatch, key: string, revision: number): void {
    const bytes = utf8(key);
    batch.ops.push({ type: 'del', key: latestKey(bytes) });
    const history = historyKey(bytes, revision);
    batch.ops.push({ type: 'put', key: history, value: encodeHistory(history, null) });
    batch.setLatest(key, null);
  }

  // ---- compaction ----

  /** Logical compaction: from this batch on, reads and watches below `revision` fail with Compacted. */
  compact(batch: MvccBatch, revision: number): void {
    if (revision <= batch.compactRevision) {
      throw new StorageError(
        'Compacted',
        `revision ${revision} is already compacted (compacted revision ${batch.compactRevision})`,
        toRevision(batch.compactRevision),
      );
    }
    if (revision > batch.revision) {
      throw new StorageError(
        'FutureRevision',
        `cannot compact at ${revision}: ahead of the current revision ${batch.revision}`,
        toRevision(batch.revision),
      );
    }
    batch.compactRevision = revision;
  }

  /**
   * Physical compaction of up to `maxRevisions` revisions into the batch: for each change at a revision r up
   * to the compacted revision C, the key's previous state is superseded (deleted), a tombstone is deleted, and
   * the change-log entry of r < C is deleted. What remains at or below C is each live key's newest record
   * (so ranges at C stay exact) and the change log of C (so a watch from C works, as in etcd).
   * Run it in a batch of its own (it reads committed state). Returns true when more steps remain.
   */
  async compactStep(batch: MvccBatch, maxRevisions: number): Promise<boolean> {
    assert(batch.empty, 'compactStep must run in a batch of its own');
    const target = batch.compactRevision;
    const start = batch.physicalRevision;
    if (start >= target) return false;
    const end = Math.min(target, start + maxRevisions);
    const iterator = this.db.iterator({ gte: changeKey(start), lte: changeKey(end) });
    try {
      for (;;) {
        const entries = await iterator.nextv(100);
        if (entries.length === 0) break;
        for (const [stored, value] of entries) {
          const revision = readRevisionBytes(stored, changePrefix.length);
          if (revision < target) batch.ops.push({ type: 'del', key: stored });
          if (revision === start) continue; // processed by the step that ended there
          for (const [kind, key, prevModRevision] of decodeRecord(stored, value, this.dataDir) as Change[]) {
            const bytes = utf8(key);
            if (prevModRevision > 0) batch.ops.push({ type: 'del', key: historyKey(bytes, prevModRevision) });
            if (kind === 1) batch.ops.push({ type: 'del', key: historyKey(bytes, revision) });
          }
        }
      }
    } finally {
      await iterator.close();
    }
    batch.physicalRevision = end;
    return end < target;
  }
}

function deletedKv(key: string, revision: number): KeyValue {
  return {
    key,
    value: emptyValue,
    createRevision: toRevision(0),
    modRevision: toRevision(revision),
    version: 0,
  };
}

async function countKeys(db: Db, bounds: object): Promise<number> {
  const iterator = db.keys(bounds);
  let count = 0;
  try {
    for (;;) {
      const keys = await iterator.nextv(1000);
      if (keys.length === 0) return count;
      count += keys.length;
    }
  } finally {
    await iterator.close();
  }
}
