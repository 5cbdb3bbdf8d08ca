// Latency bench: where one client's write spends its time on a 3-node Stoa cluster. Starts the cluster with the
// latency trace on (STOA_LATENCY_TRACE, src/transport/latency-trace.ts), writes from one client at a modest
// rate (one write in flight, a pause between writes), first to the leader and then to a follower (forwarded),
// stops the nodes so they write their traces, and prints per stage of the write's path the time since the
// previous stage (p50 / p99 over the writes) and the time since the client sent it (p50). Stages on a
// follower are the first of the two followers to reach them (the one whose acknowledgement commits the write).
import { mkdir, readFile, readdir } from 'node:fs/promises';
import type { BenchArgs } from './main.js';
import { startStoaCluster, type BenchCluster } from './clusters.js';
import { loadavg, percentile, progress, putOne } from './measure.js';
import { tempDir } from '../test/support/tmp.js';

type Event = readonly [time: number, stage: string, index: number];
interface Write {
  readonly sentMs: number;
  readonly receivedMs: number;
}
/** Where a stage happens: the member the client talks to, the leader, or (the first of) the followers. */
type Place = 'target' | 'leader' | 'follower';
interface Step {
  readonly place: Place;
  readonly stage: string;
  readonly label: string;
  /** A stage off the critical path: timed from the step at this position of the path, which goes on without it. */
  readonly beside?: number;
}

const pauseMs = 15;
const writesMax = 2000;
const valueBytes = 256;

const step = (place: Place, stage: string, label: string, beside?: number): Step =>
  beside === undefined ? { place, stage, label } : { place, stage, label, beside };

/**
 * The stretch both paths share, from the leader's Ready with the entry to its Ready with the commit; `at` is
 * the position of its first step in the path (the leader's own fsync is timed from there, beside the path).
 */
const replication = (at: number): Step[] => [
  step('leader', 'ready.entries', 'leader: Ready with the entry'),
  step('leader', 'send.MsgApp', 'leader: MsgApp handed to the transport'),
  step('leader', 'link.write', 'leader: MsgApp frame written to the TLS socket'),
  step('leader', 'persisted', '(beside) leader: its own append fsynced, since the Ready', at),
  step('follower', 'link.data', 'follower: bytes received'),
  step('follower', 'recv.MsgApp', 'follower: MsgApp stepped'),
  step('follower', 'ready.entries', 'follower: Ready with the entry'),
  step('follower', 'persisted', 'follower: entry fsynced'),
  step('follower', 'send.MsgAppResp', 'follower: MsgAppResp handed to the transport'),
  step('follower', 'link.write', 'follower: MsgAppResp frame written'),
  step('leader', 'link.data', 'leader: bytes received'),
  step('leader', 'recv.MsgAppResp', 'leader: MsgAppResp stepped'),
  step('leader', 'ready.committed', 'leader: Ready with the commit'),
];

/** The path of a write sent to the leader. */
const leaderPath: readonly Step[] = [
  step('leader', 'kv.txn', 'leader: request decoded (kv-node)'),
  step('leader', 'propose', 'leader: proposed'),
  ...replication(2),
  step('leader', 'apply.start', 'leader: apply started'),
  step('leader', 'apply.computed', 'leader: apply computed'),
  step('leader', 'answer', 'leader: proposer answered'),
  step('leader', 'kv.reply', 'leader: reply written (kv-node)'),
];

/** The path of a write sent to a follower, which forwards it and answers once it applied the entry itself. */
const forwardedPath: readonly Step[] = [
  step('target', 'kv.txn', 'member: request decoded (kv-node)'),
  step('target', 'propose', 'member: proposed'),
  step('target', 'send.MsgProp', 'member: MsgProp handed to the transport'),
  step('target', 'link.write', 'member: MsgProp frame written'),
  step('leader', 'link.data', 'leader: bytes received'),
  step('leader', 'recv.MsgProp', 'leader: MsgProp stepped'),
  ...replication(6),
  step('leader', 'send.commit', 'leader: commit index handed to the transport'),
  step('leader', 'link.write', 'leader: frame written'),
  step('target', 'link.data', 'member: bytes received'),
  step('target', 'recv.commit', 'member: commit index stepped'),
  step('target', 'ready.committed', 'member: Ready with the commit'),
  step('target', 'apply.computed', 'member: apply computed'),
  step('target', 'answer', 'member: proposer answered'),
  step('target', 'kv.reply', 'member: reply written (kv-node)'),
];

const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function writeLoop(cluster: BenchCluster, member: number, durationMs: number): Promise<Write[]> {
  const store = await cluster.client([member]);
  const value = Buffer.alloc(valueBytes, 'v');
  const writes: Write[] = [];
  const end = performance.now() + durationMs;
  for (let i = 0; i < writesMax && performance.now() < end; i++) {
    const sentMs = nowMs();
    await putOne(store, `/bench/latency/${i % 100}`, value);
    writes.push({ sentMs, receivedMs: nowMs() });
    await sleep(pauseMs);
  }
  return writes;
}

/** The first event of `stage` in `events` (sorted by time) at or after `fromMs` and at or before `toMs`. */
function firstAt(events: readonly Event[], stage: string, fromMs: number, toMs: number): number | undefined {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid]![0] < fromMs) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < events.length && events[i]![0] <= toMs; i++) {
    if (events[i]![1] === stage) return events[i]![0];
  }
  return undefined;
}

interface StageTable {
  readonly rows: StageRow[];
  /** Writes whose every stage was found in the traces. */
  readonly complete: number;
  /** Writes whose commit waited for the leader's own fsync (it ended after the first follower's ack). */
  readonly ownFsyncLast: number;
}

interface StageRow {
  readonly label: string;
  readonly deltaP50: number;
  readonly deltaP99: number;
  readonly sinceSentP50: number;
  readonly seen: number;
}

/** Per step, the time since the previous step over the writes where the whole path was found. */
function stageTable(
  writes: readonly Write[],
  path: readonly Step[],
  places: Record<Place, readonly (readonly Event[])[]>,
): StageTable {
  const deltas: number[][] = path.map(() => []);
  const sinceSent: number[][] = path.map(() => []);
  const lastDelta: number[] = [];
  let complete = 0;
  let ownFsyncLast = 0;
  for (const write of writes) {
    let previousMs = write.sentMs;
    const times: number[] = [];
    for (const s of path) {
      const fromMs = s.beside === undefined ? previousMs : times[s.beside]!;
      const candidates = places[s.place]
        .map((events) => firstAt(events, s.stage, fromMs, write.receivedMs))
        .filter((t): t is number => t !== undefined);
      if (candidates.length === 0) break;
      const t = Math.min(...candidates);
      times.push(t);
      if (s.beside === undefined) previousMs = t;
    }
    if (times.length !== path.length) continue;
    complete++;
    const ownFsync = path.findIndex((s) => s.beside !== undefined && s.stage === 'persisted');
    const ack = path.findIndex((s) => s.place === 'leader' && s.stage === 'recv.MsgAppResp');
    if (ownFsync >= 0 && ack >= 0 && times[ownFsync]! > times[ack]!) ownFsyncLast++;
    let before = write.sentMs;
    times.forEach((t, i) => {
      const s = path[i]!;
      const fromMs = s.beside === undefined ? before : times[s.beside]!;
      deltas[i]!.push(t - fromMs);
      sinceSent[i]!.push(t - write.sentMs);
      if (s.beside === undefined) before = t;
    });
    lastDelta.push(write.receivedMs - before);
  }
  const p = (values: number[], q: number): number =>
    percentile(
      [...values].sort((a, b) => a - b),
      q,
    );
  const rows = path.map((s, i) => ({
    label: s.label,
    deltaP50: p(deltas[i]!, 50),
    deltaP99: p(deltas[i]!, 99),
    sinceSentP50: p(sinceSent[i]!, 50),
    seen: deltas[i]!.length,
  }));
  const total = writes.map((w) => w.receivedMs - w.sentMs);
  rows.push({
    label: 'client: reply received',
    deltaP50: p(lastDelta, 50),
    deltaP99: p(lastDelta, 99),
    sinceSentP50: p(total, 50),
    seen: lastDelta.length,
  });
  return { rows, complete, ownFsyncLast };
}

function printTable(title: string, writes: readonly Write[], table: StageTable): void {
  const total = writes.map((w) => w.receivedMs - w.sentMs).sort((a, b) => a - b);
  process.stdout.write(
    `\n${title}: ${writes.length} writes, ${table.complete} with every stage traced; ` +
      `round trip p50 ${percentile(total, 50).toFixed(2)} ms, p99 ${percentile(total, 99).toFixed(2)} ms; ` +
      `the leader's own fsync ended after the first follower's ack in ${table.ownFsyncLast}\n\n` +
      '| stage | since previous p50 (ms) | p99 (ms) | since sent p50 (ms) |\n| --- | ---: | ---: | ---: |\n',
  );
  for (const r of table.rows) {
    process.stdout.write(
      `| ${r.label} | ${r.deltaP50.toFixed(3)} | ${r.deltaP99.toFixed(3)} | ${r.sinceSentP50.toFixed(3)} |\n`,
    );
  }
}

async function readTraces(dir: string): Promise<Map<string, Event[]>> {
  const traces = new Map<string, Event[]>();
  for (const file of await readdir(dir)) {
    const [header, ...lines] = (await readFile(`${dir}/${file}`, 'utf8')).trim().split('\n');
    const { process: name } = JSON.parse(header ?? '{}') as { process: string };
    const events = lines.map((line) => JSON.parse(line) as Event).sort((a, b) => a[0] - b[0]);
    traces.set(
      name,
      [...(traces.get(name) ?? []), ...events].sort((a, b) => a[0] - b[0]),
    );
  }
  return traces;
}

export async function runLatencyBench(args: BenchArgs): Promise<void> {
  const durationMs = args.quick ? 500 : args.durationSeconds * 1000;
  const dir = await tempDir('bench-latency');
  const traceDir = `${dir.path}/trace`;
  await mkdir(traceDir);
  process.env['STOA_LATENCY_TRACE'] = traceDir; // inherited by the node processes
  try {
    progress(
      `latency: load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const cluster = await startStoaCluster(3, args.seed);
    let leaderWrites: Write[];
    let forwardedWrites: Write[];
    let leader: number;
    let target: number;
    try {
      leader = await cluster.leader();
      target = (leader + 1) % 3;
      await writeLoop(cluster, leader, Math.min(durationMs, 1000)); // warm-up
      leaderWrites = await writeLoop(cluster, leader, durationMs);
      forwardedWrites = await writeLoop(cluster, target, durationMs);
    } finally {
      await cluster.stop(); // SIGTERM: each node writes its trace on exit
    }
    const traces = await readTraces(traceDir);
    const events = (i: number): Event[] => traces.get(`node-${i + 1}`) ?? [];
    const others = [0, 1, 2].filter((i) => i !== leader);
    printTable(
      'Writes to the leader',
      leaderWrites,
      stageTable(leaderWrites, leaderPath, {
        target: [events(leader)],
        leader: [events(leader)],
        follower: others.map(events),
      }),
    );
    printTable(
      'Writes to a follower (forwarded)',
      forwardedWrites,
      stageTable(forwardedWrites, forwardedPath, {
        target: [events(target)],
        leader: [events(leader)],
        follower: others.map(events),
      }),
    );
    progress(
      `latency: load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    delete process.env['STOA_LATENCY_TRACE'];
    await dir.remove();
  }
}
