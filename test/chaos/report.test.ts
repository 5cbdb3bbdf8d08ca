// Proves the chaos report says what a reader needs: the verdict, a failing check's counterexample, the fault
// timeline (also with "|" in a fault's name), the replay command, a throughput chart marked with the fault in
// force; and that the history file lists invoke and completion events in time order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { historyLines, renderMarkdown, terminalSummary } from '../../chaos/report.js';
import type { ChaosReport } from '../../chaos/run.js';

const report: ChaosReport = {
  seed: 9,
  command: 'npm run chaos -- --nodes 3 --duration 4s --seed 9',
  options: { nodes: 3, durationMs: 4000, faults: ['partition'], clients: 1, keys: 1, watchers: 0 },
  startedAt: '2026-01-01T00:00:00.000Z',
  elapsedMs: 5000,
  verdict: 'fail',
  checks: [
    { name: 'linearizability', verdict: 'fail', summary: 'a | b', counterexample: ['#0 get -> x'] },
    { name: 'convergence', verdict: 'pass', summary: 'same', counterexample: [] },
  ],
  timeline: [
    { atS: 1, event: 'start', kind: 'partition', detail: 'partition {n1} | {n2,n3}' },
    { atS: 2.5, event: 'heal', kind: 'partition', detail: 'partition {n1} | {n2,n3}' },
  ],
  counts: { get: { ok: 3, fail: 1, unknown: 0 } },
  okPerSecond: [1, 1, 1, 0],
  watchers: [],
  finalNodes: [],
  history: [
    {
      clientId: 0,
      node: 0,
      op: 'create',
      input: {},
      callAt: 5,
      returnAt: null,
      outcome: 'unknown',
      status: 0,
    },
    {
      clientId: 1,
      node: 1,
      op: 'get',
      input: {},
      callAt: 1,
      returnAt: 9,
      outcome: 'ok',
      status: 200,
      output: { type: 'not-found' },
    },
  ],
  watcherLogs: [],
};

test('the Markdown report has verdicts, counterexample, escaped timeline, replay and marked chart', () => {
  const md = renderMarkdown(report);
  assert.match(md, /^# Chaos run, seed 9: FAIL/);
  assert.match(md, /\| linearizability \| FAIL \| a \\\| b \|/);
  assert.match(md, /### Counterexample: linearizability\n\n```\n#0 get -> x\n```/);
  assert.match(md, /\| 1 \| start \| partition \{n1\} \\\| \{n2,n3\} \|/);
  assert.ok(md.includes(report.command));
  const chart = md.split('\n').filter((line) => /^ +\d+s +\d+/.test(line));
  assert.equal(chart.length, 4);
  assert.doesNotMatch(chart[0] ?? '', /partition/);
  assert.match(chart[1] ?? '', /partition/);
  assert.match(chart[2] ?? '', /partition/);
  assert.doesNotMatch(chart[3] ?? '', /partition/);
  assert.match(terminalSummary(report), /FAIL +linearizability: a \| b/);
});

test('history lines are invoke and completion events in time order', () => {
  const events = historyLines(report.history).map((l) => JSON.parse(l) as { type: string; index: number });
  assert.deepEqual(
    events.map((e) => `${e.type}:${e.index}`),
    ['invoke:1', 'invoke:0', 'unknown:0', 'ok:1'],
  );
});
