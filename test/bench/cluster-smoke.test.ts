// Proves the cluster bench runs end to end (--quick) against a 3-node Stoa and a 3-member etcd cluster, reports every row as a positive number for both, and writes the HTML report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../support/tmp.js';
import { assertSideBySideRows } from '../support/bench.js';

const benchMain = fileURLToPath(new URL('../../bench/main.js', import.meta.url));

test('npm run bench -- cluster --quick writes every row, the JSON and the HTML report', async (t) => {
  const dir = await tempDir('bench-cluster-smoke');
  t.after(() => dir.remove());
  const out = join(dir.path, 'cluster.json');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [benchMain, 'cluster', '--quick', '--seed', '7', '--out', out],
    { timeout: 240_000 },
  );
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    gitCommit: string;
    seed: number;
    machine: { cpus: number };
    loadAverage: { before: number[] };
    configuration: { nodes: number; heartbeatIntervalMs: number; electionTimeoutMs: number };
    rows: Array<{ name: string; stoa: number; etcd: number; ratio: number }>;
    failover: Record<'stoa' | 'etcd', { kills: unknown[] }>;
  };
  assert.equal(report.scenario, 'cluster');
  assert.equal(report.seed, 7);
  assert.ok(report.gitCommit.length > 0);
  assert.ok(report.machine.cpus > 0);
  assert.equal(report.loadAverage.before.length, 3);
  assert.equal(report.configuration.nodes, 3);
  assert.equal(report.configuration.heartbeatIntervalMs, 100);
  assert.equal(report.configuration.electionTimeoutMs, 1000);
  const expected = [];
  for (const size of ['256 B', '2 KiB']) {
    for (const clients of ['1 client(s)', '64 client(s)']) {
      for (const what of ['put throughput', 'put latency p50', 'put latency p99']) {
        expected.push(`${what}, ${clients}, ${size}`);
      }
    }
  }
  expected.push(
    'range throughput, linearizable',
    'range throughput, serializable',
    'watch delivery latency p50, follower',
    'watch delivery latency p99, follower',
    'failover window, median',
    'failover window, worst',
  );
  assertSideBySideRows(report.rows, stdout, expected);
  assert.equal(report.rows.length, expected.length);
  for (const target of ['stoa', 'etcd'] as const) assert.equal(report.failover[target].kills.length, 1);

  const html = await readFile(join(dir.path, 'cluster.html'), 'utf8');
  assert.match(html, /^<!doctype html>/);
  assert.ok((html.match(/<svg /g) ?? []).length >= 10, 'the report has its plots');
  assert.ok(html.includes('failover window, median'), 'the report has the table');
  assert.ok(!/<script|src="http/.test(html), 'the report is self-contained');
});
