// Raft log micro bench: save() of the segment WAL (src/raftlog/store.ts) against the LevelDB log it replaced
// (src/raftlog/leveldb-log.ts), in this process, on real files in a temp dir. Rows: 256 B and 2 KiB entries,
// (a) one writer: one entry and a hard state per save, each awaited before the next (what a follower's Ready
// does under one client), and (b) a stream of batches: saves of 8 entries, up to 4 in flight (they are still
// serialized by the store, as the Ready loop's are). Every loop is bounded in time and in count.
import type { BenchArgs } from './main.js';
import { RaftLogStore, type PersistedEntry } from '../src/raftlog/store.js';
import { LevelDbRaftLog } from '../src/raftlog/leveldb-log.js';
import { logIndex, nodeId, term } from '../src/util/brand.js';
import { tempDir } from '../test/support/tmp.js';
import { defaultOut, loadavg, progress, reportHeader, summarize, writeJson, opsMax } from './measure.js';

type Kind = 'leveldb' | 'wal';
interface Log {
  save: RaftLogStore['save'];
  saveOwnSnapshot: RaftLogStore['saveOwnSnapshot'];
  close(): Promise<void>;
}

interface RaftLogRow {
  readonly log: Kind;
  readonly entryBytes: number;
  readonly mode: 'one writer' | 'batches of 8, 4 in flight';
  readonly saves: number;
  readonly entriesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

async function openLog(kind: Kind, dir: string): Promise<Log> {
  switch (kind) {
    case 'leveldb':
      return (await LevelDbRaftLog.open(dir)).store;
    case 'wal':
      return (await RaftLogStore.open(dir)).store;
    default:
      throw new Error(`unknown log ${String(kind satisfies never)}`);
  }
}

async function measure(
  kind: Kind,
  entryBytes: number,
  batch: number,
  inFlight: number,
  durationMs: number,
): Promise<RaftLogRow> {
  const dir = await tempDir('bench-raftlog');
  const log = await openLog(kind, dir.path);
  try {
    const data = Buffer.alloc(entryBytes, 0x61);
    let next = 1;
    const latencies: number[] = [];
    const started = performance.now();
    const deadline = started + durationMs;
    const saveOne = async (): Promise<void> => {
      const entries: PersistedEntry[] = [];
      for (let i = 0; i < batch; i++) {
        entries.push({ index: logIndex(next), term: term(1), type: 'normal', data });
        next++;
      }
      const commit = logIndex(next - 1);
      const t0 = performance.now();
      await log.save({ entries, hardState: { term: term(1), vote: nodeId(1), commit } });
      latencies.push(performance.now() - t0);
      // As the node does: a snapshot every 10,000 entries compacts all but the last 5,000.
      if (Math.floor(commit / 10_000) !== Math.floor((commit - batch) / 10_000)) {
        await log.saveOwnSnapshot(
          {
            metadata: { index: commit, term: term(1), confState: { voters: [nodeId(1)], learners: [] } },
            data: new Uint8Array(0),
          },
          logIndex(Math.max(0, commit - 5_000)),
        );
      }
    };
    const worker = async (): Promise<void> => {
      while (performance.now() < deadline && latencies.length < opsMax) await saveOne();
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    const seconds = (performance.now() - started) / 1000;
    const summary = summarize(latencies);
    return {
      log: kind,
      entryBytes,
      mode: batch === 1 ? 'one writer' : 'batches of 8, 4 in flight',
      saves: latencies.length,
      entriesPerSecond: Math.round((latencies.length * batch) / seconds),
      p50Ms: summary.p50,
      p99Ms: summary.p99,
    };
  } finally {
    await log.close();
    await dir.remove();
  }
}

export async function runRaftlogBench(args: BenchArgs): Promise<void> {
  const started = new Date();
  const loadBefore = loadavg();
  const durationMs = args.quick ? 300 : args.durationSeconds * 1000;
  const rows: RaftLogRow[] = [];
  for (const entryBytes of [256, 2048]) {
    for (const [batch, inFlight] of [
      [1, 1],
      [8, 4],
    ] as const) {
      // Alternate the two logs so that a change of load hits both alike.
      for (let round = 0; round < (args.quick ? 1 : args.rounds); round++) {
        for (const kind of ['leveldb', 'wal'] as const) {
          const row = await measure(kind, entryBytes, batch, inFlight, durationMs);
          progress(
            `${kind.padEnd(8)} ${String(entryBytes).padStart(5)} B  ${row.mode.padEnd(26)} ` +
              `${String(row.entriesPerSecond).padStart(7)} entries/s  p50 ${row.p50Ms.toFixed(3)} ms  p99 ${row.p99Ms.toFixed(3)} ms`,
          );
          rows.push(row);
        }
      }
    }
  }
  // The median round of each (log, size, mode).
  const groups = new Map<string, RaftLogRow[]>();
  for (const row of rows) {
    const key = `${row.entryBytes} B, ${row.mode}|${row.log}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const median = (list: RaftLogRow[], pick: (r: RaftLogRow) => number): number => {
    const sorted = list.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? NaN;
  };
  const lines = ['| row | LevelDB p50 / p99 ms | WAL p50 / p99 ms | LevelDB entries/s | WAL entries/s |'];
  lines.push('|---|---|---|---|---|');
  const names = [...new Set([...groups.keys()].map((key) => key.split('|')[0] as string))];
  for (const name of names) {
    const level = groups.get(`${name}|leveldb`) ?? [];
    const wal = groups.get(`${name}|wal`) ?? [];
    lines.push(
      `| ${name} | ${median(level, (r) => r.p50Ms).toFixed(3)} / ${median(level, (r) => r.p99Ms).toFixed(3)} | ` +
        `${median(wal, (r) => r.p50Ms).toFixed(3)} / ${median(wal, (r) => r.p99Ms).toFixed(3)} | ` +
        `${median(level, (r) => r.entriesPerSecond)} | ${median(wal, (r) => r.entriesPerSecond)} |`,
    );
  }
  const header = reportHeader('raftlog', started, loadBefore, args.seed);
  process.stdout.write(
    `raft log save(): LevelDB log vs segment WAL (load ${header.loadAverage.before.map((n) => n.toFixed(2)).join(' ')} -> ` +
      `${header.loadAverage.after.map((n) => n.toFixed(2)).join(' ')})\n${lines.join('\n')}\n`,
  );
  await writeJson(args.out ?? defaultOut('raftlog'), { ...header, durationMs, rows, table: lines });
}
