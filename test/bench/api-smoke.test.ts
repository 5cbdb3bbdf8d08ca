// Proves the api bench runs end to end (--quick, --nodes 1: an embedded Stoa server process against the same API
// server on a real etcd), reports every row as a positive number for both targets with the ratio, and writes
// the JSON (commit, machine, load, configuration, seed) and the HTML report; and that the CLI rejects bad flags.
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

test('npm run bench -- api --quick --nodes 1 writes every row, the JSON and the HTML report', async (t) => {
  const dir = await tempDir('bench-api-smoke');
  t.after(() => dir.remove());
  const out = join(dir.path, 'api.json');
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    [benchMain, 'api', '--quick', '--nodes', '1', '--seed', '11', '--concurrency', '8', '--out', out],
    { timeout: 180_000 },
  );
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    gitCommit: string;
    seed: number;
    machine: { cpus: number };
    loadAverage: { before: number[]; after: number[] };
    configuration: { nodes: number; concurrency: number; targets: string[] };
    rows: Array<{ name: string; stoa: number; etcd: number | null; ratio: number }>;
    loads: Record<string, Record<string, unknown>>;
  };
  assert.equal(report.scenario, 'api');
  assert.equal(report.seed, 11);
  assert.ok(report.gitCommit.length > 0);
  assert.ok(report.machine.cpus > 0);
  assert.equal(report.loadAverage.after.length, 3);
  assert.deepEqual(report.configuration.targets, ['stoa', 'etcd']);
  assert.equal(report.configuration.nodes, 1);
  assert.equal(report.configuration.concurrency, 8);
  assertSideBySideRows(report.rows, stdout, [
    'create throughput',
    'create latency p99',
    'get throughput',
    'get latency p99',
    'list 500, one response',
    'list 500, chunks of 500',
    'update (PUT) throughput',
    'update (PUT) latency p99',
    'merge patch throughput',
    'watch delivery latency p50',
    'watch delivery latency p99',
    'fan-out to 50 watchers, last delivery p50',
    'fan-out to 50 watchers, last delivery p99',
    'JSON patch throughput',
    'strategic merge patch latency p50',
    'server-side apply throughput',
  ]);
  for (const phase of Object.values(report.loads))
    assert.deepEqual(Object.keys(phase).sort(), ['etcd', 'stoa']);
  assert.match(stderr, /\[12\/12\]/, 'progress is shown per phase');
  // Authentication cost is measured on Stoa only (etcd has no counterpart): a finite Stoa figure, '-' for etcd.
  const authn = report.rows.filter((r) => r.name.startsWith('authentication:'));
  assert.equal(authn.length, 4, 'authentication cost rows: token, certificate, service account, OIDC');
  for (const r of authn) assert.ok(Number.isFinite(r.stoa) && r.stoa > 0 && r.etcd === null, r.name);

  const html = await readFile(join(dir.path, 'api.html'), 'utf8');
  assert.match(html, /^<!doctype html>/);
  assert.ok((html.match(/<svg /g) ?? []).length >= 16, 'histograms, percentiles and throughput per phase');
  assert.ok(html.includes('merge patch throughput'), 'the report has the table');
  assert.ok(!/<script|src="http/.test(html), 'the report is self-contained');
});

test('the bench CLI names the scenarios and rejects bad flags with exit code 2', async () => {
  const run = (...args: string[]): Promise<{ code: number; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [benchMain, ...args], { timeout: 30_000 }, (error, _stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr });
      });
    });
  const unknown = await run('nope');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown scenario nope/);
  for (const name of ['store', 'cluster', 'api']) assert.match(unknown.stderr, new RegExp(`\\n  ${name} `));
  const target = await run('store', '--target', 'mysql');
  assert.equal(target.code, 2);
  assert.match(target.stderr, /--target takes stoa, etcd or both, not mysql/);
  const nodes = await run('api', '--nodes', '0');
  assert.equal(nodes.code, 2);
  assert.match(nodes.stderr, /--nodes takes an integer from 1 to 9/);
  assert.equal((await run('cluster', '--concurrency')).code, 2);
});
