// Store bench: the embedded engine against a single-member etcd (Debian's), side by side in one run, with the
// same durability (both fsync every acknowledged write). Every loop is bounded in time and in count.
import type { BenchArgs } from './main.js';
import type { KVStore } from '../src/storage/contract.js';
import { openEmbeddedStore } from '../src/storage/embedded/engine.js';
import { openEtcdStore } from '../src/storage/etcd/engine.js';
import { startEtcd } from '../test/support/etcd.js';
import { tempDir } from '../test/support/tmp.js';
import {
  defaultOut,
  etcdVersion,
  loadavg,
  reportHeader,
  preloadRangeKeys,
  progress,
  putLoad,
  rangeLoad,
  row as makeRow,
  table,
  watchLatency,
  type BenchRow,
  type LatencySummary,
  type LoadResult,
  type Target,
} from './measure.js';
import { writeReports } from './report.js';
import { sizeName } from './cluster.js';

export type { BenchRow } from './measure.js';

/** Defaults of --concurrency (writers and readers) and --value-size (the 2 KiB row stays). */
const defaultConcurrency = 64;
const defaultValueBytes = 256;

interface StoreConfig {
  readonly durationMs: number;
  readonly concurrentWriters: number;
  readonly concurrentReaders: number;
  readonly valueBytes: number;
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

type Measured = LoadResult | LatencySummary;
type Phase = (store: KVStore) => Promise<{ figures: Partial<EngineFigures>; measured: Measured }>;

/** The measured phases, in order; each runs on both engines back to back, so load changes hit both alike. */
function phases(config: StoreConfig): Array<{ name: string; run: Phase }> {
  const { durationMs, concurrentWriters, concurrentReaders, valueBytes } = config;
  return [
    {
      name: 'put latency, 1 sequential client',
      run: async (store) => {
        const measured = await putLoad(store, durationMs, 1, valueBytes);
        return {
          figures: { putLatencyP50: measured.latency.p50, putLatencyP99: measured.latency.p99 },
          measured,
        };
      },
    },
    {
      name: `put ${sizeName(valueBytes)}, ${concurrentWriters} writers`,
      run: async (store) => {
        const measured = await putLoad(store, durationMs, concurrentWriters, valueBytes);
        return { figures: { put256: measured.opsPerSecond }, measured };
      },
    },
    {
      name: `put 2 KiB, ${concurrentWriters} writers`,
      run: async (store) => {
        const measured = await putLoad(store, durationMs, concurrentWriters, 2048);
        return { figures: { put2k: measured.opsPerSecond }, measured };
      },
    },
    {
      name: `range 1 key, ${concurrentReaders} readers`,
      run: async (store) => {
        const measured = await rangeLoad(store, durationMs, concurrentReaders, {
          list: false,
          serializable: false,
        });
        return { figures: { rangeKey: measured.opsPerSecond }, measured };
      },
    },
    {
      name: `range 100 keys, ${concurrentReaders} readers`,
      run: async (store) => {
        const measured = await rangeLoad(store, durationMs, concurrentReaders, {
          list: true,
          serializable: false,
        });
        return { figures: { rangeList: measured.opsPerSecond }, measured };
      },
    },
    {
      name: 'watch latency',
      run: async (store) => {
        const measured = await watchLatency(store, store, durationMs);
        return { figures: { watchP50: measured.p50, watchP99: measured.p99 }, measured };
      },
    },
  ];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

type Loads = Record<string, Partial<Record<Target, Measured>>>;

async function measure(
  engines: ReadonlyArray<{ name: Target; store: KVStore }>,
  config: StoreConfig,
  rounds: number,
  log: (line: string) => void,
): Promise<{ figures: Partial<Record<Target, EngineFigures>>; loads: Loads }> {
  const samples: Partial<Record<Target, Array<Partial<EngineFigures>>>> = {};
  const loads: Loads = {};
  for (const engine of engines) {
    samples[engine.name] = [];
    await preloadRangeKeys(engine.store);
  }
  const all = phases(config);
  for (let round = 0; round < rounds; round++) {
    const figures: Partial<Record<Target, Partial<EngineFigures>>> = {};
    for (const [index, phase] of all.entries()) {
      // Alternate which engine goes first, so neither always runs right after the other's load.
      const order = (index + round) % 2 === 0 ? engines : [...engines].reverse();
      for (const engine of order) {
        const result = await phase.run(engine.store);
        figures[engine.name] = { ...figures[engine.name], ...result.figures };
        // The plots show the last round's distributions.
        (loads[phase.name] ??= {})[engine.name] = result.measured;
        const shown = Object.entries(result.figures).map(([k, v]) => `${k} ${v.toFixed(2)}`);
        log(
          `  round ${round + 1}/${rounds}, phase ${index + 1}/${all.length} ${engine.name} ${phase.name}: ${shown.join(', ')}`,
        );
      }
    }
    for (const engine of engines) samples[engine.name]!.push(figures[engine.name] ?? {});
  }
  const medians = (list: Array<Partial<EngineFigures>>): EngineFigures => {
    const keys = Object.keys(list[0]!) as Array<keyof EngineFigures>;
    return Object.fromEntries(
      keys.map((k) => [k, median(list.map((f) => f[k]!))]),
    ) as unknown as EngineFigures;
  };
  const out: Partial<Record<Target, EngineFigures>> = {};
  for (const engine of engines) out[engine.name] = medians(samples[engine.name]!);
  return { figures: out, loads };
}

function rows(
  config: StoreConfig,
  stoa: EngineFigures | undefined,
  etcd: EngineFigures | undefined,
): BenchRow[] {
  const { concurrentWriters, concurrentReaders, valueBytes } = config;
  const size = sizeName(valueBytes);
  const row = (name: string, unit: string, higherIsBetter: boolean, key: keyof EngineFigures): BenchRow =>
    makeRow(name, unit, higherIsBetter, stoa?.[key] ?? NaN, etcd?.[key] ?? NaN);
  return [
    row(`put latency p50, 1 sequential client, ${size}`, 'ms', false, 'putLatencyP50'),
    row(`put latency p99, 1 sequential client, ${size}`, 'ms', false, 'putLatencyP99'),
    row(`put throughput, ${concurrentWriters} writers, ${size}`, 'ops/s', true, 'put256'),
    row(`put throughput, ${concurrentWriters} writers, 2 KiB`, 'ops/s', true, 'put2k'),
    row(`range throughput, 1 key, ${concurrentReaders} readers`, 'ops/s', true, 'rangeKey'),
    row(`range throughput, 100 keys, ${concurrentReaders} readers`, 'ops/s', true, 'rangeList'),
    row('watch delivery latency p50 (put to event)', 'ms', false, 'watchP50'),
    row('watch delivery latency p99 (put to event)', 'ms', false, 'watchP99'),
  ];
}

export async function runStoreBench(args: BenchArgs): Promise<void> {
  if (args.nodes !== undefined && args.nodes !== 1) {
    throw new Error(
      'store: one member per target (the embedded engine); for clusters run the cluster scenario',
    );
  }
  const concurrency = args.concurrency ?? defaultConcurrency;
  const config: StoreConfig = {
    durationMs: args.quick ? 300 : args.durationSeconds * 1000,
    concurrentWriters: concurrency,
    concurrentReaders: concurrency,
    valueBytes: args.valueBytes ?? defaultValueBytes,
  };
  const log = progress;
  const loadBefore = loadavg();
  const started = new Date();

  log(
    `store bench: ${args.targets.map((t) => (t === 'stoa' ? 'embedded engine (LevelDB, fsync per group commit)' : `single-member etcd (${etcdVersion()})`)).join(' and ')}`,
  );
  const dir = await tempDir('bench-store');
  const engines: Array<{ name: Target; store: KVStore }> = [];
  const stops: Array<() => Promise<void>> = [];
  let measured: Awaited<ReturnType<typeof measure>>;
  let groupCommit: { batches: number; txns: number } | undefined;
  try {
    let embedded: Awaited<ReturnType<typeof openEmbeddedStore>> | undefined;
    if (args.targets.includes('stoa')) {
      const opened = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
      embedded = opened;
      stops.push(() => opened.close());
      engines.push({ name: 'stoa', store: opened });
    }
    if (args.targets.includes('etcd')) {
      const etcdProcess = await startEtcd();
      stops.push(() => etcdProcess.stop());
      const etcdStore = await openEtcdStore({ endpoints: etcdProcess.endpoints });
      stops.push(() => etcdStore.close());
      engines.push({ name: 'etcd', store: etcdStore });
    }
    measured = await measure(engines, config, args.rounds, log);
    if (embedded !== undefined) groupCommit = { ...embedded.writeStats };
  } finally {
    for (const stop of stops.reverse()) await stop();
    await dir.remove();
  }

  const result = rows(config, measured.figures.stoa, measured.figures.etcd);
  process.stdout.write(table(result) + '\n');
  const out = args.out ?? defaultOut('store');
  const report = {
    ...reportHeader('store', started, loadBefore, args.seed),
    configuration: {
      targets: args.targets,
      nodes: 1,
      durationSecondsPerRow: config.durationMs / 1000,
      rounds: args.rounds,
      figures:
        "median over rounds of each round's figure (a p99 row is the median of the rounds' p99s); plots: the last round",
      quick: args.quick,
      concurrentWriters: config.concurrentWriters,
      concurrentReaders: config.concurrentReaders,
      valueBytes: config.valueBytes,
      etcd: etcdVersion(),
      durability: 'both fsync before acknowledging (LevelDB sync batch; etcd WAL fsync)',
      order: 'each phase runs on both engines back to back, alternating which goes first',
      ...(groupCommit === undefined
        ? {}
        : {
            embeddedGroupCommit: {
              ...groupCommit,
              txnsPerBatch: groupCommit.txns / Math.max(1, groupCommit.batches),
            },
          }),
    },
    rows: result,
    loads: measured.loads,
  };
  await writeReports(out, report, log);
}
