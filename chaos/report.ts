// The chaos report: report.json (verdicts, timeline, counts), history.jsonl (one operation a line),
// watches.jsonl (one watcher's log a line),
// and report.md (what a person reads: verdicts, counterexamples, the fault timeline, throughput, errors and
// the command to replay), plus a terminal summary.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TimelineEntry } from './faults.js';
import type { ChaosReport } from './run.js';
import type { HistoryRecord } from './workload.js';

export async function writeReport(dir: string, report: ChaosReport): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'report.json');
  const history = join(dir, 'history.jsonl');
  const markdown = join(dir, 'report.md');
  const watches = join(dir, 'watches.jsonl');
  const { history: records, watcherLogs, ...summary } = report;
  await writeFile(json, JSON.stringify(summary, null, 2) + '\n');
  await writeFile(history, historyLines(records).join('\n') + '\n');
  await writeFile(watches, watcherLogs.map((w) => JSON.stringify(w)).join('\n') + '\n');
  await writeFile(markdown, renderMarkdown(report));
  return [markdown, json, history, watches];
}

/**
 * The history as events in time order, Jepsen-style: an `invoke` at each call, then `ok`, `fail` or `unknown`
 * (an unknown has no reply time; it is listed at its call, after its invoke).
 */
export function historyLines(records: readonly HistoryRecord[]): string[] {
  const events: { at: number; order: number; line: string }[] = [];
  records.forEach((r, index) => {
    const { outcome, returnAt, status, output, ...call } = r;
    events.push({ at: r.callAt, order: 0, line: JSON.stringify({ type: 'invoke', index, ...call }) });
    events.push({
      at: returnAt ?? r.callAt,
      order: 1,
      line: JSON.stringify({
        type: outcome,
        index,
        clientId: r.clientId,
        op: r.op,
        at: returnAt,
        status,
        ...(output === undefined ? {} : { output }),
      }),
    });
  });
  return events.sort((a, b) => a.at - b.at || a.order - b.order).map((e) => e.line);
}

function mark(verdict: string): string {
  return verdict === 'pass' ? 'PASS' : verdict === 'fail' ? 'FAIL' : 'UNKNOWN';
}

/** A one-line-per-second bar chart of acknowledged operations, each second marked with the fault in force. */
function throughputChart(perSecond: readonly number[], timeline: readonly TimelineEntry[]): string[] {
  const max = Math.max(1, ...perSecond);
  const faultAt = (second: number): string => {
    let active = '';
    for (const entry of timeline) {
      if (entry.atS >= second + 1) break;
      active = entry.event === 'start' ? entry.detail : entry.atS <= second ? '' : active;
    }
    return active;
  };
  return perSecond.map((n, s) => {
    const bar = '#'.repeat(Math.round((n / max) * 50)).padEnd(50);
    return `${String(s).padStart(4)}s ${String(n).padStart(5)} ${bar} ${faultAt(s)}`.trimEnd();
  });
}

export function renderMarkdown(report: ChaosReport): string {
  const lines: string[] = [];
  const o = report.options;
  lines.push(`# Chaos run, seed ${report.seed}: ${mark(report.verdict)}`, '');
  lines.push(
    `${o.nodes} nodes, ${Math.round(o.durationMs / 1000)} s of faults (${o.faults.join(', ') || 'none'}), ` +
      `${o.clients} clients on ${o.keys} objects, ${o.watchers} watchers; started ${report.startedAt}, ` +
      `took ${(report.elapsedMs / 1000).toFixed(0)} s.`,
    '',
    'Replay:',
    '',
    '```',
    report.command,
    '```',
    '',
    '## Checks',
    '',
    '| check | verdict | summary |',
    '| --- | --- | --- |',
  );
  for (const check of report.checks) {
    lines.push(`| ${check.name} | ${mark(check.verdict)} | ${check.summary.replace(/\|/g, '\\|')} |`);
  }
  for (const check of report.checks.filter((c) => c.counterexample.length > 0)) {
    lines.push('', `### Counterexample: ${check.name}`, '', '```', ...check.counterexample, '```');
  }
  for (const check of report.checks.filter((c) => (c.notes ?? []).length > 0)) {
    lines.push('', `### Notes: ${check.name}`, '', '```', ...(check.notes ?? []), '```');
  }
  lines.push('', '## Fault timeline', '', '| at (s) | event | fault |', '| --- | --- | --- |');
  for (const entry of report.timeline) {
    lines.push(`| ${entry.atS} | ${entry.event} | ${entry.detail.replace(/\|/g, '\\|')} |`);
  }
  lines.push('', '## Operations', '', '| operation | ok | failed | unknown |', '| --- | --- | --- | --- |');
  for (const [op, c] of Object.entries(report.counts).sort()) {
    lines.push(`| ${op} | ${c.ok} | ${c.fail} | ${c.unknown} |`);
  }
  const total = Object.values(report.counts).reduce((s, c) => s + c.ok, 0);
  const seconds = Math.max(1, report.okPerSecond.length);
  lines.push('', `Acknowledged: ${total} operations, ${(total / seconds).toFixed(0)}/s on average.`, '');
  lines.push('Acknowledged operations per second (faults in the timeline above):', '', '```');
  lines.push(...throughputChart(report.okPerSecond, report.timeline), '```');
  lines.push('', '## Watchers', '', '| watcher | records | reconnects | resyncs (410) | last revision |');
  lines.push('| --- | --- | --- | --- | --- |');
  for (const w of report.watchers) {
    lines.push(`| ${w.id} | ${w.records} | ${w.reconnects} | ${w.resyncs} | ${w.lastRevision} |`);
  }
  lines.push('', '## Final state per node', '', '| node | applied index | revision | objects | hash |');
  lines.push('| --- | --- | --- | --- | --- |');
  for (const n of report.finalNodes) {
    lines.push(
      `| ${n.name} | ${n.appliedIndex ?? '?'} | ${n.revision ?? '?'} | ${n.objects ?? '?'} | ${n.hash ?? '?'} |`,
    );
  }
  return lines.join('\n') + '\n';
}

export function terminalSummary(report: ChaosReport): string {
  const lines = [`chaos seed ${report.seed}: ${mark(report.verdict)}`];
  for (const check of report.checks) {
    lines.push(`  ${mark(check.verdict).padEnd(7)} ${check.name}: ${check.summary}`);
    for (const line of check.counterexample.slice(0, 12)) lines.push(`          ${line}`);
    for (const line of (check.notes ?? []).slice(0, 12)) lines.push(`          note: ${line}`);
  }
  const total = Object.values(report.counts).reduce((s, c) => s + c.ok, 0);
  const unknown = Object.values(report.counts).reduce((s, c) => s + c.unknown, 0);
  const failed = Object.values(report.counts).reduce((s, c) => s + c.fail, 0);
  lines.push(
    `  ${total} ok, ${unknown} unknown, ${failed} failed operations; ${report.timeline.filter((t) => t.event === 'start').length} faults`,
    `  replay: ${report.command}`,
  );
  return lines.join('\n') + '\n';
}
