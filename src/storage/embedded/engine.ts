// The embedded engine: the MVCC state machine in one process's LevelDB, with a single writer.
//
// The writer takes every queued txn, applies them one after another into ONE MvccBatch (each at its own
// revision; compares see the effects of the earlier txns of the group) and writes the batch with
// {sync: true}: one fsync for the whole group. A txn is acknowledged only after that write returned, and the
// watch hub hears of the changes only then. Reads go to LevelDB snapshots, which hold written batches only.
// Automatic compaction samples (time, revision) and compacts to the newest sample older than `retentionMs`.

import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { limits } from '../../util/limits.js';
import { systemClock, type Clock } from '../../util/clock.js';
import type { Revision } from '../../util/brand.js';
import {
  StorageError,
  type KeySpan,
  type KVStore,
  type RangeOptions,
  type RangeResult,
  type StoreStatus,
  type TxnRequest,
  type TxnResult,
  type Watch,
  type WatchOptions,
  type WatchResponse,
} from '../contract.js';
import {
  Mvcc,
  mvccDbOptions,
  writeBatch,
  type Db,
  type MvccBatch,
  type RevisionChanges,
} from '../mvcc/mvcc.js';
import { WatchHub } from '../watch/hub.js';
import { checkSpan, checkTxn } from '../validate.js';

export interface EmbeddedStoreOptions {
  /** The LevelDB directory (created if missing). */
  readonly dataDir: string;
  /** History kept by automatic compaction (default limits.storeHistoryRetentionMs); <= 0 turns it off. */
  readonly retentionMs?: number;
  /** Idle time before a progressNotify watcher gets a progress response (default 10 minutes, as etcd). */
  readonly progressIntervalMs?: number;
  /** Events a watcher may have queued before WatchOverflow (default limits.storeWatchQueueEventsMax). */
  readonly watchQueueEventsMax?: number;
  readonly clock?: Clock;
}

/** Most txns applied in one LevelDB batch. */
const groupTxnsMax = 1024;
/** Revisions of history physically deleted per compaction step (steps interleave with writes). */
const compactStepRevisionsMax = 1000;

type Pending =
  | {
      readonly kind: 'txn';
      readonly request: TxnRequest;
      readonly resolve: (result: TxnResult) => void;
      readonly reject: (error: unknown) => void;
    }
  | {
      readonly kind: 'compact';
      readonly revision: Revision;
      readonly resolve: () => void;
      readonly reject: (error: unknown) => void;
    };

type Applied = { readonly item: Pending; readonly result?: TxnResult };

function answer(applied: readonly Applied[]): void {
  for (const { item, result } of applied) {
    if (item.kind === 'txn') item.resolve(result!);
    else item.resolve();
  }
}

/** A range op at an explicit revision reads committed history, so the writer flushes before such a txn. */
const readsAtRevision = (item: Pending): boolean =>
  item.kind === 'txn' &&
  [...item.request.success, ...item.request.failure].some(
    (op) => op.type === 'range' && op.options?.revision !== undefined && op.options.revision > 0,
  );

export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
  const db: Db = new ClassicLevel<Buffer, Buffer>(options.dataDir, mvccDbOptions());
  try {
    await db.open();
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
    throw new StorageError(
      'Unavailable',
      `cannot open LevelDB data dir ${options.dataDir}: ${String(error)}${cause}`,
    );
  }
  try {
    const mvcc = await Mvcc.open(db, options.dataDir);
    return new EmbeddedStore(db, mvcc, options);
  } catch (error) {
    await db.close();
    throw error;
  }
}

export class EmbeddedStore implements KVStore {
  private readonly hub: WatchHub;
  private readonly queue: Pending[] = [];
  /** The batch whose LevelDB write was issued and has not returned yet. */
  private inflight: { batch: MvccBatch; done: Promise<boolean> } | undefined;
  private writing = false;
  private writerDone: Promise<void> = Promise.resolve();
  private closed = false;
  private compactionError: unknown;
  private readonly clock: Clock;
  private readonly retentionMs: number;
  private readonly samples: Array<{ timeMs: number; revision: Revision }> = [];
  private readonly sampler: NodeJS.Timeout | undefined;
  /** Group-commit counters: LevelDB batches written with sync, and the txns they carried. */
  readonly writeStats = { batches: 0, txns: 0 };

  constructor(
    private readonly db: Db,
    readonly mvcc: Mvcc,
    private readonly options: EmbeddedStoreOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.hub = new WatchHub(mvcc, mvcc.revision, {
      ...(options.progressIntervalMs !== undefined ? { progressIntervalMs: options.progressIntervalMs } : {}),
      ...(options.watchQueueEventsMax !== undefined ? { queueEventsMax: options.watchQueueEventsMax } : {}),
    });
    this.retentionMs = options.retentionMs ?? limits.storeHistoryRetentionMs;
    if (this.retentionMs > 0) {
      this.sampler = setInterval(() => this.sampleForCompaction(), Math.max(10, this.retentionMs / 10));
      this.sampler.unref();
      this.sampleForCompaction();
    }
    if (mvcc.compactionPending) this.kick(); // finish a compaction interrupted by a crash
  }

  async range(span: KeySpan, options: RangeOptions = {}): Promise<RangeResult> {
    this.checkOpen();
    checkSpan(span);
    if (options.limit !== undefined && (options.limit < 0 || !Number.isInteger(options.limit))) {
      throw new StorageError('InvalidArgument', 'limit must be a non-negative integer');
    }
    try {
      return await this.mvcc.range(span, options);
    } catch (error) {
      throw this.storageError(error);
    }
  }

  /** Every failure leaves the store as a StorageError (a LevelDB error is Unavailable, or Closed after close). */
  private storageError(error: unknown): StorageError {
    if (error instanceof StorageError) return error;
    if (this.closed) return new StorageError('Closed', 'the store is closed');
    return new StorageError('Unavailable', `LevelDB data dir ${this.options.dataDir}: ${String(error)}`);
  }

  txn(request: TxnRequest): Promise<TxnResult> {
    return new Promise((resolve, reject) => {
      this.checkOpen();
      checkTxn(request);
      this.queue.push({ kind: 'txn', request, resolve, reject });
      this.kick();
    });
  }

  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    checkSpan(span);
    return this.hub.watch(span, options, listener);
  }

  compact(revision: Revision): Promise<void> {
    return new Promise((resolve, reject) => {
      this.checkOpen();
      this.queue.push({ kind: 'compact', revision, resolve, reject });
      this.kick();
    });
  }

  async status(): Promise<StoreStatus> {
    this.checkOpen();
    let dbSizeBytes = 0;
    for (const name of await readdir(this.options.dataDir)) {
      dbSizeBytes += (await stat(join(this.options.dataDir, name)).catch(() => ({ size: 0 }))).size;
    }
    return { revision: this.mvcc.revision, compactRevision: this.mvcc.compactRevision, dbSizeBytes };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sampler !== undefined) clearInterval(this.sampler);
    await this.writerDone;
    this.hub.close();
    await this.db.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new StorageError('Closed', 'the store is closed');
  }

  private kick(): void {
    if (this.writing) return;
    this.writing = true;
    this.writerDone = this.runWriter();
  }

  /**
   * The single writer. invariant: at most one runWriter at a time (`writing`), and at most one batch write in
   * flight (`inflight`). Pipelining: group N+1 is applied (over N's pending state) while N is being written;
   * N+1's write is issued only after N's returned, so batches reach LevelDB in revision order.
   */
  private async runWriter(): Promise<void> {
    for (;;) {
      if (this.queue.length > 0) {
        await this.writeGroup();
      } else if (this.inflight !== undefined) {
        await this.settle();
      } else if (this.mvcc.compactionPending && !this.closed && this.compactionError === undefined) {
        await this.compactStep();
      } else {
        this.writing = false; // no await between the check and this: a new txn kicks a new writer
        return;
      }
    }
  }

  /** Waits for the in-flight write (which commits, publishes and answers its txns); false if it failed. */
  private async settle(): Promise<boolean> {
    const inflight = this.inflight;
    if (inflight === undefined) return true;
    const ok = await inflight.done;
    this.inflight = undefined;
    return ok;
  }

  private takeGroup(): Pending[] {
    let count = 1;
    while (count < this.queue.length && count < groupTxnsMax && !readsAtRevision(this.queue[count]!)) count++;
    return this.queue.splice(0, count);
  }

  private async writeGroup(): Promise<void> {
    const group = this.takeGroup();
    // A read at an explicit revision needs committed history up to here: no pending parent.
    if (readsAtRevision(group[0]!)) await this.settle();
    const parent = this.inflight?.batch;
    const batch = this.mvcc.begin(parent);
    const startCompactRevision = batch.compactRevision;
    const applied: Applied[] = [];
    const changes: RevisionChanges[] = [];
    try {
      await this.mvcc.prefetch(
        batch,
        group.flatMap((item) => (item.kind === 'txn' ? [item.request] : [])),
      );
    } catch {
      // A corrupt record among them: applying the txn that needs it reports the error to that txn alone.
      batch.committedCache.clear();
    }
    for (const item of group) {
      try {
        if (item.kind === 'txn') {
          const { result, events } = await this.mvcc.applyTxn(batch, item.request);
          if (events.length > 0) changes.push({ revision: result.header.revision, events });
          applied.push({ item, result });
        } else {
          this.mvcc.compact(batch, item.revision);
          applied.push({ item });
        }
      } catch (error) {
        item.reject(this.storageError(error));
      }
    }
    // The parent's write must return before this batch's is issued (and before read-only answers, which may
    // have read the parent's pending state).
    if (!(await this.settle())) {
      const failure = new StorageError('Unavailable', `an earlier write to ${this.options.dataDir} failed`);
      for (const { item } of applied) item.reject(failure);
      return;
    }
    batch.detach();
    if (applied.length === 0) return;
    if (batch.empty && batch.compactRevision === startCompactRevision) {
      answer(applied); // nothing to write: read-only txns and txns whose compares failed without writes
      return;
    }
    const done = writeBatch(this.db, batch.finish(), { sync: true }).then(
      () => {
        this.mvcc.committed(batch);
        this.writeStats.batches++;
        this.writeStats.txns += applied.length;
        this.hub.publish(changes, this.mvcc.revision);
        answer(applied);
        return true;
      },
      (error: unknown) => {
        this.mvcc.abandoned(batch);
        const failure = new StorageError(
          'Unavailable',
          `write to ${this.options.dataDir} failed: ${String(error)}`,
        );
        for (const { item } of applied) item.reject(failure);
        return false;
      },
    );
    this.inflight = { batch, done };
  }

  private async compactStep(): Promise<void> {
    try {
      const batch = this.mvcc.begin();
      await this.mvcc.compactStep(batch, compactStepRevisionsMax);
      // Not synced: a step lost in a crash is redone from the meta record on reopen.
      try {
        await writeBatch(this.db, batch.finish(), { sync: false });
      } catch (error) {
        this.mvcc.abandoned(batch);
        throw error;
      }
      this.mvcc.committed(batch);
    } catch (error) {
      this.compactionError = error; // stop stepping; reads are unaffected (the logical compaction holds)
    }
  }

  /** kube-apiserver's compactor, finer-grained: compact to the newest sampled revision older than the window. */
  private sampleForCompaction(): void {
    if (this.closed) return;
    const nowMs = this.clock.monotonicMs();
    this.samples.push({ timeMs: nowMs, revision: this.mvcc.revision });
    let target: Revision | undefined;
    while (this.samples.length > 0 && this.samples[0]!.timeMs <= nowMs - this.retentionMs) {
      target = this.samples.shift()!.revision;
    }
    if (target === undefined || target <= this.mvcc.compactRevision) return;
    this.compact(target).catch(() => {
      // Already compacted there (a manual compaction went further): nothing to do.
    });
  }
}
