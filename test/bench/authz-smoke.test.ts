// Proves the authz bench runs end to end (--quick) and reports positive decision rates for 10 and 10,000 bindings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../support/tmp.js';

const benchMain = fileURLToPath(new URL('../../bench/main.js', import.meta.url));

test('npm run bench -- authz --quick writes every row', async (t) => {
  const dir = await tempDir('bench-authz');
  t.after(() => dir.remove());
  const out = join(dir.path, 'authz.json');
  await promisify(execFile)(process.execPath, [benchMain, 'authz', '--quick', '--out', out], {
    timeout: 120_000,
  });
  const report = JSON.parse(await readFile(out, 'utf8')) as {
    scenario: string;
    rows: { name: string; value: number; unit: string }[];
  };
  assert.equal(report.scenario, 'authz');
  for (const setup of ['10 bindings, 10 users', '10000 bindings, 10 users', '10000 bindings, 1000 users']) {
    for (const label of ['RBAC, allowed', 'RBAC, no rule matches', 'chain (masters, Node, RBAC), allowed']) {
      const row = report.rows.find((r) => r.name === `${label}, ${setup}`);
      assert.ok(row !== undefined && row.value > 0, `${label}, ${setup}`);
    }
  }
});
