// The shapes the Raft log persists and hands back (those of src/raft/types.ts, restated so that persistence
// depends on no core internals), shared by the segment WAL (store.ts) and the legacy LevelDB log.

import type { LogIndex, NodeId, Term } from '../util/brand.js';
import { assert } from '../util/assert.js';

export interface PersistedEntry {
  readonly term: Term;
  readonly index: LogIndex;
  readonly type: 'normal' | 'confChange';
  readonly data: Uint8Array;
}

export interface PersistedHardState {
  readonly term: Term;
  readonly vote: NodeId;
  readonly commit: LogIndex;
}

export interface PersistedConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export interface PersistedSnapshot {
  readonly metadata: {
    readonly index: LogIndex;
    readonly term: Term;
    readonly confState: PersistedConfState;
  };
  readonly data: Uint8Array;
}

export interface NodeIdentity {
  readonly clusterId: string;
  readonly nodeId: NodeId;
  readonly name: string;
}

export interface LoadedLog {
  readonly identity: NodeIdentity | undefined;
  readonly hardState: PersistedHardState;
  readonly snapshot: PersistedSnapshot | undefined;
  /** Contiguous, starting right after the snapshot (or at index 1). */
  readonly entries: readonly PersistedEntry[];
}

export interface SaveRequest {
  readonly hardState?: PersistedHardState;
  /**
   * Entries to append. The first one may overwrite existing entries: everything from its index on is
   * replaced (Raft truncates a conflicting suffix).
   */
  readonly entries?: readonly PersistedEntry[];
  /** A snapshot received from the leader: it replaces the whole log. */
  readonly snapshot?: PersistedSnapshot;
  /**
   * fsync before resolving (default true). A Ready whose only change is the commit index need not be synced:
   * a commit index lost in a crash is learned again from the leader.
   */
  readonly sync?: boolean;
}

/**
 * Checks entries to append against a log holding (snapshotIndex, lastIndex]: contiguous, after the snapshot and
 * leaving no gap (the first may overwrite: Raft truncates a conflicting suffix). Returns the first index.
 */
export function appendStart(
  entries: readonly PersistedEntry[],
  snapshotIndex: number,
  lastIndex: number,
): number {
  const first = (entries[0] as PersistedEntry).index;
  assert(
    first > snapshotIndex && first <= lastIndex + 1,
    `append at ${first} leaves a gap after ${lastIndex}`,
  );
  entries.forEach((entry, offset) => {
    assert(entry.index === first + offset, 'entries to save must be contiguous');
  });
  return first;
}
