// Which store a server runs on: a Raft member (--initial-cluster), an external etcd (--etcd-servers), or the
// embedded single-node LevelDB engine (the default).

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KVStore } from '../storage/contract.js';
import { openStore } from '../storage/index.js';
import { ReplicatedStore } from '../replica/engine.js';
import type { ServeOptions } from './flags.js';

export interface ServerStore {
  readonly store: KVStore;
  /** Set on a cluster member: the admin API manages membership through it. */
  readonly replica: ReplicatedStore | undefined;
  readonly engine: 'replicated' | 'etcd' | 'embedded';
}

async function readPem(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`--${flag}=${path}: ${(error as Error).message}`);
  }
}

export async function openServerStore(options: ServeOptions, logger: Logger): Promise<ServerStore> {
  const cluster = options.cluster;
  if (cluster !== undefined) {
    const replica = await ReplicatedStore.open({
      name: cluster.name,
      dataDir: join(options.dataDir, 'replica'),
      initialCluster: cluster.initialCluster,
      initialClusterState: cluster.initialClusterState,
      clusterToken: cluster.initialClusterToken,
      listenPeer: cluster.listenPeer,
      peerDialUrls: cluster.peerDialUrls,
      tls: {
        certPem: await readPem(cluster.peerCertFile, 'peer-cert-file'),
        keyPem: await readPem(cluster.peerKeyFile, 'peer-key-file'),
        trustedCaPem: await readPem(cluster.peerTrustedCaFile, 'peer-trusted-ca-file'),
      },
      heartbeatIntervalMs: cluster.heartbeatIntervalMs,
      electionTimeoutMs: cluster.electionTimeoutMs,
      snapshotCount: cluster.snapshotCount,
      snapshotCatchUpEntries: cluster.snapshotCatchUpEntries,
      snapshotChunkBytes: cluster.snapshotChunkBytes,
      ...(options.storeRetentionMs === undefined ? {} : { retentionMs: options.storeRetentionMs }),
      watchProgressIntervalMs: 5000,
      logger: logger.child({ component: 'replica' }),
    });
    return { store: replica, replica, engine: 'replicated' };
  }
  if (options.etcdServers.length > 0) {
    return {
      store: await openStore({ engine: 'etcd', endpoints: options.etcdServers }),
      replica: undefined,
      engine: 'etcd',
    };
  }
  const store = await openStore({
    engine: 'embedded',
    dataDir: join(options.dataDir, 'store'),
    ...(options.storeRetentionMs === undefined ? {} : { retentionMs: options.storeRetentionMs }),
    progressIntervalMs: 5000,
  });
  return { store, replica: undefined, engine: 'embedded' };
}
