// Proves the raftlog micro bench runs end to end (--quick): save() of the LevelDB log and of the segment WAL,
// every row with positive rates and latencies, in the printed table and the JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const benchMain = fileURLToPath(new URL('../../bench/main.js', import.meta.url));

test('npm run bench -- raftlog --quick measures both logs for every row', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-raftlog-bench-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'raftlog.json');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [benchMain, 'raftlog', '--quick', '--out', out],
    { timeout: 120_000 },
  );
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    rows: { log: string; entryBytes: number; mode: string; entriesPerSecond: number; p50Ms: number }[];
  };
  assert.equal(report.scenario, 'raftlog');
  assert.equal(report.rows.length, 8);
  for (const row of report.rows) {
    assert.ok(row.entriesPerSecond > 0 && row.p50Ms > 0, JSON.stringify(row));
  }
  assert.deepEqual(new Set(report.rows.map((r) => r.log)), new Set(['leveldb', 'wal']));
  assert.match(stdout, /\| 2048 B, batches of 8, 4 in flight \| \d+\.\d{3} \/ \d+\.\d{3} \|/);
});
