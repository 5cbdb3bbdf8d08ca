// What a chaos run does to the network between nodes, whichever way it is built: fault proxies on the peer
// links (chaos/peer-proxies.ts, no root needed) or network namespaces with routes and tc (chaos/netns.ts).
import type { NodeId } from '../src/util/brand.js';
import type { LinkFault } from './proxy.js';

export type NetMode = 'proxy' | 'netns';

export interface PeerNetwork {
  setFault(from: NodeId, to: NodeId, fault: LinkFault): void;
  /** Cuts from -> to; to -> from is untouched. */
  cutOneWay(from: NodeId, to: NodeId): void;
  /** Every link between nodes of different groups is cut, both ways; others pass. */
  partition(groups: readonly (readonly NodeId[])[]): void;
  /** Cuts one node off from all others, both ways. */
  isolate(id: NodeId): void;
  setFaultAll(fault: LinkFault): void;
  healAll(): void;
  close(): Promise<void>;
}
