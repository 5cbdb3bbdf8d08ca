// Snapshot data streamed beside the Raft core, as etcd sends its database file: the core's snapshot carries
// only metadata (index, term, membership), so taking one copies nothing. When the leader's core sends MsgSnap
// to a follower, the leader's engine streams its MVCC LevelDB to that follower, read from one consistent
// LevelDB snapshot, in chunks of at most `chunkBytes` (plus one record), each acknowledged after the follower
// has written it (stop-and-wait). The follower writes the chunks into a staging LevelDB beside its state
// (`mvcc-incoming/`), renames it `mvcc-ready/` once complete and durable, and its Ready loop installs it
// (`installStaged`) before the core's MsgSnap is stepped.
//
// Contract:
// - The streamed state is the leader's applied state when the stream starts, at an index no lower than the
//   core's snapshot (a snapshot is taken of applied state, and applied only grows). The follower installs it,
//   then steps the core's MsgSnap; the entries after the core's snapshot that the core then hands out are in
//   the installed state already and are skipped, as after a restart (their conf changes still reach the core).
// - Neither side holds more than one chunk in memory, and neither blocks its Ready loop while streaming.
// - Crash safety: a partial `mvcc-incoming/` is discarded at start; a complete `mvcc-ready/` is installed at
//   start if it is ahead of the state; an install interrupted half way (`mvcc-installing/`) is redone.

import { ClassicLevel } from 'classic-level';
import { open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogIndex, NodeId } from '../util/brand.js';
import type { Logger } from '../transport/options.js';
import type { Db } from '../storage/mvcc/mvcc.js';

/** Key of the replica's applied index in the MVCC LevelDB (the MVCC's own keys start with 'm'). */
export const appliedKey = Buffer.from('rA');

export const u64 = (n: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};

/** The applied index a LevelDB value of `appliedKey` holds (0 when absent). */
export const appliedFrom = (stored: Buffer | undefined): number =>
  stored === undefined ? 0 : Number(stored.readBigUInt64BE(0));

/** One chunk of a leader's state: key/value pairs in key order, from one LevelDB snapshot. */
export interface MsgSnapData {
  readonly type: 'MsgSnapData';
  readonly from: NodeId;
  readonly to: NodeId;
  /** Unique per stream (sender id, incarnation, sequence). */
  readonly stream: string;
  /** The core snapshot this stream serves: the data is at least this recent. */
  readonly snapshotIndex: LogIndex;
  readonly seq: number;
  readonly pairs: readonly (readonly [Uint8Array, Uint8Array])[];
  readonly done: boolean;
}

/**
 * next: chunk `next` is wanted; complete: every chunk is durable (staged); have: the follower has applied at
 * least the stream's snapshot index already (nothing to send); restart: the follower lost the stream.
 */
export type SnapDataOutcome = 'next' | 'complete' | 'have' | 'restart';

export interface MsgSnapDataResp {
  readonly type: 'MsgSnapDataResp';
  readonly from: NodeId;
  readonly to: NodeId;
  readonly stream: string;
  readonly outcome: SnapDataOutcome;
  readonly next: number;
}

export type StreamMessage = MsgSnapData | MsgSnapDataResp;

const outcomes: readonly SnapDataOutcome[] = ['next', 'complete', 'have', 'restart'];

/** A peer's stream message with the fields this module relies on (peers are authenticated, but may be buggy). */
export function isStreamMessage(m: { readonly type?: unknown }): m is StreamMessage {
  const r = m as Record<string, unknown>;
  if (r['type'] === 'MsgSnapData') {
    return (
      typeof r['stream'] === 'string' &&
      typeof r['snapshotIndex'] === 'number' &&
      typeof r['seq'] === 'number' &&
      typeof r['done'] === 'boolean' &&
      Array.isArray(r['pairs']) &&
      (r['pairs'] as unknown[]).every(
        (p) => Array.isArray(p) && p.length === 2 && p.every((b) => b instanceof Uint8Array),
      )
    );
  }
  if (r['type'] === 'MsgSnapDataResp') {
    return (
      typeof r['stream'] === 'string' &&
      typeof r['next'] === 'number' &&
      outcomes.includes(r['outcome'] as SnapDataOutcome)
    );
  }
  return false;
}

export interface SnapshotSenderOptions {
  readonly selfId: NodeId;
  readonly incarnation: number;
  readonly db: Db;
  readonly send: (message: MsgSnapData) => void;
  /** Bytes of keys and values per chunk (a chunk holds at least one pair). */
  readonly chunkBytes: number;
  /** A chunk unanswered this long is sent again; after `resendsMax` resends the stream is abandoned. */
  readonly ackTimeoutMs: number;
  readonly resendsMax?: number;
  /** How long a completed stream answers for its follower (later offers at or below it send nothing). */
  readonly completedRetainMs: number;
  readonly logger: Logger;
}

interface OutStream {
  readonly id: string;
  readonly to: NodeId;
  readonly snapshotIndex: LogIndex;
  state: 'sending' | 'complete';
  /** The applied index of the data sent (known once the stream has read its LevelDB snapshot). */
  dataIndex: number;
  completedAtMs: number;
  awaiting: { seq: number; settle: (m: MsgSnapDataResp | undefined) => void } | undefined;
}

/** The leader's side: at most one stream per follower, each reading one LevelDB snapshot. */
export class SnapshotSender {
  private readonly streams = new Map<NodeId, OutStream>();
  private readonly running = new Set<Promise<void>>();
  private sequence = 0;
  private closed = false;
  /** Streams completed since this process started (for status and tests). */
  streamsCompleted = 0;

  constructor(private readonly options: SnapshotSenderOptions) {}

  /** The core sent MsgSnap(snapshotIndex) to `to`: make sure that follower gets state at least that recent. */
  offer(to: NodeId, snapshotIndex: LogIndex): void {
    if (this.closed) return;
    const existing = this.streams.get(to);
    if (existing?.state === 'sending') return;
    if (
      existing?.state === 'complete' &&
      existing.dataIndex >= snapshotIndex &&
      performance.now() - existing.completedAtMs < this.options.completedRetainMs
    ) {
      return;
    }
    const stream: OutStream = {
      id: `${this.options.selfId.toString(36)}.${this.options.incarnation.toString(36)}.s${++this.sequence}`,
      to,
      snapshotIndex,
      state: 'sending',
      dataIndex: 0,
      completedAtMs: 0,
      awaiting: undefined,
    };
    this.streams.set(to, stream);
    const run = this.run(stream)
      .catch((error: unknown) => {
        this.options.logger.warn({ to: to.toString(16), error: String(error) }, 'snapshot stream failed');
        if (this.streams.get(to) === stream) this.streams.delete(to);
      })
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  onResponse(m: MsgSnapDataResp): void {
    const stream = this.streams.get(m.from);
    if (stream === undefined || stream.id !== m.stream || stream.awaiting === undefined) return;
    if (m.outcome === 'next' && m.next <= stream.awaiting.seq) return; // an old acknowledgement
    const { settle } = stream.awaiting;
    stream.awaiting = undefined;
    settle(m);
  }

  /** Stops every stream (their followers start over with the next leader's offer) and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const stream of this.streams.values()) {
      const awaiting = stream.awaiting;
      stream.awaiting = undefined;
      awaiting?.settle(undefined);
    }
    await Promise.all([...this.running]);
  }

  private async run(stream: OutStream): Promise<void> {
    const { db, chunkBytes, logger } = this.options;
    const snapshot = db.snapshot();
    try {
      stream.dataIndex = appliedFrom(db.getSync(appliedKey, { snapshot }));
      logger.info(
        { to: stream.to.toString(16), snapshotIndex: stream.snapshotIndex, dataIndex: stream.dataIndex },
        'streaming state to a follower',
      );
      const iterator = db.iterator({ snapshot, highWaterMarkBytes: Math.max(16 * 1024, chunkBytes) });
      try {
        let buffered: [Buffer, Buffer][] = [];
        let at = 0;
        let exhausted = false;
        let bytes = 0;
        for (let seq = 0; ; seq++) {
          const pairs: [Buffer, Buffer][] = [];
          let size = 0;
          while (!exhausted && (pairs.length === 0 || size < chunkBytes)) {
            if (at === buffered.length) {
              buffered = await iterator.nextv(256);
              at = 0;
              if (buffered.length === 0) {
                exhausted = true;
                break;
              }
            }
            const pair = buffered[at++]!;
            pairs.push(pair);
            size += pair[0].length + pair[1].length;
          }
          bytes += size;
          const chunk: MsgSnapData = {
            type: 'MsgSnapData',
            from: this.options.selfId,
            to: stream.to,
            stream: stream.id,
            snapshotIndex: stream.snapshotIndex,
            seq,
            pairs,
            done: exhausted,
          };
          const answer = await this.exchange(stream, chunk);
          if (answer === undefined) throw new Error(`chunk ${seq} unanswered; abandoned`);
          if (answer.outcome === 'restart') throw new Error('the follower lost the stream');
          if (answer.outcome === 'have' || answer.outcome === 'complete') {
            stream.state = 'complete';
            stream.completedAtMs = performance.now();
            this.streamsCompleted++;
            logger.info(
              {
                to: stream.to.toString(16),
                dataIndex: stream.dataIndex,
                chunks: seq + 1,
                bytes,
                outcome: answer.outcome,
              },
              'streamed state to a follower',
            );
            return;
          }
          if (exhausted) throw new Error('the follower wants more than the whole state');
        }
      } finally {
        await iterator.close();
      }
    } finally {
      await snapshot.close();
    }
  }

  /** Sends a chunk and waits for its answer, resending it after each ack timeout; undefined: given up. */
  private async exchange(stream: OutStream, chunk: MsgSnapData): Promise<MsgSnapDataResp | undefined> {
    const resendsMax = this.options.resendsMax ?? 5;
    for (let attempt = 0; attempt <= resendsMax && !this.closed; attempt++) {
      const answer = await new Promise<MsgSnapDataResp | undefined>((settle) => {
        const timer = setTimeout(() => {
          if (stream.awaiting?.settle === done) stream.awaiting = undefined;
          settle(undefined);
        }, this.options.ackTimeoutMs);
        const done = (m: MsgSnapDataResp | undefined): void => {
          clearTimeout(timer);
          settle(m);
        };
        stream.awaiting = { seq: chunk.seq, settle: done };
        this.options.send(chunk);
      });
      if (answer !== undefined) return answer;
    }
    return undefined;
  }
}

export interface SnapshotReceiverOptions {
  readonly selfId: NodeId;
  /** The replica's data dir: staging dirs live beside its `mvcc/`. */
  readonly dataDir: string;
  readonly send: (message: MsgSnapDataResp) => void;
  /** The index the state machine has applied. */
  readonly applied: () => number;
  /** A complete state is staged (durable in `mvcc-ready/`): install it from the Ready loop. */
  readonly onStaged: () => void;
  readonly logger: Logger;
}

interface InStream {
  readonly id: string;
  readonly from: NodeId;
  next: number;
  readonly db: Db;
}

export const stagingDirs = (dataDir: string) => ({
  incoming: join(dataDir, 'mvcc-incoming'),
  ready: join(dataDir, 'mvcc-ready'),
  installing: join(dataDir, 'mvcc-installing'),
});

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** fsync of a directory, so that a rename inside it survives a crash. */
async function syncDir(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The follower's side: one stream at a time, written to a staging LevelDB; one chunk in memory at a time. */
export class SnapshotReceiver {
  private current: InStream | undefined;
  /** Every step (a chunk, an install) runs after the previous one: the staging dirs have one owner. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Chunks received and written since this process started (for status and tests). */
  chunksReceived = 0;
  private readonly dirs: ReturnType<typeof stagingDirs>;

  constructor(private readonly options: SnapshotReceiverOptions) {
    this.dirs = stagingDirs(options.dataDir);
  }

  onChunk(m: MsgSnapData): void {
    this.exclusive(() => this.handle(m)).catch((error: unknown) => {
      this.options.logger.warn({ error: String(error) }, 'snapshot chunk failed; the leader starts over');
      this.options.send(this.answer(m, 'restart', 0));
    });
  }

  /** Runs `step` after every earlier chunk and step; the staging dirs are not touched meanwhile. */
  exclusive<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step);
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.exclusive(() => this.discard());
  }

  private answer(m: MsgSnapData, outcome: SnapDataOutcome, next: number): MsgSnapDataResp {
    return {
      type: 'MsgSnapDataResp',
      from: this.options.selfId,
      to: m.from,
      stream: m.stream,
      outcome,
      next,
    };
  }

  private async handle(m: MsgSnapData): Promise<void> {
    if (this.closed) return;
    const reply = (outcome: SnapDataOutcome, next: number): void =>
      this.options.send(this.answer(m, outcome, next));
    let stream = this.current;
    if (stream === undefined || stream.id !== m.stream || stream.from !== m.from) {
      if (m.seq !== 0) return reply('restart', 0);
      if (this.options.applied() >= m.snapshotIndex) return reply('have', 0);
      await this.discard();
      await rm(this.dirs.incoming, { recursive: true, force: true });
      const db = new ClassicLevel<Buffer, Buffer>(this.dirs.incoming, {
        keyEncoding: 'buffer',
        valueEncoding: 'buffer',
      });
      await db.open();
      stream = { id: m.stream, from: m.from, next: 0, db };
      this.current = stream;
      this.options.logger.info(
        { from: m.from.toString(16), snapshotIndex: m.snapshotIndex },
        'receiving state from the leader',
      );
    }
    if (m.seq < stream.next) return reply('next', stream.next); // a resent chunk already written
    if (m.seq > stream.next) {
      await this.discard();
      return reply('restart', 0);
    }
    const ops = m.pairs.map(([key, value]) => ({
      type: 'put' as const,
      key: Buffer.from(key.buffer, key.byteOffset, key.byteLength),
      value: Buffer.from(value.buffer, value.byteOffset, value.byteLength),
    }));
    await stream.db.batch(ops, { sync: m.done });
    stream.next++;
    this.chunksReceived++;
    if (!m.done) return reply('next', stream.next);
    this.current = undefined;
    await stream.db.close();
    // An older staged state not installed yet is superseded by this one.
    await rm(this.dirs.ready, { recursive: true, force: true });
    await rename(this.dirs.incoming, this.dirs.ready);
    await syncDir(this.options.dataDir);
    reply('complete', stream.next);
    this.options.onStaged();
  }

  private async discard(): Promise<void> {
    const stream = this.current;
    this.current = undefined;
    if (stream !== undefined) await stream.db.close();
    await rm(this.dirs.incoming, { recursive: true, force: true });
  }
}

/**
 * Installs a staged state into `db` (its whole content is replaced), if one is staged and it is ahead of
 * `applied`, or if an earlier install was interrupted. Returns the installed applied index, or undefined.
 * `beforeReplace` runs once the state is known to be installed, before `db` is touched.
 */
export async function installStaged(
  db: Db,
  dataDir: string,
  applied: number,
  beforeReplace: () => void,
): Promise<number | undefined> {
  const dirs = stagingDirs(dataDir);
  await rm(dirs.incoming, { recursive: true, force: true });
  if (!(await exists(dirs.installing))) {
    if (!(await exists(dirs.ready))) return undefined;
    const staged = new ClassicLevel<Buffer, Buffer>(dirs.ready, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
    });
    await staged.open();
    let stagedApplied: number;
    try {
      stagedApplied = appliedFrom(await staged.get(appliedKey));
    } finally {
      await staged.close();
    }
    if (stagedApplied <= applied) {
      await rm(dirs.ready, { recursive: true, force: true });
      return undefined;
    }
    // From here on the install is redone after a crash until it is complete.
    await rename(dirs.ready, dirs.installing);
    await syncDir(dataDir);
  }
  beforeReplace();
  const source = new ClassicLevel<Buffer, Buffer>(dirs.installing, {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await source.open();
  let installed: number;
  try {
    installed = appliedFrom(await source.get(appliedKey));
    await db.clear();
    const iterator = source.iterator({ highWaterMarkBytes: 1024 * 1024 });
    try {
      for (;;) {
        const pairs = await iterator.nextv(1000);
        if (pairs.length === 0) break;
        await db.batch(
          pairs.map(([key, value]) => ({ type: 'put' as const, key, value })),
          { sync: false },
        );
      }
    } finally {
      await iterator.close();
    }
    await db.put(appliedKey, u64(installed), { sync: true }); // makes every write above durable too
  } finally {
    await source.close();
  }
  await rm(dirs.installing, { recursive: true, force: true });
  return installed;
}
