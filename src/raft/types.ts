// The data of the Raft core: entries, states, snapshots, and the closed union of messages between nodes.
// Everything here is plain data (numbers, strings, booleans, Uint8Array, arrays, plain objects) so that the
// transport can encode it with msgpackr as it is, and the simulator can copy it.

import type { LogIndex, NodeId, Term } from '../util/brand.js';
import { nodeId } from '../util/brand.js';

/** "No node": no leader known, no vote cast, or a message without a sender (brand.ts: a NodeId is never 0). */
export const NONE: NodeId = nodeId(0);

export type EntryType = 'normal' | 'confChange';

/** One log entry. A confChange entry's data is `encodeConfChange(...)`. */
export interface Entry {
  readonly term: Term;
  readonly index: LogIndex;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** What a proposal carries before the leader gives it a term and an index. */
export interface ProposedEntry {
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** The state a node MUST persist (fsync) before it sends the messages of the same Ready. */
export interface HardState {
  readonly term: Term;
  /** The candidate voted for in `term`, or NONE. */
  readonly vote: NodeId;
  // invariant: commit <= last persisted index (a node never claims to have committed what it has not stored)
  readonly commit: LogIndex;
}

/** The membership: voters count in elections and commits; learners only receive the log. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/**
 * A change of one server at a time. `addVoter` of a learner promotes it. `addLearner` of a voter is refused
 * (no demotion). Removing the last voter is refused.
 */
export interface ConfChange {
  readonly type: 'addVoter' | 'addLearner' | 'removeNode';
  readonly nodeId: NodeId;
}

export interface SnapshotMetadata {
  /** The last log index the snapshot covers, and its term. */
  readonly index: LogIndex;
  readonly term: Term;
  /** The membership as of `index`. */
  readonly confState: ConfState;
}

/** The application state as of `metadata.index`; `data` is opaque to the core. */
export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: Uint8Array;
}

export type StateType = 'follower' | 'preCandidate' | 'candidate' | 'leader';

/** Volatile state, reported in a Ready when it changes; never persisted. */
export interface SoftState {
  readonly lead: NodeId;
  readonly state: StateType;
}

/** The answer to a ReadIndex request: the read may be served once the node has applied `index`. */
export interface ReadState {
  readonly index: LogIndex;
  readonly context: string;
}

interface MessageBase {
  readonly from: NodeId;
  readonly to: NodeId;
  /** The sender's term; 0 for messages that travel as "local" (a forwarded MsgProp or MsgReadIndex). */
  readonly term: Term;
}

/** Client proposal, forwarded by a follower to its leader. */
export interface MsgProp extends MessageBase {
  readonly type: 'MsgProp';
  readonly entries: readonly ProposedEntry[];
}
/** AppendEntries: `entries` follow the entry at (`index`, `logTerm`); `commit` is the leader's commit index. */
export interface MsgApp extends MessageBase {
  readonly type: 'MsgApp';
  readonly index: LogIndex;
  readonly logTerm: Term;
  readonly entries: readonly Entry[];
  readonly commit: LogIndex;
}
/**
 * Accept: the follower's log matches up to `index`. Reject: no match at `index`; `rejectHint` and `logTerm`
 * say where the follower's log may match (its last index <= `index` and the term there), to skip a term at once.
 */
export interface MsgAppResp extends MessageBase {
  readonly type: 'MsgAppResp';
  readonly index: LogIndex;
  readonly reject: boolean;
  readonly rejectHint: LogIndex;
  readonly logTerm: Term;
}
/** RequestVote for `term`; (`index`, `logTerm`) is the candidate's last entry; `transfer` overrides leases. */
export interface MsgVote extends MessageBase {
  readonly type: 'MsgVote';
  readonly index: LogIndex;
  readonly logTerm: Term;
  readonly transfer: boolean;
}
export interface MsgVoteResp extends MessageBase {
  readonly type: 'MsgVoteResp';
  readonly reject: boolean;
}
/** A pre-vote for `term` (the sender's term + 1) that changes no one's term or vote. */
export interface MsgPreVote extends MessageBase {
  readonly type: 'MsgPreVote';
  readonly index: LogIndex;
  readonly logTerm: Term;
}
export interface MsgPreVoteResp extends MessageBase {
  readonly type: 'MsgPreVoteResp';
  readonly reject: boolean;
}
/** Leader liveness; `commit` is at most what the follower is known to match; `context` tags a ReadIndex round. */
export interface MsgHeartbeat extends MessageBase {
  readonly type: 'MsgHeartbeat';
  readonly commit: LogIndex;
  readonly context: string;
}
export interface MsgHeartbeatResp extends MessageBase {
  readonly type: 'MsgHeartbeatResp';
  readonly context: string;
}
/**
 * One chunk of an InstallSnapshot: bytes [offset, offset + data.length) of a snapshot of `totalBytes` bytes
 * at (`snapshotIndex`, `snapshotTerm`). `done` marks the last chunk.
 */
export interface MsgSnap extends MessageBase {
  readonly type: 'MsgSnap';
  readonly snapshotIndex: LogIndex;
  readonly snapshotTerm: Term;
  readonly confState: ConfState;
  readonly totalBytes: number;
  readonly offset: number;
  readonly data: Uint8Array;
  readonly done: boolean;
}
/** The follower holds the first `offset` bytes of the snapshot at `snapshotIndex` and wants the next chunk. */
export interface MsgSnapResp extends MessageBase {
  readonly type: 'MsgSnapResp';
  readonly snapshotIndex: LogIndex;
  readonly offset: number;
}
/** From the leader to a transfer target whose log is up to date: campaign now, ignoring leases. */
export interface MsgTimeoutNow extends MessageBase {
  readonly type: 'MsgTimeoutNow';
}
/** Ask the leader to hand leadership to `transferee`; a follower forwards it to its leader. */
export interface MsgTransferLeader extends MessageBase {
  readonly type: 'MsgTransferLeader';
  readonly transferee: NodeId;
}
/** Ask the leader for a read index; `context` identifies the request (unique across the cluster). */
export interface MsgReadIndex extends MessageBase {
  readonly type: 'MsgReadIndex';
  readonly context: string;
}
export interface MsgReadIndexResp extends MessageBase {
  readonly type: 'MsgReadIndexResp';
  readonly context: string;
  readonly index: LogIndex;
}

export type Message =
  | MsgProp
  | MsgApp
  | MsgAppResp
  | MsgVote
  | MsgVoteResp
  | MsgPreVote
  | MsgPreVoteResp
  | MsgHeartbeat
  | MsgHeartbeatResp
  | MsgSnap
  | MsgSnapResp
  | MsgTimeoutNow
  | MsgTransferLeader
  | MsgReadIndex
  | MsgReadIndexResp;

export type MessageType = Message['type'];

export interface MessageClass {
  /** The type that answers this one, or null if none does. */
  readonly response: MessageType | null;
  /** Travels with term 0 and is never subject to term checks (it is forwarded, like a local request). */
  readonly local: boolean;
  /** Its term is the campaign's term, not the sender's current term. */
  readonly election: boolean;
}

/** Every message type, classified; a new type that is not classified here fails to compile. */
export const messageClasses = {
  MsgProp: { response: null, local: true, election: false },
  MsgApp: { response: 'MsgAppResp', local: false, election: false },
  MsgAppResp: { response: null, local: false, election: false },
  MsgVote: { response: 'MsgVoteResp', local: false, election: true },
  MsgVoteResp: { response: null, local: false, election: true },
  MsgPreVote: { response: 'MsgPreVoteResp', local: false, election: true },
  MsgPreVoteResp: { response: null, local: false, election: true },
  MsgHeartbeat: { response: 'MsgHeartbeatResp', local: false, election: false },
  MsgHeartbeatResp: { response: null, local: false, election: false },
  MsgSnap: { response: 'MsgSnapResp', local: false, election: false },
  MsgSnapResp: { response: null, local: false, election: false },
  MsgTimeoutNow: { response: null, local: false, election: false },
  MsgTransferLeader: { response: null, local: false, election: false },
  MsgReadIndex: { response: 'MsgReadIndexResp', local: true, election: false },
  MsgReadIndexResp: { response: null, local: false, election: false },
} as const satisfies Record<MessageType, MessageClass>;

/**
 * What the node must do, in this order: persist `snapshot`, `entries` and `hardState` (fsync when `mustSync`),
 * THEN send `messages`, apply `snapshot` and `committedEntries` to the state machine, then call `advance()`.
 */
export interface Ready {
  readonly softState?: SoftState;
  readonly hardState?: HardState;
  /** New log entries; they replace any stored entries at the same or higher indexes. */
  readonly entries: readonly Entry[];
  /** To apply, in order; already persisted (here or in `entries` of this Ready). */
  readonly committedEntries: readonly Entry[];
  /** To send AFTER `entries`, `hardState` and `snapshot` are durable. */
  readonly messages: readonly Message[];
  /** A snapshot received from the leader, to persist and to apply before `committedEntries`. */
  readonly snapshot?: Snapshot;
  readonly readStates: readonly ReadState[];
  /** True when `entries`, the term or the vote changed: they MUST be fsynced before the messages are sent. */
  readonly mustSync: boolean;
}

/** The closed set of errors the core returns to a caller (operating errors; programmer errors assert). */
export type RaftError =
  /** No leader known, this node is not a member, or the message was for someone else. */
  | 'ProposalDropped'
  /** The leader is handing leadership over; retry after it is done. */
  | 'LeaderTransferInProgress'
  /** The leader's uncommitted entries are over `uncommittedEntriesBytesMax`; retry later (backpressure). */
  | 'UncommittedSizeExceeded'
  /** A membership change is proposed but not yet applied; one change at a time. */
  | 'ConfChangePending'
  /** A learner may be promoted only once its log is within `learnerCatchUpEntriesMax` of the leader's commit. */
  | 'LearnerNotCaughtUp'
  /** The leader has `readIndexPendingMax` ReadIndex requests awaiting confirmation; retry later (backpressure). */
  | 'ReadIndexBacklog'
  /** The change is not valid for the current membership (e.g. removing the last voter, demoting a voter). */
  | 'InvalidConfChange';

const confChangeTypes = ['addVoter', 'addLearner', 'removeNode'] as const;

/** The entry data of a membership change: "<type> <nodeId>" in UTF-8 (readable in traces, stable on disk). */
export function encodeConfChange(change: ConfChange): Uint8Array {
  return new TextEncoder().encode(`${change.type} ${change.nodeId}`);
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const [type, id] = new TextDecoder().decode(data).split(' ');
  const found = confChangeTypes.find((t) => t === type);
  const n = Number(id);
  if (found === undefined || !Number.isSafeInteger(n) || n <= 0) {
    throw new Error(`bad conf change entry: ${new TextDecoder().decode(data)}`);
  }
  return { type: found, nodeId: nodeId(n) };
}

export function payloadBytes(entries: readonly { readonly data: Uint8Array }[]): number {
  let n = 0;
  for (const e of entries) n += e.data.length;
  return n;
}
