// The replicated engine: the storage contract served by a Raft group. Every node applies the committed log, in
// order, to its own LevelDB MVCC state (src/storage/mvcc), so every node computes the same revisions.
//
// The node drives the pure Raft core (src/raft) in one loop, and only this loop touches the core's Ready:
//   1. persist the Ready's hard state, entries and snapshot (fsynced when the Ready says mustSync);
//   2. THEN send its messages (a vote or an append acknowledged before it is durable would break Raft);
//   3. restore a received snapshot, apply committed entries in one MVCC batch (with the applied index in the
//      same batch, so a crash replays from exactly there), answer the proposals this node made;
//   4. advance().
// Writes from any node: a follower's proposal is forwarded by the core to the leader. A write whose fate is
// unknown when the request times out (lost leader, no quorum) fails with Unavailable, never a false success.
// Reads: "most recent" (the default) waits for a ReadIndex round (batched across concurrent reads) and for the
// local apply to reach it, then reads the local MVCC state; serializable reads are local. Watches are served
// by the local watch hub from applied changes.

import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { randomInt } from 'node:crypto';
import { assert, unreachable } from '../util/assert.js';
import {
  logIndex,
  term,
  revision as toRevision,
  type LogIndex,
  type NodeId,
  type Revision,
} from '../util/brand.js';
import { systemRandom, type Random } from '../util/clock.js';
import { limits } from '../util/limits.js';
import {
  StorageError,
  type KVStore,
  type KeySpan,
  type RangeOptions,
  type RangeResult,
  type StoreStatus,
  type TxnRequest,
  type TxnResult,
  type Watch,
  type WatchOptions,
  type WatchResponse,
} from '../storage/contract.js';
import { Mvcc, mvccDbOptions, writeBatch, type Db, type RevisionChanges } from '../storage/mvcc/mvcc.js';
import { WatchHub } from '../storage/watch/hub.js';
import { checkSpan, checkTxn } from '../storage/validate.js';
import {
  MemoryStorage,
  Raft,
  NONE,
  bootstrap,
  decodeConfChange,
  type ConfChange,
  type ConfState,
  type Entry,
  type Message,
  type RaftError,
  type ReadState,
  type Ready,
  type Snapshot,
  type StateType,
} from '../raft/index.js';
import { RaftLogStore, type LoadedLog } from '../raftlog/store.js';
import { latencyTraceOn, setTraceProcessName, traceStage } from '../transport/latency-trace.js';
import { PeerTransport, type TransportStats } from '../transport/transport.js';
import type { Logger, PeerTlsOptions } from '../transport/options.js';
import { silentLogger } from '../transport/options.js';
import { decodeCommand, encodeCommand, type Command } from './commands.js';
import { encodeBackup } from './backup.js';
import {
  SnapshotReceiver,
  SnapshotSender,
  appliedFrom,
  appliedKey,
  installStaged,
  isStreamMessage,
  u64,
  type StreamMessage,
} from './snapshot-stream.js';
import { clusterIdFromToken, nodeIdFromName, type Member } from './ids.js';

export interface ReplicaOptions {
  readonly name: string;
  /** The node's directory: the Raft log in `raft/`, the MVCC state in `mvcc/`. */
  readonly dataDir: string;
  /** For a new cluster: every initial member (this one included). For a joining node: the current members. */
  readonly initialCluster: readonly Member[];
  readonly initialClusterState: 'new' | 'existing';
  /** Every member of one cluster uses the same token; its hash is the cluster ID checked on every peer link. */
  readonly clusterToken: string;
  readonly listenPeer: { readonly host: string; readonly port: number };
  /**
   * Where to dial a member, by name, when it differs from its advertised peer URL (a chaos run routes every
   * peer link through a fault proxy). Members not named here are dialled at their peer URL.
   */
  readonly peerDialUrls?: ReadonlyMap<string, string>;
  readonly tls: PeerTlsOptions;
  /** etcd's --heartbeat-interval (default 100 ms): one Raft tick. */
  readonly heartbeatIntervalMs?: number;
  /** etcd's --election-timeout (default 1000 ms). */
  readonly electionTimeoutMs?: number;
  /**
   * etcd's --snapshot-count: applied entries between snapshots (default 10,000: etcd 3.6's, chosen once etcd's
   * snapshots stopped copying its store, as Stoa's do; etcd 3.4 and 3.5 have 100,000, sized for the v2 store
   * dump). Fewer entries held in memory between log compactions; a snapshot costs one synced LevelDB write.
   */
  readonly snapshotCount?: number;
  /** Bytes of state per chunk when a follower is sent the state (default 1 MiB). */
  readonly snapshotChunkBytes?: number;
  /** Entries kept in the log behind a snapshot so that slow followers catch up without one (default 5,000). */
  readonly snapshotCatchUpEntries?: number;
  /** History kept by automatic compaction, proposed by the leader (default 5 minutes; <= 0 turns it off). */
  readonly retentionMs?: number;
  /** How long a write or a linearizable read may wait for the cluster (default 5 s + 2 election timeouts). */
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
  readonly random?: Random;
  /** Idle time after which progress-notify watchers hear the current revision (default 10 minutes, as etcd). */
  readonly watchProgressIntervalMs?: number;
  /** Called when the node cannot go on (its disk failed); the default rethrows, ending the process. */
  readonly onFatal?: (error: unknown) => void;
  /**
   * For tests: awaited by a snapshot in progress at each of its steps ('start': nothing written yet; 'synced':
   * the MVCC state is durable up to `index`, the Raft log not yet compacted). Writes go on meanwhile.
   */
  readonly snapshotHook?: (step: 'start' | 'synced', index: number) => Promise<void>;
}

export interface MemberStatus {
  readonly id: string;
  readonly name: string;
  readonly peerUrl: string;
  readonly role: 'voter' | 'learner';
}

export interface ReplicaStatus {
  readonly name: string;
  readonly id: string;
  readonly role: StateType | 'learner' | 'removed';
  readonly term: number;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  /** The index of the latest snapshot this node holds (taken or received). */
  readonly snapshotIndex: number;
  /** Snapshots received from a leader and restored since this process started. */
  readonly snapshotsRestored: number;
  /** Chunks of state received from a leader since this process started. */
  readonly snapshotChunksReceived: number;
  /** Streams of this node's state to a follower completed since this process started. */
  readonly snapshotStreamsSent: number;
  /**
   * Times this node's transport saw its leader's process go away (connection lost, reconnect refused) and the
   * node stopped waiting for the election timeout (since this process started; see docs/replication.md).
   */
  readonly leaderDownHints: number;
  readonly revision: number;
  readonly members: readonly MemberStatus[];
}

/** The URL this node dials to reach `member`: its dial override if it has one, else its peer URL. */
function dialUrl(options: ReplicaOptions, member: Member): string {
  return options.peerDialUrls?.get(member.name) ?? member.peerUrl;
}

interface Waiter<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
}

type Outcome = { readonly result?: TxnResult; readonly error?: Error };

/** Data bytes of proposals handed to the core as one MsgProp (a follower forwards it in one peer frame). */
const proposalBatchBytesMax = 1024 * 1024;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

interface ReadRound {
  readonly context: string;
  readonly waiters: Waiter<void>[];
  index: LogIndex | undefined;
  askedAtTick: number;
}

/** Keys of the replica's own records in the MVCC LevelDB (the MVCC uses keys starting with 'm'): `appliedKey`
 * (snapshot-stream.ts) and the member table. */
const memberPrefix = Buffer.from('rM');
/** The index of the latest snapshot this member took: written with sync to make the MVCC state durable. */
const snapshotSyncKey = Buffer.from('rS');
const memberKey = (id: NodeId): Buffer => {
  const key = Buffer.alloc(memberPrefix.length + 4);
  memberPrefix.copy(key);
  key.writeUInt32BE(id, memberPrefix.length);
  return key;
};
const packr = new Packr({ useRecords: false, moreTypes: false });

export class ReplicatedStore implements KVStore {
  readonly selfId: NodeId;
  readonly name: string;
  private readonly incarnation = randomInt(1, 2 ** 40);
  private readonly options: ReplicaOptions;
  private readonly logger: Logger;
  private readonly heartbeatIntervalMs: number;
  private readonly electionTicks: number;
  private readonly snapshotCount: number;
  private readonly snapshotCatchUpEntries: number;
  private readonly requestTimeoutMs: number;
  private readonly onFatal: (error: unknown) => void;

  private readonly raft: Raft;
  private hub: WatchHub;
  private readonly members = new Map<NodeId, Member>();
  private role: StateType = 'follower';
  private leader: NodeId;
  /** The index the MVCC state has applied (it may run ahead of the core after a streamed state is installed). */
  private applied: LogIndex;
  /** The last index the core handed out as committed (or restored a snapshot at). */
  private coreApplied: LogIndex;
  private snapshotIndex: LogIndex;
  private ticks = 0;
  private snapshotsRestored = 0;

  private readonly waiters = new Map<string, Waiter<Outcome>>();
  /**
   * The term in which each waiting proposal was handed to a leader (this node, or forwarded). A leader appends
   * a proposal in its own term, and terms never decrease along the log: once an entry of a later term is
   * applied, an unanswered proposal was (almost certainly) lost with its leader. See failLostProposals().
   */
  private readonly proposedTerms = new Map<string, number>();
  private leaderDownHints = 0;
  /** Proposals the core refused for want of a leader: retried on every tick until they time out. */
  private unsent: { id: string; data: Uint8Array }[] = [];
  /** Proposals made since the Ready loop last ran: handed to the core together, as one MsgProp per batch. */
  private proposing: { id: string; data: Uint8Array }[] = [];
  private proposalSeq = 0;
  private readonly confWaiters: { change: ConfChange; waiter: Waiter<void> }[] = [];

  private readQueue: Waiter<void>[] = [];
  private readRound: ReadRound | undefined;
  private readSeq = 0;

  private running: Promise<void> | undefined;
  private rerun = false;
  /** A Ready loop run is queued (as a microtask) but has not started yet. */
  private drainQueued = false;

  private readonly snapshotSender: SnapshotSender;
  private readonly snapshotReceiver: SnapshotReceiver;
  /** A complete state from the leader is staged: the Ready loop installs it next. */
  private stagedReady = false;
  /** The latest MsgSnap that arrived before its state did: stepped once the state is installed. */
  private pendingSnap: Extract<Message, { type: 'MsgSnap' }> | undefined;
  /** The snapshot being taken beside the Ready loop (at most one at a time; see maybeSnapshot). */
  private snapshotting: Promise<void> | undefined;
  /** Set while a streamed state replaces the MVCC state: reads wait for it. */
  private restoring: Promise<void> | undefined;
  /** The MVCC write of applied entries whose results were already told: reads wait for it. */
  private applyWrite: Promise<void> | undefined;
  private readonly tickTimer: NodeJS.Timeout;
  private readonly compactionTimer: NodeJS.Timeout | undefined;
  private readonly compactionSamples: { timeMs: number; revision: Revision }[] = [];
  private closed = false;
  private removed = false;
  private failed: unknown = undefined;

  private constructor(
    options: ReplicaOptions,
    private readonly log: RaftLogStore,
    private readonly db: Db,
    private mvcc: Mvcc,
    private readonly storage: MemoryStorage,
    private readonly transport: PeerTransport<Message | StreamMessage>,
    applied: LogIndex,
    snapshotIndex: LogIndex,
    members: readonly Member[],
  ) {
    this.options = options;
    this.name = options.name;
    this.selfId = nodeIdFromName(options.name);
    this.logger = options.logger ?? silentLogger;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 100;
    const electionTimeoutMs = options.electionTimeoutMs ?? 1000;
    this.electionTicks = Math.max(2, Math.round(electionTimeoutMs / this.heartbeatIntervalMs));
    this.snapshotCount = options.snapshotCount ?? 10_000;
    this.snapshotCatchUpEntries = options.snapshotCatchUpEntries ?? 5_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5_000 + 2 * electionTimeoutMs;
    this.onFatal =
      options.onFatal ??
      ((error) =>
        setImmediate(() => {
          throw error;
        }));
    for (const member of members) this.members.set(member.id, member);
    this.hub = this.newHub();
    this.applied = applied;
    this.coreApplied = snapshotIndex;
    this.snapshotIndex = snapshotIndex;
    this.leader = NONE;
    this.raft = new Raft({
      id: this.selfId,
      storage,
      random: options.random ?? systemRandom,
      electionTicks: this.electionTicks,
      heartbeatTicks: 1,
      // Not the MVCC's applied index: the core rebuilds its membership from the snapshot and the conf changes
      // after it, so those are handed out again and re-applied to the core (the MVCC skips what it has).
      trace: (line) => this.logger.debug({ raft: line }, 'raft'),
    });
    this.syncPeers(this.raft.confState());
    const chunkBytes = options.snapshotChunkBytes ?? 1024 * 1024;
    this.snapshotSender = new SnapshotSender({
      selfId: this.selfId,
      incarnation: this.incarnation,
      db,
      send: (message) => this.transport.send([message]),
      chunkBytes,
      ackTimeoutMs: 2 * electionTimeoutMs,
      completedRetainMs: 10 * electionTimeoutMs,
      logger: this.logger,
    });
    this.snapshotReceiver = new SnapshotReceiver({
      selfId: this.selfId,
      dataDir: options.dataDir,
      send: (message) => this.transport.send([message]),
      applied: () => this.applied,
      onStaged: () => {
        this.stagedReady = true;
        this.schedule();
      },
      logger: this.logger,
    });
    if (latencyTraceOn) setTraceProcessName(options.name);
    transport.onMessage((message) => {
      if (this.closed || this.removed) return;
      if (latencyTraceOn) traceMessage('recv', message);
      if (message.type === 'MsgSnapData' || message.type === 'MsgSnapDataResp') {
        if (!isStreamMessage(message)) return; // malformed: the sender times out and starts over
        if (message.type === 'MsgSnapData') this.snapshotReceiver.onChunk(message);
        else this.snapshotSender.onResponse(message);
        return;
      }
      if (message.type === 'MsgSnap' && message.data.length === 0 && message.snapshotIndex > this.applied) {
        // Its state has not arrived yet (it is streamed beside the core): step it once installed.
        this.pendingSnap = message;
        return;
      }
      this.raft.step(message);
      this.schedule();
    });
    transport.onPeerState((peer, state) => this.onPeerState(peer, state));
    this.tickTimer = setInterval(() => this.tick(), this.heartbeatIntervalMs);
    const retentionMs = options.retentionMs ?? limits.storeHistoryRetentionMs;
    if (retentionMs > 0) {
      const sampleMs = Math.max(10, Math.min(60_000, Math.floor(retentionMs / 10)));
      this.compactionTimer = setInterval(() => this.sampleForCompaction(retentionMs), sampleMs);
      this.compactionTimer.unref();
    }
    this.schedule(); // committed entries not yet applied (after a restart, or the bootstrap entries)
  }

  /** Opens (or creates) the node's state and joins the cluster. */
  static async open(options: ReplicaOptions): Promise<ReplicatedStore> {
    const selfId = nodeIdFromName(options.name);
    const clusterId = clusterIdFromToken(options.clusterToken);
    await mkdir(options.dataDir, { recursive: true });
    const mvccDir = join(options.dataDir, 'mvcc');
    const db = new ClassicLevel<Buffer, Buffer>(mvccDir, mvccDbOptions());
    // The MVCC LevelDB is opened first: its LOCK guards the whole data dir (the Raft log has no lock of its own
    // across processes), so a second process is refused before it reads or migrates anything.
    try {
      await db.open();
    } catch (error) {
      if (/lock/i.test((error as { cause?: Error }).cause?.message ?? '')) {
        throw new StorageError(
          'Unavailable',
          `data dir ${options.dataDir} is in use by another process (the LevelDB lock of ${mvccDir} is held)`,
        );
      }
      throw error;
    }
    let log: RaftLogStore;
    let loadedFromDisk: LoadedLog;
    try {
      ({ store: log, loaded: loadedFromDisk } = await RaftLogStore.open(join(options.dataDir, 'raft-wal'), {
        legacyDir: join(options.dataDir, 'raft'),
      }));
    } catch (error) {
      await db.close().catch(() => undefined);
      throw error;
    }
    let transport: PeerTransport<Message | StreamMessage> | undefined;
    try {
      let loaded: LoadedLog = loadedFromDisk;
      if (loaded.identity !== undefined) {
        ReplicatedStore.checkIdentity(options, loaded.identity, clusterId, log.dir);
      } else {
        loaded = await ReplicatedStore.initialize(options, log, db, selfId, clusterId);
      }
      // A state streamed from a leader and staged, or installed half way, when the node stopped.
      await installStaged(db, options.dataDir, await ReplicatedStore.readApplied(db), () => undefined);
      let applied = await ReplicatedStore.readApplied(db);
      const snapshot = loaded.snapshot;
      if (snapshot !== undefined && applied < snapshot.metadata.index) {
        if (snapshot.data.length === 0) {
          throw new StorageError(
            'Corrupt',
            `the MVCC state in ${mvccDir} has applied index ${applied}, behind the Raft snapshot at ` +
              `${snapshot.metadata.index} in ${log.dir}, and no staged state covers it`,
          );
        }
        // A data dir from before snapshots were streamed, which crashed while restoring one: restore it again.
        await ReplicatedStore.restoreState(db, snapshot);
        applied = snapshot.metadata.index;
      }
      const mvcc = await Mvcc.open(db, mvccDir);
      const storage = new MemoryStorage();
      if (snapshot !== undefined) storage.applySnapshot(snapshot);
      storage.append(loaded.entries);
      storage.setHardState(loaded.hardState);
      const members = await ReplicatedStore.readMembers(db);
      transport = await PeerTransport.create<Message | StreamMessage>({
        clusterId,
        nodeId: selfId,
        tls: options.tls,
        listen: options.listenPeer,
        ...(options.logger !== undefined ? { logger: options.logger } : {}),
      });
      const node = new ReplicatedStore(
        options,
        log,
        db,
        mvcc,
        storage,
        transport,
        applied,
        snapshot?.metadata.index ?? logIndex(0),
        members,
      );
      if (options.initialClusterState === 'existing') {
        // A joining node knows the current members from its flags until the leader's log or snapshot arrives.
        for (const member of options.initialCluster) {
          if (member.id !== selfId && !node.members.has(member.id)) node.members.set(member.id, member);
          if (member.id !== selfId) transport.addPeer(member.id, dialUrl(options, member));
        }
      }
      return node;
    } catch (error) {
      await transport?.close();
      await db.close().catch(() => undefined);
      await log.close().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Resolves once the MVCC state holds everything already told to a client or watcher: no restore is running,
   * and the apply write in flight when called (if any) has landed. A failed write fails the node.
   */
  private async settledReads(): Promise<void> {
    while (this.restoring !== undefined) await this.restoring;
    const write = this.applyWrite;
    if (write !== undefined) await write.catch(() => undefined);
  }

  /** The watch hub reads history from whatever MVCC state is current (it is replaced by a snapshot restore). */
  private newHub(): WatchHub {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getter below has its own `this`
    const self = this;
    return new WatchHub(
      {
        readChanges: async (after, max) => {
          await this.settledReads();
          return this.mvcc.readChanges(after, max);
        },
        get compactRevision() {
          return self.mvcc.compactRevision;
        },
      },
      this.mvcc.revision,
      this.options.watchProgressIntervalMs !== undefined
        ? { progressIntervalMs: this.options.watchProgressIntervalMs }
        : {},
    );
  }

  private static checkIdentity(
    options: ReplicaOptions,
    identity: { clusterId: string; name: string },
    clusterId: string,
    dir: string,
  ): void {
    if (identity.name !== options.name) {
      throw new Error(
        `${dir} belongs to member "${identity.name}", but this node was started as --name=${options.name}; ` +
          `start it with --name=${identity.name}, or give it an empty --data-dir`,
      );
    }
    if (identity.clusterId !== clusterId) {
      throw new Error(
        `${dir} belongs to cluster ${identity.clusterId}, but --initial-cluster-token="${options.clusterToken}" ` +
          `names cluster ${clusterId}; use the token the cluster was created with, or an empty --data-dir`,
      );
    }
  }

  /** First start in an empty data dir: bootstrap a new cluster, or prepare to join an existing one. */
  private static async initialize(
    options: ReplicaOptions,
    log: RaftLogStore,
    db: Db,
    selfId: NodeId,
    clusterId: string,
  ): Promise<LoadedLog> {
    const self = options.initialCluster.find((m) => m.id === selfId);
    if (self === undefined) {
      throw new Error(
        `--initial-cluster does not name this member (--name=${options.name}); ` +
          `list it as ${options.name}=https://host:peer-port`,
      );
    }
    let loaded: LoadedLog = {
      identity: { clusterId, nodeId: selfId, name: options.name },
      hardState: { term: term(0), vote: NONE, commit: logIndex(0) },
      snapshot: undefined,
      entries: [],
    };
    if (options.initialClusterState === 'new') {
      // Every initial member writes the same bootstrap: the voters as committed conf-change entries at term 1,
      // in ascending id order, and the same member table.
      const storage = new MemoryStorage();
      bootstrap(
        storage,
        options.initialCluster.map((m) => m.id).sort((a, b) => a - b),
      );
      const entries = storage.entries(
        logIndex(1),
        logIndex(storage.lastIndex() + 1),
        Number.MAX_SAFE_INTEGER,
      );
      const hardState = storage.initialState().hardState;
      await db.batch(
        options.initialCluster.map((m) => ({
          type: 'put' as const,
          key: memberKey(m.id),
          value: packr.pack({ id: m.id, name: m.name, peerUrl: m.peerUrl }),
        })),
        { sync: true },
      );
      await log.save({ entries, hardState });
      loaded = { ...loaded, hardState, entries };
    }
    await log.saveIdentity({ clusterId, nodeId: selfId, name: options.name });
    return loaded;
  }

  private static async readApplied(db: Db): Promise<LogIndex> {
    return logIndex(appliedFrom(await db.get(appliedKey)));
  }

  private static async readMembers(db: Db): Promise<Member[]> {
    const members: Member[] = [];
    const end = Buffer.from(memberPrefix);
    end[end.length - 1] = (end[end.length - 1] ?? 0) + 1;
    for await (const [, value] of db.iterator({ gte: memberPrefix, lt: end })) {
      const m = packr.unpack(value) as { id: number; name: string; peerUrl: string };
      members.push({ id: m.id as NodeId, name: m.name, peerUrl: m.peerUrl });
    }
    return members;
  }

  /**
   * Replaces the whole MVCC LevelDB content by a snapshot's data (every key, the replica's records included):
   * only for data dirs written before snapshots carried no data (see snapshot-stream.ts).
   */
  private static async restoreState(db: Db, snapshot: { data: Uint8Array }): Promise<void> {
    const pairs = packr.unpack(snapshot.data) as [Uint8Array, Uint8Array][];
    await db.clear();
    const batchPairs = 1000;
    for (let i = 0; i < pairs.length; i += batchPairs) {
      const ops = pairs.slice(i, i + batchPairs).map(([key, value]) => ({
        type: 'put' as const,
        key: Buffer.from(key),
        value: Buffer.from(value),
      }));
      await db.batch(ops, { sync: i + batchPairs >= pairs.length });
    }
  }

  // ---- The storage contract ----------------------------------------------------------------------------

  async range(span: KeySpan, options: RangeOptions = {}): Promise<RangeResult> {
    this.checkServing();
    checkSpan(span);
    if (options.serializable !== true) await this.linearizableBarrier();
    await this.settledReads();
    return this.mvcc.range(span, options);
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    this.checkServing();
    checkTxn(request);
    const outcome = await this.proposeCommand((id) => ({ type: 'txn', id, request }));
    if (outcome.error !== undefined) throw outcome.error;
    assert(outcome.result !== undefined, 'an applied txn has a result');
    return outcome.result;
  }

  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    checkSpan(span);
    return this.hub.watch(span, options, listener);
  }

  async compact(revision: Revision): Promise<void> {
    this.checkServing();
    const outcome = await this.proposeCommand((id) => ({ type: 'compact', id, revision }));
    if (outcome.error !== undefined) throw outcome.error;
  }

  async status(): Promise<StoreStatus> {
    let dbSizeBytes = 0;
    for (const dir of ['raft-wal', 'mvcc']) {
      const path = join(this.options.dataDir, dir);
      for (const name of await readdir(path).catch(() => [] as string[])) {
        dbSizeBytes += (await stat(join(path, name)).catch(() => ({ size: 0 }))).size;
      }
    }
    return { revision: this.mvcc.revision, compactRevision: this.mvcc.compactRevision, dbSizeBytes };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.tickTimer);
    if (this.compactionTimer !== undefined) clearInterval(this.compactionTimer);
    const closedError = new StorageError('Closed', 'the store is closed');
    for (const [id, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(closedError);
      this.waiters.delete(id);
      this.proposedTerms.delete(id);
    }
    this.failReads(closedError);
    for (const { waiter } of this.confWaiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(closedError);
    }
    await this.running;
    await this.snapshotting;
    await this.snapshotSender.close();
    await this.snapshotReceiver.close();
    await this.transport.close();
    this.hub.close();
    await this.log.close();
    await this.db.close();
  }

  // ---- Cluster administration ----------------------------------------------------------------------------

  replicaStatus(): ReplicaStatus {
    const status = this.raft.status();
    const confState = status.confState;
    const members: MemberStatus[] = [...confState.voters, ...confState.learners].map((id) => {
      const member = this.members.get(id);
      return {
        id: id.toString(16),
        name: member?.name ?? '',
        peerUrl: member?.peerUrl ?? '',
        role: confState.learners.includes(id) ? 'learner' : 'voter',
      };
    });
    const isLearner = confState.learners.includes(this.selfId);
    return {
      name: this.name,
      id: this.selfId.toString(16),
      role: this.removed ? 'removed' : isLearner ? 'learner' : status.state,
      term: status.term,
      leader: status.lead === 0 ? null : (this.members.get(status.lead)?.name ?? status.lead.toString(16)),
      commitIndex: status.commit,
      appliedIndex: this.applied,
      snapshotIndex: this.snapshotIndex,
      snapshotsRestored: this.snapshotsRestored,
      snapshotChunksReceived: this.snapshotReceiver.chunksReceived,
      snapshotStreamsSent: this.snapshotSender.streamsCompleted,
      leaderDownHints: this.leaderDownHints,
      revision: this.mvcc.revision,
      members,
    };
  }

  /** The peer transport's counters (exported as metrics by the server). */
  transportStats(): TransportStats {
    return this.transport.stats();
  }

  /** Adds a member as a learner (it catches up, then `promoteMember` makes it a voter). */
  async addMember(name: string, peerUrl: string): Promise<Member> {
    this.checkServing();
    const id = nodeIdFromName(name);
    const existing = this.members.get(id);
    if (existing !== undefined && this.isMember(id)) {
      throw new StorageError(
        'InvalidArgument',
        `member ${name} (${id.toString(16)}) is already in the cluster`,
      );
    }
    const member: Member = { id, name, peerUrl };
    const outcome = await this.proposeCommand((commandId) => ({
      type: 'member',
      id: commandId,
      member: { id, name, peerUrl },
    }));
    if (outcome.error !== undefined) throw outcome.error;
    await this.changeMembership({ type: 'addLearner', nodeId: id });
    return member;
  }

  async promoteMember(id: NodeId): Promise<void> {
    this.checkServing();
    await this.changeMembership({ type: 'addVoter', nodeId: id });
  }

  async removeMember(id: NodeId): Promise<void> {
    this.checkServing();
    await this.changeMembership({ type: 'removeNode', nodeId: id });
  }

  /** Asks the leader (this node) to hand leadership to `to`; resolves once `to` leads or the attempt fails. */
  async transferLeadership(to: NodeId): Promise<void> {
    this.checkServing();
    const error = this.raft.transferLeader(to);
    if (error !== null) throw this.raftErrorToStorage(error, 'leadership transfer');
    this.schedule();
    const deadline = Date.now() + this.electionTicks * this.heartbeatIntervalMs * 2;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, this.heartbeatIntervalMs));
      if (this.raft.status().lead === to) return;
    }
    throw new StorageError('Unavailable', `leadership did not move to ${to.toString(16)} in time`);
  }

  memberByName(name: string): Member | undefined {
    return [...this.members.values()].find((m) => m.name === name);
  }

  private isMember(id: NodeId): boolean {
    const { voters, learners } = this.raft.confState();
    return voters.includes(id) || learners.includes(id);
  }

  /**
   * Proposes a membership change and resolves once it is applied here. While another change is pending, or
   * no leader is known, it tries again every tick until the request timeout.
   */
  private async changeMembership(change: ConfChange): Promise<void> {
    const deadline = Date.now() + this.requestTimeoutMs;
    for (;;) {
      this.checkServing();
      const error = this.raft.proposeConfChange(change);
      if (error === null) break;
      const retryable =
        error === 'ConfChangePending' || error === 'ProposalDropped' || error === 'LeaderTransferInProgress';
      if (!retryable || Date.now() >= deadline) throw this.raftErrorToStorage(error, 'membership change');
      await new Promise((resolve) => setTimeout(resolve, this.heartbeatIntervalMs));
    }
    this.schedule();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          const at = this.confWaiters.findIndex((w) => w.waiter.timer === timer);
          if (at >= 0) this.confWaiters.splice(at, 1);
          reject(
            new StorageError(
              'Unavailable',
              'membership change timed out; it may or may not have been applied',
            ),
          );
        },
        Math.max(1, deadline - Date.now()),
      );
      this.confWaiters.push({ change, waiter: { resolve, reject, timer } });
    });
  }

  private raftErrorToStorage(error: RaftError, what: string): StorageError {
    switch (error) {
      case 'ProposalDropped':
        return new StorageError('Unavailable', `${what}: no leader is known, or this node is not the leader`);
      case 'LeaderTransferInProgress':
        return new StorageError('Unavailable', `${what}: a leadership transfer is in progress; retry`);
      case 'UncommittedSizeExceeded':
        return new StorageError('Unavailable', `${what}: too many uncommitted entries; retry`);
      case 'ConfChangePending':
        return new StorageError(
          'Unavailable',
          `${what}: another membership change is not applied yet; retry`,
        );
      case 'LearnerNotCaughtUp':
        return new StorageError(
          'InvalidArgument',
          `${what}: the learner has not caught up with the leader yet`,
        );
      case 'ReadIndexBacklog':
        return new StorageError('Unavailable', `${what}: too many reads are waiting for the leader; retry`);
      case 'InvalidConfChange':
        return new StorageError('InvalidArgument', `${what}: not valid for the current membership`);
      default:
        return unreachable(error);
    }
  }

  // ---- Proposals -----------------------------------------------------------------------------------------

  private proposeCommand(make: (id: string) => Command): Promise<Outcome> {
    const id = `${this.selfId.toString(36)}.${this.incarnation.toString(36)}.${(++this.proposalSeq).toString(36)}`;
    const data = encodeCommand(make(id));
    return new Promise<Outcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        this.proposedTerms.delete(id);
        reject(
          new StorageError(
            'Unavailable',
            `request timed out after ${this.requestTimeoutMs} ms (no leader or no quorum); ` +
              `the write may or may not have been applied`,
          ),
        );
      }, this.requestTimeoutMs);
      this.waiters.set(id, { resolve, reject, timer });
      this.submit(id, data);
    });
  }

  /**
   * Queues a proposal for the core. The Ready loop hands every proposal queued since it last looked to the core
   * at once (`flushProposals`), and it starts at the end of the current callback at the earliest (`schedule`),
   * so the writes that arrive together (one socket read of many requests, a peer's batch of forwarded ones)
   * become one MsgProp: one append, one MsgApp per follower and one acknowledgement each, instead of one per
   * write. They would wait for the next Ready either way.
   */
  private submit(id: string, data: Uint8Array): void {
    if (latencyTraceOn) traceStage('propose', 0);
    this.proposing.push({ id, data });
    this.schedule();
  }

  private flushProposals(): void {
    if (this.proposing.length === 0) return;
    const queued = this.proposing;
    this.proposing = [];
    let batch: { id: string; data: Uint8Array }[] = [];
    let bytes = 0;
    const propose = (): void => {
      if (batch.length === 0) return;
      const error = this.raft.proposeBatch(batch.map((p) => p.data));
      if (error === null) {
        const term = this.raft.term;
        for (const { id } of batch) this.proposedTerms.set(id, term);
      } else {
        // Not handed to any leader: safe to try again on the next tick, until the request times out.
        this.unsent.push(...batch);
      }
      batch = [];
      bytes = 0;
    };
    for (const proposal of queued) {
      if (!this.waiters.has(proposal.id)) continue; // timed out or closed meanwhile
      if (batch.length > 0 && bytes + proposal.data.length > proposalBatchBytesMax) propose();
      batch.push(proposal);
      bytes += proposal.data.length;
    }
    propose();
  }

  /**
   * Fails the proposals handed to a leader of a term before `appliedTerm` that are still unanswered. A leader
   * appends a proposal in its term, and a log's terms never decrease, so if that leader's entry had survived it
   * would have been applied before this entry of a later term. The client hears at once (Unavailable: the
   * outcome is unknown, as after a timeout) and retries against the new leader, instead of waiting for the
   * request timeout. Not certain: an old leader that learnt of the new one may have forwarded the proposal on,
   * so it may still commit later; the error says so, as the timeout's does.
   */
  private failLostProposals(appliedTerm: number): void {
    for (const [id, proposedTerm] of this.proposedTerms) {
      if (proposedTerm >= appliedTerm) continue;
      this.proposedTerms.delete(id);
      const waiter = this.waiters.get(id);
      if (waiter === undefined) continue;
      this.waiters.delete(id);
      clearTimeout(waiter.timer);
      waiter.reject(
        new StorageError(
          'Unavailable',
          `the leader changed (term ${proposedTerm} to ${appliedTerm}) before this write was committed; ` +
            `it was most likely lost with the old leader, but may or may not have been applied`,
        ),
      );
    }
  }

  /** The transport's news of a peer's process: a follower whose leader is gone campaigns early. */
  private onPeerState(peer: NodeId, state: 'down' | 'up'): void {
    if (this.closed || this.removed || this.failed !== undefined || state !== 'down') return;
    if (!this.raft.reportPeerDown(peer)) return;
    this.leaderDownHints++;
    this.logger.info(
      { leader: peer.toString(16), name: this.members.get(peer)?.name ?? '' },
      'leader process is gone (connection lost, reconnect refused): campaigning early',
    );
    this.schedule();
  }

  /** A new leader is known: what waited for one goes to it now rather than on the next tick. */
  private onNewLeader(): void {
    const retry = this.unsent;
    this.unsent = [];
    for (const { id, data } of retry) if (this.waiters.has(id)) this.submit(id, data);
    const round = this.readRound;
    // A request sent to the old leader is lost with it; the new one answers once it committed an entry.
    if (round !== undefined && round.index === undefined) this.askReadIndex();
  }

  // ---- Linearizable reads (ReadIndex, batched) -----------------------------------------------------------

  private linearizableBarrier(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter<void> = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.readQueue = this.readQueue.filter((w) => w !== waiter);
          reject(
            new StorageError(
              'Unavailable',
              `linearizable read timed out after ${this.requestTimeoutMs} ms (no quorum)`,
            ),
          );
        }, this.requestTimeoutMs),
      };
      this.readQueue.push(waiter);
      this.startReadRound();
    });
  }

  private startReadRound(): void {
    if (this.readRound !== undefined || this.readQueue.length === 0) return;
    this.readRound = {
      context: `${this.selfId.toString(36)}.${this.incarnation.toString(36)}.r${++this.readSeq}`,
      waiters: this.readQueue,
      index: undefined,
      askedAtTick: this.ticks,
    };
    this.readQueue = [];
    this.askReadIndex();
  }

  private askReadIndex(): void {
    const round = this.readRound;
    if (round === undefined) return;
    round.askedAtTick = this.ticks;
    this.raft.readIndex(round.context); // an error (no leader) is retried from tick()
    this.schedule();
  }

  private onReadState(readState: ReadState): void {
    const round = this.readRound;
    if (round === undefined || round.context !== readState.context || round.index !== undefined) return;
    round.index = readState.index;
    this.completeReads();
  }

  private completeReads(): void {
    const round = this.readRound;
    if (round === undefined || round.index === undefined || this.applied < round.index) return;
    this.readRound = undefined;
    for (const waiter of round.waiters) {
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
    this.startReadRound();
  }

  private failReads(error: unknown): void {
    const waiters = [...(this.readRound?.waiters ?? []), ...this.readQueue];
    this.readRound = undefined;
    this.readQueue = [];
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  // ---- The Ready loop ------------------------------------------------------------------------------------

  private tick(): void {
    if (this.closed || this.removed || this.failed !== undefined) return;
    this.ticks++;
    this.raft.tick();
    const retry = this.unsent;
    this.unsent = [];
    for (const { id, data } of retry) if (this.waiters.has(id)) this.submit(id, data);
    const round = this.readRound;
    if (
      round !== undefined &&
      round.index === undefined &&
      this.ticks - round.askedAtTick >= this.electionTicks
    ) {
      this.askReadIndex(); // the leader may have changed and dropped the request
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.failed !== undefined) return;
    if (this.running !== undefined) {
      this.rerun = true;
      return;
    }
    // Not at once: at the end of the current callback, so that whatever else it steps or proposes (the other
    // requests and messages of the same socket read) is in the same Ready. A microtask: no event-loop turn later.
    if (this.drainQueued) return;
    this.drainQueued = true;
    queueMicrotask(() => {
      this.drainQueued = false;
      this.startDrain();
    });
  }

  private startDrain(): void {
    if (this.closed || this.failed !== undefined || this.running !== undefined) return;
    this.running = this.drain()
      .catch((error: unknown) => this.fail(error))
      .finally(() => {
        this.running = undefined;
        if (this.rerun) {
          this.rerun = false;
          this.schedule();
        }
      });
  }

  private async drain(): Promise<void> {
    while (!this.closed && this.failed === undefined) {
      this.flushProposals();
      if (this.stagedReady) {
        this.stagedReady = false;
        // Replacing the state under a snapshot in progress would reorder the Raft log's snapshot records.
        await this.snapshotting;
        await this.installStagedState();
      } else if (this.raft.hasReady()) {
        const ready = this.raft.ready();
        await this.handleReady(ready);
        this.raft.advance();
      } else if (this.mvcc.compactionPending) {
        const batch = this.mvcc.begin();
        await this.mvcc.compactStep(batch, 1000);
        await writeBatch(this.db, batch.finish(), { sync: false });
        this.mvcc.committed(batch);
      } else {
        return;
      }
    }
  }

  private async handleReady(ready: Ready): Promise<void> {
    if (latencyTraceOn) {
      const lastNew = ready.entries.at(-1);
      const lastCommitted = ready.committedEntries.at(-1);
      if (lastNew !== undefined) traceStage('ready.entries', lastNew.index);
      if (lastCommitted !== undefined) traceStage('ready.committed', lastCommitted.index);
    }
    if (ready.softState !== undefined) {
      if (ready.softState.state !== this.role || ready.softState.lead !== this.leader) {
        this.logger.info(
          {
            role: ready.softState.state,
            leader: ready.softState.lead.toString(16),
            term: this.raft.status().term,
          },
          'raft role changed',
        );
      }
      const newLeader = ready.softState.lead !== NONE && ready.softState.lead !== this.leader;
      this.role = ready.softState.state;
      this.leader = ready.softState.lead;
      if (newLeader) this.onNewLeader();
    }
    // A leader sends while its own entries of this Ready are being written (etcd's server does the same; etcd's
    // raft allows messages to go out while the entries of their own batch are persisted). This cannot commit
    // an entry the leader has not made durable in anyone's eyes: followers acknowledge these entries only after
    // receiving them, so any message carrying a commit index that covers them comes from a later Ready, handed
    // out after this write. A Ready that changes term or vote, or holds a snapshot, still persists first.
    // A snapshot from the leader replaces the log: an own snapshot in progress lands first (the log's records
    // stay in order, and its compaction never runs after the log was replaced).
    if (ready.snapshot !== undefined) await this.snapshotting;
    const stored = this.storage.initialState().hardState;
    const sendFirst =
      this.role === 'leader' &&
      ready.snapshot === undefined &&
      (ready.hardState === undefined ||
        (ready.hardState.term === stored.term && ready.hardState.vote === stored.vote));
    if (sendFirst && ready.messages.length > 0) this.send(ready.messages);
    const persist = async (): Promise<void> => {
      if (ready.snapshot !== undefined || ready.entries.length > 0 || ready.hardState !== undefined) {
        await this.log.save({
          ...(ready.hardState !== undefined ? { hardState: ready.hardState } : {}),
          ...(ready.entries.length > 0 ? { entries: ready.entries } : {}),
          ...(ready.snapshot !== undefined ? { snapshot: ready.snapshot } : {}),
          sync: ready.mustSync,
        });
        if (ready.snapshot !== undefined) this.storage.applySnapshot(ready.snapshot);
        if (ready.entries.length > 0) this.storage.append(ready.entries);
        if (ready.hardState !== undefined) this.storage.setHardState(ready.hardState);
        if (latencyTraceOn) traceStage('persisted', ready.entries.at(-1)?.index ?? 0);
      }
      // Otherwise only now that they are durable may the messages that depend on them go out.
      if (!sendFirst && ready.messages.length > 0) this.send(ready.messages);
    };
    // Committed entries already in this node's durable log are applied while the new entries are written (as
    // etcd applies while its WAL syncs), so a follower's watchers and a leader's clients do not wait for that
    // fsync. Not when they are among this Ready's own entries, nor with a snapshot or a membership change.
    const lastCommitted = ready.committedEntries.at(-1);
    const firstNew = ready.entries[0];
    const applyWhilePersisting =
      lastCommitted !== undefined &&
      ready.snapshot === undefined &&
      (firstNew === undefined || lastCommitted.index < firstNew.index) &&
      ready.committedEntries.every((entry) => entry.type !== 'confChange');
    if (applyWhilePersisting) {
      // The apply starts first: its answers go out before this Ready's log write is even submitted.
      await Promise.all([this.applyEntries(ready.committedEntries), persist()]);
    } else {
      await persist();
      if (ready.snapshot !== undefined) await this.restoreSnapshot(ready.snapshot);
      if (ready.committedEntries.length > 0) await this.applyEntries(ready.committedEntries);
    }
    for (const readState of ready.readStates) this.onReadState(readState);
    this.maybeSnapshot();
  }

  /** Sends the core's messages; a snapshot for a follower starts streaming it this node's state. */
  private send(messages: readonly Message[]): void {
    for (const message of messages) {
      if (message.type === 'MsgSnap' && message.data.length === 0) {
        this.snapshotSender.offer(message.to, message.snapshotIndex);
      }
    }
    if (latencyTraceOn) for (const message of messages) traceMessage('send', message);
    this.transport.send(messages);
  }

  private async applyEntries(entries: readonly Entry[]): Promise<void> {
    if (latencyTraceOn) traceStage('apply.start', entries.at(-1)?.index ?? 0);
    const batch = this.mvcc.begin();
    const changes: RevisionChanges[] = [];
    const outcomes: { id: string; outcome: Outcome }[] = [];
    const confChanges: ConfChange[] = [];
    let confState: ConfState | undefined;
    for (const entry of entries) {
      if (entry.type === 'confChange') {
        const change = decodeConfChange(entry.data);
        confState = this.raft.applyConfChange(change);
        confChanges.push(change);
        if (change.type === 'removeNode' && entry.index > this.applied) {
          batch.ops.push({ type: 'del', key: memberKey(change.nodeId) });
        }
        continue;
      }
      if (entry.index <= this.applied) continue; // in the MVCC state already (replayed after a restart)
      if (entry.data.length === 0) continue; // a new leader's empty entry
      const command = decodeCommand(entry.data);
      switch (command.type) {
        case 'txn':
          try {
            const { result, events } = await this.mvcc.applyTxn(batch, command.request);
            if (events.length > 0) changes.push({ revision: result.header.revision, events });
            outcomes.push({ id: command.id, outcome: { result } });
          } catch (error) {
            outcomes.push({ id: command.id, outcome: { error: asError(error) } });
          }
          break;
        case 'compact':
          try {
            this.mvcc.compact(batch, command.revision);
            outcomes.push({ id: command.id, outcome: {} });
          } catch (error) {
            outcomes.push({ id: command.id, outcome: { error: asError(error) } });
          }
          break;
        case 'member': {
          const member: Member = {
            id: command.member.id as NodeId,
            name: command.member.name,
            peerUrl: command.member.peerUrl,
          };
          batch.ops.push({
            type: 'put',
            key: memberKey(member.id),
            value: packr.pack({ ...command.member }),
          });
          this.members.set(member.id, member);
          outcomes.push({ id: command.id, outcome: {} });
          break;
        }
        default:
          unreachable(command);
      }
    }
    const last = entries[entries.length - 1];
    assert(last !== undefined, 'applyEntries needs entries');
    this.coreApplied = last.index;
    if (last.index <= this.applied) {
      if (confState !== undefined) this.syncPeers(confState);
      return;
    }
    batch.ops.push({ type: 'put', key: appliedKey, value: u64(last.index) });
    // Not synced: the Raft log is, and a crash replays from the applied index written in this same batch.
    const write = writeBatch(this.db, batch.finish(), { sync: false }).then(() => this.mvcc.committed(batch));
    this.applyWrite = write;
    // These entries are committed (durable in a majority's Raft logs) and their results are computed, so the
    // proposers are answered and the changes published now, while the local write runs, as etcd answers once
    // an apply reached its backend's buffer: reads and watch catch-up wait for this write (`settledReads`), so
    // a reader told of a write sees it. The Ready loop still waits for it before the next Ready.
    if (latencyTraceOn) {
      traceStage('apply.computed', last.index);
      traceStage('apply.revision', batch.revision);
    }
    this.hub.publish(changes, toRevision(batch.revision));
    for (const { id, outcome } of outcomes) {
      const waiter = this.waiters.get(id);
      if (waiter === undefined) continue; // proposed by another node, or already timed out
      this.waiters.delete(id);
      this.proposedTerms.delete(id);
      clearTimeout(waiter.timer);
      waiter.resolve(outcome);
      if (latencyTraceOn) traceStage('answer', last.index);
    }
    this.failLostProposals(last.term);
    try {
      await write;
    } finally {
      if (this.applyWrite === write) this.applyWrite = undefined;
    }
    if (latencyTraceOn) traceStage('apply.written', last.index);
    this.applied = last.index;
    for (const change of confChanges) {
      for (let i = this.confWaiters.length - 1; i >= 0; i--) {
        const pending = this.confWaiters[i];
        if (
          pending !== undefined &&
          pending.change.type === change.type &&
          pending.change.nodeId === change.nodeId
        ) {
          this.confWaiters.splice(i, 1);
          clearTimeout(pending.waiter.timer);
          pending.waiter.resolve();
        }
      }
      if (change.type === 'removeNode' && change.nodeId === this.selfId) this.onRemoved();
      if (change.type === 'removeNode') this.members.delete(change.nodeId);
    }
    if (confState !== undefined) this.syncPeers(confState);
    this.completeReads();
  }

  /** The transport's peers follow the membership: every voter and learner but this node. */
  private syncPeers(confState: ConfState): void {
    const wanted = new Set([...confState.voters, ...confState.learners].filter((id) => id !== this.selfId));
    for (const [id] of this.transport.peers()) {
      if (!wanted.has(id) && !this.isJoiningContact(id)) this.transport.removePeer(id);
    }
    for (const id of wanted) {
      const member = this.members.get(id);
      if (member === undefined) continue;
      const url = dialUrl(this.options, member);
      if (this.transport.peers().get(id) !== url) {
        if (this.transport.peers().has(id)) this.transport.removePeer(id);
        this.transport.addPeer(id, url);
      }
    }
  }

  /** While a joining node has no membership yet, it keeps talking to the members its flags named. */
  private isJoiningContact(id: NodeId): boolean {
    const { voters } = this.raft.confState();
    return voters.length === 0 && this.options.initialCluster.some((m) => m.id === id);
  }

  private onRemoved(): void {
    this.removed = true;
    this.logger.warn({ name: this.name }, 'this member was removed from the cluster; it stops serving');
    const error = new StorageError('Unavailable', `member ${this.name} has been removed from the cluster`);
    for (const [id, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
      this.waiters.delete(id);
      this.proposedTerms.delete(id);
    }
    this.failReads(error);
  }

  /** The core installed a snapshot from the leader; its state was streamed and installed before. */
  private async restoreSnapshot(snapshot: Snapshot): Promise<void> {
    const { index } = snapshot.metadata;
    if (snapshot.data.length > 0) {
      // From a leader that still sends its state inside the snapshot (before snapshot-stream.ts).
      await this.replaceState(async (beforeReplace) => {
        beforeReplace();
        await ReplicatedStore.restoreState(this.db, snapshot);
        return index;
      });
    }
    // The MVCC state was installed before the core was handed the snapshot, so it is at least this recent.
    assert(this.applied >= index, `snapshot ${index} restored without its state (applied ${this.applied})`);
    this.coreApplied = index;
    this.snapshotIndex = index;
    this.syncPeers(snapshot.metadata.confState);
    this.logger.info({ index, applied: this.applied }, 'restored a snapshot');
  }

  /** Installs a state streamed from the leader (if still ahead), then steps the MsgSnap that waited for it. */
  private async installStagedState(): Promise<void> {
    await this.snapshotReceiver.exclusive(() =>
      this.replaceState((beforeReplace) =>
        installStaged(this.db, this.options.dataDir, this.applied, beforeReplace),
      ),
    );
    const pending = this.pendingSnap;
    if (pending !== undefined && pending.snapshotIndex <= this.applied) {
      this.pendingSnap = undefined;
      this.raft.step(pending);
    }
  }

  /**
   * Replaces the MVCC state by `replace`'s (which calls `beforeReplace` before it touches the state, and returns
   * the new applied index, or undefined if it replaced nothing). Reads wait meanwhile; watchers are cancelled with WatchOverflow and resume from their last
   * revision against the new history.
   */
  private async replaceState(
    replace: (beforeReplace: () => void) => Promise<number | undefined>,
  ): Promise<void> {
    let done!: () => void;
    const restoring = new Promise<void>((resolve) => (done = resolve));
    const overflow = (): StorageError =>
      new StorageError(
        'WatchOverflow',
        'this node restored a snapshot from the leader; resume from the last revision',
      );
    this.restoring = restoring;
    try {
      const installed = await replace(() => this.hub.cancelAll(overflow()));
      if (installed === undefined) return;
      this.mvcc = await Mvcc.open(this.db, join(this.options.dataDir, 'mvcc'));
      this.members.clear();
      for (const member of await ReplicatedStore.readMembers(this.db)) this.members.set(member.id, member);
      this.applied = logIndex(installed);
      this.snapshotsRestored++;
      this.hub.cancelAll(overflow());
      this.hub.close();
      this.hub = this.newHub();
      this.syncPeers(this.raft.confState());
      this.logger.info(
        { applied: installed, revision: this.mvcc.revision },
        'installed the state from the leader',
      );
      this.completeReads();
    } finally {
      this.restoring = undefined;
      done();
    }
  }

  /**
   * Starts a snapshot every `snapshotCount` applied entries, beside the Ready loop (etcd triggers its snapshot
   * and log compaction asynchronously from its apply loop too): the Ready loop goes on persisting, sending and
   * applying while the snapshot makes the MVCC state durable and compacts the Raft log. One at a time.
   */
  private maybeSnapshot(): void {
    if (this.snapshotting !== undefined) return;
    if (this.applied - this.snapshotIndex < this.snapshotCount) return;
    // Only where the core and the MVCC agree (after an installed state, the core catches up first): the
    // snapshot's membership must be the one at its index.
    if (this.coreApplied !== this.applied) return;
    // The snapshot carries no data: the MVCC LevelDB is the state, streamed to a follower when one needs it.
    const snapshot = this.storage.createSnapshot(this.applied, this.raft.confState(), new Uint8Array(0));
    if (typeof snapshot === 'string') return; // out of date: a newer snapshot arrived meanwhile
    // Resolves when done (a failure fails the node, as one of the Ready loop does).
    this.snapshotting = this.takeSnapshot(snapshot).then(
      () => {
        this.snapshotting = undefined;
      },
      (error: unknown) => {
        this.snapshotting = undefined;
        this.fail(error);
      },
    );
  }

  private async takeSnapshot(snapshot: Snapshot): Promise<void> {
    const { index } = snapshot.metadata;
    if (latencyTraceOn) traceStage('snapshot.start', index);
    await this.options.snapshotHook?.('start', index);
    // The MVCC state the snapshot describes must outlive a crash before the log entries it replaces are gone.
    // Every apply up to `index` has been written (this.applied reached it only after its write); one synced
    // write after them makes them durable, as LevelDB syncs its log in write order. Not the applied index's
    // own key: applies of later entries write it meanwhile, and it must never go back.
    await this.db.put(snapshotSyncKey, u64(index), { sync: true });
    if (latencyTraceOn) traceStage('snapshot.synced', index);
    await this.options.snapshotHook?.('synced', index);
    const compactTo = logIndex(Math.max(this.snapshotIndex, index - this.snapshotCatchUpEntries));
    await this.log.saveOwnSnapshot(snapshot, compactTo);
    if (compactTo > this.storage.firstIndex() - 1) this.storage.compact(compactTo);
    this.snapshotIndex = index;
    if (latencyTraceOn) traceStage('snapshot.saved', index);
    this.logger.info({ index, compactedTo: compactTo }, 'took a snapshot');
  }

  /**
   * A consistent backup of the data (not the membership) as of a linearizable point: every write acknowledged
   * before the call is in it (unless `local`, which needs no quorum and holds what this member has applied).
   */
  async backup(options: { local?: boolean } = {}): Promise<Buffer> {
    this.checkServing();
    // `local`: for disaster recovery without a quorum: this member's applied state as it stands.
    if (options.local !== true) await this.linearizableBarrier();
    const pairs: [Buffer, Buffer][] = [];
    // Read before the iterator exists: the backup holds at least this revision (an apply may land in between).
    const revision = this.mvcc.revision;
    // The iterator reads one LevelDB snapshot: a consistent state even while entries keep being applied.
    for await (const [key, value] of this.db.iterator({ gte: Buffer.from('m'), lt: Buffer.from('n') })) {
      pairs.push([key, value]);
    }
    return encodeBackup({ revision, takenAt: new Date().toISOString(), pairs });
  }

  private sampleForCompaction(retentionMs: number): void {
    if (this.closed || this.removed) return;
    const nowMs = performance.now();
    this.compactionSamples.push({ timeMs: nowMs, revision: this.mvcc.revision });
    let target: Revision | undefined;
    while (
      this.compactionSamples.length > 0 &&
      (this.compactionSamples[0]?.timeMs ?? nowMs) <= nowMs - retentionMs
    ) {
      target = this.compactionSamples.shift()?.revision;
    }
    // Only the leader proposes, so the cluster compacts once; every node applies it at the same point.
    if (this.role !== 'leader' || target === undefined || target <= this.mvcc.compactRevision) return;
    this.compact(toRevision(target)).catch(() => undefined); // already compacted further, or lost leadership
  }

  private checkServing(): void {
    if (this.closed) throw new StorageError('Closed', 'the store is closed');
    if (this.removed)
      throw new StorageError('Unavailable', `member ${this.name} has been removed from the cluster`);
    if (this.failed !== undefined)
      throw new StorageError('Unavailable', `member ${this.name} failed: ${asError(this.failed).message}`);
  }

  private fail(error: unknown): void {
    this.failed = error;
    this.logger.error({ error: String(error) }, 'the replica cannot go on');
    const failure = new StorageError('Unavailable', `member ${this.name} failed: ${asError(error).message}`);
    for (const [id, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(failure);
      this.waiters.delete(id);
      this.proposedTerms.delete(id);
    }
    this.failReads(failure);
    this.onFatal(error);
  }
}

/** The latency trace's record of a Raft message that carries a write's progress (see latency-trace.ts). */
function traceMessage(direction: 'send' | 'recv', message: Message | StreamMessage): void {
  switch (message.type) {
    case 'MsgApp': {
      const last = message.entries.at(-1);
      if (last !== undefined) traceStage(`${direction}.MsgApp`, last.index);
      traceStage(`${direction}.commit`, message.commit);
      return;
    }
    case 'MsgHeartbeat':
      traceStage(`${direction}.commit`, message.commit);
      return;
    case 'MsgAppResp':
    case 'MsgProp':
      traceStage(`${direction}.${message.type}`, message.type === 'MsgAppResp' ? message.index : 0);
      return;
    default:
      return;
  }
}
