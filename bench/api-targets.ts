// The API servers the api bench drives, each as separate processes on loopback with temp data dirs:
// - stoa: `stoa serve` on its own store: the embedded engine for one node, or an N-node replicated cluster
//   started by the cluster harness (the same processes `npm run cluster` starts);
// - etcd: one `stoa serve --etcd-servers` on an N-member Debian etcd cluster (the API server kube-apiserver users
//   run, on the store they run it on).
// The bench talks to the first node's API in both cases. stop() ends every process by its PID and removes every
// dir, also when startup fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { down, freeBasePort, up } from '../cluster/harness.js';
import { startEtcdCluster, type EtcdCluster } from '../test/support/etcd.js';
import { tempDir } from '../test/support/tmp.js';
import { unreachable } from '../src/util/assert.js';
import type { Target } from './measure.js';

export interface Credentials {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export interface ApiTarget {
  readonly target: Target;
  readonly url: string;
  readonly credentials: Credentials;
  /** What runs behind the URL, for the report. */
  readonly description: string;
  stop(): Promise<void>;
}

const serverEntry = fileURLToPath(new URL('../src/server/main.js', import.meta.url));
const startTimeoutMs = 30_000;

async function credentialsOf(kubeconfigPath: string): Promise<Credentials> {
  const config = parse(await readFile(kubeconfigPath, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
    users: { user: Record<string, string> }[];
  };
  const b64 = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString('utf8');
  return {
    ca: b64(config.clusters[0]?.cluster['certificate-authority-data']),
    cert: b64(config.users[0]?.user['client-certificate-data']),
    key: b64(config.users[0]?.user['client-key-data']),
  };
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** `stoa serve --secure-port 0` as a child; resolves with the port it printed. */
async function serve(
  dataDir: string,
  flags: readonly string[],
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [serverEntry, 'serve', '--secure-port', '0', '--data-dir', dataDir, '--v', 'warn', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr.push(chunk.toString('utf8'));
    if (stderr.length > 30) stderr.shift();
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`stoa serve did not start in ${startTimeoutMs / 1000} s: ${stderr.join('')}`)),
        startTimeoutMs,
      );
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        const m = /port (\d+)\)/.exec(stdout);
        if (m !== null) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`stoa serve exited with ${code}: ${stderr.join('')}`));
      });
    });
    child.stdout?.resume();
    return { child, port };
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null)
      process.kill(child.pid, 'SIGKILL');
  }, 10_000);
  await exited(child);
  clearTimeout(timer);
}

/** One Stoa API server on its own store: embedded (nodes = 1) or an N-node replicated cluster. */
export async function startStoaApi(nodes: number, log: (line: string) => void): Promise<ApiTarget> {
  const dir = await tempDir('bench-api-stoa');
  if (nodes === 1) {
    try {
      const { child, port } = await serve(dir.path, []);
      return {
        target: 'stoa',
        url: `https://127.0.0.1:${port}`,
        credentials: await credentialsOf(join(dir.path, 'admin.kubeconfig')),
        description: 'one stoa serve process, embedded LevelDB engine',
        stop: async () => {
          await stopChild(child);
          await dir.remove();
        },
      };
    } catch (error) {
      await dir.remove();
      throw error;
    }
  }
  const quiet = (): void => {};
  const stop = async (): Promise<void> => {
    try {
      await down(dir.path, quiet);
    } finally {
      await dir.remove();
    }
  };
  try {
    const basePort = await freeBasePort(nodes);
    await up(
      { nodes, basePort, dataDir: dir.path, extraServeFlags: ['--v', 'warn'] },
      { nodes: true, basePort: true },
      quiet,
    );
    log(`  stoa: ${nodes}-node cluster up (API ports ${basePort}..${basePort + nodes - 1})`);
    return {
      target: 'stoa',
      url: `https://127.0.0.1:${basePort}`,
      credentials: await credentialsOf(join(dir.path, 'admin.kubeconfig')),
      description: `${nodes} stoa serve processes (replicated engine, Raft); the bench talks to node-1`,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One Stoa API server on an N-member etcd cluster (--etcd-servers with every member's URL). */
export async function startEtcdApi(nodes: number, log: (line: string) => void): Promise<ApiTarget> {
  const dir = await tempDir('bench-api-etcd');
  let etcd: EtcdCluster | undefined;
  try {
    etcd = await startEtcdCluster(nodes);
    log(`  etcd: ${nodes}-member cluster up`);
    const { child, port } = await serve(dir.path, ['--etcd-servers', etcd.endpoints.join(',')]);
    const cluster = etcd;
    return {
      target: 'etcd',
      url: `https://127.0.0.1:${port}`,
      credentials: await credentialsOf(join(dir.path, 'admin.kubeconfig')),
      description: `one stoa serve process with --etcd-servers on a ${nodes}-member etcd cluster`,
      stop: async () => {
        await stopChild(child);
        await cluster.stop();
        await dir.remove();
      },
    };
  } catch (error) {
    await etcd?.stop();
    await dir.remove();
    throw error;
  }
}

export function startApiTarget(
  target: Target,
  nodes: number,
  log: (line: string) => void,
): Promise<ApiTarget> {
  switch (target) {
    case 'stoa':
      return startStoaApi(nodes, log);
    case 'etcd':
      return startEtcdApi(nodes, log);
    default:
      return unreachable(target);
  }
}
