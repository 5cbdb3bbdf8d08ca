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
  gitCommit,
  loadavg,
  machine,
  preloadRangeKeys,
  progress,
  putLoad,
  rangeLoad,
  row as makeRow,
  table,
  watchLatency,
  writeJson,
  type BenchRow,
} from './measure.js';

export type { BenchRow } from './measure.js';

const concurrentWriters = 64;
const concurrentReaders = 64;

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
        const { latency } = await putLoad(store, durationMs, 1, 256);
        return { putLatencyP50: latency.p50, putLatencyP99: latency.p99 };
      },
    },
    {
      name: 'put 256 B',
      run: async (store) => ({
        put256: (await putLoad(store, durationMs, concurrentWriters, 256)).opsPerSecond,
      }),
    },
    {
      name: 'put 2 KiB',
      run: async (store) => ({
        put2k: (await putLoad(store, durationMs, concurrentWriters, 2048)).opsPerSecond,
      }),
    },
    {
      name: 'range 1 key',
      run: async (store) => ({
        rangeKey: (
          await rangeLoad(store, durationMs, concurrentReaders, { list: false, serializable: false })
        ).opsPerSecond,
      }),
    },
    {
      name: 'range 100 keys',
      run: async (store) => ({
        rangeList: (
          await rangeLoad(store, durationMs, concurrentReaders, { list: true, serializable: false })
        ).opsPerSecond,
      }),
    },
    {
      name: 'watch latency',
      run: async (store) => {
        const watch = await watchLatency(store, store, durationMs);
        return { watchP50: watch.p50, watchP99: watch.p99 };
      },
    },
  ];
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
  for (const engine of engines) await preloadRangeKeys(engine.store);
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
  const row = (name: string, unit: string, higherIsBetter: boolean, key: keyof EngineFigures): BenchRow =>
    makeRow(name, unit, higherIsBetter, stoa[key], etcd[key]);
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

export async function runStoreBench(args: BenchArgs): Promise<void> {
  const durationMs = args.quick ? 300 : args.durationSeconds * 1000;
  const log = progress;
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
  const out = args.out ?? defaultOut('store');
  const report = {
    scenario: 'store',
    date: new Date().toISOString(),
    gitCommit: gitCommit(),
    machine: machine(),
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
  await writeJson(out, report);
  log(`wrote ${out}`);
}
