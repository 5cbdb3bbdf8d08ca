// Proves a two-minute chaos run (the CI run of issue 8) against a real 3-process cluster (every fault kind: kill, pause, partition, loss,
// delay) keeps every guarantee: linearizable objects, watch guarantees, list reads, no acknowledged write lost,
// convergence; and that the run injected each kind and acknowledged work through the faults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { faultKinds } from '../../chaos/faults.js';
import { terminalSummary } from '../../chaos/report.js';
import { runChaos } from '../../chaos/run.js';

test('a two-minute chaos run with every fault kind finds no violation', { timeout: 360_000 }, async () => {
  const lines: string[] = [];
  const report = await runChaos({
    nodes: 3,
    durationMs: 120_000,
    faults: faultKinds,
    seed: Number(process.env['STOA_CHAOS_SEED'] ?? 20261121),
    clients: 6,
    keys: 16,
    watchers: 2,
    checkBudgetMs: 30_000,
    log: (line) => lines.push(line),
  });
  const summary = terminalSummary(report);
  for (const check of report.checks) {
    assert.notEqual(check.verdict, 'fail', `${check.name} failed:\n${summary}`);
  }
  assert.equal(report.verdict, 'pass', summary);
  // Kubernetes' exact answers too: an update racing a delete is 404, not 409 (no deviation notes).
  const linearizability = report.checks.find((check) => check.name === 'linearizability');
  assert.deepEqual(linearizability?.notes ?? [], [], summary);
  const injected = new Set(report.timeline.filter((e) => e.event === 'start').map((e) => e.kind));
  assert.deepEqual([...injected].sort(), [...faultKinds].sort(), 'every fault kind was injected');
  const acknowledged = Object.values(report.counts).reduce((sum, c) => sum + c.ok, 0);
  assert.ok(acknowledged > 200, `the workload made progress (${acknowledged} acknowledged)`);
  assert.ok(
    report.watchers.every((w) => w.records > 0),
    `every watcher saw events: ${JSON.stringify(report.watchers)}`,
  );
});
