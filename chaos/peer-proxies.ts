// A fault proxy on every directed peer link of an N-node cluster: N*(N-1) proxies, and the peer URLs each node
// must dial so that its outbound connections go through them.
//
// A node sends to a peer only over the connection it dialled, so the proxy on link A->B carries exactly the
// messages from A to B (and B's keepalives back on that connection). Cutting A->B while B->A passes is
// therefore a fault on one proxy.

import { seededRandom } from '../src/util/clock.js';
import type { NodeId } from '../src/util/brand.js';
import { assert } from '../src/util/assert.js';
import { FaultProxy, type LinkFault } from './proxy.js';
import type { PeerNetwork } from './peer-network.js';

export interface PeerEndpoint {
  readonly id: NodeId;
  /** Where the node's peer listener really is. */
  readonly host: string;
  readonly port: number;
}

const linkKey = (from: NodeId, to: NodeId): string => `${from}->${to}`;

export class PeerProxyMesh implements PeerNetwork {
  private constructor(
    private readonly nodes: readonly PeerEndpoint[],
    private readonly proxies: ReadonlyMap<string, FaultProxy>,
  ) {}

  /** Starts one proxy per directed pair on 127.0.0.1; randomness of each link derives from `seed`. */
  static async start(
    nodes: readonly PeerEndpoint[],
    options: { readonly seed: number },
  ): Promise<PeerProxyMesh> {
    assert(new Set(nodes.map((n) => n.id)).size === nodes.length, 'node ids must be distinct');
    const seeds = seededRandom(options.seed);
    const proxies = new Map<string, FaultProxy>();
    try {
      // In a fixed order, so that each link's seed depends only on the run's seed.
      for (const from of nodes) {
        for (const to of nodes) {
          if (from.id === to.id) continue;
          const proxy = await FaultProxy.start({
            target: { host: to.host, port: to.port },
            random: seededRandom(seeds.int(0, 2 ** 31)),
          });
          proxies.set(linkKey(from.id, to.id), proxy);
        }
      }
    } catch (error) {
      await Promise.all([...proxies.values()].map((p) => p.close()));
      throw error;
    }
    return new PeerProxyMesh(nodes, proxies);
  }

  /** The proxy carrying messages from `from` to `to`. */
  link(from: NodeId, to: NodeId): FaultProxy {
    const proxy = this.proxies.get(linkKey(from, to));
    assert(proxy !== undefined, `no link ${linkKey(from, to)}`);
    return proxy;
  }

  /** The URL node `from` must dial for each peer (its --initial-cluster, rewritten). */
  peerUrlsFor(from: NodeId): Map<NodeId, string> {
    const urls = new Map<NodeId, string>();
    for (const to of this.nodes) {
      if (to.id === from) continue;
      const proxy = this.link(from, to.id);
      urls.set(to.id, `https://${proxy.host}:${proxy.port}`);
    }
    return urls;
  }

  /** Applies `fault` to the link from -> to only. */
  setFault(from: NodeId, to: NodeId, fault: LinkFault): void {
    this.link(from, to).setFault(fault);
  }

  /** Cuts from -> to; to -> from is untouched. */
  cutOneWay(from: NodeId, to: NodeId): void {
    this.setFault(from, to, { kind: 'partition' });
  }

  /** Splits the cluster: every link between nodes of different groups is cut, both ways; others pass. */
  partition(groups: readonly (readonly NodeId[])[]): void {
    const groupOf = new Map<NodeId, number>();
    groups.forEach((group, index) => group.forEach((id) => groupOf.set(id, index)));
    assert(groupOf.size === this.nodes.length, 'every node must be in exactly one group');
    for (const from of this.nodes) {
      for (const to of this.nodes) {
        if (from.id === to.id) continue;
        const cut = groupOf.get(from.id) !== groupOf.get(to.id);
        this.setFault(from.id, to.id, cut ? { kind: 'partition' } : { kind: 'pass' });
      }
    }
  }

  /** Cuts one node off from all others, both ways. */
  isolate(id: NodeId): void {
    this.partition([[id], this.nodes.filter((n) => n.id !== id).map((n) => n.id)]);
  }

  /** Applies `fault` to every link. */
  setFaultAll(fault: LinkFault): void {
    for (const proxy of this.proxies.values()) proxy.setFault(fault);
  }

  healAll(): void {
    this.setFaultAll({ kind: 'pass' });
  }

  async close(): Promise<void> {
    await Promise.all([...this.proxies.values()].map((p) => p.close()));
  }
}
