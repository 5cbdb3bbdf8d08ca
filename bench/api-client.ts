// What the server-level bench scenarios (api, authz) share: an HTTP/2 client of one API target with the admin
// client certificate, and the runner that starts each target (bench/api-targets.ts), waits until it serves, and
// runs every phase on every target back to back, alternating which goes first, so machine load hits both alike.
// A phase failing on one target leaves that target's figures empty; the others still run.
import { connect, type ClientHttp2Session } from 'node:http2';
import { startApiTarget, type ApiTarget, type Credentials } from './api-targets.js';
import { seededRandom } from './clusters.js';
import { etcdVersion, progress, type LatencySummary, type LoadResult, type Target } from './measure.js';

export interface Client {
  request(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    headers?: Readonly<Record<string, string>>,
  ): Promise<{ status: number; text: string }>;
  /** A watch stream; `onStatus` hears the response status (a watch the server refuses is not 200). */
  stream(path: string, onLine: (line: string) => void, onStatus?: (status: number) => void): () => void;
  close(): void;
}

/** Longest a single request may take before it counts as failed. */
const requestTimeoutMs = 30_000;
const sessionsPerTarget = 8;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function client(url: string, creds: Credentials): Client {
  const session: ClientHttp2Session = connect(url, creds);
  session.on('error', () => {});
  return {
    request: (method, path, body, contentType = 'application/json', headers = {}) =>
      new Promise((resolve, reject) => {
        const data = body === undefined ? undefined : JSON.stringify(body);
        const stream = session.request({
          ':method': method,
          ':path': path,
          ...headers,
          ...(data === undefined ? {} : { 'content-type': contentType }),
        });
        let status = 0;
        let text = '';
        stream.setTimeout(requestTimeoutMs, () => stream.close());
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.setEncoding('utf8');
        stream.on('data', (c: string) => (text += c));
        stream.on('end', () => resolve({ status, text }));
        stream.on('close', () => resolve({ status, text }));
        stream.on('error', reject);
        stream.end(data);
      }),
    stream: (path, onLine, onStatus) => {
      const stream = session.request({ ':path': path });
      stream.on('response', (h) => onStatus?.(Number(h[':status'])));
      let buffer = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => {
        buffer += c;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          onLine(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
        }
      });
      stream.on('error', () => {});
      return () => stream.close();
    },
    close: () => session.close(),
  };
}

export async function expectStatus(
  pending: Promise<{ status: number; text: string }>,
  status: number,
  what: string,
): Promise<string> {
  const r = await pending;
  if (r.status !== status) throw new Error(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
  return r.text;
}

/** One target under measurement: its processes, HTTP/2 sessions and a seeded choice of objects. */
export interface Driver {
  readonly target: ApiTarget;
  readonly clients: readonly Client[];
  pick(i: number): Client;
  readonly random: () => number;
}

export type Measured = LoadResult | LatencySummary;

export interface Phase {
  readonly name: string;
  run(driver: Driver): Promise<Measured>;
}

export type Loads = Record<string, Partial<Record<Target, Measured>>>;
export type Failures = Record<string, Partial<Record<Target, string>>>;

const describe = (m: Measured): string =>
  'opsPerSecond' in m
    ? `${m.opsPerSecond.toFixed(0)} ops/s, p50 ${m.latency.p50.toFixed(2)} ms, p99 ${m.latency.p99.toFixed(2)} ms` +
      (m.errors > 0 ? `, ${m.errors} FAILED (${m.firstError})` : '')
    : `${m.count} samples, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms`;

async function waitReady(driver: Driver): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const ready = await driver
      .pick(0)
      .request('GET', '/readyz')
      .catch(() => ({ status: 0, text: '' }));
    const ns = await driver
      .pick(0)
      .request('GET', '/api/v1/namespaces/default')
      .catch(() => ({ status: 0, text: '' }));
    if (ready.status === 200 && ns.status === 200) return;
    await sleep(100);
  }
  throw new Error(`${driver.target.target}: the API server did not become ready`);
}

/**
 * Starts every target with `nodes` members, runs `phases` in order on each (back to back, alternating which
 * target goes first), and stops every target, also when one fails to start.
 */
export async function runOnTargets(
  targets: readonly Target[],
  nodes: number,
  seed: number,
  phases: readonly Phase[],
): Promise<{ loads: Loads; failures: Failures }> {
  const log = progress;
  const drivers: Driver[] = [];
  const loads: Loads = {};
  const failures: Failures = {};
  try {
    for (const [index, target] of targets.entries()) {
      const api = await startApiTarget(target, nodes, log);
      const clients = Array.from({ length: sessionsPerTarget }, () => client(api.url, api.credentials));
      const driver: Driver = {
        target: api,
        clients,
        pick: (i) => clients[i % clients.length]!,
        random: seededRandom(seed + index),
      };
      drivers.push(driver);
      await waitReady(driver);
      log(`  ${target}: ${api.description}, ready at ${api.url}`);
    }
    for (const [index, phase] of phases.entries()) {
      const order = index % 2 === 0 ? drivers : [...drivers].reverse();
      const figures: Partial<Record<Target, Measured>> = {};
      for (const driver of order) {
        const t = driver.target.target;
        try {
          const measured = await phase.run(driver);
          figures[t] = measured;
          log(`  [${index + 1}/${phases.length}] ${t} ${phase.name}: ${describe(measured)}`);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          (failures[phase.name] ??= {})[t] = message;
          log(`  [${index + 1}/${phases.length}] ${t} ${phase.name}: FAILED: ${message}`);
        }
      }
      loads[phase.name] = figures;
    }
  } finally {
    for (const driver of drivers) {
      for (const c of driver.clients) c.close();
      await driver.target.stop();
    }
  }
  return { loads, failures };
}

const transportDescription = `HTTPS, HTTP/2, ${sessionsPerTarget} sessions per target, admin client certificate; all requests to the first node`;

/** What a server-level report's configuration says of its targets and how they were driven. */
export function serverRunConfiguration(
  targets: readonly Target[],
  nodes: number,
  quick: boolean,
  durationMs: number,
): Record<string, unknown> {
  return {
    targets,
    stoa: `stoa serve on its own store: ${nodes === 1 ? 'embedded engine' : `${nodes}-node replicated cluster`}`,
    etcd: `stoa serve --etcd-servers on a ${nodes}-member etcd cluster (${etcdVersion()})`,
    nodes,
    quick,
    durationSecondsPerPhase: durationMs / 1000,
    transport: transportDescription,
    order: 'each phase runs on both targets back to back, alternating which goes first',
  };
}
