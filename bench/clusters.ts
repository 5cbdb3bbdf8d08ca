// The two clusters the cluster bench drives, both as separate processes on loopback with temp data dirs:
// n bench/kv-node.ts processes (Stoa's ReplicatedStore) and n Debian etcd members. Both can kill -9 a member
// and restart it on its data dir, and say which member leads. Every process is killed by its PID and every
// dir removed by stop(), also when startup fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCertificateAuthority, issueCertificate } from '../src/pki/index.js';
import { nodeIdFromName } from '../src/replica/ids.js';
import type { Member } from '../src/replica/ids.js';
import type { KVStore } from '../src/storage/contract.js';
import { noop } from 'cockatiel';
import { Etcd3 } from 'etcd3';
import { EtcdStore } from '../src/storage/etcd/engine.js';
import { etcdBinary, etcdMemberArgs, etcdMemberSpecs, freePort } from '../test/support/etcd.js';
import { tempDir } from '../test/support/tmp.js';
import type { KvNodeConfig } from './kv-node.js';
import { RemotePool, RemoteStore } from './kv-protocol.js';
import type { Target } from './measure.js';

/** Raft timing of both clusters: etcd's defaults. */
export const heartbeatIntervalMs = 100;
export const electionTimeoutMs = 1000;

export interface BenchCluster {
  readonly target: Target;
  readonly size: number;
  /** A client over the given members (default: all); requests are spread over them. */
  client(members?: readonly number[]): Promise<KVStore>;
  /** The index of the current leader, once every live member agrees on one (waits up to `timeoutMs`). */
  leader(timeoutMs?: number): Promise<number>;
  /** The leader's Raft term (a change during a phase means an election happened). */
  term(): Promise<number>;
  /**
   * Stoa only: leader-down hints taken by the given members since they started (a follower whose transport
   * saw the leader's process go, and campaigned without waiting for the election timeout).
   */
  leaderDownHints?(members: readonly number[]): Promise<number>;
  /** kill -9 of member i; resolves when the process is gone. */
  kill(i: number): Promise<void>;
  /** Restarts member i on its data dir and waits until it has caught up with the leader's commit index. */
  restart(i: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

const alive = (child: ChildProcess | undefined): child is ChildProcess =>
  child !== undefined && child.exitCode === null && child.signalCode === null;

/** Spawns and tracks member processes; keeps the last stderr lines of each for error messages. */
class Processes {
  readonly children: (ChildProcess | undefined)[] = [];
  readonly stderr: string[][] = [];

  async spawn(i: number, command: string, args: readonly string[]): Promise<ChildProcess> {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children[i] = child;
    const lines: string[] = [];
    this.stderr[i] = lines;
    child.stderr?.on('data', (chunk: Buffer) => {
      lines.push(chunk.toString('utf8'));
      if (lines.length > 30) lines.shift();
    });
    child.stdout?.resume();
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    return child;
  }

  async kill(i: number): Promise<void> {
    const child = this.children[i];
    if (alive(child) && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    if (child !== undefined) await exited(child);
  }

  async killAll(): Promise<void> {
    await Promise.all(this.children.map((_, i) => this.kill(i)));
  }

  /** SIGTERM (so that a profiled process writes its profile), then SIGKILL after `graceMs`. */
  async terminateAll(graceMs: number): Promise<void> {
    await Promise.all(
      this.children.map(async (child, i) => {
        if (!alive(child) || child.pid === undefined) return;
        process.kill(child.pid, 'SIGTERM');
        await Promise.race([exited(child), sleep(graceMs)]);
        await this.kill(i);
      }),
    );
  }

  /** Throws with the member's stderr when it exited. */
  checkAlive(i: number, what: string): void {
    if (!alive(this.children[i])) {
      throw new Error(`${what} member ${i} exited: ${(this.stderr[i] ?? []).join('').slice(-2000)}`);
    }
  }
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** A small seeded PRNG (mulberry32) for the client's choice of member. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function startStoaCluster(
  n: number,
  seed: number,
  tuning: { readonly snapshotCount?: number } = {},
): Promise<BenchCluster> {
  const dir = await tempDir('bench-stoa');
  const procs = new Processes();
  const nodeMain = fileURLToPath(new URL('./kv-node.js', import.meta.url));
  const random = seededRandom(seed);
  const clients: RemoteStore[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(clients.map((c) => c.close()));
    await procs.terminateAll(5000);
    await dir.remove();
  };
  try {
    const ca = await createCertificateAuthority({ commonName: 'stoa-bench-peers' });
    const members: Member[] = [];
    const clientPorts: number[] = [];
    for (let i = 1; i <= n; i++) {
      const name = `node-${i}`;
      members.push({ id: nodeIdFromName(name), name, peerUrl: `https://127.0.0.1:${await freePort()}` });
      clientPorts.push(await freePort());
    }
    const configs: string[] = [];
    for (const [i, member] of members.entries()) {
      const cert = await issueCertificate(ca, {
        commonName: member.name,
        ipAddresses: ['127.0.0.1'],
        usage: 'peer',
      });
      const config: KvNodeConfig = {
        replica: {
          name: member.name,
          dataDir: join(dir.path, member.name),
          initialCluster: members,
          initialClusterState: 'new',
          clusterToken: 'stoa-bench',
          listenPeer: { host: '127.0.0.1', port: Number(new URL(member.peerUrl).port) },
          tls: { certPem: cert.certPem, keyPem: cert.keyPem, trustedCaPem: ca.certPem },
          heartbeatIntervalMs,
          electionTimeoutMs,
          // As etcd by default: no automatic compaction.
          retentionMs: 0,
          ...tuning,
        },
        clientPort: clientPorts[i]!,
      };
      const path = join(dir.path, `${member.name}.json`);
      await writeFile(path, JSON.stringify(config));
      configs.push(path);
    }
    const statusClient = (i: number): RemoteStore => {
      const c = new RemoteStore('127.0.0.1', clientPorts[i]!);
      clients.push(c);
      return c;
    };
    const probes = members.map((_, i) => statusClient(i));
    const startMember = async (i: number): Promise<void> => {
      // STOA_BENCH_NODE_ARGS: extra node flags for the Stoa processes, e.g. --cpu-prof --cpu-prof-dir=DIR.
      const nodeArgs = (process.env['STOA_BENCH_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
      await procs.spawn(i, process.execPath, [...nodeArgs, nodeMain, configs[i]!]);
      await until(`stoa member ${i} listening`, 30_000, async () => {
        procs.checkAlive(i, 'stoa');
        return (await probes[i]!.nodeStatus()).role;
      });
    };
    const leader = async (timeoutMs = 30_000): Promise<number> =>
      until('a stoa leader', timeoutMs, async () => {
        const statuses = await Promise.all(
          members.map(async (_, i) => (alive(procs.children[i]) ? await probes[i]!.nodeStatus() : undefined)),
        );
        const leaders = new Set(statuses.filter((s) => s !== undefined).map((s) => s.leader));
        const index = statuses.findIndex((s) => s?.role === 'leader');
        return leaders.size === 1 && index >= 0 ? index : undefined;
      });
    await Promise.all(members.map((_, i) => startMember(i)));
    await leader();
    return {
      target: 'stoa',
      size: n,
      async client(which = members.map((_, i) => i)) {
        const remotes = which.map((i) => statusClient(i));
        return new RemotePool(remotes, () => Math.floor(random() * remotes.length));
      },
      leader,
      term: async () => (await probes[await leader()]!.nodeStatus()).term,
      async leaderDownHints(which) {
        const statuses = await Promise.all(which.map((i) => probes[i]!.nodeStatus()));
        return statuses.reduce((sum, s) => sum + s.leaderDownHints, 0);
      },
      kill: (i) => procs.kill(i),
      async restart(i) {
        await startMember(i);
        const lead = await leader();
        const target = (await probes[lead]!.nodeStatus()).commitIndex;
        await until(`stoa member ${i} caught up`, 60_000, async () =>
          (await probes[i]!.nodeStatus()).appliedIndex >= target ? true : undefined,
        );
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

interface EtcdStatusJson {
  header?: { member_id?: string };
  leader?: string;
  raftIndex?: string;
  raftAppliedIndex?: string;
  raftTerm?: string;
}

async function etcdStatus(clientUrl: string): Promise<EtcdStatusJson> {
  const response = await fetch(`${clientUrl}/v3/maintenance/status`, {
    method: 'POST',
    body: '{}',
    signal: AbortSignal.timeout(1000),
  });
  return (await response.json()) as EtcdStatusJson;
}

export async function startEtcdBenchCluster(n: number): Promise<BenchCluster> {
  const dir = await tempDir('bench-etcd');
  const procs = new Processes();
  const stores: KVStore[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    await procs.killAll();
    await dir.remove();
  };
  try {
    const specs = await etcdMemberSpecs(n, dir.path);
    const argsOf = (i: number): string[] =>
      etcdMemberArgs(specs[i]!, specs, `stoa-bench-${process.pid}`, [
        `--heartbeat-interval=${heartbeatIntervalMs}`,
        `--election-timeout=${electionTimeoutMs}`,
      ]);
    const leader = async (timeoutMs = 30_000): Promise<number> =>
      until('an etcd leader', timeoutMs, async () => {
        const statuses = await Promise.all(
          specs.map(async (s, i) => (alive(procs.children[i]) ? await etcdStatus(s.clientUrl) : undefined)),
        );
        const leaders = new Set(statuses.filter((s) => s !== undefined).map((s) => s.leader));
        const index = statuses.findIndex((s) => s !== undefined && s.leader === s.header?.member_id);
        return leaders.size === 1 && index >= 0 ? index : undefined;
      });
    const startMember = async (i: number): Promise<void> => {
      await procs.spawn(i, etcdBinary, argsOf(i));
    };
    for (let i = 0; i < n; i++) await startMember(i);
    for (let i = 0; i < n; i++) {
      await until(`etcd member ${i} healthy`, 30_000, async () => {
        procs.checkAlive(i, 'etcd');
        const response = await fetch(`${specs[i]!.clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
        return ((await response.json()) as { health?: string }).health === 'true' ? true : undefined;
      });
    }
    await leader();
    return {
      target: 'etcd',
      size: n,
      async client(which = specs.map((_, i) => i)) {
        // The bench does its own retrying (the failover writers move to another member); the etcd3 client's
        // default per-host circuit breaker would refuse a member for 5 s after 3 errors (as during an
        // election) and its global policy would retry 3 times, both of which would lengthen etcd's figures.
        const client = new Etcd3({
          hosts: which.map((i) => specs[i]!.clientUrl),
          dialTimeout: 5000,
          faultHandling: { host: () => noop, global: noop },
        });
        const store = new EtcdStore(client);
        stores.push(store);
        return store;
      },
      leader,
      term: async () => Number((await etcdStatus(specs[await leader()]!.clientUrl)).raftTerm),
      kill: (i) => procs.kill(i),
      async restart(i) {
        await startMember(i);
        const lead = await leader();
        const target = Number((await etcdStatus(specs[lead]!.clientUrl)).raftIndex);
        await until(`etcd member ${i} caught up`, 60_000, async () => {
          procs.checkAlive(i, 'etcd');
          const status = await etcdStatus(specs[i]!.clientUrl);
          return Number(status.raftAppliedIndex ?? status.raftIndex) >= target ? true : undefined;
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
