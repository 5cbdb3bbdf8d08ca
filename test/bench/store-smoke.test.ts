// Proves the store bench runs end to end (--quick), reports every row as a positive number for both engines, and
// writes the HTML report with its plots.
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

test('npm run bench -- store --quick writes every row', async (t) => {
  const dir = await tempDir('bench-smoke');
  t.after(() => dir.remove());
  const out = join(dir.path, 'store.json');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [benchMain, 'store', '--quick', '--out', out],
    {
      timeout: 120_000,
    },
  );
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    gitCommit: string;
    machine: { cpus: number };
    loadAverage: { before: number[] };
    rows: Array<{ name: string; stoa: number; etcd: number; ratio: number }>;
  };
  assert.equal(report.scenario, 'store');
  assert.ok(report.machine.cpus > 0);
  assert.equal(report.loadAverage.before.length, 3);
  assertSideBySideRows(report.rows, stdout, [
    'put latency p50',
    'put latency p99',
    'put throughput, 64 writers, 256 B',
    'put throughput, 64 writers, 2 KiB',
    'range throughput, 1 key',
    'range throughput, 100 keys',
    'watch delivery latency p50',
    'watch delivery latency p99',
  ]);
  const html = await readFile(join(dir.path, 'store.html'), 'utf8');
  assert.ok((html.match(/<svg /g) ?? []).length >= 10, 'the report has latency and throughput plots');
});
