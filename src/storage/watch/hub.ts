// The watch hub: fans committed changes out to watchers, in revision order, the events of one revision together.
//
// A watcher starting below the published revision first reads the change log (catch-up) while live
// publications are buffered; then it delivers the buffered ones above what history covered and goes live.
// Deduplication is by revision (`deliveredThrough`), so there is no gap and no duplicate.
// Delivery is asynchronous (a microtask per watcher) so that the writer never runs listener code. A watcher
// whose queue passes `queueEventsMax` is cancelled with WatchOverflow (it can resume from its last revision);
// the others never wait for it.

import { limits } from '../../util/limits.js';
import { revision as toRevision, type Revision } from '../../util/brand.js';
import {
  StorageError,
  type KeySpan,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type WatchResponse,
} from '../contract.js';
import type { RevisionChanges } from '../mvcc/mvcc.js';

/** Where catch-up reads history from (the MVCC's change log). */
export interface ChangeSource {
  readChanges(
    afterRevision: number,
    maxRevisions: number,
  ): Promise<{ changes: RevisionChanges[]; throughRevision: Revision }>;
  readonly compactRevision: Revision;
}

export interface WatchHubOptions {
  /** Idle time after which a progressNotify watcher gets a progress response (etcd: 10 minutes). */
  readonly progressIntervalMs?: number;
  /** Events a watcher may have queued before it is cancelled with WatchOverflow. */
  readonly queueEventsMax?: number;
  /** Revisions read per catch-up step. */
  readonly catchUpRevisionsMax?: number;
}

const defaultProgressIntervalMs = 10 * 60 * 1000;

export class WatchHub {
  private published: Revision;
  private readonly watchers = new Set<HubWatcher>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  readonly queueEventsMax: number;
  readonly catchUpRevisionsMax: number;

  constructor(
    readonly source: ChangeSource,
    initialRevision: Revision,
    options: WatchHubOptions = {},
  ) {
    this.published = initialRevision;
    this.queueEventsMax = options.queueEventsMax ?? limits.storeWatchQueueEventsMax;
    this.catchUpRevisionsMax = options.catchUpRevisionsMax ?? 1000;
    this.timer = setInterval(() => this.tick(), options.progressIntervalMs ?? defaultProgressIntervalMs);
    this.timer.unref();
  }

  /** The revision through which every change has been published. */
  get revision(): Revision {
    return this.published;
  }

  /** Publishes durable changes, in revision order (a revision with no changes may be skipped). */
  publish(changes: readonly RevisionChanges[], throughRevision: Revision): void {
    if (throughRevision <= this.published) return;
    this.published = throughRevision;
    for (const watcher of this.watchers) watcher.offer(changes, throughRevision);
  }

  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    const watcher = new HubWatcher(this, span, options, listener);
    if (this.closed) {
      watcher.cancel(new StorageError('Closed', 'the store is closed'));
      return watcher;
    }
    this.watchers.add(watcher);
    watcher.start();
    return watcher;
  }

  remove(watcher: HubWatcher): void {
    this.watchers.delete(watcher);
  }

  /** Cancels every watcher with Closed and stops the progress timer. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    for (const watcher of [...this.watchers])
      watcher.cancel(new StorageError('Closed', 'the store is closed'));
  }

  private tick(): void {
    for (const watcher of this.watchers) watcher.progressTick();
  }
}

const inSpan = (key: string, span: KeySpan): boolean =>
  'key' in span ? key === span.key : key.startsWith(span.prefix);

class HubWatcher implements Watch {
  readonly ready: Promise<void> = Promise.resolve();
  private state: 'catching-up' | 'live' | 'closed' = 'live';
  /** invariant: every change with revision <= deliveredThrough has been queued (or was not in the span). */
  private deliveredThrough: number;
  /** Live publications received while catching up. */
  private buffered: RevisionChanges[] = [];
  private bufferedEvents = 0;
  private readonly queue: WatchResponse[] = [];
  private queuedEvents = 0;
  private draining = false;
  /** close() was called: nothing more reaches the listener, not even a cancellation. */
  private userClosed = false;
  private progressWanted = false;
  private activeSinceTick = false;

  constructor(
    private readonly hub: WatchHub,
    private readonly span: KeySpan,
    private readonly options: WatchOptions,
    private readonly listener: (response: WatchResponse) => void,
  ) {
    this.deliveredThrough = options.afterRevision ?? hub.revision;
  }

  start(): void {
    const compacted = this.hub.source.compactRevision;
    if (this.deliveredThrough + 1 < compacted) {
      this.cancel(
        new StorageError(
          'Compacted',
          `watch from revision ${this.deliveredThrough + 1} is below the compacted revision ${compacted}`,
          compacted,
        ),
      );
      return;
    }
    if (this.deliveredThrough < this.hub.revision) {
      this.state = 'catching-up';
      void this.catchUp(this.hub.revision);
    }
  }

  requestProgress(): void {
    if (this.state === 'live') this.enqueueProgress();
    else if (this.state === 'catching-up') this.progressWanted = true;
  }

  close(): void {
    this.userClosed = true;
    this.queue.length = 0;
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.buffered = [];
    this.hub.remove(this);
  }

  /** Ends the watch with an error response (the last one). */
  cancel(error: StorageError): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.hub.remove(this);
    this.buffered = [];
    this.queue.length = 0;
    this.queuedEvents = 0;
    this.queue.push({ type: 'canceled', error });
    this.scheduleDrain();
  }

  offer(changes: readonly RevisionChanges[], throughRevision: Revision): void {
    if (this.state === 'catching-up') {
      this.buffered.push(...changes);
      for (const change of changes) this.bufferedEvents += change.events.length;
      this.checkOverflow(this.bufferedEvents + this.queuedEvents);
      return;
    }
    if (this.state !== 'live') return;
    this.deliver(changes);
    this.deliveredThrough = Math.max(this.deliveredThrough, throughRevision);
  }

  progressTick(): void {
    if (this.state !== 'live' || this.options.progressNotify !== true) return;
    if (!this.activeSinceTick && this.queue.length === 0) this.enqueueProgress();
    this.activeSinceTick = false;
  }

  private enqueueProgress(): void {
    this.queue.push({ type: 'progress', revision: toRevision(this.deliveredThrough) });
    this.scheduleDrain();
  }

  private async catchUp(target: number): Promise<void> {
    try {
      while (this.deliveredThrough < target) {
        const { changes, throughRevision } = await this.hub.source.readChanges(
          this.deliveredThrough,
          this.hub.catchUpRevisionsMax,
        );
        if (this.state !== 'catching-up') return;
        this.deliver(changes);
        this.deliveredThrough = Math.max(this.deliveredThrough, throughRevision);
      }
    } catch (error) {
      this.cancel(
        error instanceof StorageError
          ? error
          : new StorageError('Unavailable', `watch catch-up failed: ${String(error)}`),
      );
      return;
    }
    if (this.state !== 'catching-up') return;
    const buffered = this.buffered;
    this.buffered = [];
    this.bufferedEvents = 0;
    this.state = 'live';
    this.deliver(buffered);
    this.deliveredThrough = Math.max(this.deliveredThrough, this.hub.revision);
    if (this.progressWanted) {
      this.progressWanted = false;
      this.enqueueProgress();
    }
  }

  /** Queues the span's events of the revisions above deliveredThrough, as one response. */
  private deliver(changes: readonly RevisionChanges[]): void {
    const events: WatchEvent[] = [];
    for (const change of changes) {
      if (change.revision <= this.deliveredThrough) continue;
      for (const event of change.events) {
        if (!inSpan(event.kv.key, this.span)) continue;
        if (this.options.prevKv === true || event.prevKv === undefined) events.push(event);
        else events.push({ type: event.type, kv: event.kv });
      }
      this.deliveredThrough = change.revision;
    }
    if (events.length === 0) return;
    this.activeSinceTick = true;
    this.queue.push({ type: 'events', events });
    this.queuedEvents += events.length;
    if (this.checkOverflow(this.queuedEvents)) return;
    this.scheduleDrain();
  }

  private checkOverflow(events: number): boolean {
    if (events <= this.hub.queueEventsMax) return false;
    this.cancel(
      new StorageError(
        'WatchOverflow',
        `watcher fell behind: more than ${this.hub.queueEventsMax} events queued; resume from the last revision received`,
      ),
    );
    return true;
  }

  private scheduleDrain(): void {
    if (this.draining) return;
    this.draining = true;
    queueMicrotask(() => {
      this.draining = false;
      while (this.queue.length > 0 && !this.userClosed) {
        const response = this.queue.shift()!;
        if (response.type === 'events') this.queuedEvents -= response.events.length;
        this.listener(response);
      }
    });
  }
}
