// Discovery documents, derived from the kind declarations: /api, /api/v1, /apis, /apis/GROUP,
// /apis/GROUP/VERSION, and the aggregated form (apidiscovery/v2) when the client asks for it.

import { createHash } from 'node:crypto';
import { verbsOf, type KindDeclaration } from '../apimachinery/kind.js';
import { proxyKinds, proxyVerbs } from './proxy.js';

function storageVersionHash(decl: KindDeclaration): string {
  return createHash('sha256')
    .update(`${decl.group}/${decl.versions[0] ?? ''}/${decl.kind}`)
    .digest('base64')
    .slice(0, 11);
}

function resourceEntries(decl: KindDeclaration): Record<string, unknown>[] {
  const main: Record<string, unknown> = {
    name: decl.plural,
    singularName: decl.singular,
    namespaced: decl.namespaced,
    kind: decl.kind,
    verbs: verbsOf(decl),
    ...(decl.virtual === undefined ? { storageVersionHash: storageVersionHash(decl) } : {}),
  };
  if (decl.shortNames.length > 0) main.shortNames = decl.shortNames;
  if (decl.categories.length > 0) main.categories = decl.categories;
  const out = [main];
  if (decl.statusSubresource) {
    out.push({
      name: `${decl.plural}/status`,
      singularName: '',
      namespaced: decl.namespaced,
      kind: decl.kind,
      verbs: ['get', 'patch', 'update'],
    });
  }
  if (decl.scaleSubresource === true) {
    out.push({
      name: `${decl.plural}/scale`,
      singularName: '',
      namespaced: decl.namespaced,
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
      verbs: ['get', 'patch', 'update'],
    });
  }
  if (decl.evictionSubresource === true) {
    out.push({
      name: `${decl.plural}/eviction`,
      singularName: '',
      namespaced: decl.namespaced,
      group: 'policy',
      version: 'v1',
      kind: 'Eviction',
      verbs: ['create'],
    });
  }
  const proxyKind = decl.group === '' ? proxyKinds.get(decl.plural) : undefined;
  if (proxyKind !== undefined) {
    out.push({
      name: `${decl.plural}/proxy`,
      singularName: '',
      namespaced: decl.namespaced,
      kind: proxyKind,
      verbs: [...proxyVerbs],
    });
  }
  for (const [name, sub] of Object.entries(decl.createSubresources ?? {})) {
    out.push({
      name: `${decl.plural}/${name}`,
      singularName: '',
      namespaced: decl.namespaced,
      group: sub.group,
      version: sub.version,
      kind: sub.kind,
      verbs: ['create'],
    });
  }
  return out;
}

function aggregatedSubresources(decl: KindDeclaration, version: string): Record<string, unknown> {
  const subresources: Record<string, unknown>[] = [];
  if (decl.statusSubresource) {
    subresources.push({
      subresource: 'status',
      responseKind: { group: decl.group, version, kind: decl.kind },
      verbs: ['get', 'patch', 'update'],
    });
  }
  const proxyKind = decl.group === '' ? proxyKinds.get(decl.plural) : undefined;
  if (proxyKind !== undefined) {
    subresources.push({
      subresource: 'proxy',
      responseKind: { group: '', version: 'v1', kind: proxyKind },
      verbs: [...proxyVerbs],
    });
  }
  for (const [name, sub] of Object.entries(decl.createSubresources ?? {})) {
    subresources.push({
      subresource: name,
      responseKind: { group: sub.group, version: sub.version, kind: sub.kind },
      verbs: ['create'],
    });
  }
  return subresources.length === 0 ? {} : { subresources };
}

export class Discovery {
  private readonly groups = new Map<string, { versions: string[]; kinds: KindDeclaration[] }>();

  constructor(private readonly kinds: readonly KindDeclaration[]) {
    for (const decl of kinds) {
      if (decl.group === '') continue;
      const entry = this.groups.get(decl.group) ?? { versions: [], kinds: [] };
      for (const v of decl.versions) if (!entry.versions.includes(v)) entry.versions.push(v);
      entry.kinds.push(decl);
      this.groups.set(decl.group, entry);
    }
  }

  apiVersions(serverAddress: string): unknown {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }

  private groupDoc(name: string, versions: readonly string[]): Record<string, unknown> {
    const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
    return { name, versions: list, preferredVersion: list[0] };
  }

  apiGroupList(): unknown {
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...this.groups.entries()].map(([name, g]) => this.groupDoc(name, g.versions)),
    };
  }

  apiGroup(group: string): unknown {
    const g = this.groups.get(group);
    if (g === undefined) return undefined;
    return { kind: 'APIGroup', apiVersion: 'v1', ...this.groupDoc(group, g.versions) };
  }

  resourceList(group: string, version: string): unknown {
    const kinds = this.kinds.filter((k) => k.group === group && k.versions.includes(version));
    if (kinds.length === 0) return undefined;
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group === '' ? version : `${group}/${version}`,
      resources: kinds.flatMap(resourceEntries),
    };
  }

  /** apidiscovery/v2 APIGroupDiscoveryList: for /api (core only) or /apis (every named group). */
  aggregated(discoveryGroup: string, core: boolean): unknown {
    const groups = core
      ? [['', { versions: ['v1'], kinds: this.kinds.filter((k) => k.group === '') }] as const]
      : [...this.groups.entries()];
    return {
      kind: 'APIGroupDiscoveryList',
      apiVersion: `${discoveryGroup}/v2`,
      metadata: {},
      items: groups.map(([name, g]) => ({
        metadata: { name, creationTimestamp: null },
        versions: g.versions.map((version) => ({
          version,
          freshness: 'Current',
          resources: g.kinds
            .filter((k) => k.versions.includes(version))
            .map((k) => ({
              resource: k.plural,
              responseKind: { group: k.group, version, kind: k.kind },
              scope: k.namespaced ? 'Namespaced' : 'Cluster',
              singularResource: k.singular,
              verbs: verbsOf(k),
              ...(k.shortNames.length > 0 ? { shortNames: k.shortNames } : {}),
              ...(k.categories.length > 0 ? { categories: k.categories } : {}),
              ...aggregatedSubresources(k, version),
            })),
        })),
      })),
    };
  }
}
