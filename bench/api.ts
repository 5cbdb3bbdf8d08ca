// API bench: a real server (in this process, embedded store, temp data dir) over HTTPS/HTTP/2 with the admin
// client certificate: create, get, list (chunked and not), update, watch delivery latency and fan-out.
// Every loop is bounded in count and in time.
import { connect, type ClientHttp2Session } from 'node:http2';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import type { BenchArgs } from './main.js';
import { parseServeFlags } from '../src/server/flags.js';
import { startServer } from '../src/server/server.js';
import { authenticationRows } from './authn.js';

interface Row {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

interface Client {
  request(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; text: string }>;
  stream(path: string, onLine: (line: string) => void): () => void;
  close(): void;
}

function client(url: string, creds: { ca: string; cert: string; key: string }): Client {
  const session: ClientHttp2Session = connect(url, creds);
  session.on('error', () => {});
  return {
    request: (method, path, body, contentType = 'application/json') =>
      new Promise((resolve, reject) => {
        const data = body === undefined ? undefined : JSON.stringify(body);
        const stream = session.request({
          ':method': method,
          ':path': path,
          ...(data === undefined ? {} : { 'content-type': contentType }),
        });
        let status = 0;
        let text = '';
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.setEncoding('utf8');
        stream.on('data', (c: string) => (text += c));
        stream.on('end', () => resolve({ status, text }));
        stream.on('error', reject);
        stream.end(data);
      }),
    stream: (path, onLine) => {
      const stream = session.request({ ':path': path });
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

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await run();
  return { ms: performance.now() - start, value };
}

/** Runs `op(i)` with `concurrency` workers until `count` ops or `durationMs`; returns ops per second. */
async function throughput(
  count: number,
  durationMs: number,
  concurrency: number,
  op: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() < end) {
        await op(next++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

export async function runApiBench(args: BenchArgs): Promise<void> {
  const objects = args.quick ? 1000 : 10_000;
  const watchers = args.quick ? 100 : 1000;
  const durationMs = (args.quick ? 0.5 : args.durationSeconds) * 1000;
  const dir = await mkdtemp(join(tmpdir(), 'stoa-bench-api-'));
  const options = parseServeFlags(['--secure-port', '0', '--data-dir', dir, '--v', 'warn']);
  if (options === 'help') throw new Error('unreachable');
  const server = await startServer(options);
  const rows: Row[] = [];
  const clients: Client[] = [];
  try {
    const config = parse(await readFile(join(dir, 'admin.kubeconfig'), 'utf8')) as {
      clusters: { cluster: Record<string, string> }[];
      users: { user: Record<string, string> }[];
    };
    const b64 = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString();
    const creds = {
      ca: b64(config.clusters[0]?.cluster['certificate-authority-data']),
      cert: b64(config.users[0]?.user['client-certificate-data']),
      key: b64(config.users[0]?.user['client-key-data']),
    };
    for (let i = 0; i < 8; i++) clients.push(client(server.url, creds));
    const pick = (i: number): Client => clients[i % clients.length] as Client;
    const base = '/api/v1/namespaces/default/configmaps';
    const cm = (i: number): unknown => ({
      metadata: { name: `cm-${i}`, labels: { bench: 'api' } },
      data: { k: 'v'.repeat(200) },
    });

    const create = await timed(() =>
      throughput(objects, 120_000, 32, async (i) => {
        const r = await pick(i).request('POST', base, cm(i));
        if (r.status !== 201) throw new Error(`create ${i}: ${r.status} ${r.text}`);
      }),
    );
    rows.push({ name: `create (${objects} objects, 32 concurrent)`, value: create.value, unit: 'ops/s' });
    rows.push({
      name: 'get',
      value: await throughput(1_000_000, durationMs, 32, async (i) => {
        await pick(i).request('GET', `${base}/cm-${i % objects}`);
      }),
      unit: 'ops/s',
    });
    const full = await timed(() => pick(0).request('GET', base));
    rows.push({ name: `list ${objects}, one response`, value: full.ms, unit: 'ms' });
    const chunked = await timed(async () => {
      let token = '';
      for (let page = 0; page < 1000; page++) {
        const r = await pick(0).request(
          'GET',
          `${base}?limit=500${token === '' ? '' : `&continue=${token}`}`,
        );
        token = (JSON.parse(r.text) as { metadata: { continue?: string } }).metadata.continue ?? '';
        if (token === '') break;
      }
    });
    rows.push({ name: `list ${objects}, chunks of 500`, value: chunked.ms, unit: 'ms' });
    rows.push({
      name: 'update (merge patch)',
      value: await throughput(1_000_000, durationMs, 32, async (i) => {
        await pick(i).request(
          'PATCH',
          `${base}/cm-${i % objects}`,
          { data: { n: String(i) } },
          'application/merge-patch+json',
        );
      }),
      unit: 'ops/s',
    });

    // Watch delivery latency: one watcher, one write at a time, from sending the write to receiving the event.
    const arrivals = new Map<string, number>();
    const stopWatch = pick(0).stream(`${base}?watch=1&fieldSelector=metadata.name%3Dlatency`, (line) => {
      const rv = (JSON.parse(line) as { object: { data?: { n?: string } } }).object.data?.n;
      if (rv !== undefined) arrivals.set(rv, performance.now());
    });
    await pick(1).request('POST', base, { metadata: { name: 'latency' }, data: { n: 'start' } });
    await new Promise((r) => setTimeout(r, 200));
    const latencies: number[] = [];
    const samples = args.quick ? 100 : 1000;
    for (let i = 0; i < samples; i++) {
      const sent = performance.now();
      await pick(1).request(
        'PATCH',
        `${base}/latency`,
        { data: { n: String(i) } },
        'application/merge-patch+json',
      );
      for (let spin = 0; spin < 2000 && !arrivals.has(String(i)); spin++)
        await new Promise((r) => setImmediate(r));
      const at = arrivals.get(String(i));
      if (at !== undefined) latencies.push(at - sent);
    }
    stopWatch();
    latencies.sort((a, b) => a - b);
    rows.push({ name: 'watch delivery latency p50', value: percentile(latencies, 50), unit: 'ms' });
    rows.push({ name: 'watch delivery latency p99', value: percentile(latencies, 99), unit: 'ms' });

    // Fan-out: N watchers on one object; time from sending a write until the last watcher has the event.
    const received = new Map<string, number>();
    const lastArrival = new Map<string, number>();
    const stops = Array.from({ length: watchers }, (_, w) =>
      pick(w).stream(`${base}?watch=1&fieldSelector=metadata.name%3Dfanout`, (line) => {
        const n = (JSON.parse(line) as { object: { data?: { n?: string } } }).object.data?.n ?? '';
        received.set(n, (received.get(n) ?? 0) + 1);
        lastArrival.set(n, performance.now());
      }),
    );
    await pick(1).request('POST', base, { metadata: { name: 'fanout' }, data: { n: 'start' } });
    for (let spin = 0; spin < 10_000 && (received.get('start') ?? 0) < watchers; spin++)
      await new Promise((r) => setTimeout(r, 5));
    const fanout: number[] = [];
    for (let i = 0; i < (args.quick ? 10 : 50); i++) {
      const sent = performance.now();
      await pick(1).request(
        'PATCH',
        `${base}/fanout`,
        { data: { n: String(i) } },
        'application/merge-patch+json',
      );
      for (let spin = 0; spin < 10_000 && (received.get(String(i)) ?? 0) < watchers; spin++)
        await new Promise((r) => setTimeout(r, 1));
      const last = lastArrival.get(String(i));
      if (last !== undefined && received.get(String(i)) === watchers) fanout.push(last - sent);
    }
    for (const stop of stops) stop();
    fanout.sort((a, b) => a - b);
    rows.push({
      name: `fan-out to ${watchers} watchers, last delivery p50`,
      value: percentile(fanout, 50),
      unit: 'ms',
    });
    rows.push({
      name: `fan-out to ${watchers} watchers, last delivery p99`,
      value: percentile(fanout, 99),
      unit: 'ms',
    });
  } finally {
    for (const c of clients) c.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
  rows.push(...(await authenticationRows(args.quick)));
  const width = Math.max(...rows.map((r) => r.name.length));
  process.stdout.write(`API bench (${cpus().length} CPUs, HTTPS/HTTP2, embedded store)\n`);
  for (const r of rows)
    process.stdout.write(
      `${r.name.padEnd(width)}  ${r.value.toFixed(r.unit === 'ops/s' ? 0 : 2).padStart(10)} ${r.unit}\n`,
    );
  const out = args.out ?? `bench/results/api-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, JSON.stringify({ scenario: 'api', quick: args.quick, rows }, null, 2));
  process.stdout.write(`${JSON.stringify({ scenario: 'api', rows })}\n`);
}
