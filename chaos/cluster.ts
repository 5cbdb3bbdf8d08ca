// The cluster a chaos run breaks: real `stoa serve` processes started by the cluster harness. With --net proxy
// each dials its peers through the fault-proxy mesh (--experimental-peer-dial-urls), so that network faults are
// proxy settings; with --net netns each runs in its own network namespace and faults are routes, nftables and tc
// (chaos/netns.ts). Process faults are signals. The run owns every process, proxy and namespace here and
// `close()` ends them all.

import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  adminGet,
  adminStatusPath,
  apiUrlOf,
  down,
  freeBasePort,
  layout,
  up,
  type ClusterOptions,
  type NodeLayout,
} from '../cluster/harness.js';
import { nodeIdFromName } from '../src/replica/ids.js';
import type { NodeId } from '../src/util/brand.js';
import { assert } from '../src/util/assert.js';
import { PeerProxyMesh } from './peer-proxies.js';
import { NetnsNetwork } from './netns.js';
import type { NetMode, PeerNetwork } from './peer-network.js';

export interface Tls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** What the admin status endpoint reports about one node (the fields a chaos run uses). */
export interface NodeRaftStatus {
  readonly role: string;
  readonly term: number;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly revision: number;
}

export interface ChaosClusterOptions {
  readonly nodes: number;
  readonly seed: number;
  readonly dataDir: string;
  readonly extraServeFlags: readonly string[];
  readonly log: (line: string) => void;
  /** How peer links are faulted (default proxy). */
  readonly net?: NetMode;
  /** The loss and delay faults the run injects (netns: each must be possible here, see chaos/netns.ts). */
  readonly linkFaults?: readonly ('loss' | 'delay')[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class ChaosCluster {
  /** Nodes stopped with SIGSTOP and not yet continued. */
  private readonly paused = new Set<number>();
  private closed = false;

  private constructor(
    private readonly options: ChaosClusterOptions,
    private readonly basePort: number,
    readonly nodes: readonly NodeLayout[],
    readonly ids: readonly NodeId[],
    readonly mesh: PeerNetwork,
    private tlsFiles: Tls | undefined,
    private readonly netns: NetnsNetwork | undefined,
  ) {}

  /** Starts the proxies or namespaces, then the nodes; on any failure stops whatever started. */
  static async start(options: ChaosClusterOptions): Promise<ChaosCluster> {
    const basePort = await freeBasePort(options.nodes);
    const ids = layout({ nodes: options.nodes, basePort, dataDir: options.dataDir }).map((n) =>
      nodeIdFromName(n.name),
    );
    let cluster: ChaosCluster;
    if (options.net === 'netns') {
      const netns = NetnsNetwork.create(ids, { faults: options.linkFaults ?? [] });
      const nodes = layout({ nodes: options.nodes, basePort, dataDir: options.dataDir, hosts: netns.hosts });
      cluster = new ChaosCluster(options, basePort, nodes, ids, netns, undefined, netns);
    } else {
      const nodes = layout({ nodes: options.nodes, basePort, dataDir: options.dataDir });
      const mesh = await PeerProxyMesh.start(
        nodes.map((n, i) => ({ id: ids[i] as NodeId, host: '127.0.0.1', port: n.peerPort })),
        { seed: options.seed },
      );
      cluster = new ChaosCluster(options, basePort, nodes, ids, mesh, undefined, undefined);
    }
    try {
      await cluster.upAll();
      cluster.tlsFiles = await readTls(options.dataDir);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  get tls(): Tls {
    assert(this.tlsFiles !== undefined, 'cluster not started');
    return this.tlsFiles;
  }

  apiUrl(index: number): string {
    return apiUrlOf(this.node(index));
  }

  node(index: number): NodeLayout {
    const node = this.nodes[index];
    assert(node !== undefined, `no node ${index}`);
    return node;
  }

  id(index: number): NodeId {
    const id = this.ids[index];
    assert(id !== undefined, `no node ${index}`);
    return id;
  }

  /** The serve flag that makes node `name` dial every peer through its proxy (none with netns). */
  private dialFlags(node: NodeLayout): string[] {
    if (!(this.mesh instanceof PeerProxyMesh)) return [];
    const urls = this.mesh.peerUrlsFor(nodeIdFromName(node.name));
    const parts = this.nodes
      .filter((n) => n.name !== node.name)
      .map((n) => `${n.name}=${urls.get(nodeIdFromName(n.name)) ?? ''}`);
    return [`--experimental-peer-dial-urls=${parts.join(',')}`];
  }

  /** With netns: each node's address, and the namespace its process is started in. */
  private netnsOptions(): Pick<ClusterOptions, 'hosts' | 'launchPrefix'> {
    const netns = this.netns;
    if (netns === undefined) return {};
    return {
      hosts: this.nodes.map((n) => n.host),
      launchPrefix: (node) => netns.launchPrefix(this.nodes.findIndex((n) => n.name === node.name)),
    };
  }

  /** Starts every node that is not running (the first start, and restarts after a kill). */
  async upAll(): Promise<void> {
    await up(
      {
        nodes: this.nodes.length,
        basePort: this.basePort,
        dataDir: this.options.dataDir,
        extraServeFlags: this.options.extraServeFlags,
        nodeServeFlags: (node) => this.dialFlags(node),
        ...this.netnsOptions(),
      },
      { nodes: true, basePort: true },
      () => undefined,
    );
  }

  async pid(index: number): Promise<number | null> {
    try {
      const pid = Number((await readFile(join(this.node(index).dir, 'stoa.pid'), 'utf8')).trim());
      return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
    } catch {
      return null;
    }
  }

  /** SIGKILL; waits (bounded) until the process is gone. */
  async kill(index: number): Promise<void> {
    const pid = await this.pid(index);
    if (pid === null) return;
    this.paused.delete(index);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(50);
    await rm(join(this.node(index).dir, 'stoa.pid'), { force: true });
  }

  async pause(index: number): Promise<void> {
    const pid = await this.pid(index);
    if (pid === null) return;
    process.kill(pid, 'SIGSTOP');
    this.paused.add(index);
  }

  async resume(index: number): Promise<void> {
    const pid = await this.pid(index);
    this.paused.delete(index);
    if (pid !== null) process.kill(pid, 'SIGCONT');
  }

  async resumeAll(): Promise<void> {
    for (const index of [...this.paused]) await this.resume(index);
  }

  /** The admin status of one node, or undefined when it does not answer. */
  async status(index: number, timeoutMs = 2_000): Promise<NodeRaftStatus | undefined> {
    const reply = await adminGet(`${this.apiUrl(index)}${adminStatusPath}`, this.tls, timeoutMs);
    if (reply?.status !== 200) return undefined;
    try {
      return JSON.parse(reply.body) as NodeRaftStatus;
    } catch {
      return undefined;
    }
  }

  /** The index of the node every answering node names as leader, if they agree on one. */
  async leader(): Promise<number | undefined> {
    const statuses = await Promise.all(this.nodes.map((_, i) => this.status(i)));
    const leaders = statuses.filter((s) => s?.role === 'leader');
    if (leaders.length !== 1) return undefined;
    const index = statuses.findIndex((s) => s?.role === 'leader');
    return index < 0 ? undefined : index;
  }

  /** Continues paused nodes, stops every node, closes the proxies. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.resumeAll().catch(() => undefined);
    await down(this.options.dataDir, () => undefined).catch(async () => {
      for (let i = 0; i < this.nodes.length; i++) {
        const pid = await this.pid(i);
        if (pid !== null) process.kill(pid, 'SIGKILL');
      }
    });
    await this.mesh.close();
  }
}

async function readTls(dataDir: string): Promise<Tls> {
  const pki = join(dataDir, 'pki');
  return {
    ca: await readFile(join(pki, 'ca.crt'), 'utf8'),
    cert: await readFile(join(pki, 'admin.crt'), 'utf8'),
    key: await readFile(join(pki, 'admin.key'), 'utf8'),
  };
}
