// Starts and stops real etcd processes (/usr/bin/etcd) on free loopback ports with temp data dirs.
// Every process is killed by its PID and every dir removed by stop(), also when startup fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { tempDir } from './tmp.js';

export const etcdBinary = process.env['STOA_ETCD_BINARY'] ?? '/usr/bin/etcd';

export interface EtcdOptions {
  /** etcd's --experimental-watch-progress-notify-interval (default: etcd's 10 minutes). */
  readonly progressNotifyIntervalMs?: number;
  /** Give up waiting for health after this long. */
  readonly startTimeoutMs?: number;
}

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  readonly pid: number;
}

export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's client URL. */
  readonly endpoints: string[];
  /** Kills every member by PID, waits for them to exit, removes the data dirs. */
  stop(): Promise<void>;
}

export interface EtcdMemberSpec {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
}

/** n members named etcd0.. on free loopback ports, with their data dirs under `dir`. */
export async function etcdMemberSpecs(n: number, dir: string): Promise<EtcdMemberSpec[]> {
  const specs: EtcdMemberSpec[] = [];
  for (let i = 0; i < n; i++) {
    const name = `etcd${i}`;
    specs.push({
      name,
      clientUrl: `http://127.0.0.1:${await freePort()}`,
      peerUrl: `http://127.0.0.1:${await freePort()}`,
      dataDir: `${dir}/${name}`,
    });
  }
  return specs;
}

/** The command line of one member of a new cluster of `specs`, plus `extra` flags. */
export function etcdMemberArgs(
  spec: EtcdMemberSpec,
  specs: readonly EtcdMemberSpec[],
  token: string,
  extra: readonly string[] = [],
): string[] {
  return [
    `--name=${spec.name}`,
    `--data-dir=${spec.dataDir}`,
    `--listen-client-urls=${spec.clientUrl}`,
    `--advertise-client-urls=${spec.clientUrl}`,
    `--listen-peer-urls=${spec.peerUrl}`,
    `--initial-advertise-peer-urls=${spec.peerUrl}`,
    `--initial-cluster=${specs.map((s) => `${s.name}=${s.peerUrl}`).join(',')}`,
    '--initial-cluster-state=new',
    `--initial-cluster-token=${token}`,
    '--logger=zap',
    '--log-level=error',
    ...extra,
  ];
}

/** A free loopback TCP port (the OS picks it; a small race with other programs is accepted). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    const body = (await response.json()) as { health?: string };
    return body.health === 'true';
  } catch {
    return false;
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** Starts an n-member etcd cluster (n = 1: a single member) and waits until every member is healthy. */
export async function startEtcdCluster(n: number, options: EtcdOptions = {}): Promise<EtcdCluster> {
  const dir = await tempDir('etcd');
  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const child of children) {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid, 'SIGKILL');
      }
    }
    await Promise.all(children.map(exited));
    await dir.remove();
  };
  try {
    const specs = await etcdMemberSpecs(n, dir.path);
    const stderr: string[] = [];
    const members: EtcdMember[] = [];
    for (const spec of specs) {
      const args = etcdMemberArgs(
        spec,
        specs,
        `stoa-test-${process.pid}`,
        options.progressNotifyIntervalMs !== undefined
          ? [`--experimental-watch-progress-notify-interval=${options.progressNotifyIntervalMs}ms`]
          : [],
      );
      const child = spawn(etcdBinary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(child);
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr.push(chunk.toString('utf8'));
        if (stderr.length > 50) stderr.shift();
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      members.push({ ...spec, pid: child.pid! });
    }
    const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
    for (const member of members) {
      while (!(await healthy(member.clientUrl))) {
        const dead = children.find((c) => c.exitCode !== null || c.signalCode !== null);
        if (dead !== undefined) throw new Error(`etcd exited during startup: ${stderr.join('')}`);
        if (Date.now() > deadline) throw new Error(`etcd did not become healthy: ${stderr.join('')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return { members, endpoints: members.map((m) => m.clientUrl), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A single-member etcd. */
export function startEtcd(options: EtcdOptions = {}): Promise<EtcdCluster> {
  return startEtcdCluster(1, options);
}
