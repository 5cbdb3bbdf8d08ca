// A debug trace of a write's way through the processes of a cluster, for finding where its latency goes.
//
// Off unless the environment variable STOA_LATENCY_TRACE names a directory: then every call of traceStage()
// records (wall-clock time in ms, stage, a number: a log index, request id or byte count) in memory, and the
// process writes them to DIR/<pid>.jsonl when it exits. Times are performance.timeOrigin + performance.now(),
// comparable across the processes of one machine. A traced process also records its garbage collections and
// its event-loop stalls (traceProcessPauses). Callers guard each call with `if (latencyTraceOn)`, so a build with the trace off
// pays one boolean test per stage. bench/latency.ts starts a cluster with it on and prints the stage table.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';

const traceDir = process.env['STOA_LATENCY_TRACE'];

/** Whether this process records its stages. */
export const latencyTraceOn = traceDir !== undefined && traceDir !== '';

/** At most this many events are kept (about 40 bytes each); later ones are dropped. */
const eventsMax = 1_000_000;

const times: number[] = [];
const stages: string[] = [];
const indexes: number[] = [];
let processName = `pid-${process.pid}`;

/** Names this process in its trace file (a node's name, or "client"). */
export function setTraceProcessName(name: string): void {
  processName = name;
}

/** Records that `stage` happened now, for the log index (or request id) `index`. */
export function traceStage(stage: string, index: number): void {
  traceStageAt(performance.now(), stage, index);
}

/** Records that `stage` happened at `atMs` (a performance.now() time), for `index`. */
function traceStageAt(atMs: number, stage: string, index: number): void {
  if (times.length >= eventsMax) return;
  times.push(performance.timeOrigin + atMs);
  stages.push(stage);
  indexes.push(index);
}

/** Event-loop stalls at least this long are recorded ('loop.stall', the stall in ms, at its start). */
const stallMs = 10;

/**
 * What else holds a process's one thread: every garbage collection ('gc.minor', 'gc.major', ... with its
 * duration in µs, at its start) and every event-loop stall of `stallMs` or more (a timer that fires late).
 */
function traceProcessPauses(): void {
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'gc.minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'gc.major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'gc.incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'gc.weakcb',
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } | null }).detail?.kind ?? 0;
      traceStageAt(entry.startTime, kinds[kind] ?? 'gc', Math.round(entry.duration * 1000));
    }
  }).observe({ entryTypes: ['gc'] });
  const periodMs = 2;
  let expected = performance.now() + periodMs;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - expected;
    if (late >= stallMs) traceStageAt(expected, 'loop.stall', Math.round(late));
    expected = now + periodMs;
  }, periodMs);
  timer.unref();
}

/** Writes this process's events; called on exit when tracing is on, and by an in-process driver. */
export function writeTrace(): void {
  if (!latencyTraceOn || traceDir === undefined) return;
  const lines = [JSON.stringify({ process: processName, pid: process.pid })];
  for (let i = 0; i < times.length; i++) lines.push(JSON.stringify([times[i], stages[i], indexes[i]]));
  writeFileSync(join(traceDir, `${process.pid}.jsonl`), lines.join('\n') + '\n');
}

if (latencyTraceOn) {
  process.once('exit', writeTrace);
  traceProcessPauses();
}
