// The Raft core: a pure, synchronous state machine in the shape of etcd-io/raft. It does no I/O and keeps no
// time: the node calls tick() on a timer, step() for each message received, and drains ready() as described
// on `Ready` (persist, THEN send, apply, advance()). Randomness (the election timeout) is injected.

import type { LogIndex, NodeId, Term } from '../util/brand.js';
import { logIndex, term } from '../util/brand.js';
import type { Random } from '../util/clock.js';
import { assert, unreachable } from '../util/assert.js';
import { RaftLog } from './log.js';
import { Progress } from './progress.js';
import { committedIndex, voteResult } from './quorum.js';
import type { VoteResult } from './quorum.js';
import { ReadOnly } from './readonly.js';
import type { LogStorage } from './storage.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  MsgApp,
  MsgHeartbeat,
  MsgProp,
  MsgReadIndex,
  MsgSnap,
  MsgSnapResp,
  MsgTransferLeader,
  ProposedEntry,
  RaftError,
  ReadState,
  Ready,
  Snapshot,
  SoftState,
  StateType,
} from './types.js';
import { NONE, decodeConfChange, encodeConfChange, messageClasses, payloadBytes } from './types.js';

export interface RaftConfig {
  readonly id: NodeId;
  readonly storage: LogStorage;
  /** Randomness for the election timeout (seeded in simulations). */
  readonly random: Random;
  /** A follower campaigns after a random number of ticks in [electionTicks, 2 * electionTicks) without a leader. */
  readonly electionTicks: number;
  /** A leader sends heartbeats every heartbeatTicks ticks; must be < electionTicks. */
  readonly heartbeatTicks: number;
  /**
   * The last applied index when restarting (default: the latest snapshot's index). When given, the node MUST
   * have applied everything up to it, and initialState().confState MUST be the membership as of it.
   */
  readonly applied?: LogIndex;
  /** Most payload bytes of entries in one MsgApp (at least one entry is always sent). etcd: MaxSizePerMsg. */
  readonly messageEntriesBytesMax?: number;
  /** Most MsgApp messages in flight to one follower in replicate state. etcd: MaxInflightMsgs. */
  readonly inflightMessagesMax?: number;
  /** Most payload bytes in flight to one follower (0 = no limit). etcd: MaxInflightBytes. */
  readonly inflightBytesMax?: number;
  /** Most payload bytes of uncommitted entries on the leader; more proposals fail (0 = no limit). */
  readonly uncommittedEntriesBytesMax?: number;
  /** Most payload bytes of committed entries handed out in one Ready. */
  readonly applyBytesMax?: number;
  /** Bytes of snapshot data per MsgSnap chunk. */
  readonly snapshotChunkBytes?: number;
  /** A learner may be promoted once its match index is within this many entries of the leader's commit. */
  readonly learnerCatchUpEntriesMax?: number;
  /** Leader: most ReadIndex requests awaiting confirmation; more fail with ReadIndexBacklog. */
  readonly readIndexPendingMax?: number;
  /** Campaign only after a pre-vote round shows a majority would vote (default true). */
  readonly preVote?: boolean;
  /** The leader steps down without recent contact with a majority; votes respect leader leases (default true). */
  readonly checkQuorum?: boolean;
  /**
   * After reportPeerDown() of its leader, a follower campaigns within a random number of ticks in
   * [leaderDownElectionTicksMin, leaderDownElectionTicksMax) instead of its usual election timeout (never later
   * than that timeout). Defaults: 2 and 2 + max(2, electionTicks / 3). The minimum leaves the other followers
   * time to see the same hint, so that they grant the pre-vote.
   */
  readonly leaderDownElectionTicksMin?: number;
  readonly leaderDownElectionTicksMax?: number;
  /** Called with a line of text on every role change and notable event (for traces; default: none). */
  readonly trace?: (line: string) => void;
}

export const raftDefaults = {
  messageEntriesBytesMax: 1024 * 1024,
  inflightMessagesMax: 256,
  inflightBytesMax: 0,
  uncommittedEntriesBytesMax: 256 * 1024 * 1024,
  applyBytesMax: 64 * 1024 * 1024,
  snapshotChunkBytes: 1024 * 1024,
  learnerCatchUpEntriesMax: 1000,
  readIndexPendingMax: 10_000,
} as const;

/** What the node and the tests may look at. */
export interface Status {
  readonly id: NodeId;
  readonly term: Term;
  readonly vote: NodeId;
  readonly lead: NodeId;
  readonly state: StateType;
  readonly commit: LogIndex;
  readonly applied: LogIndex;
  readonly firstIndex: LogIndex;
  readonly lastIndex: LogIndex;
  readonly confState: ConfState;
  readonly leadTransferee: NodeId;
  /** Leader only: per follower, its match and next index and progress state. */
  readonly progress: ReadonlyMap<
    NodeId,
    { match: LogIndex; next: LogIndex; state: string; isLearner: boolean }
  >;
}

/** What ready() handed out, to be acknowledged by advance(). */
interface Handed {
  lastEntry: { index: LogIndex; term: Term } | undefined;
  snapshotIndex: LogIndex | undefined;
  appliedTo: LogIndex | undefined;
  committedBytes: number;
}

export class Raft {
  readonly id: NodeId;
  private readonly log: RaftLog;
  private readonly random: Random;
  private readonly trace: ((line: string) => void) | undefined;
  private readonly electionTicks: number;
  private readonly heartbeatTicks: number;
  private readonly messageEntriesBytesMax: number;
  private readonly inflightMessagesMax: number;
  private readonly inflightBytesMax: number;
  private readonly uncommittedEntriesBytesMax: number;
  private readonly snapshotChunkBytes: number;
  private readonly learnerCatchUpEntriesMax: number;
  private readonly readIndexPendingMax: number;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly leaderDownElectionTicksMin: number;
  private readonly leaderDownElectionTicksMax: number;

  private currentTerm: Term = term(0);
  private vote: NodeId = NONE;
  private lead: NodeId = NONE;
  private state: StateType = 'follower';

  // Membership and, on the leader, replication progress (followers keep entries only for membership).
  private voters: NodeId[] = [];
  private learners: NodeId[] = [];
  private progress = new Map<NodeId, Progress>();
  private votes = new Map<NodeId, boolean>();

  private messages: Message[] = [];
  private readStates: ReadState[] = [];

  // invariant: electionElapsed counts ticks since the last reset (leader: since the last check-quorum round)
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTicks = 0;
  /** Follower: the election timeout was shortened by reportPeerDown() of the leader (see there). */
  private leaderDownTimeout = false;

  /** Leader: the node leadership is being handed to, or NONE. */
  private leadTransferee: NodeId = NONE;
  /** Leader: the index of the last proposed membership change; a new one waits until applied >= it. */
  private pendingConfIndex: LogIndex = logIndex(0);
  /** Leader: payload bytes of entries appended in this term and not yet applied. */
  private uncommittedBytes = 0;
  private readOnly = new ReadOnly();
  /** Leader: ReadIndex requests waiting for an entry of this term to commit. */
  private pendingReadIndex: MsgReadIndex[] = [];

  /** Follower: an InstallSnapshot being received in chunks. */
  private snapshotReceive:
    { from: NodeId; term: Term; index: LogIndex; chunks: Uint8Array[]; bytes: number } | undefined =
    undefined;

  private prevSoftState: SoftState;
  private prevHardState: HardState;
  private handed: Handed | undefined = undefined;

  constructor(config: RaftConfig) {
    assert(config.id !== NONE, 'a node id is never 0');
    assert(
      config.heartbeatTicks > 0 && config.electionTicks > config.heartbeatTicks,
      'election ticks > heartbeat ticks',
    );
    this.id = config.id;
    this.random = config.random;
    this.trace = config.trace;
    this.electionTicks = config.electionTicks;
    this.heartbeatTicks = config.heartbeatTicks;
    this.messageEntriesBytesMax = config.messageEntriesBytesMax ?? raftDefaults.messageEntriesBytesMax;
    this.inflightMessagesMax = config.inflightMessagesMax ?? raftDefaults.inflightMessagesMax;
    this.inflightBytesMax = config.inflightBytesMax ?? raftDefaults.inflightBytesMax;
    this.uncommittedEntriesBytesMax =
      config.uncommittedEntriesBytesMax ?? raftDefaults.uncommittedEntriesBytesMax;
    this.snapshotChunkBytes = config.snapshotChunkBytes ?? raftDefaults.snapshotChunkBytes;
    this.learnerCatchUpEntriesMax = config.learnerCatchUpEntriesMax ?? raftDefaults.learnerCatchUpEntriesMax;
    this.readIndexPendingMax = config.readIndexPendingMax ?? raftDefaults.readIndexPendingMax;
    this.preVote = config.preVote ?? true;
    this.checkQuorum = config.checkQuorum ?? true;
    this.leaderDownElectionTicksMin = config.leaderDownElectionTicksMin ?? 2;
    this.leaderDownElectionTicksMax =
      config.leaderDownElectionTicksMax ??
      this.leaderDownElectionTicksMin + Math.max(2, Math.floor(this.electionTicks / 3));
    assert(
      this.leaderDownElectionTicksMin >= 1 &&
        this.leaderDownElectionTicksMax > this.leaderDownElectionTicksMin,
      'leader-down election ticks: 1 <= min < max',
    );
    this.log = new RaftLog(config.storage, config.applyBytesMax ?? raftDefaults.applyBytesMax);

    const { hardState, confState } = config.storage.initialState();
    this.setConfState(confState);
    if (hardState.term !== 0 || hardState.commit !== 0) {
      assert(
        hardState.commit >= this.log.committed && hardState.commit <= this.log.lastIndex(),
        `stored commit ${hardState.commit} out of [${this.log.committed}, ${this.log.lastIndex()}]`,
      );
      this.log.committed = hardState.commit;
      this.currentTerm = hardState.term;
      this.vote = hardState.vote;
    }
    // By default the state machine restarts from the latest snapshot and re-applies the committed log after it.
    this.log.appliedTo(config.applied ?? config.storage.snapshot().metadata.index);
    this.becomeFollower(this.currentTerm, NONE);
    this.prevSoftState = this.softState();
    this.prevHardState = this.hardState();
  }

  // ---- The API of the node -------------------------------------------------------------------------------

  /** One clock tick: followers count towards an election, leaders towards a heartbeat. */
  tick(): void {
    if (this.state === 'leader') this.tickHeartbeat();
    else this.tickElection();
  }

  /** Starts an election now (if this node is a voter and not the leader). */
  campaign(): void {
    this.hup(false);
  }

  /** Proposes application data; on a follower the proposal is forwarded to the leader. */
  propose(data: Uint8Array): RaftError | null {
    return this.stepLocal({
      type: 'MsgProp',
      from: this.id,
      to: this.id,
      term: term(0),
      entries: [{ type: 'normal', data }],
    });
  }

  /**
   * Proposes several entries as ONE MsgProp: a leader appends them together and sends each follower one MsgApp
   * for all of them (a MsgProp per entry would make a MsgApp per entry per follower); a follower forwards them
   * to the leader as one message. All or none are accepted.
   */
  proposeBatch(data: readonly Uint8Array[]): RaftError | null {
    assert(data.length > 0, 'empty proposal batch');
    return this.stepLocal({
      type: 'MsgProp',
      from: this.id,
      to: this.id,
      term: term(0),
      entries: data.map((d) => ({ type: 'normal', data: d })),
    });
  }

  /** Proposes a membership change (one at a time; see docs/raft.md). Apply it with applyConfChange(). */
  proposeConfChange(change: ConfChange): RaftError | null {
    const data = encodeConfChange(change);
    return this.stepLocal({
      type: 'MsgProp',
      from: this.id,
      to: this.id,
      term: term(0),
      entries: [{ type: 'confChange', data }],
    });
  }

  /**
   * Asks for a read index; the answer arrives as a ReadState with the same `context` in a later Ready (or
   * never, if leadership changes: the caller times out and retries). `context` MUST be unique in the cluster.
   */
  readIndex(context: string): RaftError | null {
    return this.stepLocal({ type: 'MsgReadIndex', from: this.id, to: this.id, term: term(0), context });
  }

  /** Asks the leader (this node, or forwarded to it) to hand leadership to `transferee`. */
  transferLeader(transferee: NodeId): RaftError | null {
    return this.stepLocal({
      type: 'MsgTransferLeader',
      from: this.id,
      to: this.id,
      term: this.currentTerm,
      transferee,
    });
  }

  /** The transport could not reach `to`: stop pipelining to it until it answers again. */
  reportUnreachable(to: NodeId): void {
    const pr = this.progress.get(to);
    if (this.state === 'leader' && pr !== undefined && pr.state === 'replicate') pr.becomeProbe();
  }

  /**
   * A local hint from the transport, never a message from a peer: the connection to `peer` was lost and
   * reconnecting to it is refused (nothing listens there: its process is gone). Not for a timeout, a TLS error
   * or a partition: a live leader that is merely cut off or paused keeps its sockets, and the usual timeouts
   * apply. A follower whose leader is `peer` forgets it (so its leader lease no longer makes it ignore
   * pre-votes and votes) and campaigns after a short random timeout instead of its usual one. Everything else
   * is unchanged: an early election is still a pre-vote round that needs a majority, so a wrong hint about a
   * live leader whose other followers still hear it costs a few refused pre-votes, not a new term. Any other
   * node (not a follower of `peer`, or with no known leader) ignores it. Returns whether it acted.
   */
  reportPeerDown(peer: NodeId): boolean {
    if (this.state !== 'follower' || this.lead === NONE || this.lead !== peer || peer === this.id)
      return false;
    this.lead = NONE;
    const ticks = this.random.int(this.leaderDownElectionTicksMin, this.leaderDownElectionTicksMax);
    this.randomizedElectionTicks = Math.min(this.randomizedElectionTicks, this.electionElapsed + ticks);
    this.leaderDownTimeout = true;
    this.note(
      `leader ${peer} is down: campaigning in ${this.randomizedElectionTicks - this.electionElapsed} ticks`,
    );
    return true;
  }

  /** A message from another node. Messages for another node or from an unknown sender are fine (ignored or answered). */
  step(m: Message): RaftError | null {
    if (m.to !== this.id) return 'ProposalDropped';
    return this.stepMessage(m);
  }

  /**
   * Applies a committed membership change. The node MUST call it when it applies a confChange entry, in log
   * order, and persist the returned ConfState with its next snapshot.
   */
  applyConfChange(change: ConfChange): ConfState {
    this.changeMembership(change);
    return this.confState();
  }

  hasReady(): boolean {
    if (this.handed !== undefined) return false;
    const soft = this.softState();
    if (soft.lead !== this.prevSoftState.lead || soft.state !== this.prevSoftState.state) return true;
    const hard = this.hardState();
    if (!sameHardState(hard, this.prevHardState)) return true;
    return (
      this.log.unstable.snapshot !== undefined ||
      this.log.unstable.entries.length > 0 ||
      this.messages.length > 0 ||
      this.readStates.length > 0 ||
      this.log.hasNextCommittedEntries()
    );
  }

  /** What to persist, send and apply now (see `Ready`). Call advance() when done, before the next ready(). */
  ready(): Ready {
    assert(this.handed === undefined, 'ready() again before advance()');
    const entries = this.log.unstable.entries.slice();
    const snapshot = this.log.unstable.snapshot;
    const committedEntries = this.log.nextCommittedEntries();
    const soft = this.softState();
    const hard = this.hardState();
    const softChanged = soft.lead !== this.prevSoftState.lead || soft.state !== this.prevSoftState.state;
    const hardChanged = !sameHardState(hard, this.prevHardState);
    const mustSync =
      entries.length > 0 ||
      snapshot !== undefined ||
      hard.term !== this.prevHardState.term ||
      hard.vote !== this.prevHardState.vote;
    const lastEntry = entries[entries.length - 1];
    const lastCommitted = committedEntries[committedEntries.length - 1];
    this.handed = {
      lastEntry: lastEntry === undefined ? undefined : { index: lastEntry.index, term: lastEntry.term },
      snapshotIndex: snapshot?.metadata.index,
      appliedTo: lastCommitted?.index ?? snapshot?.metadata.index,
      committedBytes: payloadBytes(committedEntries),
    };
    const rd: Ready = {
      ...(softChanged ? { softState: soft } : {}),
      ...(hardChanged ? { hardState: hard } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      entries,
      committedEntries,
      messages: this.messages,
      readStates: this.readStates,
      mustSync,
    };
    this.messages = [];
    this.readStates = [];
    this.prevSoftState = soft;
    this.prevHardState = hard;
    return rd;
  }

  /** The last Ready was persisted, sent and applied. */
  advance(): void {
    const handed = this.handed;
    assert(handed !== undefined, 'advance() without ready()');
    this.handed = undefined;
    if (handed.snapshotIndex !== undefined) this.log.unstable.stableSnapTo(handed.snapshotIndex);
    if (handed.lastEntry !== undefined)
      this.log.unstable.stableTo(handed.lastEntry.index, handed.lastEntry.term);
    if (handed.appliedTo !== undefined && handed.appliedTo > this.log.applied) {
      this.log.appliedTo(handed.appliedTo);
      this.uncommittedBytes = Math.max(0, this.uncommittedBytes - handed.committedBytes);
    }
  }

  status(): Status {
    const progress = new Map<
      NodeId,
      { match: LogIndex; next: LogIndex; state: string; isLearner: boolean }
    >();
    if (this.state === 'leader') {
      for (const [id, pr] of this.progress)
        progress.set(id, { match: pr.match, next: pr.next, state: pr.state, isLearner: pr.isLearner });
    }
    return {
      id: this.id,
      term: this.currentTerm,
      vote: this.vote,
      lead: this.lead,
      state: this.state,
      commit: this.log.committed,
      applied: this.log.applied,
      firstIndex: this.log.firstIndex(),
      lastIndex: this.log.lastIndex(),
      confState: this.confState(),
      leadTransferee: this.leadTransferee,
      progress,
    };
  }

  /** The current term (cheaper than status()). */
  get term(): Term {
    return this.currentTerm;
  }

  /** The term of entry i in this node's log (durable or not), or undefined: for checkers and tests. */
  logTerm(i: LogIndex): Term | undefined {
    return this.log.term(i);
  }

  /** Entries [lo, hi) of this node's log, or 'compacted': for checkers and tests. */
  logEntries(lo: LogIndex, hi: LogIndex): readonly Entry[] | 'compacted' {
    return this.log.slice(lo, hi, Number.MAX_SAFE_INTEGER);
  }

  confState(): ConfState {
    return { voters: this.voters.slice(), learners: this.learners.slice() };
  }

  // ---- Roles ---------------------------------------------------------------------------------------------

  private softState(): SoftState {
    return { lead: this.lead, state: this.state };
  }

  private hardState(): HardState {
    return { term: this.currentTerm, vote: this.vote, commit: this.log.committed };
  }

  private note(line: string): void {
    if (this.trace !== undefined) this.trace(`${this.id} ${line}`);
  }

  private reset(t: Term): void {
    if (this.currentTerm !== t) {
      this.currentTerm = t;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTicks();
    this.leadTransferee = NONE;
    this.votes = new Map();
    const last = this.log.lastIndex();
    for (const [id, pr] of this.progress) {
      const fresh = this.newProgress(pr.isLearner);
      if (id === this.id) fresh.match = last;
      this.progress.set(id, fresh);
    }
    this.pendingConfIndex = logIndex(0);
    this.uncommittedBytes = 0;
    this.readOnly = new ReadOnly();
    this.pendingReadIndex = [];
    this.snapshotReceive = undefined;
  }

  private resetRandomizedElectionTicks(): void {
    this.randomizedElectionTicks = this.electionTicks + this.random.int(0, this.electionTicks);
    this.leaderDownTimeout = false;
  }

  /** A follower heard from its leader (a message of the leader's term): the election timer starts over. */
  private heardFromLeader(lead: NodeId): void {
    this.electionElapsed = 0;
    this.lead = lead;
    // A leader that was reported down is evidently up (the hint was wrong, or it restarted and won again).
    if (this.leaderDownTimeout) this.resetRandomizedElectionTicks();
  }

  private becomeFollower(t: Term, lead: NodeId): void {
    this.reset(t);
    this.lead = lead;
    this.state = 'follower';
    this.note(`became follower at term ${t}${lead === NONE ? '' : ` (leader ${lead})`}`);
  }

  private becomePreCandidate(): void {
    assert(this.state !== 'leader', 'leader cannot become pre-candidate');
    // A pre-candidate changes neither its term nor its vote.
    this.votes = new Map();
    this.lead = NONE;
    this.state = 'preCandidate';
    this.note(`became pre-candidate at term ${this.currentTerm}`);
  }

  private becomeCandidate(): void {
    assert(this.state !== 'leader', 'leader cannot become candidate');
    this.reset(term(this.currentTerm + 1));
    this.vote = this.id;
    this.state = 'candidate';
    this.note(`became candidate at term ${this.currentTerm}`);
  }

  private becomeLeader(): void {
    assert(this.state === 'candidate', 'only a candidate becomes leader');
    this.reset(this.currentTerm);
    this.lead = this.id;
    this.state = 'leader';
    const self = this.progress.get(this.id);
    assert(self !== undefined);
    self.becomeReplicate();
    self.recentActive = true;
    const ok = this.appendEntries([{ type: 'normal', data: new Uint8Array(0) }]);
    assert(ok, 'the empty entry of a new leader is always accepted');
    // A membership change may be proposed only once this empty entry is applied: the leader has then committed
    // an entry of its own term, and knows any change an earlier leader left (the single-server change fix).
    this.pendingConfIndex = this.log.lastIndex();
    this.note(`became leader at term ${this.currentTerm}`);
  }

  private promotable(): boolean {
    const pr = this.progress.get(this.id);
    return pr !== undefined && !pr.isLearner;
  }

  private hup(transfer: boolean): void {
    if (this.state === 'leader') return;
    if (!this.promotable()) return;
    if (this.hasUnappliedConfChanges()) {
      this.note('cannot campaign: membership changes committed but not applied');
      return;
    }
    if (this.preVote && !transfer) this.runElection('pre');
    else this.runElection(transfer ? 'transfer' : 'election');
  }

  private hasUnappliedConfChanges(): boolean {
    if (this.log.applied >= this.log.committed) return false;
    const lo = logIndex(Math.max(this.log.applied + 1, this.log.firstIndex()));
    if (lo > this.log.committed) return false;
    const entries = this.log.slice(lo, logIndex(this.log.committed + 1), Number.MAX_SAFE_INTEGER);
    return entries !== 'compacted' && entries.some((e) => e.type === 'confChange');
  }

  private runElection(kind: 'pre' | 'election' | 'transfer'): void {
    let electionTerm: Term;
    if (kind === 'pre') {
      this.becomePreCandidate();
      electionTerm = term(this.currentTerm + 1);
    } else {
      this.becomeCandidate();
      electionTerm = this.currentTerm;
    }
    if (this.poll(this.id, true) === 'won') {
      if (kind === 'pre') this.runElection('election');
      else this.becomeLeader();
      return;
    }
    const index = this.log.lastIndex();
    const logTerm = this.log.lastTerm();
    for (const id of this.voters) {
      if (id === this.id) continue;
      if (kind === 'pre') {
        this.messages.push({ type: 'MsgPreVote', from: this.id, to: id, term: electionTerm, index, logTerm });
      } else {
        this.messages.push({
          type: 'MsgVote',
          from: this.id,
          to: id,
          term: electionTerm,
          index,
          logTerm,
          transfer: kind === 'transfer',
        });
      }
    }
  }

  private poll(from: NodeId, granted: boolean): VoteResult {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    return voteResult(this.voters, this.votes);
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTicks) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTicks) {
      this.electionElapsed = 0;
      if (this.checkQuorum) this.checkQuorumActive();
      if (this.state !== 'leader') return;
      if (this.leadTransferee !== NONE) {
        this.note(`leader transfer to ${this.leadTransferee} timed out`);
        this.leadTransferee = NONE;
      }
    }
    if (this.heartbeatElapsed >= this.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.broadcastHeartbeat(this.readOnly.lastPendingContext());
    }
  }

  /** Check-quorum: step down unless a majority was heard from since the last round. */
  private checkQuorumActive(): void {
    let active = 0;
    for (const id of this.voters) {
      const pr = this.progress.get(id);
      if (id === this.id || pr?.recentActive === true) active++;
    }
    for (const [id, pr] of this.progress) if (id !== this.id) pr.recentActive = false;
    if (active < Math.floor(this.voters.length / 2) + 1) {
      this.note('stepped down: no recent contact with a majority');
      this.becomeFollower(this.currentTerm, NONE);
    }
  }

  // ---- Step ----------------------------------------------------------------------------------------------

  private stepLocal(m: MsgProp | MsgReadIndex | MsgTransferLeader): RaftError | null {
    return this.stepMessage(m);
  }

  private stepMessage(m: Message): RaftError | null {
    if (m.term === 0) {
      // Local requests and forwarded proposals / read index requests: no term checks. Any other type with term 0
      // comes from a node that knows nothing yet (or a broken peer) and carries no information: drop it.
      if (!messageClasses[m.type].local) return null;
    } else if (m.term > this.currentTerm) {
      if (m.type === 'MsgVote' || m.type === 'MsgPreVote') {
        const force = m.type === 'MsgVote' && m.transfer;
        const inLease = this.checkQuorum && this.lead !== NONE && this.electionElapsed < this.electionTicks;
        if (!force && inLease) {
          // Leader lease: we heard from a leader within the minimum election timeout, so ignore the vote.
          return null;
        }
      }
      if (m.type === 'MsgPreVote') {
        // Never change our term in response to a pre-vote.
      } else if (m.type === 'MsgPreVoteResp' && !m.reject) {
        // Granted pre-votes carry the future term; the term changes only when the election really starts.
      } else if (m.type === 'MsgApp' || m.type === 'MsgHeartbeat' || m.type === 'MsgSnap') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.currentTerm) {
      if ((this.checkQuorum || this.preVote) && (m.type === 'MsgHeartbeat' || m.type === 'MsgApp')) {
        // A stale leader (or a node cut off from it) learns of the newer term from this answer.
        this.send({
          type: 'MsgAppResp',
          from: this.id,
          to: m.from,
          term: this.currentTerm,
          index: logIndex(0),
          reject: false,
          rejectHint: logIndex(0),
          logTerm: term(0),
        });
      } else if (m.type === 'MsgPreVote') {
        this.send({
          type: 'MsgPreVoteResp',
          from: this.id,
          to: m.from,
          term: this.currentTerm,
          reject: true,
        });
      }
      return null;
    }

    if (m.type === 'MsgVote' || m.type === 'MsgPreVote') {
      const canVote =
        this.vote === m.from ||
        (this.vote === NONE && this.lead === NONE) ||
        (m.type === 'MsgPreVote' && m.term > this.currentTerm);
      const respType = m.type === 'MsgVote' ? 'MsgVoteResp' : 'MsgPreVoteResp';
      if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
        this.send({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
        if (m.type === 'MsgVote') {
          this.electionElapsed = 0;
          this.vote = m.from;
        }
      } else {
        this.send({ type: respType, from: this.id, to: m.from, term: this.currentTerm, reject: true });
      }
      return null;
    }

    switch (this.state) {
      case 'leader':
        return this.stepLeader(m);
      case 'candidate':
      case 'preCandidate':
        return this.stepCandidate(m);
      case 'follower':
        return this.stepFollower(m);
      default:
        return unreachable(this.state);
    }
  }

  private send(m: Message): void {
    this.messages.push(m);
  }

  private stepLeader(m: Message): RaftError | null {
    if (m.type === 'MsgProp') return this.leaderPropose(m);
    if (m.type === 'MsgReadIndex') return this.leaderReadIndex(m);
    if (m.type === 'MsgTransferLeader') {
      this.leaderTransfer(m.transferee);
      return null;
    }
    const pr = this.progress.get(m.from);
    if (pr === undefined) return null;
    switch (m.type) {
      case 'MsgAppResp':
        pr.recentActive = true;
        if (m.reject) this.leaderHandleReject(m.from, pr, m.index, m.rejectHint, m.logTerm);
        else this.leaderHandleAck(m.from, pr, m.index);
        return null;
      case 'MsgHeartbeatResp':
        pr.recentActive = true;
        pr.paused = false;
        if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
        if (pr.state === 'snapshot') this.maybeResendSnapshotChunk(m.from, pr);
        else if (pr.match < this.log.lastIndex() || pr.state === 'probe') this.sendAppend(m.from, true);
        if (m.context !== '') this.leaderHandleReadAck(m.from, m.context);
        return null;
      case 'MsgSnapResp':
        pr.recentActive = true;
        if (
          pr.state === 'snapshot' &&
          pr.transfer !== undefined &&
          pr.transfer.snapshot.metadata.index === m.snapshotIndex
        ) {
          pr.transfer.offsetAcked = m.offset;
          pr.transfer.heartbeatsSinceAck = 0;
          this.sendSnapshotChunk(m.from, pr);
        }
        return null;
      case 'MsgVoteResp':
      case 'MsgPreVoteResp':
      case 'MsgApp':
      case 'MsgHeartbeat':
      case 'MsgSnap':
      case 'MsgTimeoutNow':
      case 'MsgReadIndexResp':
      case 'MsgVote':
      case 'MsgPreVote':
        return null;
      default:
        return unreachable(m);
    }
  }

  private leaderPropose(m: MsgProp): RaftError | null {
    assert(m.entries.length > 0, 'empty proposal');
    if (!this.progress.has(this.id)) return 'ProposalDropped';
    if (this.leadTransferee !== NONE) return 'LeaderTransferInProgress';
    for (const e of m.entries) {
      if (e.type !== 'confChange') continue;
      const refused = this.checkConfChange(e.data);
      if (refused !== null) {
        this.note(`refused membership change: ${refused}`);
        return refused;
      }
    }
    if (!this.appendEntries(m.entries)) return 'UncommittedSizeExceeded';
    for (const e of m.entries) {
      if (e.type === 'confChange') this.pendingConfIndex = this.log.lastIndex();
    }
    this.broadcastAppend();
    return null;
  }

  private checkConfChange(data: Uint8Array): RaftError | null {
    if (this.pendingConfIndex > this.log.applied) return 'ConfChangePending';
    const change = decodeConfChange(data);
    const pr = this.progress.get(change.nodeId);
    switch (change.type) {
      case 'addVoter':
        if (
          pr !== undefined &&
          pr.isLearner &&
          pr.match + this.learnerCatchUpEntriesMax < this.log.committed
        ) {
          return 'LearnerNotCaughtUp';
        }
        return null;
      case 'addLearner':
        return pr !== undefined && !pr.isLearner ? 'InvalidConfChange' : null;
      case 'removeNode':
        return pr !== undefined && !pr.isLearner && this.voters.length === 1 ? 'InvalidConfChange' : null;
      default:
        return unreachable(change.type);
    }
  }

  private leaderReadIndex(m: MsgReadIndex): RaftError | null {
    if (this.voters.length === 1 && this.voters[0] === this.id) {
      this.answerReadIndex(m, this.log.committed);
      return null;
    }
    if (this.readOnly.size() + this.pendingReadIndex.length >= this.readIndexPendingMax)
      return 'ReadIndexBacklog';
    // A new leader does not know the commit index of the previous term until it commits an entry of its own.
    if (this.log.term(this.log.committed) !== this.currentTerm) {
      this.pendingReadIndex.push(m);
      return null;
    }
    this.startReadIndexRound(m);
    return null;
  }

  private startReadIndexRound(m: MsgReadIndex): void {
    this.readOnly.add(this.log.committed, m);
    this.leaderHandleReadAck(this.id, m.context);
    if (this.readOnly.size() > 0) this.broadcastHeartbeat(m.context);
  }

  private leaderHandleReadAck(from: NodeId, context: string): void {
    const acks = this.readOnly.receiveAck(from, context);
    if (acks === undefined) return;
    const votes = new Map<NodeId, boolean>();
    for (const id of acks) votes.set(id, true);
    if (voteResult(this.voters, votes) !== 'won') return;
    for (const status of this.readOnly.advance(context)) this.answerReadIndex(status.request, status.index);
  }

  private answerReadIndex(request: MsgReadIndex, index: LogIndex): void {
    if (request.from === this.id) {
      this.readStates.push({ index, context: request.context });
    } else {
      this.send({
        type: 'MsgReadIndexResp',
        from: this.id,
        to: request.from,
        term: this.currentTerm,
        context: request.context,
        index,
      });
    }
  }

  private releasePendingReadIndex(): void {
    if (this.pendingReadIndex.length === 0 || this.log.term(this.log.committed) !== this.currentTerm) return;
    const pending = this.pendingReadIndex;
    this.pendingReadIndex = [];
    for (const m of pending) this.startReadIndexRound(m);
  }

  private leaderTransfer(transferee: NodeId): void {
    const pr = this.progress.get(transferee);
    if (pr === undefined || pr.isLearner) return;
    if (this.leadTransferee !== NONE) {
      if (this.leadTransferee === transferee) return;
      this.leadTransferee = NONE;
    }
    if (transferee === this.id) return;
    this.electionElapsed = 0;
    this.leadTransferee = transferee;
    this.note(`transferring leadership to ${transferee}`);
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(transferee);
    else this.sendAppend(transferee, true);
  }

  private sendTimeoutNow(to: NodeId): void {
    this.send({ type: 'MsgTimeoutNow', from: this.id, to, term: this.currentTerm });
  }

  private leaderHandleReject(
    from: NodeId,
    pr: Progress,
    index: LogIndex,
    hint: LogIndex,
    hintTerm: Term,
  ): void {
    let next = hint;
    if (hintTerm > 0) next = this.log.findConflictByTerm(hint, hintTerm).index;
    if (pr.maybeDecrTo(index, next)) {
      if (pr.state === 'replicate') pr.becomeProbe();
      this.sendAppend(from, true);
    }
  }

  private leaderHandleAck(from: NodeId, pr: Progress, index: LogIndex): void {
    const wasPaused = pr.isPaused();
    if (!(pr.maybeUpdate(index) || (pr.match === index && pr.state === 'probe'))) {
      if (
        pr.state === 'snapshot' &&
        pr.transfer !== undefined &&
        index >= pr.transfer.snapshot.metadata.index
      ) {
        pr.becomeProbe();
        this.sendAppend(from, true);
      }
      return;
    }
    switch (pr.state) {
      case 'probe':
        pr.becomeReplicate();
        break;
      case 'snapshot':
        if (
          pr.match + 1 >= this.log.firstIndex() ||
          (pr.transfer !== undefined && pr.match >= pr.transfer.snapshot.metadata.index)
        ) {
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case 'replicate':
        pr.inflights.freeLE(index);
        break;
      default:
        unreachable(pr.state);
    }
    if (this.maybeCommit()) {
      this.releasePendingReadIndex();
      this.broadcastAppend();
    } else if (wasPaused) {
      this.sendAppend(from, true);
    }
    while (this.sendAppend(from, false)) {
      // Keeps sending while there are entries and the inflight window allows.
    }
    if (from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.note(`sent MsgTimeoutNow to ${from}: its log is up to date`);
      this.sendTimeoutNow(from);
    }
  }

  private maybeCommit(): boolean {
    const index = committedIndex(this.voters, (id) => this.progress.get(id)?.match ?? logIndex(0));
    return this.log.maybeCommit(index, this.currentTerm);
  }

  private appendEntries(proposed: readonly ProposedEntry[]): boolean {
    const bytes = payloadBytes(proposed);
    if (
      this.uncommittedEntriesBytesMax > 0 &&
      this.uncommittedBytes > 0 &&
      bytes > 0 &&
      this.uncommittedBytes + bytes > this.uncommittedEntriesBytesMax
    ) {
      return false;
    }
    this.uncommittedBytes += bytes;
    let index = this.log.lastIndex();
    const entries: Entry[] = proposed.map((p) => {
      index = logIndex(index + 1);
      return { term: this.currentTerm, index, type: p.type, data: p.data };
    });
    const last = this.log.append(entries);
    this.progress.get(this.id)?.maybeUpdate(last);
    this.maybeCommit();
    return true;
  }

  private broadcastAppend(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.sendAppend(id, true);
  }

  private broadcastHeartbeat(context: string): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      const commit = logIndex(Math.min(pr.match, this.log.committed));
      const m: MsgHeartbeat = {
        type: 'MsgHeartbeat',
        from: this.id,
        to: id,
        term: this.currentTerm,
        commit,
        context,
      };
      this.send(m);
    }
  }

  /** Sends entries (or a snapshot, when they are compacted) to `to`; returns whether a message was sent. */
  private sendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = logIndex(pr.next - 1);
    const prevTerm = this.log.term(prevIndex);
    const entries =
      pr.state === 'replicate' && pr.inflights.full()
        ? []
        : this.log.entriesFrom(pr.next, this.messageEntriesBytesMax);
    if (entries !== 'compacted' && entries.length === 0 && !sendIfEmpty) return false;
    if (prevTerm === undefined || entries === 'compacted') {
      if (!pr.recentActive) return false;
      const snapshot = this.log.snapshot();
      pr.becomeSnapshot(snapshot);
      this.note(`sending snapshot at ${snapshot.metadata.index} to ${to} (${snapshot.data.length} bytes)`);
      this.sendSnapshotChunk(to, pr);
      return true;
    }
    const m: MsgApp = {
      type: 'MsgApp',
      from: this.id,
      to,
      term: this.currentTerm,
      index: prevIndex,
      logTerm: prevTerm,
      entries,
      commit: this.log.committed,
    };
    this.send(m);
    pr.sentEntries(pr.next, entries.length, payloadBytes(entries));
    return true;
  }

  /** A chunk unacknowledged for two heartbeat rounds is presumed lost (one round may just be a slow chunk). */
  private maybeResendSnapshotChunk(to: NodeId, pr: Progress): void {
    const transfer = pr.transfer;
    if (transfer === undefined) return;
    transfer.heartbeatsSinceAck++;
    if (transfer.heartbeatsSinceAck < 2) return;
    transfer.heartbeatsSinceAck = 0;
    this.sendSnapshotChunk(to, pr);
  }

  /** Sends the chunk the follower asked for last (stop-and-wait; resent after two heartbeat rounds without an answer). */
  private sendSnapshotChunk(to: NodeId, pr: Progress): void {
    const transfer = pr.transfer;
    if (transfer === undefined) return;
    const { snapshot, offsetAcked } = transfer;
    const total = snapshot.data.length;
    if (offsetAcked >= total && total > 0) return;
    const end = Math.min(total, offsetAcked + this.snapshotChunkBytes);
    const m: MsgSnap = {
      type: 'MsgSnap',
      from: this.id,
      to,
      term: this.currentTerm,
      snapshotIndex: snapshot.metadata.index,
      snapshotTerm: snapshot.metadata.term,
      confState: snapshot.metadata.confState,
      totalBytes: total,
      offset: offsetAcked,
      data: snapshot.data.subarray(offsetAcked, end),
      done: end === total,
    };
    this.send(m);
  }

  private stepCandidate(m: Message): RaftError | null {
    switch (m.type) {
      case 'MsgProp':
        return 'ProposalDropped';
      case 'MsgApp':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return null;
      case 'MsgHeartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return null;
      case 'MsgSnap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshotChunk(m);
        return null;
      case 'MsgVoteResp':
      case 'MsgPreVoteResp': {
        const mine = this.state === 'preCandidate' ? 'MsgPreVoteResp' : 'MsgVoteResp';
        if (m.type !== mine) return null;
        const result = this.poll(m.from, !m.reject);
        if (result === 'won') {
          if (this.state === 'preCandidate') this.runElection('election');
          else {
            this.becomeLeader();
            this.broadcastAppend();
          }
        } else if (result === 'lost') {
          this.becomeFollower(this.currentTerm, NONE);
        }
        return null;
      }
      case 'MsgReadIndex':
      case 'MsgTransferLeader':
        return 'ProposalDropped';
      case 'MsgAppResp':
      case 'MsgHeartbeatResp':
      case 'MsgSnapResp':
      case 'MsgTimeoutNow':
      case 'MsgReadIndexResp':
      case 'MsgVote':
      case 'MsgPreVote':
        return null;
      default:
        return unreachable(m);
    }
  }

  private stepFollower(m: Message): RaftError | null {
    switch (m.type) {
      case 'MsgProp':
      case 'MsgReadIndex':
      case 'MsgTransferLeader':
        if (this.lead === NONE) return 'ProposalDropped';
        this.send({ ...m, to: this.lead });
        return null;
      case 'MsgApp':
        this.heardFromLeader(m.from);
        this.handleAppend(m);
        return null;
      case 'MsgHeartbeat':
        this.heardFromLeader(m.from);
        this.handleHeartbeat(m);
        return null;
      case 'MsgSnap':
        this.heardFromLeader(m.from);
        this.handleSnapshotChunk(m);
        return null;
      case 'MsgTimeoutNow':
        this.note(`received MsgTimeoutNow from ${m.from}: campaigning`);
        this.hup(true);
        return null;
      case 'MsgReadIndexResp':
        this.readStates.push({ index: m.index, context: m.context });
        return null;
      case 'MsgAppResp':
      case 'MsgHeartbeatResp':
      case 'MsgSnapResp':
      case 'MsgVoteResp':
      case 'MsgPreVoteResp':
      case 'MsgVote':
      case 'MsgPreVote':
        return null;
      default:
        return unreachable(m);
    }
  }

  private handleAppend(m: MsgApp): void {
    const reply = (index: LogIndex, reject: boolean, rejectHint: LogIndex, logTerm: Term): void =>
      this.send({
        type: 'MsgAppResp',
        from: this.id,
        to: m.from,
        term: this.currentTerm,
        index,
        reject,
        rejectHint,
        logTerm,
      });
    if (m.index < this.log.committed) {
      reply(this.log.committed, false, logIndex(0), term(0));
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      reply(lastNew, false, logIndex(0), term(0));
      return;
    }
    const hint = this.log.findConflictByTerm(logIndex(Math.min(m.index, this.log.lastIndex())), m.logTerm);
    reply(m.index, true, hint.index, hint.term);
  }

  private handleHeartbeat(m: MsgHeartbeat): void {
    this.log.commitTo(m.commit);
    this.send({
      type: 'MsgHeartbeatResp',
      from: this.id,
      to: m.from,
      term: this.currentTerm,
      context: m.context,
    });
  }

  private handleSnapshotChunk(m: MsgSnap): void {
    const ack = (offset: number): void => {
      const r: MsgSnapResp = {
        type: 'MsgSnapResp',
        from: this.id,
        to: m.from,
        term: this.currentTerm,
        snapshotIndex: m.snapshotIndex,
        offset,
      };
      this.send(r);
    };
    if (m.snapshotIndex <= this.log.committed) {
      // Nothing to install: tell the leader how far we are.
      this.snapshotReceive = undefined;
      this.send({
        type: 'MsgAppResp',
        from: this.id,
        to: m.from,
        term: this.currentTerm,
        index: this.log.committed,
        reject: false,
        rejectHint: logIndex(0),
        logTerm: term(0),
      });
      return;
    }
    let rx = this.snapshotReceive;
    const same = rx !== undefined && rx.from === m.from && rx.term === m.term && rx.index === m.snapshotIndex;
    if (m.offset === 0 && !same) {
      rx = { from: m.from, term: m.term, index: m.snapshotIndex, chunks: [], bytes: 0 };
      this.snapshotReceive = rx;
    } else if (!same || rx === undefined) {
      ack(0);
      return;
    }
    if (m.offset !== rx.bytes) {
      ack(rx.bytes);
      return;
    }
    rx.chunks.push(m.data.slice());
    rx.bytes += m.data.length;
    if (rx.bytes > m.totalBytes || (m.done && rx.bytes !== m.totalBytes)) {
      // Inconsistent chunks (a broken peer): start the transfer over rather than install a torn snapshot.
      this.note(`snapshot at ${m.snapshotIndex}: ${rx.bytes} bytes received of ${m.totalBytes}; restarting`);
      this.snapshotReceive = undefined;
      ack(0);
      return;
    }
    if (!m.done) {
      ack(rx.bytes);
      return;
    }
    const data = new Uint8Array(rx.bytes);
    let at = 0;
    for (const chunk of rx.chunks) {
      data.set(chunk, at);
      at += chunk.length;
    }
    this.snapshotReceive = undefined;
    const snapshot: Snapshot = {
      metadata: { index: m.snapshotIndex, term: m.snapshotTerm, confState: m.confState },
      data,
    };
    const index = this.restore(snapshot) ? this.log.lastIndex() : this.log.committed;
    this.send({
      type: 'MsgAppResp',
      from: this.id,
      to: m.from,
      term: this.currentTerm,
      index,
      reject: false,
      rejectHint: logIndex(0),
      logTerm: term(0),
    });
  }

  /** Installs a snapshot from the leader; false when it brings nothing new. */
  private restore(snapshot: Snapshot): boolean {
    const { index, term: snapshotTerm, confState } = snapshot.metadata;
    if (index <= this.log.committed) return false;
    // A snapshot taken before this node was added does not list it (etcd-io/raft refuses those; its server sends
    // a fresh snapshot instead). It is installed all the same: its data is committed, and the entry that adds
    // this node follows in the log; until that entry is applied this node is not a member and cannot campaign.
    if (this.log.matchTerm(index, snapshotTerm)) {
      // We already have the entry: just commit up to it.
      this.note(`fast-forwarded commit to ${index} from a snapshot`);
      this.log.commitTo(index);
      return false;
    }
    this.note(`restored snapshot at ${index} term ${snapshotTerm}`);
    this.log.restore(snapshot);
    this.setConfState(confState);
    return true;
  }

  // ---- Membership ----------------------------------------------------------------------------------------

  /** Progress of a peer the leader knows nothing about yet: it probes from just past the leader's last entry. */
  private newProgress(isLearner: boolean): Progress {
    return new Progress(
      logIndex(this.log.lastIndex() + 1),
      isLearner,
      this.inflightMessagesMax,
      this.inflightBytesMax,
    );
  }

  private setConfState(confState: ConfState): void {
    this.voters = [...confState.voters];
    this.learners = [...confState.learners];
    this.progress = new Map();
    for (const id of this.voters) this.progress.set(id, this.newProgress(false));
    for (const id of this.learners) this.progress.set(id, this.newProgress(true));
    const self = this.progress.get(this.id);
    if (self !== undefined) self.match = this.log.lastIndex();
  }

  private changeMembership(change: ConfChange): void {
    const id = change.nodeId;
    const pr = this.progress.get(id);
    switch (change.type) {
      case 'addVoter':
        if (pr === undefined) {
          this.progress.set(id, this.newProgress(false));
          this.voters.push(id);
        } else if (pr.isLearner) {
          pr.isLearner = false;
          this.learners = this.learners.filter((x) => x !== id);
          this.voters.push(id);
        }
        break;
      case 'addLearner':
        if (pr === undefined) {
          this.progress.set(id, this.newProgress(true));
          this.learners.push(id);
        }
        // Demoting a voter is refused at proposal time; a committed one is a no-op on every node alike.
        break;
      case 'removeNode':
        if (pr === undefined) break;
        if (!pr.isLearner && this.voters.length === 1) break; // never remove the last voter
        this.progress.delete(id);
        this.voters = this.voters.filter((x) => x !== id);
        this.learners = this.learners.filter((x) => x !== id);
        break;
      default:
        unreachable(change.type);
    }
    this.voters.sort((a, b) => a - b);
    this.learners.sort((a, b) => a - b);
    this.note(
      `applied ${change.type} ${id}: voters ${this.voters.join(',')} learners ${this.learners.join(',')}`,
    );
    if (this.state !== 'leader') return;
    if (!this.promotable()) {
      this.note('stepped down: removed from the membership');
      this.becomeFollower(this.currentTerm, NONE);
      return;
    }
    if (this.leadTransferee !== NONE && !this.voters.includes(this.leadTransferee))
      this.leadTransferee = NONE;
    if (this.maybeCommit()) {
      this.releasePendingReadIndex();
      this.broadcastAppend();
    } else {
      for (const other of this.progress.keys()) if (other !== this.id) this.sendAppend(other, false);
    }
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
