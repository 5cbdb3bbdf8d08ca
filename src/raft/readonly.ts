// ReadIndex requests the leader is confirming with a heartbeat round (the "safe" read-only mode of etcd-io/raft).

import type { LogIndex, NodeId } from '../util/brand.js';
import type { MsgReadIndex } from './types.js';

export interface ReadIndexStatus {
  readonly request: MsgReadIndex;
  /** The leader's commit index when the request arrived: the read index once leadership is confirmed. */
  readonly index: LogIndex;
  readonly acks: Set<NodeId>;
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadIndexStatus>();
  /** Request contexts in arrival order; confirming one confirms every earlier one. */
  private queue: string[] = [];

  size(): number {
    return this.queue.length;
  }

  add(index: LogIndex, request: MsgReadIndex): void {
    if (this.pending.has(request.context)) return;
    this.pending.set(request.context, { request, index, acks: new Set() });
    this.queue.push(request.context);
  }

  /** Records that `from` answered the heartbeat tagged `context`; returns who acknowledged it so far. */
  receiveAck(from: NodeId, context: string): ReadonlySet<NodeId> | undefined {
    const status = this.pending.get(context);
    if (status === undefined) return undefined;
    status.acks.add(from);
    return status.acks;
  }

  /** Releases the request `context` and every one queued before it, in order. */
  advance(context: string): ReadIndexStatus[] {
    const at = this.queue.indexOf(context);
    if (at < 0) return [];
    const released = this.queue.slice(0, at + 1);
    this.queue = this.queue.slice(at + 1);
    const out: ReadIndexStatus[] = [];
    for (const ctx of released) {
      const status = this.pending.get(ctx);
      if (status !== undefined) out.push(status);
      this.pending.delete(ctx);
    }
    return out;
  }

  lastPendingContext(): string {
    return this.queue[this.queue.length - 1] ?? '';
  }
}
