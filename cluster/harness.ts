// A local multi-process cluster: `up`, `down`, `status`. Each node is a separate `stoa serve` process with its
// own API port, peer port and data directory; one CA signs every serving, peer and client certificate, so one
// kubeconfig (a context per node) reaches them all. Logs, PID files and certificates live under the data dir.

import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import {
  createCertificateAuthority,
  issueCertificate,
  loadOrCreate,
  type CertificateAndKey,
} from '../src/pki/index.js';

export interface ClusterOptions {
  readonly nodes: number;
  readonly basePort: number;
  readonly dataDir: string;
  readonly extraServeFlags: readonly string[];
  /** Flags for one node only (the chaos harness gives each node its own peer dial URLs). */
  readonly nodeServeFlags?: (node: NodeLayout) => readonly string[];
  /** Each node's address (default 127.0.0.1 for all): the chaos harness puts nodes in network namespaces. */
  readonly hosts?: readonly string[];
  /** A command the node's process is started through, e.g. `ip netns exec NS` (it must exec, not fork). */
  readonly launchPrefix?: (node: NodeLayout) => readonly string[];
}

export interface NodeLayout {
  readonly name: string;
  /** The address its API and peer listeners bind (127.0.0.1 unless the cluster was given hosts). */
  readonly host: string;
  readonly apiPort: number;
  readonly peerPort: number;
  readonly dir: string;
}

/** What `status -o json` prints for each node. */
export interface NodeStatus {
  readonly name: string;
  readonly pid: number | null;
  readonly running: boolean;
  readonly apiUrl: string;
  readonly healthy: boolean;
  readonly role: string | null;
  readonly term: number | null;
  readonly appliedIndex: number | null;
  readonly leader: string | null;
}

/** Peer ports sit this far above API ports (6443 → 7443), like etcd's 2379/2380 pair. */
const peerPortOffset = 1000;
const startTimeoutMs = 30_000;
const stopTimeoutMs = 10_000;
export const adminStatusPath = '/stoa/admin/v1/status';

const serverEntry = fileURLToPath(new URL('../src/server/main.js', import.meta.url));

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A base port whose n API ports and n peer ports (base + 1000 ...) are free now, below the ephemeral range (for
 * tests, benches and chaos runs that start clusters side by side; a small race with other programs is accepted).
 */
export async function freeBasePort(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    const ports = Array.from({ length: n }, (_, i) => [base + i, base + peerPortOffset + i]).flat();
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range for the cluster');
}

/** Where a node's API is reached. */
export function apiUrlOf(node: NodeLayout): string {
  return `https://${node.host.includes(':') ? `[${node.host}]` : node.host}:${node.apiPort}`;
}

export function layout(
  options: Pick<ClusterOptions, 'nodes' | 'basePort' | 'dataDir' | 'hosts'>,
): NodeLayout[] {
  return Array.from({ length: options.nodes }, (_, i) => ({
    name: `node-${i + 1}`,
    host: options.hosts?.[i] ?? '127.0.0.1',
    apiPort: options.basePort + i,
    peerPort: options.basePort + peerPortOffset + i,
    dir: join(options.dataDir, `node-${i + 1}`),
  }));
}

interface ClusterFile {
  readonly nodes: number;
  readonly basePort: number;
  readonly hosts?: readonly string[];
}

/** The layout is fixed at the first `up`; later calls read it so `up` restarts the same nodes. */
async function resolveLayout(
  options: ClusterOptions,
  given: { nodes: boolean; basePort: boolean },
): Promise<ClusterOptions> {
  const file = join(options.dataDir, 'cluster.json');
  if (!existsSync(file)) {
    await mkdir(options.dataDir, { recursive: true });
    await writeFile(
      file,
      JSON.stringify(
        {
          nodes: options.nodes,
          basePort: options.basePort,
          ...(options.hosts === undefined ? {} : { hosts: options.hosts }),
        },
        null,
        2,
      ) + '\n',
    );
    return options;
  }
  const saved = JSON.parse(await readFile(file, 'utf8')) as ClusterFile;
  if (
    (given.nodes && saved.nodes !== options.nodes) ||
    (given.basePort && saved.basePort !== options.basePort)
  ) {
    throw new Error(
      `${options.dataDir} holds a cluster of ${saved.nodes} nodes from port ${saved.basePort}; ` +
        `use \`stoa member add\` to grow it, or another --data-dir`,
    );
  }
  return {
    ...options,
    nodes: saved.nodes,
    basePort: saved.basePort,
    ...(saved.hosts === undefined ? {} : { hosts: saved.hosts }),
  };
}

interface ClusterCertificates {
  readonly ca: CertificateAndKey;
  readonly admin: CertificateAndKey;
  readonly dir: string;
}

async function certificates(dataDir: string, nodes: readonly NodeLayout[]): Promise<ClusterCertificates> {
  const dir = join(dataDir, 'pki');
  const ca = await loadOrCreate(dir, 'ca', () =>
    createCertificateAuthority({ commonName: 'stoa-cluster-ca' }),
  );
  const admin = await loadOrCreate(dir, 'admin', () =>
    issueCertificate(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' }),
  );
  for (const node of nodes) {
    await loadOrCreate(dir, `${node.name}-serving`, () =>
      issueCertificate(ca, {
        commonName: node.name,
        dnsNames: ['localhost', node.name],
        ipAddresses: [...new Set(['127.0.0.1', node.host])],
        usage: 'server',
      }),
    );
    await loadOrCreate(dir, `${node.name}-peer`, () =>
      issueCertificate(ca, {
        commonName: node.name,
        dnsNames: ['localhost'],
        ipAddresses: [...new Set(['127.0.0.1', node.host])],
        usage: 'peer',
      }),
    );
  }
  return { ca, admin, dir };
}

async function writeKubeconfig(
  dataDir: string,
  nodes: readonly NodeLayout[],
  certs: ClusterCertificates,
): Promise<string> {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: nodes.map((node) => ({
      name: node.name,
      cluster: {
        server: apiUrlOf(node),
        'certificate-authority-data': b64(certs.ca.certPem),
      },
    })),
    users: [
      {
        name: 'admin',
        user: {
          'client-certificate-data': b64(certs.admin.certPem),
          'client-key-data': b64(certs.admin.keyPem),
        },
      },
    ],
    contexts: nodes.map((node) => ({ name: node.name, context: { cluster: node.name, user: 'admin' } })),
    'current-context': nodes[0]?.name ?? '',
  };
  const path = join(dataDir, 'admin.kubeconfig');
  await writeFile(path, YAML.stringify(config), { mode: 0o600 });
  return path;
}

/** The `stoa serve` flags of one node of the cluster. */
export function serveFlags(node: NodeLayout, nodes: readonly NodeLayout[], pkiDir: string): string[] {
  const peerUrl = (n: NodeLayout): string => `https://${n.host}:${n.peerPort}`;
  return [
    `--name=${node.name}`,
    `--data-dir=${node.dir}`,
    `--bind-address=${node.host}`,
    `--secure-port=${node.apiPort}`,
    `--listen-peer-urls=${peerUrl(node)}`,
    `--initial-advertise-peer-urls=${peerUrl(node)}`,
    `--initial-cluster=${nodes.map((n) => `${n.name}=${peerUrl(n)}`).join(',')}`,
    `--initial-cluster-state=new`,
    `--tls-cert-file=${join(pkiDir, `${node.name}-serving.crt`)}`,
    `--tls-private-key-file=${join(pkiDir, `${node.name}-serving.key`)}`,
    `--client-ca-file=${join(pkiDir, 'ca.crt')}`,
    `--peer-cert-file=${join(pkiDir, `${node.name}-peer.crt`)}`,
    `--peer-key-file=${join(pkiDir, `${node.name}-peer.key`)}`,
    `--peer-trusted-ca-file=${join(pkiDir, 'ca.crt')}`,
  ];
}

async function readPid(node: NodeLayout): Promise<number | null> {
  try {
    const pid = Number((await readFile(join(node.dir, 'stoa.pid'), 'utf8')).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A GET with the admin client certificate; resolves with the status code and body, or null if unreachable. */
export function adminGet(
  url: string,
  certs: { ca: string; cert: string; key: string },
  timeoutMs = 2_000,
): Promise<{ status: number; body: string } | null> {
  return new Promise((done) => {
    const req = request(
      url,
      { ca: certs.ca, cert: certs.cert, key: certs.key, timeout: timeoutMs },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => done({ status: res.statusCode ?? 0, body }));
        res.on('error', () => done(null));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(null));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function up(
  requested: ClusterOptions,
  given: { nodes: boolean; basePort: boolean },
  log: (line: string) => void,
): Promise<void> {
  const options = await resolveLayout(requested, given);
  const nodes = layout(options);
  const certs = await certificates(options.dataDir, nodes);
  const kubeconfig = await writeKubeconfig(options.dataDir, nodes, certs);
  const started: NodeLayout[] = [];
  for (const node of nodes) {
    const pid = await readPid(node);
    if (pid !== null && alive(pid)) {
      log(`${node.name}: already running (pid ${pid})`);
      continue;
    }
    await mkdir(node.dir, { recursive: true });
    const logFd = openSync(join(node.dir, 'stoa.log'), 'a');
    try {
      const command = [
        ...(options.launchPrefix?.(node) ?? []),
        process.execPath,
        serverEntry,
        'serve',
        ...serveFlags(node, nodes, certs.dir),
        ...options.extraServeFlags,
        ...(options.nodeServeFlags?.(node) ?? []),
      ];
      const child = spawn(command[0]!, command.slice(1), {
        detached: true,
        stdio: ['ignore', logFd, logFd],
      });
      if (child.pid === undefined) throw new Error(`${node.name}: could not start`);
      await writeFile(join(node.dir, 'stoa.pid'), `${child.pid}\n`);
      child.unref();
      started.push(node);
      log(
        `${node.name}: started (pid ${child.pid}), API ${apiUrlOf(node)}, log ${join(node.dir, 'stoa.log')}`,
      );
    } finally {
      closeSync(logFd);
    }
  }
  const tls = { ca: certs.ca.certPem, cert: certs.admin.certPem, key: certs.admin.keyPem };
  const deadline = Date.now() + startTimeoutMs;
  for (const node of started) {
    for (;;) {
      const reply = await adminGet(`${apiUrlOf(node)}/livez`, tls);
      if (reply?.status === 200) break;
      const pid = await readPid(node);
      if (pid === null || !alive(pid))
        throw new Error(`${node.name} exited; see ${join(node.dir, 'stoa.log')}`);
      if (Date.now() > deadline)
        throw new Error(`${node.name} did not become live in ${startTimeoutMs / 1000}s`);
      await sleep(200);
    }
  }
  log(`kubeconfig: ${resolve(kubeconfig)} (contexts ${nodes.map((n) => n.name).join(', ')})`);
  log(`try: kubectl --kubeconfig ${resolve(kubeconfig)} get namespaces`);
}

export async function down(dataDir: string, log: (line: string) => void): Promise<void> {
  const saved = await readClusterFile(dataDir);
  for (const node of layout({ ...saved, dataDir })) {
    const pid = await readPid(node);
    if (pid === null || !alive(pid)) {
      log(`${node.name}: not running`);
      await rm(join(node.dir, 'stoa.pid'), { force: true });
      continue;
    }
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + stopTimeoutMs;
    while (alive(pid) && Date.now() < deadline) await sleep(100);
    if (alive(pid)) {
      process.kill(pid, 'SIGKILL');
      log(`${node.name}: killed (pid ${pid}) after ${stopTimeoutMs / 1000}s`);
    } else {
      log(`${node.name}: stopped (pid ${pid})`);
    }
    await rm(join(node.dir, 'stoa.pid'), { force: true });
  }
}

async function readClusterFile(dataDir: string): Promise<ClusterFile> {
  try {
    return JSON.parse(await readFile(join(dataDir, 'cluster.json'), 'utf8')) as ClusterFile;
  } catch {
    throw new Error(`no cluster in ${dataDir} (no cluster.json); run \`up\` first`);
  }
}

export async function status(dataDir: string): Promise<NodeStatus[]> {
  const saved = await readClusterFile(dataDir);
  const nodes = layout({ ...saved, dataDir });
  const pki = join(dataDir, 'pki');
  const tls = {
    ca: await readFile(join(pki, 'ca.crt'), 'utf8'),
    cert: await readFile(join(pki, 'admin.crt'), 'utf8'),
    key: await readFile(join(pki, 'admin.key'), 'utf8'),
  };
  return Promise.all(
    nodes.map(async (node): Promise<NodeStatus> => {
      const pid = await readPid(node);
      const running = pid !== null && alive(pid);
      const apiUrl = apiUrlOf(node);
      const health = running ? await adminGet(`${apiUrl}/readyz`, tls) : null;
      const raft = running ? await adminGet(`${apiUrl}${adminStatusPath}`, tls) : null;
      let parsed: { role?: string; term?: number; appliedIndex?: number; leader?: string } = {};
      if (raft?.status === 200) {
        try {
          parsed = JSON.parse(raft.body) as typeof parsed;
        } catch {
          parsed = {};
        }
      }
      return {
        name: node.name,
        pid: running ? pid : null,
        running,
        apiUrl,
        healthy: health?.status === 200,
        role: parsed.role ?? null,
        term: parsed.term ?? null,
        appliedIndex: parsed.appliedIndex ?? null,
        leader: parsed.leader ?? null,
      };
    }),
  );
}

export function formatStatus(rows: readonly NodeStatus[]): string {
  const header = ['NAME', 'PID', 'API', 'ROLE', 'TERM', 'APPLIED', 'LEADER', 'HEALTH'];
  const lines = rows.map((r) => [
    r.name,
    r.pid === null ? '-' : String(r.pid),
    r.apiUrl,
    r.role ?? '-',
    r.term === null ? '-' : String(r.term),
    r.appliedIndex === null ? '-' : String(r.appliedIndex),
    r.leader ?? '-',
    !r.running ? 'down' : r.healthy ? 'ready' : 'not ready',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  return (
    [header, ...lines]
      .map((cols) =>
        cols
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
