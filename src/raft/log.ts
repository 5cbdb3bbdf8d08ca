// The Raft log as the core sees it: the durable part (LogStorage) followed by the unstable part (entries and
// at most one snapshot not yet handed to the node in a Ready and acknowledged by advance()).

import type { LogIndex, Term } from '../util/brand.js';
import { logIndex, term } from '../util/brand.js';
import { assert } from '../util/assert.js';
import type { LogStorage } from './storage.js';
import { limitSize } from './storage.js';
import type { Entry, Snapshot } from './types.js';

/** Entries and a snapshot that are not yet durable. */
export class Unstable {
  snapshot: Snapshot | undefined = undefined;
  // invariant: entries[k].index === offset + k; offset === snapshot.index + 1 when there is a snapshot
  entries: Entry[] = [];
  offset: LogIndex;

  constructor(offset: LogIndex) {
    this.offset = offset;
  }

  maybeFirstIndex(): LogIndex | undefined {
    return this.snapshot === undefined ? undefined : logIndex(this.snapshot.metadata.index + 1);
  }

  maybeLastIndex(): LogIndex | undefined {
    if (this.entries.length > 0) return logIndex(this.offset + this.entries.length - 1);
    return this.snapshot?.metadata.index;
  }

  maybeTerm(i: LogIndex): Term | undefined {
    if (i < this.offset) {
      return this.snapshot !== undefined && this.snapshot.metadata.index === i
        ? this.snapshot.metadata.term
        : undefined;
    }
    return this.entries[i - this.offset]?.term;
  }

  /** The entries up to (i, t) became durable. */
  stableTo(i: LogIndex, t: Term): void {
    if (i < this.offset || this.maybeTerm(i) !== t) return;
    this.entries = this.entries.slice(i + 1 - this.offset);
    this.offset = logIndex(i + 1);
  }

  stableSnapTo(i: LogIndex): void {
    if (this.snapshot !== undefined && this.snapshot.metadata.index === i) this.snapshot = undefined;
  }

  restore(snapshot: Snapshot): void {
    this.offset = logIndex(snapshot.metadata.index + 1);
    this.entries = [];
    this.snapshot = snapshot;
  }

  truncateAndAppend(entries: readonly Entry[]): void {
    const after = (entries[0] as Entry).index;
    if (after === this.offset + this.entries.length) {
      // In place (ready() hands out a copy): a leader appends one proposal at a time.
      for (const e of entries) this.entries.push(e);
    } else if (after <= this.offset) {
      // Replaces every unstable entry; the node truncates its stored log when it persists these.
      this.offset = after;
      this.entries = entries.slice();
    } else {
      this.entries = this.entries.slice(0, after - this.offset).concat(entries);
    }
  }

  slice(lo: LogIndex, hi: LogIndex): Entry[] {
    assert(
      this.offset <= lo && lo <= hi && hi <= this.offset + this.entries.length,
      `unstable slice [${lo}, ${hi})`,
    );
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}

export class RaftLog {
  readonly storage: LogStorage;
  readonly unstable: Unstable;
  // invariant: applied <= committed <= lastIndex()
  committed: LogIndex;
  /** The highest index the node has applied (acknowledged by advance()). */
  applied: LogIndex;
  /** Most payload bytes of committed entries handed out in one Ready. */
  readonly applyBytesMax: number;

  constructor(storage: LogStorage, applyBytesMax: number) {
    this.storage = storage;
    this.applyBytesMax = applyBytesMax;
    this.unstable = new Unstable(logIndex(storage.lastIndex() + 1));
    const first = storage.firstIndex();
    this.committed = logIndex(first - 1);
    this.applied = logIndex(first - 1);
  }

  firstIndex(): LogIndex {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): LogIndex {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  lastTerm(): Term {
    const t = this.term(this.lastIndex());
    assert(t !== undefined, 'the last entry has a term');
    return t;
  }

  /** The term of entry i; undefined when i was compacted away or is past the end. */
  term(i: LogIndex): Term | undefined {
    const dummy = this.firstIndex() - 1;
    if (i < dummy || i > this.lastIndex()) return undefined;
    return this.unstable.maybeTerm(i) ?? this.storage.term(i);
  }

  matchTerm(i: LogIndex, t: Term): boolean {
    const ours = this.term(i);
    return ours !== undefined && ours === t;
  }

  /** Raft §5.4.1: a log is at least as up to date as ours if its last term is later, or equal with >= length. */
  isUpToDate(lastIndex: LogIndex, lastTerm: Term): boolean {
    const ours = this.lastTerm();
    return lastTerm > ours || (lastTerm === ours && lastIndex >= this.lastIndex());
  }

  /**
   * AppendEntries on a follower: if our log has (index, logTerm), append `entries` (replacing conflicts) and
   * commit up to min(commit, last new index). Returns the last new index, or undefined on a mismatch.
   */
  maybeAppend(
    index: LogIndex,
    logTerm: Term,
    commit: LogIndex,
    entries: readonly Entry[],
  ): LogIndex | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = logIndex(index + entries.length);
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      assert(conflict > this.committed, `entry ${conflict} conflicts with committed entry ${this.committed}`);
      this.append(entries.slice(conflict - (index + 1)));
    }
    this.commitTo(logIndex(Math.min(commit, lastNew)));
    return lastNew;
  }

  append(entries: readonly Entry[]): LogIndex {
    const first = entries[0];
    if (first === undefined) return this.lastIndex();
    assert(
      first.index - 1 >= this.committed,
      `appending at ${first.index} would overwrite committed ${this.committed}`,
    );
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  /** The index of the first entry whose term differs from ours (or that we lack), or 0 if all match. */
  findConflict(entries: readonly Entry[]): number {
    for (const e of entries) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `t`, and its term: where a log whose entry at `index` has
   * term `t` can possibly match ours (used to skip a whole term per rejection).
   */
  findConflictByTerm(index: LogIndex, t: Term): { index: LogIndex; term: Term } {
    let i = index;
    for (;;) {
      const ours = this.term(i);
      if (ours === undefined) return { index: i, term: term(0) };
      if (ours <= t) return { index: i, term: ours };
      i = logIndex(i - 1);
    }
  }

  commitTo(to: LogIndex): void {
    if (to <= this.committed) return;
    assert(to <= this.lastIndex(), `commit ${to} is past the last index ${this.lastIndex()}`);
    this.committed = to;
  }

  /** Leader: commit `index` only if its entry is of the current term (Raft §5.4.2, Figure 8). */
  maybeCommit(index: LogIndex, currentTerm: Term): boolean {
    if (index > this.committed && this.term(index) === currentTerm) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  appliedTo(i: LogIndex): void {
    if (i === 0) return;
    assert(
      i <= this.committed && i >= this.applied,
      `applied ${i} out of [${this.applied}, ${this.committed}]`,
    );
    this.applied = i;
  }

  /** Entries [lo, hi) with at most maxBytes of payload (at least one), or 'compacted' when lo is gone. */
  slice(lo: LogIndex, hi: LogIndex, maxBytes: number): Entry[] | 'compacted' {
    assert(lo <= hi, `slice [${lo}, ${hi})`);
    if (lo < this.firstIndex()) return 'compacted';
    assert(hi <= this.lastIndex() + 1, `slice [${lo}, ${hi}) past the last index ${this.lastIndex()}`);
    if (lo === hi) return [];
    const offset = this.unstable.offset;
    let out: Entry[] = [];
    if (lo < offset) {
      const storedHi = logIndex(Math.min(hi, offset));
      out = this.storage.entries(lo, storedHi, maxBytes);
      if (out.length < storedHi - lo || hi <= offset) return out;
    }
    if (hi > offset) {
      const fresh = this.unstable.slice(logIndex(Math.max(lo, offset)), hi);
      out = out.length > 0 ? out.concat(fresh) : fresh;
    }
    return limitSize(out, maxBytes);
  }

  /** Entries from i to the end, at most maxBytes. */
  entriesFrom(i: LogIndex, maxBytes: number): Entry[] | 'compacted' {
    if (i > this.lastIndex()) return [];
    return this.slice(i, logIndex(this.lastIndex() + 1), maxBytes);
  }

  /** Committed entries not yet applied, to hand out in a Ready. */
  nextCommittedEntries(): Entry[] {
    const lo = logIndex(Math.max(this.applied + 1, this.firstIndex()));
    if (this.committed + 1 <= lo) return [];
    const out = this.slice(lo, logIndex(this.committed + 1), this.applyBytesMax);
    assert(out !== 'compacted');
    return out;
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  restore(snapshot: Snapshot): void {
    this.committed = snapshot.metadata.index;
    this.unstable.restore(snapshot);
  }
}
