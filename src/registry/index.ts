// The set of resource registries: one per declared kind, looked up by group, version and resource.

import type { KindDeclaration } from '../apimachinery/kind.js';
import { ApiError } from '../apimachinery/status.js';
import type { KVStore } from '../storage/contract.js';
import type { Clock } from '../util/clock.js';
import { ResourceRegistry, type NamespaceState } from './store.js';

export const defaultNamespaces = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;

export class Registries {
  private readonly byPath = new Map<string, ResourceRegistry>();
  readonly all: ResourceRegistry[] = [];
  readonly namespaces: ResourceRegistry;

  constructor(
    kinds: readonly KindDeclaration[],
    store: KVStore,
    clock: Clock,
    watchCacheEventsMax: number,
    allowUnsafeMalformedObjectDeletion = false,
  ) {
    const deps = {
      store,
      clock,
      watchCacheEventsMax,
      allowUnsafeMalformedObjectDeletion,
      namespaceState: (namespace: string) => this.namespaceState(namespace),
    };
    for (const decl of kinds) {
      const registry = new ResourceRegistry(decl, deps);
      // A virtual kind has no storage, no watch cache and nothing for the controllers to see.
      if (decl.virtual === undefined) this.all.push(registry);
      for (const version of decl.versions)
        this.byPath.set(`${decl.group}/${version}/${decl.plural}`, registry);
    }
    const namespaces = this.find('', 'v1', 'namespaces');
    if (namespaces === undefined) throw new Error('the Namespace kind is not registered');
    this.namespaces = namespaces;
  }

  find(group: string, version: string, resource: string): ResourceRegistry | undefined {
    return this.byPath.get(`${group}/${version}/${resource}`);
  }

  async namespaceState(namespace: string): Promise<NamespaceState> {
    try {
      const ns = await this.namespaces.get('', namespace, undefined);
      return ns.metadata.deletionTimestamp !== undefined ? 'terminating' : 'active';
    } catch (error) {
      if (error instanceof ApiError && error.reason === 'NotFound') return 'missing';
      throw error;
    }
  }

  /** Starts every watch cache, then makes sure the default namespaces exist. */
  async start(): Promise<void> {
    await Promise.all(this.all.map((r) => r.start()));
    for (const name of defaultNamespaces) {
      try {
        await this.namespaces.create('', { metadata: { name } }, { dryRun: false });
      } catch (error) {
        if (!(error instanceof ApiError && error.reason === 'AlreadyExists')) throw error;
      }
    }
  }

  close(): void {
    for (const r of this.all) r.close();
  }
}
