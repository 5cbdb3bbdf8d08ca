// The log storage the core reads from (synchronous, like etcd-io/raft's Storage), and MemoryStorage.
//
// The node persists to disk first (LevelDB), THEN appends the same entries, hard state and snapshots to the
// MemoryStorage it hands the core, so the core only ever reads what is durable.

import type { LogIndex, NodeId, Term } from '../util/brand.js';
import { logIndex, term } from '../util/brand.js';
import { assert } from '../util/assert.js';
import type { ConfState, Entry, HardState, Snapshot } from './types.js';
import { NONE, encodeConfChange } from './types.js';

export interface LogStorage {
  /** The persisted hard state and the membership of the latest snapshot. */
  initialState(): { hardState: HardState; confState: ConfState };
  /**
   * Entries [lo, hi), at most `maxBytes` of payload but always at least one when lo < hi.
   * Precondition: firstIndex() <= lo <= hi <= lastIndex() + 1.
   */
  entries(lo: LogIndex, hi: LogIndex, maxBytes: number): Entry[];
  /** Term of entry i, for firstIndex() - 1 <= i <= lastIndex() (firstIndex() - 1 is the snapshot's); else undefined. */
  term(i: LogIndex): Term | undefined;
  /** The first index still in the log (the snapshot's index + 1). */
  firstIndex(): LogIndex;
  lastIndex(): LogIndex;
  /** The latest snapshot (index 0 with empty data when there is none). */
  snapshot(): Snapshot;
}

export type MemoryStorageError = 'SnapshotOutOfDate' | 'Compacted';

/** Limits a list of entries to `maxBytes` of payload, keeping at least one. */
export function limitSize(entries: Entry[], maxBytes: number): Entry[] {
  if (entries.length === 0) return entries;
  let size = entries[0]?.data.length ?? 0;
  let n = 1;
  for (; n < entries.length; n++) {
    size += entries[n]?.data.length ?? 0;
    if (size > maxBytes) break;
  }
  return n === entries.length ? entries : entries.slice(0, n);
}

export class MemoryStorage implements LogStorage {
  private hardState: HardState = { term: term(0), vote: NONE, commit: logIndex(0) };
  private snap: Snapshot = {
    metadata: { index: logIndex(0), term: term(0), confState: { voters: [], learners: [] } },
    data: new Uint8Array(0),
  };
  // invariant: ents[0] is a placeholder at the snapshot's (index, term); ents[k].index === ents[0].index + k
  private ents: Entry[] = [{ term: term(0), index: logIndex(0), type: 'normal', data: new Uint8Array(0) }];

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardState, confState: this.snap.metadata.confState };
  }

  setHardState(hardState: HardState): void {
    this.hardState = hardState;
  }

  private offset(): number {
    return (this.ents[0] as Entry).index;
  }

  firstIndex(): LogIndex {
    return logIndex(this.offset() + 1);
  }

  lastIndex(): LogIndex {
    return logIndex(this.offset() + this.ents.length - 1);
  }

  term(i: LogIndex): Term | undefined {
    const k = i - this.offset();
    if (k < 0 || k >= this.ents.length) return undefined;
    return (this.ents[k] as Entry).term;
  }

  entries(lo: LogIndex, hi: LogIndex, maxBytes: number): Entry[] {
    const offset = this.offset();
    assert(lo > offset && lo <= hi && hi <= this.lastIndex() + 1, `entries(${lo}, ${hi}) out of range`);
    return limitSize(this.ents.slice(lo - offset, hi - offset), maxBytes);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /** Replaces the whole log by a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): MemoryStorageError | null {
    if (snapshot.metadata.index <= this.snap.metadata.index) return 'SnapshotOutOfDate';
    this.snap = snapshot;
    this.ents = [
      {
        term: snapshot.metadata.term,
        index: snapshot.metadata.index,
        type: 'normal',
        data: new Uint8Array(0),
      },
    ];
    return null;
  }

  /** Records a snapshot of the application at applied index `i` (<= lastIndex); does not compact. */
  createSnapshot(i: LogIndex, confState: ConfState, data: Uint8Array): Snapshot | MemoryStorageError {
    if (i <= this.snap.metadata.index) return 'SnapshotOutOfDate';
    assert(i <= this.lastIndex(), `snapshot ${i} is past the last index ${this.lastIndex()}`);
    const t = this.term(i);
    assert(t !== undefined);
    this.snap = { metadata: { index: i, term: t, confState }, data };
    return this.snap;
  }

  /** Drops entries up to and including `compactIndex`; the caller MUST have a snapshot covering them. */
  compact(compactIndex: LogIndex): MemoryStorageError | null {
    const offset = this.offset();
    if (compactIndex <= offset) return 'Compacted';
    assert(
      compactIndex <= this.lastIndex(),
      `compact ${compactIndex} is past the last index ${this.lastIndex()}`,
    );
    const k = compactIndex - offset;
    const head = this.ents[k] as Entry;
    this.ents = [
      { term: head.term, index: head.index, type: 'normal', data: new Uint8Array(0) },
      ...this.ents.slice(k + 1),
    ];
    return null;
  }

  /** Appends entries; entries at an index already stored replace it and everything after it. */
  append(entries: readonly Entry[]): void {
    const first = entries[0];
    const lastEntry = entries[entries.length - 1];
    if (first === undefined || lastEntry === undefined) return;
    const firstIndex = this.firstIndex();
    if (lastEntry.index < firstIndex) return;
    const fresh = first.index < firstIndex ? entries.slice(firstIndex - first.index) : entries;
    const k = (fresh[0] as Entry).index - this.offset();
    assert(
      k <= this.ents.length,
      `append leaves a gap: stored up to ${this.lastIndex()}, got ${first.index}`,
    );
    // In place: appending at the end is the common case and must not copy the whole log.
    if (k < this.ents.length) this.ents.length = k;
    for (const e of fresh) this.ents.push(e);
  }
}

/**
 * Bootstraps a brand-new cluster member: the initial voters as committed membership entries at term 1,
 * indexes 1..n, identical on every initial member. A node that joins later starts with empty storage and
 * receives the log (or a snapshot) from the leader.
 */
export function bootstrap(storage: MemoryStorage, voters: readonly NodeId[]): void {
  assert(storage.lastIndex() === 0, 'bootstrap needs empty storage');
  assert(voters.length > 0, 'bootstrap needs at least one voter');
  const entries: Entry[] = voters.map((id, k) => ({
    term: term(1),
    index: logIndex(k + 1),
    type: 'confChange',
    data: encodeConfChange({ type: 'addVoter', nodeId: id }),
  }));
  storage.append(entries);
  storage.setHardState({ term: term(1), vote: NONE, commit: logIndex(voters.length) });
}
