// Proves the authz bench runs end to end (--quick, --nodes 1): the in-process RBAC rates for 10 and 10,000 bindings, and the server-level rows (SubjectAccessReviews, impersonated GETs, binding-to-effect) as positive numbers on both targets, in the JSON and the HTML report.
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

test('npm run bench -- authz --quick writes every row for both targets', async (t) => {
  const dir = await tempDir('bench-authz');
  t.after(() => dir.remove());
  const out = join(dir.path, 'authz.json');
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    [benchMain, 'authz', '--quick', '--nodes', '1', '--concurrency', '8', '--seed', '5', '--out', out],
    { timeout: 180_000 },
  );
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    seed: number;
    gitCommit: string;
    loadAverage: { before: number[]; after: number[] };
    configuration: { nodes: number; concurrency: number; targets: string[]; bindings: number[] };
    rows: { name: string; unit: string; stoa: number; etcd: number | null; ratio: number | null }[];
    loads: Record<string, Record<string, unknown>>;
  };
  assert.equal(report.scenario, 'authz');
  assert.equal(report.seed, 5);
  assert.ok(report.gitCommit.length > 0);
  assert.equal(report.loadAverage.after.length, 3);
  assert.deepEqual(report.configuration.targets, ['stoa', 'etcd']);
  assert.equal(report.configuration.nodes, 1);
  assert.equal(report.configuration.concurrency, 8);
  const [small, large] = report.configuration.bindings;
  assert.equal(small, 10);

  // In process: Stoa's authorizer only (etcd has no counterpart: null in the JSON, '-' in the table).
  for (const setup of ['10 bindings, 10 users', '10000 bindings, 10 users', '10000 bindings, 1000 users']) {
    for (const label of ['RBAC, allowed', 'RBAC, no rule matches', 'chain (masters, Node, RBAC), allowed']) {
      const name = `in process: ${label}, ${setup}`;
      const row = report.rows.find((r) => r.name === name);
      assert.ok(row !== undefined && row.stoa > 0 && row.etcd === null, name);
    }
  }

  // Through the API on both targets, at both sizes.
  const prefixes = [`RoleBinding create throughput (to ${large})`];
  for (const size of [small, large]) {
    prefixes.push(
      `SubjectAccessReview allowed, ${size} bindings`,
      `SubjectAccessReview allowed latency p99, ${size} bindings`,
      `SubjectAccessReview denied, ${size} bindings`,
      `GET as a bound user (impersonated), ${size} bindings`,
      `GET as a bound user (impersonated) latency p99, ${size} bindings`,
      `new RoleBinding to first allowed SAR p50, ${size} bindings`,
      `new RoleBinding to first allowed SAR p99, ${size} bindings`,
    );
  }
  assertSideBySideRows(report.rows, stdout, prefixes);
  assert.equal(Object.keys(report.loads).length, 10);
  for (const phase of Object.values(report.loads))
    assert.deepEqual(Object.keys(phase).sort(), ['etcd', 'stoa']);
  assert.match(stderr, /\[10\/10\]/, 'progress is shown per phase');

  const html = await readFile(join(dir.path, 'authz.html'), 'utf8');
  assert.match(html, /^<!doctype html>/);
  assert.ok(html.includes('SubjectAccessReview denied'), 'the report has the table');
  assert.ok((html.match(/<svg /g) ?? []).length >= 10, 'ratio chart and per-phase plots');
  assert.ok(!/<script|src="http/.test(html), 'the report is self-contained');
});
