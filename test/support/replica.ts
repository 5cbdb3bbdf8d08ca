// In-process replicated clusters for tests: N ReplicatedStores in this process, each with its own data dir,
// talking over real mutual-TLS peer links on loopback, with certificates from one test CA.

import { join } from 'node:path';
import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';
import { ReplicatedStore, type ReplicaOptions } from '../../src/replica/engine.js';
import type { Member } from '../../src/replica/ids.js';
import { nodeIdFromName } from '../../src/replica/ids.js';
import { freePort } from './etcd.js';
import { tempDir } from './tmp.js';

export type ReplicaTuning = Partial<
  Pick<
    ReplicaOptions,
    | 'heartbeatIntervalMs'
    | 'electionTimeoutMs'
    | 'snapshotCount'
    | 'snapshotCatchUpEntries'
    | 'snapshotChunkBytes'
    | 'retentionMs'
    | 'requestTimeoutMs'
    | 'watchProgressIntervalMs'
    | 'snapshotHook'
  >
>;

/** Short timeouts that still hold on a loaded 2-core machine. */
export const testTuning: ReplicaTuning = {
  heartbeatIntervalMs: 50,
  electionTimeoutMs: 500,
  retentionMs: 0,
  requestTimeoutMs: 5_000,
};

export interface ReplicaCluster {
  readonly members: Member[];
  /** By member index; undefined while stopped. */
  readonly nodes: (ReplicatedStore | undefined)[];
  readonly dir: string;
  /** Options to open member `i` (or a new member joining with `state: 'existing'`). */
  optionsFor(i: number, state?: 'new' | 'existing'): Promise<ReplicaOptions>;
  start(i: number, state?: 'new' | 'existing'): Promise<ReplicatedStore>;
  stop(i: number): Promise<void>;
  /** Adds a member entry (ports, certificate) for a node that will join later; returns its index. */
  reserveMember(name: string): Promise<number>;
  leader(): Promise<ReplicatedStore>;
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function startReplicaCluster(
  n: number,
  tuning: ReplicaTuning = testTuning,
  /** Runs on each member's (empty) data dir before it first starts, e.g. to restore a backup. */
  prepare?: (dataDir: string) => Promise<void>,
): Promise<ReplicaCluster> {
  const dir = await tempDir('replica');
  const ca = await createCertificateAuthority({ commonName: 'stoa-test-peers' });
  const members: Member[] = [];
  const certs: CertificateAndKey[] = [];
  const nodes: (ReplicatedStore | undefined)[] = [];
  const initialCount = n;

  const reserveMember = async (name: string): Promise<number> => {
    const port = await freePort();
    members.push({ id: nodeIdFromName(name), name, peerUrl: `https://127.0.0.1:${port}` });
    certs.push(await issueCertificate(ca, { commonName: name, ipAddresses: ['127.0.0.1'], usage: 'peer' }));
    nodes.push(undefined);
    return members.length - 1;
  };
  for (let i = 1; i <= n; i++) await reserveMember(`node-${i}`);

  const optionsFor = async (i: number, state: 'new' | 'existing' = 'new'): Promise<ReplicaOptions> => {
    const member = members[i];
    const cert = certs[i];
    if (member === undefined || cert === undefined) throw new Error(`no member ${i}`);
    const port = Number(new URL(member.peerUrl).port);
    return {
      name: member.name,
      dataDir: join(dir.path, member.name),
      // A new cluster names its initial members; a joining node names every current member and itself.
      initialCluster: state === 'new' ? members.slice(0, initialCount) : members.slice(0, i + 1),
      initialClusterState: state,
      clusterToken: 'test-cluster',
      listenPeer: { host: '127.0.0.1', port },
      tls: { certPem: cert.certPem, keyPem: cert.keyPem, trustedCaPem: ca.certPem },
      onFatal: (error) => {
        throw error;
      },
      ...tuning,
    };
  };

  const start = async (i: number, state: 'new' | 'existing' = 'new'): Promise<ReplicatedStore> => {
    const node = await ReplicatedStore.open(await optionsFor(i, state));
    nodes[i] = node;
    return node;
  };
  const stop = async (i: number): Promise<void> => {
    const node = nodes[i];
    nodes[i] = undefined;
    await node?.close();
  };
  const leader = async (): Promise<ReplicatedStore> => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const found = nodes.find((node) => node?.replicaStatus().role === 'leader');
      if (found !== undefined) return found;
      await sleep(25);
    }
    throw new Error('no leader within 20 s');
  };

  if (prepare !== undefined) {
    for (let i = 0; i < n; i++) await prepare((await optionsFor(i)).dataDir);
  }
  await Promise.all(Array.from({ length: n }, (_, i) => start(i)));
  return {
    members,
    nodes,
    dir: dir.path,
    optionsFor,
    start,
    stop,
    reserveMember,
    leader,
    async close() {
      await Promise.all(nodes.map((_, i) => stop(i)));
      await dir.remove();
    },
  };
}
