// What the leader knows of each follower: how far its log matches, what to send next, and flow control.

import type { LogIndex } from '../util/brand.js';
import { logIndex } from '../util/brand.js';
import { assert, unreachable } from '../util/assert.js';
import type { Snapshot } from './types.js';

/**
 * The MsgApp messages in flight to one follower (their last index and payload bytes), oldest first. Full at
 * `countMax` messages or `bytesMax` bytes (0 = no byte limit): then the leader stops sending to that follower
 * until acknowledgements free some.
 */
export class Inflights {
  private indexes: LogIndex[] = [];
  private sizes: number[] = [];
  private start = 0;
  bytes = 0;

  constructor(
    readonly countMax: number,
    readonly bytesMax: number,
  ) {
    assert(countMax > 0, 'inflight messages max must be positive');
  }

  count(): number {
    return this.indexes.length - this.start;
  }

  full(): boolean {
    return this.count() >= this.countMax || (this.bytesMax > 0 && this.bytes >= this.bytesMax);
  }

  add(index: LogIndex, bytes: number): void {
    assert(!this.full(), 'adding to full inflights');
    const last = this.indexes[this.indexes.length - 1];
    assert(this.count() === 0 || last === undefined || index > last, 'inflights out of order');
    this.indexes.push(index);
    this.sizes.push(bytes);
    this.bytes += bytes;
  }

  /** Frees every message whose last index is <= to. */
  freeLE(to: LogIndex): void {
    while (this.start < this.indexes.length && (this.indexes[this.start] as LogIndex) <= to) {
      this.bytes -= this.sizes[this.start] as number;
      this.start++;
    }
    this.compact();
  }

  freeFirstOne(): void {
    if (this.count() === 0) return;
    this.bytes -= this.sizes[this.start] as number;
    this.start++;
    this.compact();
  }

  reset(): void {
    this.indexes = [];
    this.sizes = [];
    this.start = 0;
    this.bytes = 0;
  }

  private compact(): void {
    if (this.start === this.indexes.length) {
      this.reset();
    } else if (this.start > 64 && this.start * 2 > this.indexes.length) {
      this.indexes = this.indexes.slice(this.start);
      this.sizes = this.sizes.slice(this.start);
      this.start = 0;
    }
  }
}

/**
 * probe: one MsgApp per heartbeat until the match point is found; replicate: optimistic pipelining within the
 * inflight limits; snapshot: an InstallSnapshot is in progress, nothing else is sent.
 */
export type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** An InstallSnapshot in progress to one follower, sent in chunks, one at a time. */
export interface SnapshotTransfer {
  readonly snapshot: Snapshot;
  /** The follower holds the first `offsetAcked` bytes. */
  offsetAcked: number;
  /** Heartbeat responses since the last chunk acknowledgement; at 2 the chunk is presumed lost and resent. */
  heartbeatsSinceAck: number;
}

export class Progress {
  // invariant: match < next
  match: LogIndex;
  next: LogIndex;
  state: ProgressState = 'probe';
  /** In probe state: a MsgApp was sent and no answer came yet. In replicate state: the inflights are full. */
  paused = false;
  /** Set on any message from the follower; cleared by the leader's check-quorum round. */
  recentActive = true;
  isLearner: boolean;
  readonly inflights: Inflights;
  /** In snapshot state: the transfer in progress. */
  transfer: SnapshotTransfer | undefined = undefined;

  constructor(next: LogIndex, isLearner: boolean, inflightCountMax: number, inflightBytesMax: number) {
    this.match = logIndex(0);
    this.next = next;
    this.isLearner = isLearner;
    this.inflights = new Inflights(inflightCountMax, inflightBytesMax);
  }

  private resetState(state: ProgressState): void {
    this.paused = false;
    this.transfer = undefined;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === 'snapshot' && this.transfer !== undefined) {
      const pending = this.transfer.snapshot.metadata.index;
      this.resetState('probe');
      this.next = logIndex(Math.max(this.match + 1, pending + 1));
    } else {
      this.resetState('probe');
      this.next = logIndex(this.match + 1);
    }
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = logIndex(this.match + 1);
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.resetState('snapshot');
    this.transfer = { snapshot, offsetAcked: 0, heartbeatsSinceAck: 0 };
  }

  /** A MsgApp with `count` entries starting at `firstIndex` and `bytes` of payload was sent. */
  sentEntries(firstIndex: LogIndex, count: number, bytes: number): void {
    switch (this.state) {
      case 'replicate':
        if (count > 0) {
          const last = logIndex(firstIndex + count - 1);
          this.next = logIndex(last + 1);
          this.inflights.add(last, bytes);
        }
        this.paused = this.inflights.full();
        return;
      case 'probe':
        if (count > 0) this.paused = true;
        return;
      case 'snapshot':
        assert(false, 'sending entries in snapshot state');
        return;
      default:
        unreachable(this.state);
    }
  }

  /** The follower acknowledged up to n; returns whether match moved. */
  maybeUpdate(n: LogIndex): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.paused = false;
    }
    this.next = logIndex(Math.max(this.next, n + 1));
    return updated;
  }

  /**
   * The follower rejected a MsgApp at `rejected`; its log may match at `matchHint`. Returns false for a stale
   * rejection (one that does not concern the last probe).
   */
  maybeDecrTo(rejected: LogIndex, matchHint: LogIndex): boolean {
    switch (this.state) {
      case 'replicate':
        if (rejected <= this.match) return false;
        this.next = logIndex(this.match + 1);
        return true;
      case 'probe':
        if (this.next - 1 !== rejected) return false;
        this.next = logIndex(Math.max(Math.min(rejected, matchHint + 1), this.match + 1, 1));
        this.paused = false;
        return true;
      case 'snapshot':
        return false;
      default:
        return unreachable(this.state);
    }
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
      case 'replicate':
        return this.paused;
      case 'snapshot':
        return true;
      default:
        return unreachable(this.state);
    }
  }
}
