// The flags of a replicated node, with etcd's names. Given --initial-cluster, `stoa serve` runs its store as a
// member of a Raft group instead of the single-node embedded engine.

import { hostPort, parseInitialCluster, type Member } from '../replica/ids.js';
import { FlagError } from './flag-error.js';

export interface ClusterServeOptions {
  readonly name: string;
  readonly initialCluster: readonly Member[];
  readonly initialClusterState: 'new' | 'existing';
  readonly initialClusterToken: string;
  readonly listenPeer: { readonly host: string; readonly port: number };
  readonly advertisePeerUrl: string;
  readonly heartbeatIntervalMs: number;
  readonly electionTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
  /** Bytes of state per chunk when a follower is sent this member's state (--experimental-snapshot-chunk-bytes). */
  readonly snapshotChunkBytes: number;
  readonly peerCertFile: string;
  readonly peerKeyFile: string;
  readonly peerTrustedCaFile: string;
  /** Member name → the URL to dial it at instead of its peer URL (--experimental-peer-dial-urls). */
  readonly peerDialUrls: ReadonlyMap<string, string>;
}

export const clusterFlagNames = [
  'name',
  'initial-cluster',
  'initial-cluster-state',
  'initial-cluster-token',
  'listen-peer-urls',
  'initial-advertise-peer-urls',
  'heartbeat-interval',
  'election-timeout',
  'snapshot-count',
  'experimental-snapshot-catchup-entries',
  'experimental-snapshot-chunk-bytes',
  'peer-cert-file',
  'peer-key-file',
  'peer-trusted-ca-file',
  'experimental-peer-dial-urls',
] as const;

export const clusterUsage = `
cluster flags (etcd's names; given --initial-cluster, the store is a Raft member):
  --name NAME                            this member's name (default default)
  --initial-cluster N=URL,...            the initial members and their peer URLs (https://host:port)
  --initial-cluster-state new|existing   new: bootstrap a cluster; existing: join one (after stoa member add)
  --initial-cluster-token TOKEN          the cluster's token; every member uses the same (default stoa-cluster)
  --listen-peer-urls URL                 where to accept peer connections (default: this member's URL)
  --initial-advertise-peer-urls URL      this member's peer URL (default: its --initial-cluster entry)
  --heartbeat-interval MS                Raft heartbeat and tick (default 100)
  --election-timeout MS                  Raft election timeout (default 1000)
  --snapshot-count N                     applied entries between snapshots (default 10000)
  --experimental-snapshot-catchup-entries N
                                         entries kept behind a snapshot for slow followers (default 5000)
  --experimental-snapshot-chunk-bytes N  bytes of state per chunk sent to a follower that needs a snapshot
                                         (default 1048576)
  --peer-cert-file FILE                  this member's peer certificate (server and client auth)
  --peer-key-file FILE                   its key
  --peer-trusted-ca-file FILE            the CA that signs every member's peer certificate
  --experimental-peer-dial-urls N=URL,...
                                         dial these members here instead of at their peer URLs (the chaos
                                         harness routes peer links through fault proxies this way)
`;

function integer(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new FlagError(
      `invalid value "${text}" for flag --${flag}: must be an integer from ${min} to ${max}`,
    );
  }
  return n;
}

/** Parses `name=https://host:port,...`: where to dial each named member. */
export function parsePeerDialUrls(text: string): Map<string, string> {
  const urls = new Map<string, string>();
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const eq = part.indexOf('=');
    const name = eq <= 0 ? '' : part.slice(0, eq);
    const url = part.slice(eq + 1);
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (name === '' || parsed?.protocol !== 'https:' || parsed.port === '') {
      throw new FlagError(
        `invalid value "${part}" for flag --experimental-peer-dial-urls: must be name=https://host:port`,
      );
    }
    if (urls.has(name)) {
      throw new FlagError(`--experimental-peer-dial-urls names member ${name} twice`);
    }
    urls.set(name, url);
  }
  return urls;
}

/** Undefined when no cluster flag is given (single-node embedded store). */
export function parseClusterFlags(
  get: (name: string) => string | undefined,
): ClusterServeOptions | undefined {
  const given = clusterFlagNames.filter((name) => get(name) !== undefined);
  const initialClusterText = get('initial-cluster');
  if (initialClusterText === undefined) {
    if (given.length > 0) {
      throw new FlagError(`--${given[0]} needs --initial-cluster (it configures a cluster member)`);
    }
    return undefined;
  }
  if (get('etcd-servers') !== undefined) {
    throw new FlagError('--etcd-servers and --initial-cluster cannot be used together: pick one store');
  }
  let initialCluster: Member[];
  try {
    initialCluster = parseInitialCluster(initialClusterText);
  } catch (error) {
    throw new FlagError((error as Error).message);
  }
  const name = get('name') ?? 'default';
  const self = initialCluster.find((m) => m.name === name);
  if (self === undefined) {
    throw new FlagError(`--initial-cluster has no member named "${name}" (--name)`);
  }
  const state = get('initial-cluster-state') ?? 'new';
  if (state !== 'new' && state !== 'existing') {
    throw new FlagError(`invalid value "${state}" for flag --initial-cluster-state: new or existing`);
  }
  const advertisePeerUrl = get('initial-advertise-peer-urls') ?? self.peerUrl;
  if (advertisePeerUrl !== self.peerUrl) {
    throw new FlagError(
      `--initial-advertise-peer-urls=${advertisePeerUrl} differs from ${name}'s URL in --initial-cluster (${self.peerUrl})`,
    );
  }
  const listenText = get('listen-peer-urls') ?? advertisePeerUrl;
  if (listenText.includes(',')) throw new FlagError('--listen-peer-urls takes one URL');
  let listenPeer: { host: string; port: number };
  try {
    listenPeer = hostPort(listenText);
  } catch {
    throw new FlagError(`invalid value "${listenText}" for flag --listen-peer-urls: not a URL`);
  }
  const heartbeatIntervalMs = integer(get('heartbeat-interval') ?? '100', 'heartbeat-interval', 1, 10_000);
  const electionTimeoutMs = integer(get('election-timeout') ?? '1000', 'election-timeout', 1, 60_000);
  if (electionTimeoutMs < 5 * heartbeatIntervalMs) {
    throw new FlagError(
      `--election-timeout (${electionTimeoutMs}) must be at least 5 times --heartbeat-interval (${heartbeatIntervalMs})`,
    );
  }
  const missing = ['peer-cert-file', 'peer-key-file', 'peer-trusted-ca-file'].filter(
    (f) => get(f) === undefined,
  );
  if (missing.length > 0) {
    throw new FlagError(
      `a cluster member needs ${missing.map((f) => `--${f}`).join(', ')} (peer links use mutual TLS)`,
    );
  }
  return {
    name,
    initialCluster,
    initialClusterState: state,
    initialClusterToken: get('initial-cluster-token') ?? 'stoa-cluster',
    listenPeer,
    advertisePeerUrl,
    heartbeatIntervalMs,
    electionTimeoutMs,
    snapshotCount: integer(get('snapshot-count') ?? '10000', 'snapshot-count', 1, 100_000_000),
    snapshotCatchUpEntries: integer(
      get('experimental-snapshot-catchup-entries') ?? '5000',
      'experimental-snapshot-catchup-entries',
      1,
      100_000_000,
    ),
    snapshotChunkBytes: integer(
      get('experimental-snapshot-chunk-bytes') ?? String(1024 * 1024),
      'experimental-snapshot-chunk-bytes',
      1024,
      8 * 1024 * 1024, // well under the peer frame limit, with room for one large record
    ),
    peerCertFile: get('peer-cert-file') ?? '',
    peerKeyFile: get('peer-key-file') ?? '',
    peerTrustedCaFile: get('peer-trusted-ca-file') ?? '',
    peerDialUrls: parsePeerDialUrls(get('experimental-peer-dial-urls') ?? ''),
  };
}
