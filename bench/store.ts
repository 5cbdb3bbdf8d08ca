// Store bench: the embedded engine against a single-member etcd (Debian's), side by side in one run, with the
// same durability (both fsync every acknowledged write). Every loop is bounded in time and in count.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem, release, platform } from 'node:os';
import { dirname } from 'node:path';
import type { BenchArgs } from './main.js';
import type { KVStore } from '../src/storage/contract.js';
import { openEmbeddedStore } from '../src/storage/embedded/engine.js';
import { openEtcdStore } from '../src/storage/etcd/engine.js';
import { etcdBinary, startEtcd } from '../test/support/etcd.js';
import { tempDir } from '../test/support/tmp.js';

export interface BenchRow {
  readonly name: string;
  readonly unit: string;
  readonly higherIsBetter: boolean;
  readonly stoa: number;
  readonly etcd: number;
  /** stoa / etcd. */
  readonly ratio: number;
}

const opsMax = 1_000_000;
const concurrentWriters = 64;
const concurrentReaders = 64;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const putOne = (store: KVStore, key: string, value: Uint8Array): Promise<unknown> =>
  store.txn({ compare: [], success: [{ type: 'put', key, value }], failure: [] });

async function putLatency(store: KVStore, durationMs: number): Promise<{ p50: number; p99: number }> {
  const value = Buffer.alloc(256, 'v');
  const latencies: number[] = [];
  const end = performance.now() + durationMs;
  for (let i = 0; i < opsMax && performance.now() < end; i++) {
    const start = performance.now();
    await putOne(store, `/bench/latency/${i % 1000}`, value);
    latencies.push(performance.now() - start);
  }
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function putThroughput(store: KVStore, durationMs: number, valueBytes: number): Promise<number> {
  const value = Buffer.alloc(valueBytes, 'v');
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrentWriters }, async (_, w) => {
      for (let i = 0; i < opsMax && performance.now() < end; i++) {
        await putOne(store, `/bench/put${valueBytes}/${w}/${i % 100}`, value);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

async function rangeThroughput(store: KVStore, durationMs: number, list: boolean): Promise<number> {
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrentReaders }, async (_, r) => {
      for (let i = 0; i < opsMax && performance.now() < end; i++) {
        const result = await store.range(
          list ? { prefix: '/bench/range/' } : { key: `/bench/range/${(r + i) % 100}` },
        );
        if (result.kvs.length !== (list ? 100 : 1)) throw new Error('bench range returned the wrong keys');
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

async function watchLatency(store: KVStore, durationMs: number): Promise<{ p50: number; p99: number }> {
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let wake: (() => void) | undefined;
  const watch = store.watch({ prefix: '/bench/watch/' }, {}, (response) => {
    if (response.type !== 'events') return;
    const now = performance.now();
    for (const event of response.events) {
      const sent = sentAt.get(event.kv.key);
      if (sent !== undefined) latencies.push(now - sent);
      sentAt.delete(event.kv.key);
    }
    wake?.();
  });
  await watch.ready;
  try {
    const value = Buffer.alloc(256, 'v');
    const end = performance.now() + durationMs;
    let i = 0;
    // 4 writers, so that the watcher sees a steady stream rather than one event at a time.
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let n = 0; n < opsMax && performance.now() < end; n++) {
          const key = `/bench/watch/${w}/${i++}`;
          sentAt.set(key, performance.now());
          await putOne(store, key, value);
        }
      }),
    );
    const deadline = performance.now() + 10_000;
    while (sentAt.size > 0 && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    if (sentAt.size > 0) throw new Error(`${sentAt.size} watch events never arrived`);
  } finally {
    watch.close();
  }
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

interface EngineFigures {
  putLatencyP50: number;
  putLatencyP99: number;
  put256: number;
  put2k: number;
  rangeKey: number;
  rangeList: number;
  watchP50: number;
  watchP99: number;
}

type Phase = (store: KVStore) => Promise<Partial<EngineFigures>>;

/** The measured phases, in order; each runs on both engines back to back, so load changes hit both alike. */
function phases(durationMs: number): Array<{ name: string; run: Phase }> {
  return [
    {
      name: 'put latency, 1 sequential client',
      run: async (store) => {
        const latency = await putLatency(store, durationMs);
        return { putLatencyP50: latency.p50, putLatencyP99: latency.p99 };
      },
    },
    { name: 'put 256 B', run: async (store) => ({ put256: await putThroughput(store, durationMs, 256) }) },
    { name: 'put 2 KiB', run: async (store) => ({ put2k: await putThroughput(store, durationMs, 2048) }) },
    {
      name: 'range 1 key',
      run: async (store) => ({ rangeKey: await rangeThroughput(store, durationMs, false) }),
    },
    {
      name: 'range 100 keys',
      run: async (store) => ({ rangeList: await rangeThroughput(store, durationMs, true) }),
    },
    {
      name: 'watch latency',
      run: async (store) => {
        const watch = await watchLatency(store, durationMs);
        return { watchP50: watch.p50, watchP99: watch.p99 };
      },
    },
  ];
}

async function preload(store: KVStore): Promise<void> {
  const value = Buffer.alloc(256, 'r');
  await Promise.all(Array.from({ length: 100 }, (_, i) => putOne(store, `/bench/range/${i}`, value)));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

async function measure(
  engines: ReadonlyArray<{ name: 'stoa' | 'etcd'; store: KVStore }>,
  durationMs: number,
  rounds: number,
  log: (line: string) => void,
): Promise<Record<'stoa' | 'etcd', EngineFigures>> {
  const samples = { stoa: [], etcd: [] } as Record<'stoa' | 'etcd', Array<Partial<EngineFigures>>>;
  for (const engine of engines) await preload(engine.store);
  for (let round = 0; round < rounds; round++) {
    const figures = { stoa: {}, etcd: {} } as Record<'stoa' | 'etcd', Partial<EngineFigures>>;
    for (const [index, phase] of phases(durationMs).entries()) {
      // Alternate which engine goes first, so neither always runs right after the other's load.
      const order = (index + round) % 2 === 0 ? engines : [...engines].reverse();
      for (const engine of order) {
        const result = await phase.run(engine.store);
        Object.assign(figures[engine.name], result);
        const shown = Object.entries(result).map(([k, v]) => `${k} ${v.toFixed(2)}`);
        log(`  round ${round + 1} ${engine.name} ${phase.name}: ${shown.join(', ')}`);
      }
    }
    samples.stoa.push(figures.stoa);
    samples.etcd.push(figures.etcd);
  }
  const medians = (list: Array<Partial<EngineFigures>>): EngineFigures => {
    const keys = Object.keys(list[0]!) as Array<keyof EngineFigures>;
    return Object.fromEntries(
      keys.map((k) => [k, median(list.map((f) => f[k]!))]),
    ) as unknown as EngineFigures;
  };
  return { stoa: medians(samples.stoa), etcd: medians(samples.etcd) };
}

function rows(stoa: EngineFigures, etcd: EngineFigures): BenchRow[] {
  const row = (name: string, unit: string, higherIsBetter: boolean, key: keyof EngineFigures): BenchRow => ({
    name,
    unit,
    higherIsBetter,
    stoa: stoa[key],
    etcd: etcd[key],
    ratio: stoa[key] / etcd[key],
  });
  return [
    row('put latency p50, 1 sequential client, 256 B', 'ms', false, 'putLatencyP50'),
    row('put latency p99, 1 sequential client, 256 B', 'ms', false, 'putLatencyP99'),
    row(`put throughput, ${concurrentWriters} writers, 256 B`, 'ops/s', true, 'put256'),
    row(`put throughput, ${concurrentWriters} writers, 2 KiB`, 'ops/s', true, 'put2k'),
    row(`range throughput, 1 key, ${concurrentReaders} readers`, 'ops/s', true, 'rangeKey'),
    row(`range throughput, 100 keys, ${concurrentReaders} readers`, 'ops/s', true, 'rangeList'),
    row('watch delivery latency p50 (put to event)', 'ms', false, 'watchP50'),
    row('watch delivery latency p99 (put to event)', 'ms', false, 'watchP99'),
  ];
}

function table(result: readonly BenchRow[]): string {
  const format = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
  const lines = [['row', 'unit', 'stoa', 'etcd', 'stoa/etcd', 'goal met'].join(' | ')];
  for (const r of result) {
    const met = r.higherIsBetter ? r.ratio >= 1 : r.ratio <= 1;
    lines.push(
      [r.name, r.unit, format(r.stoa), format(r.etcd), r.ratio.toFixed(2), met ? 'yes' : 'NO'].join(' | '),
    );
  }
  return lines.join('\n');
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

function etcdVersion(): string {
  try {
    return execFileSync(etcdBinary, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export async function runStoreBench(args: BenchArgs): Promise<void> {
  const durationMs = args.quick ? 300 : args.durationSeconds * 1000;
  const log = (line: string): void => void process.stderr.write(line + '\n');
  const loadBefore = loadavg();

  log(`embedded engine (LevelDB, fsync per group commit) and single-member etcd (${etcdVersion()}):`);
  const dir = await tempDir('bench-store');
  let figures: Record<'stoa' | 'etcd', EngineFigures>;
  let groupCommit: { batches: number; txns: number };
  try {
    const etcdProcess = await startEtcd();
    try {
      const embedded = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
      try {
        const etcdStore = await openEtcdStore({ endpoints: etcdProcess.endpoints });
        try {
          figures = await measure(
            [
              { name: 'stoa', store: embedded },
              { name: 'etcd', store: etcdStore },
            ],
            durationMs,
            args.rounds,
            log,
          );
          groupCommit = { ...embedded.writeStats };
        } finally {
          await etcdStore.close();
        }
      } finally {
        await embedded.close();
      }
    } finally {
      await etcdProcess.stop();
    }
  } finally {
    await dir.remove();
  }
  const { stoa, etcd } = figures;

  const result = rows(stoa, etcd);
  process.stdout.write(table(result) + '\n');
  const out = args.out ?? `bench/results/store-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  const report = {
    scenario: 'store',
    date: new Date().toISOString(),
    gitCommit: gitCommit(),
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      memoryBytes: totalmem(),
      platform: platform(),
      kernel: release(),
      node: process.version,
    },
    loadAverage: { before: loadBefore, after: loadavg() },
    configuration: {
      durationSecondsPerRow: durationMs / 1000,
      rounds: args.rounds,
      figures: "median over rounds of each round's figure (a p99 row is the median of the rounds' p99s)",
      quick: args.quick,
      concurrentWriters,
      concurrentReaders,
      etcd: etcdVersion(),
      durability: 'both fsync before acknowledging (LevelDB sync batch; etcd WAL fsync)',
      order: 'each phase runs on both engines back to back, alternating which goes first',
      embeddedGroupCommit: {
        ...groupCommit,
        txnsPerBatch: groupCommit.txns / Math.max(1, groupCommit.batches),
      },
    },
    rows: result,
  };
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, JSON.stringify(report, null, 2) + '\n');
  log(`wrote ${out}`);
}
