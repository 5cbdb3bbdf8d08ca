// Cluster bench: the same store-level workloads against a 3-node Stoa cluster (bench/kv-node.ts processes) and
// a 3-member etcd cluster (Debian's), both started here, both with heartbeat 100 ms and election timeout
// 1000 ms. Each phase runs on both clusters back to back, alternating which goes first, so machine load hits
// both alike. Then failover: kill -9 of the leader under a stream of writes, several times per cluster.
import type { BenchArgs } from './main.js';
import type { KVStore } from '../src/storage/contract.js';
import {
  electionTimeoutMs,
  heartbeatIntervalMs,
  startEtcdBenchCluster,
  startStoaCluster,
  type BenchCluster,
} from './clusters.js';
import {
  defaultOut,
  etcdVersion,
  loadavg,
  reportHeader,
  preloadRangeKeys,
  progress,
  putLoad,
  putOne,
  rangeLoad,
  row,
  table,
  watchLatency,
  type BenchRow,
  type LatencySummary,
  type LoadResult,
  type Target,
} from './measure.js';
import { writeReports } from './report.js';

/** Defaults of --nodes, --concurrency and --value-size (the latter replaces the two sizes 256 B and 2 KiB). */
const defaultNodes = 3;
const defaultConcurrency = 64;
const defaultValueSizes = [256, 2048] as const;

interface ClusterConfig {
  readonly durationMs: number;
  readonly nodes: number;
  readonly concurrentClients: number;
  readonly concurrentReaders: number;
  readonly valueSizes: readonly number[];
}

export const sizeName = (bytes: number): string =>
  bytes >= 1024 && bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`;
/** Writers of the failover stream, and how long one attempt may take before the client tries elsewhere. */
const failoverWriters = 4;
/** Leader kills per target (--kills); an odd number, so the median is one kill's window. */
const defaultKills = 11;
const failoverAttemptTimeoutMs = 300;
/** Writes must have flowed this long after the kill before the window is closed. */
const failoverRecoveredMs = 1000;
/** The largest gap between acks that still counts as writes flowing. */
const failoverRecoveredGapMs = 250;
const failoverMaxMs = 20_000;

type Phase = { readonly name: string; run(cluster: BenchCluster): Promise<LoadResult | LatencySummary> };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function withClient<T>(
  cluster: BenchCluster,
  members: readonly number[] | undefined,
  use: (store: KVStore) => Promise<T>,
): Promise<T> {
  const store = await cluster.client(members);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

function phases(config: ClusterConfig): Phase[] {
  const { durationMs, concurrentClients, concurrentReaders } = config;
  const put = (clients: number, bytes: number): Phase => ({
    name: `put ${clients === 1 ? '1 client' : `${clients} clients`}, ${sizeName(bytes)}`,
    run: (cluster) => withClient(cluster, undefined, (store) => putLoad(store, durationMs, clients, bytes)),
  });
  const range = (serializable: boolean): Phase => ({
    name: `range 1 key, ${serializable ? 'serializable' : 'linearizable'}`,
    run: (cluster) =>
      withClient(cluster, undefined, (store) =>
        rangeLoad(store, durationMs, concurrentReaders, { list: false, serializable }),
      ),
  });
  return [
    ...config.valueSizes.flatMap((bytes) => [put(1, bytes), put(concurrentClients, bytes)]),
    range(false),
    range(true),
    {
      name: 'watch from a follower',
      run: async (cluster) => {
        const lead = await cluster.leader();
        const follower = (lead + 1) % cluster.size;
        return withClient(cluster, [lead], (writer) =>
          withClient(cluster, [follower], (watcher) => watchLatency(writer, watcher, durationMs)),
        );
      },
    },
  ];
}

export interface FailoverKill {
  /** ms since the start of the failover phase of this target. */
  readonly killedAt: number;
  readonly member: number;
  /** The longest gap between successive acknowledged writes around the kill. */
  readonly windowMs: number;
  readonly failedAttempts: number;
  /** When the writers of this kill ran (ms since the start of the failover phase); none ran in between. */
  readonly writingFrom: number;
  readonly writingTo: number;
  /**
   * Stoa: survivors whose transport saw the killed leader's process go and who campaigned early (the fast
   * path, docs/replication.md); absent for etcd.
   */
  readonly leaderDownHints?: number;
  /** Terms the leader's term advanced by across the kill: 1 is one election, more is a split vote or a retry. */
  readonly elections: number;
}

export interface FailoverResult {
  readonly kills: FailoverKill[];
  readonly medianMs: number;
  readonly maxMs: number;
  /** Acknowledged writes per `bucketMs` over the whole phase (kill markers at `kills[].killedAt`). */
  readonly series: number[];
  readonly bucketMs: number;
}

/** One kill -9 of the leader under a stream of writes to the surviving members. */
async function failoverOnce(
  cluster: BenchCluster,
  phaseStart: number,
  series: number[],
  bucketMs: number,
): Promise<FailoverKill> {
  const lead = await cluster.leader();
  const survivors = Array.from({ length: cluster.size }, (_, i) => i).filter((i) => i !== lead);
  const clients = await Promise.all(survivors.map((i) => cluster.client([i])));
  const acked: number[] = [];
  let failedAttempts = 0;
  let killedAt: number | undefined;
  let stop = false;
  let writingTo = 0;
  const value = Buffer.alloc(256, 'f');
  const writingFrom = performance.now() - phaseStart;
  const writers = Array.from({ length: failoverWriters }, async (_, w) => {
    let target = w % clients.length;
    for (let i = 0; i < 1_000_000 && !stop; i++) {
      const attempt = putOne(clients[target]!, `/bench/failover/${w}/${i % 100}`, value);
      attempt.catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const ok = await Promise.race([
        attempt.then(
          () => true,
          () => false,
        ),
        new Promise<boolean>(
          (resolve) => (timer = setTimeout(() => resolve(false), failoverAttemptTimeoutMs)),
        ),
      ]);
      clearTimeout(timer);
      const now = performance.now();
      if (ok) {
        acked.push(now);
        const bucket = Math.floor((now - phaseStart) / bucketMs);
        while (series.length <= bucket) series.push(0);
        series[bucket]!++;
      } else {
        failedAttempts++;
        target = (target + 1) % clients.length;
        // A refused connection fails at once; do not spin on it.
        await sleep(10);
      }
    }
  });
  const hintsBefore = await cluster.leaderDownHints?.(survivors);
  const termBefore = await cluster.term();
  let hints: number | undefined;
  let elections = 0;
  try {
    await sleep(500);
    killedAt = performance.now();
    await cluster.kill(lead);
    const deadline = killedAt + failoverMaxMs;
    // Recovered: writes have flowed without a gap for the last failoverRecoveredMs (the acks of writes that
    // were in flight at the kill cannot pass for it: that needs a second of acks after the kill).
    for (;;) {
      await sleep(50);
      const now = performance.now();
      if (now > deadline) throw new Error(`${cluster.target}: writes did not resume after the kill`);
      if (now - killedAt < failoverRecoveredMs) continue;
      const recent = acked.filter((t) => t >= now - failoverRecoveredMs);
      let last = now - failoverRecoveredMs;
      let flowing = recent.length > 0;
      for (const t of [...recent, now]) {
        if (t - last > failoverRecoveredGapMs) flowing = false;
        last = t;
      }
      if (flowing) break;
    }
    const hintsAfter = await cluster.leaderDownHints?.(survivors);
    if (hintsBefore !== undefined && hintsAfter !== undefined) hints = hintsAfter - hintsBefore;
    elections = (await cluster.term()) - termBefore;
  } finally {
    stop = true;
    await Promise.all(writers);
    writingTo = performance.now() - phaseStart;
    await Promise.all(clients.map((c) => c.close()));
  }
  const times = [...acked].sort((a, b) => a - b);
  const before = times.filter((t) => t <= killedAt).at(-1) ?? killedAt;
  let windowMs = 0;
  let previous = before;
  for (const t of times) {
    if (t <= before) continue;
    windowMs = Math.max(windowMs, t - previous);
    previous = t;
  }
  await cluster.restart(lead);
  return {
    killedAt: killedAt - phaseStart,
    member: lead,
    windowMs,
    failedAttempts,
    writingFrom,
    writingTo,
    ...(hints !== undefined ? { leaderDownHints: hints } : {}),
    elections,
  };
}

async function failover(
  cluster: BenchCluster,
  kills: number,
  log: (line: string) => void,
): Promise<FailoverResult> {
  const start = performance.now();
  const series: number[] = [];
  const bucketMs = 50;
  const results: FailoverKill[] = [];
  for (let k = 0; k < kills; k++) {
    const kill = await failoverOnce(cluster, start, series, bucketMs);
    results.push(kill);
    log(
      `  ${cluster.target} failover ${k + 1}/${kills}: killed member ${kill.member}, ` +
        `writes stopped for ${kill.windowMs.toFixed(0)} ms (${kill.failedAttempts} failed attempts, ` +
        `${kill.elections} term(s)` +
        (kill.leaderDownHints !== undefined ? `, ${kill.leaderDownHints} leader-down hints` : '') +
        ')',
    );
    await sleep(500);
  }
  const windows = results.map((r) => r.windowMs).sort((a, b) => a - b);
  return {
    kills: results,
    medianMs: windows[Math.floor(windows.length / 2)]!,
    maxMs: windows.at(-1)!,
    series,
    bucketMs,
  };
}

const describe = (result: LoadResult | LatencySummary): string =>
  'opsPerSecond' in result
    ? `${result.opsPerSecond.toFixed(0)} ops/s, p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms` +
      (result.errors > 0 ? `, ${result.errors} FAILED (${result.firstError})` : '')
    : `p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms`;

export async function runClusterBench(args: BenchArgs): Promise<void> {
  const durationMs = args.quick ? 300 : args.durationSeconds * 1000;
  const nodes = args.nodes ?? defaultNodes;
  if (nodes < 3 || nodes % 2 === 0) {
    throw new Error(`cluster: --nodes must be odd and at least 3 (a leader kill needs a surviving majority)`);
  }
  const concurrentClients = args.concurrency ?? defaultConcurrency;
  const concurrentReaders = concurrentClients;
  const config: ClusterConfig = {
    durationMs,
    nodes,
    concurrentClients,
    concurrentReaders,
    valueSizes: args.valueBytes === undefined ? defaultValueSizes : [args.valueBytes],
  };
  // The window of one kill depends on where the randomized timeouts fall: a median of 5 is noisy, and a kill
  // costs only a few seconds per target.
  const kills = args.kills ?? (args.quick ? 1 : defaultKills);
  const log = progress;
  const loadBefore = loadavg();
  const started = new Date();
  log(
    `cluster bench: ${args.targets.map((t) => (t === 'stoa' ? `${nodes}-node Stoa (kv-node processes)` : `${nodes}-member etcd (${etcdVersion()})`)).join(' and ')}`,
  );
  log(`  ${durationMs / 1000} s per phase and target, ${kills} leader kills per target, seed ${args.seed}`);

  const clusters: BenchCluster[] = [];
  const loads: Record<string, Partial<Record<Target, LoadResult | LatencySummary>>> = {};
  const failovers: Partial<Record<Target, FailoverResult>> = {};
  try {
    if (args.targets.includes('stoa')) clusters.push(await startStoaCluster(nodes, args.seed));
    if (args.targets.includes('etcd')) clusters.push(await startEtcdBenchCluster(nodes));
    log(`  ${clusters.map((c) => c.target).join(' and ')} up`);
    for (const cluster of clusters) await withClient(cluster, undefined, preloadRangeKeys);
    // Warm-up, not measured: JIT, connections and LevelDB's first flushes would otherwise land on the first phase.
    for (const cluster of clusters) {
      await withClient(cluster, undefined, (store) => putLoad(store, Math.min(2000, durationMs), 8, 256));
    }
    log('  warmed up');
    for (const [index, phase] of phases(config).entries()) {
      const order = index % 2 === 0 ? clusters : [...clusters].reverse();
      const figures: Partial<Record<Target, LoadResult | LatencySummary>> = {};
      for (const cluster of order) {
        const termBefore = await cluster.term();
        const result = await phase.run(cluster);
        const termAfter = await cluster.term();
        figures[cluster.target] = result;
        const elections = termAfter !== termBefore ? ` (ELECTION: term ${termBefore} -> ${termAfter})` : '';
        log(`  ${cluster.target} ${phase.name}: ${describe(result)}${elections}`);
      }
      loads[phase.name] = figures;
    }
    for (const cluster of clusters) failovers[cluster.target] = await failover(cluster, kills, log);
  } finally {
    await Promise.all(clusters.map((c) => c.stop()));
  }

  const load = (name: string, target: Target): LoadResult => loads[name]![target] as LoadResult;
  const watch = (target: Target): LatencySummary => loads['watch from a follower']![target] as LatencySummary;
  // A target that was not run (--target) has NaN in its column.
  const both = (f: (t: Target) => number): [number, number] => [
    args.targets.includes('stoa') ? f('stoa') : NaN,
    args.targets.includes('etcd') ? f('etcd') : NaN,
  ];
  const rows: BenchRow[] = [];
  for (const bytes of config.valueSizes) {
    const size = sizeName(bytes);
    for (const clients of [1, concurrentClients]) {
      const name = `put ${clients === 1 ? '1 client' : `${clients} clients`}, ${size}`;
      rows.push(
        row(
          `put throughput, ${clients} client(s), ${size}`,
          'ops/s',
          true,
          ...both((t) => load(name, t).opsPerSecond),
        ),
      );
      rows.push(
        row(
          `put latency p50, ${clients} client(s), ${size}`,
          'ms',
          false,
          ...both((t) => load(name, t).latency.p50),
        ),
      );
      rows.push(
        row(
          `put latency p99, ${clients} client(s), ${size}`,
          'ms',
          false,
          ...both((t) => load(name, t).latency.p99),
        ),
      );
    }
  }
  for (const mode of ['linearizable', 'serializable']) {
    const name = `range 1 key, ${mode}`;
    rows.push(
      row(
        `range throughput, ${mode}, 1 key, ${concurrentReaders} readers`,
        'ops/s',
        true,
        ...both((t) => load(name, t).opsPerSecond),
      ),
    );
  }
  rows.push(
    row('watch delivery latency p50, follower (put to event)', 'ms', false, ...both((t) => watch(t).p50)),
  );
  rows.push(
    row('watch delivery latency p99, follower (put to event)', 'ms', false, ...both((t) => watch(t).p99)),
  );
  rows.push(
    row(
      `failover window, median of ${kills} leader kills`,
      'ms',
      false,
      ...both((t) => failovers[t]!.medianMs),
    ),
  );
  rows.push(
    row(`failover window, worst of ${kills} leader kills`, 'ms', false, ...both((t) => failovers[t]!.maxMs)),
  );

  process.stdout.write(table(rows) + '\n');
  const out = args.out ?? defaultOut('cluster');
  const report = {
    ...reportHeader('cluster', started, loadBefore, args.seed),
    configuration: {
      nodes,
      targets: args.targets,
      valueSizes: config.valueSizes,
      durationSecondsPerPhase: durationMs / 1000,
      quick: args.quick,
      concurrentClients,
      concurrentReaders,
      heartbeatIntervalMs,
      electionTimeoutMs,
      etcd: etcdVersion(),
      stoaTransport:
        'bench/kv-node.ts processes; KV RPC: msgpack frames over loopback TCP; peers: mutual TLS',
      etcdTransport: 'gRPC over loopback (etcd3 client); peers: plain HTTP',
      clientSpread: 'each request goes to a random member (etcd3 client: random host per call)',
      durability: 'both fsync the Raft log before acknowledging',
      order: 'each phase runs on both clusters back to back, alternating which goes first',
      failover: {
        kills,
        writers: failoverWriters,
        attemptTimeoutMs: failoverAttemptTimeoutMs,
        window: 'longest gap between successive acknowledged writes from the last one before the kill on',
      },
    },
    rows,
    loads,
    failover: failovers,
  };
  await writeReports(out, report, log);
}
