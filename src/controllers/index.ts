// Controllers that run inside the API server: namespace lifecycle and the garbage collector. They are one
// actor: events from the watch caches enqueue work, which runs one task at a time.

import type { Logger } from 'pino';
import type { ApiObject } from '../apimachinery/meta.js';
import { ApiError } from '../apimachinery/status.js';
import type { Registries } from '../registry/index.js';
import type { ResourceRegistry } from '../registry/store.js';
import type { CacheEvent } from '../watchcache/cache.js';
import { unreachable } from '../util/assert.js';

const retryIntervalMs = 500;

type Task =
  | { kind: 'namespace'; name: string }
  | { kind: 'owner-deleted'; uid: string }
  | { kind: 'finalize-owner'; registry: ResourceRegistry; namespace: string; name: string };

function taskKey(t: Task): string {
  switch (t.kind) {
    case 'namespace':
      return `ns/${t.name}`;
    case 'owner-deleted':
      return `deleted/${t.uid}`;
    case 'finalize-owner':
      return `finalize/${t.registry.prefix}${t.namespace}/${t.name}`;
    default:
      return unreachable(t);
  }
}

function ignoreNotFound(error: unknown): void {
  if (error instanceof ApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')) return;
  throw error;
}

export class Controllers {
  private readonly queue = new Map<string, Task>();
  private running = false;
  private stopped = false;
  private readonly unsubscribes: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly registries: Registries,
    private readonly logger: Logger,
  ) {}

  start(): void {
    for (const registry of this.registries.all) {
      const sub = registry.cache.subscribe(registry.cache.revision, (events) =>
        this.observe(registry, events),
      );
      this.unsubscribes.push(sub.unsubscribe);
      for (const entry of registry.cache.snapshot().entries) this.observeObject(registry, entry.object);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const u of this.unsubscribes) u();
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
  }

  private enqueue(task: Task): void {
    if (this.stopped) return;
    this.queue.set(taskKey(task), task);
    if (!this.running) void this.drain();
  }

  private observe(registry: ResourceRegistry, events: readonly CacheEvent<ApiObject>[]): void {
    for (const e of events) {
      if (e.type === 'DELETED') {
        if (e.object.metadata.uid !== undefined)
          this.enqueue({ kind: 'owner-deleted', uid: e.object.metadata.uid });
      } else this.observeObject(registry, e.object);
    }
  }

  private observeObject(registry: ResourceRegistry, object: ApiObject): void {
    if (object.metadata.deletionTimestamp === undefined) return;
    const name = object.metadata.name ?? '';
    if (registry === this.registries.namespaces) this.enqueue({ kind: 'namespace', name });
    const finalizers = object.metadata.finalizers ?? [];
    if (finalizers.includes('orphan') || finalizers.includes('foregroundDeletion')) {
      this.enqueue({ kind: 'finalize-owner', registry, namespace: object.metadata.namespace ?? '', name });
    }
  }

  private async drain(): Promise<void> {
    this.running = true;
    const retry: Task[] = [];
    try {
      while (!this.stopped && this.queue.size > 0) {
        const [key, task] = this.queue.entries().next().value as [string, Task];
        this.queue.delete(key);
        try {
          if (!(await this.run(task))) retry.push(task);
        } catch (error) {
          this.logger.warn({ err: error, task: key }, 'controller task failed; will retry');
          retry.push(task);
        }
      }
    } finally {
      this.running = false;
    }
    if (retry.length > 0 && !this.stopped) {
      this.retryTimer = setTimeout(() => {
        for (const t of retry) this.enqueue(t);
      }, retryIntervalMs);
    }
  }

  /** True when done; false to try again later. */
  private async run(task: Task): Promise<boolean> {
    switch (task.kind) {
      case 'namespace':
        return this.finalizeNamespace(task.name);
      case 'owner-deleted':
        return this.collectDependents(task.uid);
      case 'finalize-owner':
        return this.finalizeOwner(task.registry, task.namespace, task.name);
      default:
        return unreachable(task);
    }
  }

  /** Deletes everything in a terminating namespace; once it is empty, removes the namespace's finalizer. */
  private async finalizeNamespace(name: string): Promise<boolean> {
    const namespaces = this.registries.namespaces;
    const ns = namespaces.cache.get(namespaces.key('', name));
    if (ns === undefined || ns.object.metadata.deletionTimestamp === undefined) return true;
    let remaining = 0;
    for (const registry of this.registries.all) {
      if (!registry.decl.namespaced) continue;
      const items = registry.cache.snapshot(`${registry.prefix}${name}/`).entries;
      remaining += items.length;
      for (const item of items) {
        if (item.object.metadata.deletionTimestamp !== undefined) continue;
        await registry
          .delete(name, item.object.metadata.name ?? '', { dryRun: false, propagationPolicy: 'Background' })
          .catch(ignoreNotFound);
      }
    }
    if (remaining > 0) return false;
    await namespaces
      .guaranteedUpdate(
        '',
        name,
        { dryRun: false, subresource: 'finalize' },
        (current) => ({ ...current, spec: { finalizers: [] } }),
        () => Promise.resolve({ object: ns.object, created: false }),
      )
      .catch(ignoreNotFound);
    return true;
  }

  private dependentsOf(uid: string): { registry: ResourceRegistry; object: ApiObject }[] {
    const out: { registry: ResourceRegistry; object: ApiObject }[] = [];
    for (const registry of this.registries.all) {
      for (const entry of registry.cache.snapshot().entries) {
        if ((entry.object.metadata.ownerReferences ?? []).some((r) => r.uid === uid))
          out.push({ registry, object: entry.object });
      }
    }
    return out;
  }

  private uidExists(uid: string): boolean {
    return this.registries.all.some((r) =>
      r.cache.snapshot().entries.some((e) => e.object.metadata.uid === uid),
    );
  }

  /** An owner is gone: dependents with no other live owner are deleted; others lose the reference. */
  private async collectDependents(uid: string): Promise<boolean> {
    for (const { registry, object } of this.dependentsOf(uid)) {
      const ns = object.metadata.namespace ?? '';
      const name = object.metadata.name ?? '';
      const others = (object.metadata.ownerReferences ?? []).filter(
        (r) => r.uid !== uid && this.uidExists(r.uid),
      );
      if (others.length === 0) {
        await registry
          .delete(ns, name, { dryRun: false, propagationPolicy: 'Background' })
          .catch(ignoreNotFound);
      } else {
        await this.removeOwnerReference(registry, ns, name, uid);
      }
    }
    return true;
  }

  private async removeOwnerReference(
    registry: ResourceRegistry,
    namespace: string,
    name: string,
    uid: string,
  ): Promise<void> {
    await registry
      .patch(
        namespace,
        name,
        (current) => {
          const refs = (current.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
          if (refs.length === 0) delete current.metadata.ownerReferences;
          else current.metadata.ownerReferences = refs;
          return current;
        },
        { dryRun: false, subresource: '' },
      )
      .catch(ignoreNotFound);
  }

  private async removeFinalizer(
    registry: ResourceRegistry,
    namespace: string,
    name: string,
    finalizer: string,
  ): Promise<void> {
    await registry
      .patch(
        namespace,
        name,
        (current) => {
          const rest = (current.metadata.finalizers ?? []).filter((f) => f !== finalizer);
          if (rest.length === 0) delete current.metadata.finalizers;
          else current.metadata.finalizers = rest;
          return current;
        },
        { dryRun: false, subresource: '' },
      )
      .catch(ignoreNotFound);
  }

  /** Orphan: dependents lose the reference, then the finalizer goes. Foreground: dependents go first. */
  private async finalizeOwner(registry: ResourceRegistry, namespace: string, name: string): Promise<boolean> {
    const entry = registry.cache.get(registry.key(namespace, name));
    if (entry === undefined) return true;
    const owner = entry.object;
    const uid = owner.metadata.uid ?? '';
    const finalizers = owner.metadata.finalizers ?? [];
    const dependents = this.dependentsOf(uid);
    if (finalizers.includes('orphan')) {
      for (const d of dependents)
        await this.removeOwnerReference(
          d.registry,
          d.object.metadata.namespace ?? '',
          d.object.metadata.name ?? '',
          uid,
        );
      await this.removeFinalizer(registry, namespace, name, 'orphan');
      return true;
    }
    if (finalizers.includes('foregroundDeletion')) {
      if (dependents.length > 0) {
        for (const d of dependents) {
          if (d.object.metadata.deletionTimestamp !== undefined) continue;
          await d.registry
            .delete(d.object.metadata.namespace ?? '', d.object.metadata.name ?? '', {
              dryRun: false,
              propagationPolicy: 'Foreground',
            })
            .catch(ignoreNotFound);
        }
        return false;
      }
      await this.removeFinalizer(registry, namespace, name, 'foregroundDeletion');
    }
    return true;
  }
}
