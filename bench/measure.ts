// Shared measurement code of the store-level bench scenarios: bounded load loops over a KVStore, latency
// summaries (percentiles and a fixed log-scale histogram, the same bins for every target so plots overlay),
// throughput over time, the side-by-side table, and the run's provenance (git commit, machine, load).
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { KVStore } from '../src/storage/contract.js';
import { etcdBinary } from '../test/support/etcd.js';

export type Target = 'stoa' | 'etcd';

export interface BenchRow {
  readonly name: string;
  readonly unit: string;
  readonly higherIsBetter: boolean;
  readonly stoa: number;
  readonly etcd: number;
  /** stoa / etcd. */
  readonly ratio: number;
}

/** Upper bound of every load loop's operation count (each loop is also bounded in time). */
export const opsMax = 1_000_000;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Histogram bin edges in ms: 48 log-spaced bins from 0.05 ms to 20 s (the last bin also takes anything above). */
export const histogramEdgesMs: readonly number[] = Array.from(
  { length: 49 },
  (_, i) => 0.05 * Math.pow(20_000 / 0.05, i / 48),
);

export interface LatencySummary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /** Counts per bin of `histogramEdgesMs`. */
  readonly histogram: readonly number[];
}

export function summarize(latencies: number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const histogram = new Array<number>(histogramEdgesMs.length - 1).fill(0);
  let sum = 0;
  for (const ms of sorted) {
    sum += ms;
    let bin = 0;
    while (bin < histogram.length - 1 && ms >= histogramEdgesMs[bin + 1]!) bin++;
    histogram[bin]!++;
  }
  return {
    count: sorted.length,
    mean: sorted.length === 0 ? NaN : sum / sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.at(-1) ?? NaN,
    histogram,
  };
}

export interface LoadResult {
  readonly opsPerSecond: number;
  readonly latency: LatencySummary;
  /** Operations completed per `seriesBucketMs`, from the start of the load. */
  readonly series: readonly number[];
  readonly seriesBucketMs: number;
  /** Operations that failed (not counted in throughput or latency), and the first failure's message. */
  readonly errors: number;
  readonly firstError?: string;
}

/**
 * Runs `op` from `workers` concurrent loops until `durationMs` has passed (or opsMax operations per loop, or
 * `opsTotalMax` operations started in all), and records each operation's latency and the completions over time.
 */
export async function runLoad(
  workers: number,
  durationMs: number,
  op: (worker: number, i: number) => Promise<unknown>,
  opsTotalMax = Infinity,
): Promise<LoadResult> {
  let opsStarted = 0;
  const seriesBucketMs = Math.max(50, Math.round(durationMs / 50));
  const series: number[] = [];
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < opsMax && opsStarted < opsTotalMax && performance.now() < end; i++) {
        opsStarted++;
        const opStart = performance.now();
        try {
          await op(w, i);
        } catch (error) {
          // A failed operation (e.g. a write that timed out across an election) is counted, not measured.
          errors++;
          firstError ??= error instanceof Error ? error.message : String(error);
          continue;
        }
        const now = performance.now();
        latencies.push(now - opStart);
        const bucket = Math.floor((now - start) / seriesBucketMs);
        while (series.length <= bucket) series.push(0);
        series[bucket]!++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  return {
    opsPerSecond: latencies.length / seconds,
    latency: summarize(latencies),
    series,
    seriesBucketMs,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

export const putOne = (store: KVStore, key: string, value: Uint8Array): Promise<unknown> =>
  store.txn({ compare: [], success: [{ type: 'put', key, value }], failure: [] });

/** Puts of `valueBytes` from `clients` concurrent loops, each over its own 100 keys. */
export function putLoad(
  store: KVStore,
  durationMs: number,
  clients: number,
  valueBytes: number,
): Promise<LoadResult> {
  const value = Buffer.alloc(valueBytes, 'v');
  return runLoad(clients, durationMs, (w, i) =>
    putOne(store, `/bench/put${valueBytes}/${w}/${i % 100}`, value),
  );
}

export const rangeKeys = 100;

/** The keys the range loads read. */
export async function preloadRangeKeys(store: KVStore): Promise<void> {
  const value = Buffer.alloc(256, 'r');
  await Promise.all(Array.from({ length: rangeKeys }, (_, i) => putOne(store, `/bench/range/${i}`, value)));
}

/** Ranges of one key (or of all `rangeKeys` keys with `list`) from `readers` concurrent loops. */
export function rangeLoad(
  store: KVStore,
  durationMs: number,
  readers: number,
  options: { list: boolean; serializable: boolean },
): Promise<LoadResult> {
  return runLoad(readers, durationMs, async (r, i) => {
    const result = await store.range(
      options.list ? { prefix: '/bench/range/' } : { key: `/bench/range/${(r + i) % rangeKeys}` },
      options.serializable ? { serializable: true } : {},
    );
    if (result.kvs.length !== (options.list ? rangeKeys : 1)) {
      throw new Error('bench range returned the wrong keys');
    }
  });
}

/**
 * Put-to-event latency: 4 writers put through `writer` while one watch on `watcher` (the same store, or a
 * client of another member) receives the events. Every event must arrive.
 */
export async function watchLatency(
  writer: KVStore,
  watcher: KVStore,
  durationMs: number,
): Promise<LatencySummary> {
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let wake: (() => void) | undefined;
  const watch = watcher.watch({ prefix: '/bench/watch/' }, {}, (response) => {
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
          try {
            await putOne(writer, key, value);
          } catch {
            sentAt.delete(key); // failed (e.g. across an election): not measured
          }
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
  return summarize(latencies);
}

export function row(
  name: string,
  unit: string,
  higherIsBetter: boolean,
  stoa: number,
  etcd: number,
): BenchRow {
  return { name, unit, higherIsBetter, stoa, etcd, ratio: stoa / etcd };
}

export function table(result: readonly BenchRow[]): string {
  // A target that was not run (--target) shows as '-'.
  const format = (n: number): string => (!Number.isFinite(n) ? '-' : n >= 100 ? n.toFixed(0) : n.toFixed(2));
  const cells = [['row', 'unit', 'stoa', 'etcd', 'stoa/etcd', 'goal met']];
  for (const r of result) {
    const met = r.higherIsBetter ? r.ratio >= 1 : r.ratio <= 1;
    const compared = Number.isFinite(r.ratio);
    cells.push([
      r.name,
      r.unit,
      format(r.stoa),
      format(r.etcd),
      format(r.ratio),
      compared ? (met ? 'yes' : 'NO') : '-',
    ]);
  }
  const widths = cells[0]!.map((_, c) => Math.max(...cells.map((line) => line[c]!.length)));
  return cells
    .map((line) => line.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))))
    .map((line) => line.join(' | '))
    .join('\n');
}

export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

export function etcdVersion(): string {
  try {
    return execFileSync(etcdBinary, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function machine(): Record<string, string | number> {
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cpus: cpus().length,
    memoryBytes: totalmem(),
    platform: platform(),
    kernel: release(),
    node: process.version,
  };
}

export { loadavg };

export const progress = (line: string): void => void process.stderr.write(line + '\n');

export function defaultOut(scenario: string): string {
  return `bench/results/${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
}

/** What every scenario's report opens with: which scenario, when, on which commit and machine, under what load. */
export function reportHeader(
  scenario: string,
  started: Date,
  loadBefore: readonly number[],
  seed: number,
): {
  scenario: string;
  date: string;
  gitCommit: string;
  machine: Record<string, string | number>;
  loadAverage: { before: readonly number[]; after: readonly number[] };
  seed: number;
} {
  return {
    scenario,
    date: started.toISOString(),
    gitCommit: gitCommit(),
    machine: machine(),
    loadAverage: { before: loadBefore, after: loadavg() },
    seed,
  };
}

export async function writeJson(path: string, report: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, JSON.stringify(report, null, 2) + '\n');
}
