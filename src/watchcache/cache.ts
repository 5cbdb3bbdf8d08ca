// The watch cache of one resource: the current objects and a bounded window of recent events, fed by one store
// watch on the resource's key prefix. It serves watches, "any" reads and "not older than" reads; a "most
// recent" read first confirms the store's current revision and waits until the cache has caught up to it.
// Below its window, a watch answers 410 (the client lists again).

import { assert, unreachable } from '../util/assert.js';
import type { Clock } from '../util/clock.js';
import { revision, type Revision } from '../util/brand.js';
import {
  StorageError,
  type KeyValue,
  type KVStore,
  type Watch,
  type WatchResponse,
} from '../storage/contract.js';

/** One change as the cache keeps it: the object is decoded once and shared by every watcher. */
export interface CacheEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly key: string;
  readonly object: T;
  /** The state before the change (MODIFIED and DELETED), for selector transitions. */
  readonly previous?: T;
  readonly revision: Revision;
}

export interface CacheEntry<T> {
  readonly object: T;
  readonly modRevision: Revision;
}

export type CacheListener<T> = (events: readonly CacheEvent<T>[], revision: Revision) => void;

/**
 * Called when the cache cannot describe a change as events: a stored value that does not decode (a corrupt
 * object) was written or deleted. As kube-apiserver's cacher re-initializing, every watcher is ended (clients
 * list again) and the event window restarts at the current revision (older starts get 410).
 */
export type CacheResetListener = () => void;

export interface WatchCacheOptions<T> {
  readonly store: KVStore;
  readonly prefix: string;
  /**
   * Decodes a stored value; `revision` is the key's modRevision (it becomes resourceVersion). A value that does
   * not decode (it throws) is a corrupt object: the cache keeps its key aside (see `hasCorrupt`) instead of an object.
   */
  readonly decode: (kv: KeyValue) => T;
  /** Decodes a deleted object: its last state, with the delete's revision as resourceVersion. */
  readonly decodeDeleted: (previous: KeyValue, deleteRevision: Revision) => T;
  /** Events kept; the oldest revisions drop out first. */
  readonly eventsMax: number;
  readonly clock: Clock;
  /** Called when the store watch ends for good (store closed, compacted under us); the cache is then stale. */
  readonly onFailure?: (error: StorageError) => void;
}

export class WaitTimeout extends Error {
  override readonly name = 'WaitTimeout';
  constructor(readonly current: Revision) {
    super(`cache at revision ${current}`);
  }
}

export class WatchCache<T> {
  private readonly objects = new Map<string, CacheEntry<T>>();
  /** invariant: revisions ascending; every event with revision > windowStart is here. */
  private readonly events: CacheEvent<T>[] = [];
  private windowStart: Revision = revision(0);
  private current: Revision = revision(0);
  private readonly listeners = new Set<CacheListener<T>>();
  private readonly resetListeners = new Set<CacheResetListener>();
  /** Keys whose current value does not decode, with its modRevision. invariant: disjoint from `objects`' keys. */
  private readonly corrupt = new Map<string, Revision>();
  private readonly waiters = new Set<{ revision: Revision; resolve: () => void }>();
  /** Asks the store for progress while anyone waits (see waitFor). */
  private nudge: NodeJS.Timeout | undefined;
  private storeWatch: Watch | undefined;
  private failed: StorageError | undefined;
  private closed = false;

  private constructor(private readonly options: WatchCacheOptions<T>) {}

  static async start<T>(options: WatchCacheOptions<T>): Promise<WatchCache<T>> {
    const cache = new WatchCache(options);
    await cache.load();
    return cache;
  }

  private async load(): Promise<void> {
    const { store, prefix, decode } = this.options;
    const result = await store.range({ prefix });
    for (const kv of result.kvs) {
      const object = this.tryDecode(kv, decode);
      if (object !== undefined) this.objects.set(kv.key, { object, modRevision: kv.modRevision });
    }
    this.current = result.header.revision;
    this.windowStart = result.header.revision;
    this.storeWatch = store.watch(
      { prefix },
      { afterRevision: result.header.revision, prevKv: true, progressNotify: true },
      (r) => this.onStore(r),
    );
    await this.storeWatch.ready;
  }

  private onStore(response: WatchResponse): void {
    switch (response.type) {
      case 'events': {
        const batch: CacheEvent<T>[] = [];
        let reset = false;
        for (const e of response.events) {
          const event = this.apply(e.type, e.kv, e.prevKv);
          if (event === undefined) reset = true;
          else batch.push(event);
        }
        const last = response.events[response.events.length - 1];
        if (last === undefined) return;
        if (reset) this.reset(last.kv.modRevision, batch);
        else this.advance(last.kv.modRevision, batch);
        return;
      }
      case 'progress':
        if (response.revision > this.current) this.advance(response.revision, []);
        return;
      case 'canceled':
        if (response.error.code === 'Closed' || this.closed) {
          this.failed = response.error;
          this.options.onFailure?.(response.error);
          return;
        }
        // The store dropped the watch (too slow, or compacted under it): list again and carry on from there.
        this.resync().catch((error: unknown) => {
          this.failed =
            error instanceof StorageError ? error : new StorageError('Unavailable', String(error));
          this.options.onFailure?.(this.failed);
        });
        return;
      default:
        unreachable(response);
    }
  }

  /**
   * Re-lists the prefix and turns the difference from the cached state into one batch of events at the new
   * revision, so watchers stay consistent; the window restarts there (older starts get 410).
   */
  private async resync(): Promise<void> {
    this.storeWatch?.close();
    const result = await this.options.store.range({ prefix: this.options.prefix });
    if (this.closed) return;
    const rev = result.header.revision;
    const batch: CacheEvent<T>[] = [];
    const seen = new Set<string>();
    // An object that turned corrupt, or a corrupt key that went away, has no event: the watchers are ended.
    let endWatchers = false;
    for (const kv of result.kvs) {
      seen.add(kv.key);
      const existing = this.objects.get(kv.key);
      if (existing !== undefined && existing.modRevision === kv.modRevision) continue;
      const object = this.tryDecode(kv, this.options.decode);
      if (object === undefined) {
        if (this.objects.delete(kv.key)) endWatchers = true;
        continue;
      }
      this.objects.set(kv.key, { object, modRevision: kv.modRevision });
      batch.push(
        existing === undefined
          ? { type: 'ADDED', key: kv.key, object, revision: rev }
          : { type: 'MODIFIED', key: kv.key, object, previous: existing.object, revision: rev },
      );
    }
    for (const [key, existing] of this.objects) {
      if (seen.has(key) && !this.corrupt.has(key)) continue;
      this.objects.delete(key);
      batch.push({ type: 'DELETED', key, object: existing.object, previous: existing.object, revision: rev });
    }
    for (const key of this.corrupt.keys()) {
      if (seen.has(key)) continue;
      this.corrupt.delete(key);
      endWatchers = true;
    }
    this.events.length = 0;
    this.windowStart = rev;
    if (endWatchers) this.endWatchers();
    if (rev > this.current) this.advance(rev, batch);
    this.storeWatch = this.options.store.watch(
      { prefix: this.options.prefix },
      { afterRevision: rev, prevKv: true, progressNotify: true },
      (r) => this.onStore(r),
    );
  }

  /** The decoded value, or undefined when it does not decode (the key is then recorded as corrupt). */
  private tryDecode(kv: KeyValue, decode: (kv: KeyValue) => T): T | undefined {
    try {
      const object = decode(kv);
      this.corrupt.delete(kv.key);
      return object;
    } catch {
      this.corrupt.set(kv.key, kv.modRevision);
      return undefined;
    }
  }

  /** One store event as a cache event; undefined when a corrupt value is involved (the caller resets). */
  private apply(
    type: 'put' | 'delete',
    kv: KeyValue,
    prevKv: KeyValue | undefined,
  ): CacheEvent<T> | undefined {
    const existing = this.objects.get(kv.key);
    if (type === 'put') {
      const object = this.tryDecode(kv, this.options.decode);
      if (object === undefined) {
        this.objects.delete(kv.key);
        return undefined;
      }
      this.objects.set(kv.key, { object, modRevision: kv.modRevision });
      return existing === undefined
        ? { type: 'ADDED', key: kv.key, object, revision: kv.modRevision }
        : { type: 'MODIFIED', key: kv.key, object, previous: existing.object, revision: kv.modRevision };
    }
    this.objects.delete(kv.key);
    // The deleted value did not decode: there is no object to put in a DELETED event.
    if (this.corrupt.delete(kv.key)) return undefined;
    const last = prevKv ?? undefined;
    let object: T | undefined;
    try {
      object = last !== undefined ? this.options.decodeDeleted(last, kv.modRevision) : existing?.object;
    } catch {
      return undefined;
    }
    assert(object !== undefined, `delete of unknown key ${kv.key}`);
    return {
      type: 'DELETED',
      key: kv.key,
      object,
      ...(existing === undefined ? {} : { previous: existing.object }),
      revision: kv.modRevision,
    };
  }

  private advance(to: Revision, batch: readonly CacheEvent<T>[]): void {
    assert(to >= this.current, 'cache revision went back');
    this.current = to;
    for (const e of batch) this.events.push(e);
    // Keep the window bounded; drop whole revisions so windowStart stays exact.
    while (this.events.length > this.options.eventsMax) {
      const dropped = this.events[0]?.revision;
      if (dropped === undefined) break;
      while (this.events[0]?.revision === dropped) this.events.shift();
      this.windowStart = dropped;
    }
    for (const listener of this.listeners) listener(batch, to);
    for (const waiter of this.waiters) {
      if (waiter.revision <= to) {
        this.removeWaiter(waiter);
        waiter.resolve();
      }
    }
  }

  /**
   * A change the cache cannot describe as events (a corrupt value written or deleted): every watcher is ended
   * and the window restarts here, as kube-apiserver's cacher does when it re-initializes.
   */
  private reset(to: Revision, batch: readonly CacheEvent<T>[]): void {
    this.endWatchers();
    // Listeners without a reset hook (the controllers) still see the changes that did decode; the window then
    // restarts empty at `to`, whatever the batch's size.
    this.advance(to, batch);
    this.events.length = 0;
    this.windowStart = to;
  }

  private endWatchers(): void {
    const ended = [...this.resetListeners];
    this.resetListeners.clear();
    for (const end of ended) end();
  }

  /** Whether a key under `prefix` holds a value that does not decode (a corrupt object). */
  hasCorrupt(prefix: string): boolean {
    for (const key of this.corrupt.keys()) if (key.startsWith(prefix)) return true;
    return false;
  }

  get revision(): Revision {
    return this.current;
  }

  /** The oldest revision a watch may start from (it receives every event after it). */
  get oldestRevision(): Revision {
    return this.windowStart;
  }

  get failure(): StorageError | undefined {
    return this.failed;
  }

  /** Resolves once the cache has every change up to `target`; rejects with WaitTimeout after `timeoutMs`. */
  async waitFor(target: Revision, timeoutMs: number): Promise<void> {
    if (this.current >= target) return;
    if (this.failed !== undefined) throw this.failed;
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        revision: target,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.removeWaiter(waiter);
        reject(new WaitTimeout(this.current));
      }, timeoutMs);
      this.waiters.add(waiter);
      this.storeWatch?.requestProgress();
      // The store answers a progress request once it has delivered everything up to its current revision; one
      // shared interval asks again every 100 ms while anyone waits, however many wait.
      this.nudge ??= setInterval(() => this.storeWatch?.requestProgress(), 100);
    });
  }

  private removeWaiter(waiter: { revision: Revision; resolve: () => void }): void {
    this.waiters.delete(waiter);
    if (this.waiters.size === 0 && this.nudge !== undefined) {
      clearInterval(this.nudge);
      this.nudge = undefined;
    }
  }

  /** The current objects, in key order, at `this.revision`. */
  snapshot(prefix = ''): { revision: Revision; entries: CacheEntry<T>[] } {
    const entries: [string, CacheEntry<T>][] = [];
    for (const [key, entry] of this.objects) if (key.startsWith(prefix)) entries.push([key, entry]);
    entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { revision: this.current, entries: entries.map(([, e]) => e) };
  }

  get(key: string): CacheEntry<T> | undefined {
    return this.objects.get(key);
  }

  /**
   * Events after `after` (which must be >= oldestRevision), then every later batch, to `listener`; the
   * listener is registered synchronously with the replay, so nothing is missed or repeated.
   */
  subscribe(
    after: Revision,
    listener: CacheListener<T>,
    onReset?: CacheResetListener,
  ): { replay: CacheEvent<T>[]; unsubscribe: () => void } {
    assert(after >= this.windowStart, 'subscribe below the window');
    const replay = this.events.filter((e) => e.revision > after);
    this.listeners.add(listener);
    if (onReset !== undefined) this.resetListeners.add(onReset);
    return {
      replay,
      unsubscribe: () => {
        this.listeners.delete(listener);
        if (onReset !== undefined) this.resetListeners.delete(onReset);
      },
    };
  }

  close(): void {
    this.closed = true;
    this.storeWatch?.close();
    this.listeners.clear();
    this.resetListeners.clear();
    for (const waiter of this.waiters) {
      this.removeWaiter(waiter);
      waiter.resolve();
    }
  }
}
