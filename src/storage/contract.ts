// The storage contract: an etcd-v3-like MVCC key-value store. The API server sees nothing else of storage.
//
// Semantics (the same on every engine, checked by test/conformance against a real etcd):
// - One store-wide revision, strictly increasing. An empty store is at revision 1 (as etcd). Every transaction
//   that writes at least one key advances it by exactly one, and all its writes carry that revision.
// - A key's `version` is 1 at creation and grows by one on every put; a delete ends the key's life
//   (a later put creates it again with a new createRevision and version 1).
// - Keys are strings, ordered by their UTF-8 bytes; values are bytes.
// - History below the compacted revision is gone: reading or watching there fails with `Compacted`.

import type { Revision } from '../util/brand.js';

/** One key's state at some revision. */
export interface KeyValue {
  readonly key: string;
  readonly value: Uint8Array;
  /** Revision of the put that created this incarnation of the key. */
  readonly createRevision: Revision;
  /** Revision of the last put of the key. */
  readonly modRevision: Revision;
  /** Number of puts since creation; 1 at creation. */
  readonly version: number;
}

/** What a read or watch covers: one key, or every key that starts with a prefix ('' = the whole keyspace). */
export type KeySpan = { readonly key: string } | { readonly prefix: string };

export interface RangeOptions {
  /** Read at this revision (must be >= compacted revision and <= current); default: the current revision. */
  readonly revision?: Revision;
  /** At most this many key-values (0 or unset = no limit); `more` says whether some were left out. */
  readonly limit?: number;
  /** Start at this key (inclusive) instead of the span's first key; used for continuation. */
  readonly startKey?: string;
  /** Return no key-values, only the count. */
  readonly countOnly?: boolean;
  /**
   * Allow a local, possibly stale read. Default false: the read is linearizable (on a replicated engine this
   * costs a ReadIndex round; on the embedded engine it is free).
   */
  readonly serializable?: boolean;
}

export interface ResponseHeader {
  /** The store's revision when the request was served (for a range at an old revision: still the current one). */
  readonly revision: Revision;
}

export interface RangeResult {
  readonly header: ResponseHeader;
  /** In key order. */
  readonly kvs: readonly KeyValue[];
  /** True when `limit` left out key-values. */
  readonly more: boolean;
  /** Number of keys in the span from `startKey` on, at the read revision, regardless of `limit`. */
  readonly count: number;
}

export type CompareOperator = '=' | '!=' | '<' | '>';

/**
 * A condition on one key at the current revision. A missing key has version, createRevision and modRevision 0
 * and no value (a value compare against a missing key is false, as in etcd).
 */
export type Compare =
  | {
      readonly key: string;
      readonly target: 'modRevision' | 'createRevision' | 'version';
      readonly op: CompareOperator;
      readonly value: number;
    }
  | {
      readonly key: string;
      readonly target: 'value';
      readonly op: CompareOperator;
      readonly value: Uint8Array;
    }
  | { readonly key: string; readonly target: 'exists'; readonly value: boolean };

export type TxnOp =
  | { readonly type: 'put'; readonly key: string; readonly value: Uint8Array; readonly prevKv?: boolean }
  | { readonly type: 'delete'; readonly span: KeySpan; readonly prevKv?: boolean }
  | { readonly type: 'range'; readonly span: KeySpan; readonly options?: Omit<RangeOptions, 'serializable'> };

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

export type TxnOpResult =
  | { readonly type: 'put'; readonly prevKv?: KeyValue }
  | { readonly type: 'delete'; readonly deleted: number; readonly prevKvs: readonly KeyValue[] }
  | { readonly type: 'range'; readonly result: Omit<RangeResult, 'header'> };

export interface TxnResult {
  readonly header: ResponseHeader;
  /** Whether every compare held (and so `success` ran). */
  readonly succeeded: boolean;
  /** One result per op of the branch that ran, in order. */
  readonly responses: readonly TxnOpResult[];
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  /** For a delete: the key with an empty value, modRevision = the delete's revision, version 0. */
  readonly kv: KeyValue;
  /** The key's previous state, when the watch asked for `prevKv` and the key existed. */
  readonly prevKv?: KeyValue;
}

export interface WatchOptions {
  /**
   * Deliver every change with modRevision > afterRevision. Unset: only changes after the current revision.
   * Below the compacted revision the watch is cancelled with `Compacted`.
   */
  readonly afterRevision?: Revision;
  readonly prevKv?: boolean;
  /** Send a progress response with the current revision when the watch has been idle for a while. */
  readonly progressNotify?: boolean;
}

export type WatchResponse =
  /** All events of one or more revisions, in revision order; the events of one revision are never split. */
  | { readonly type: 'events'; readonly events: readonly WatchEvent[] }
  /** Every change up to `revision` in the span has been delivered. */
  | { readonly type: 'progress'; readonly revision: Revision }
  /** The watch ended; nothing follows. */
  | { readonly type: 'canceled'; readonly error: StorageError };

export interface Watch {
  /** Resolves once the watch is registered: no change after `afterRevision` will be missed. */
  readonly ready: Promise<void>;
  /** Ask for a progress response once every change up to the current revision has been delivered. */
  requestProgress(): void;
  /** Stop delivering; idempotent. No response is delivered after close() returns. */
  close(): void;
}

export interface StoreStatus {
  readonly revision: Revision;
  readonly compactRevision: Revision;
  /** Bytes on disk (approximate). */
  readonly dbSizeBytes: number;
}

/** Every engine (embedded LevelDB, replicated Raft, external etcd) implements this. */
export interface KVStore {
  range(span: KeySpan, options?: RangeOptions): Promise<RangeResult>;
  /** Atomic: the compares are evaluated and the chosen branch applied at one new revision, durably, before resolving. */
  txn(request: TxnRequest): Promise<TxnResult>;
  /** Responses are delivered to `listener` in order, never concurrently. */
  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch;
  /** Drop history below `revision`. Fails with `Compacted` if already compacted there, `FutureRevision` if ahead. */
  compact(revision: Revision): Promise<void>;
  status(): Promise<StoreStatus>;
  /** Stops watches (cancelled with `Closed`), waits for in-flight writes, releases the files. */
  close(): Promise<void>;
}

/** The closed set of storage errors. Upper layers map each one to an HTTP Status in one place. */
export type StorageErrorCode =
  /** The revision asked for is below the compacted revision (etcd: ErrCompacted; HTTP 410). */
  | 'Compacted'
  /** The revision asked for is above the current one (etcd: ErrFutureRev). */
  | 'FutureRevision'
  | 'KeyTooLarge'
  | 'ValueTooLarge'
  | 'TooManyOps'
  /** The same key is written twice in one transaction branch (etcd: duplicate key given in txn request). */
  | 'DuplicateKey'
  | 'InvalidArgument'
  /** No quorum, no leader, or the cluster did not answer in time; the write may or may not have happened. */
  | 'Unavailable'
  /** A watcher fell too far behind and was cancelled; it may resume from its last revision. */
  | 'WatchOverflow'
  /** The data directory was written by a newer format version. */
  | 'UnsupportedFormat'
  /** A record failed its checks on read; the message names the file. */
  | 'Corrupt'
  | 'Closed';

export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    /** For `Compacted`: the compacted revision; for `FutureRevision`: the current revision. */
    readonly revision?: Revision,
  ) {
    super(message);
  }
}
