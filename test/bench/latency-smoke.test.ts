// Proves the latency bench runs end to end (--quick): a 3-node Stoa cluster traced with STOA_LATENCY_TRACE, and
// for writes to the leader and to a follower a stage table in which every stage of the path was found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const benchMain = fileURLToPath(new URL('../../bench/main.js', import.meta.url));

test('npm run bench -- latency --quick prints both stage tables with traced writes', async () => {
  const env = { ...process.env };
  delete env['STOA_LATENCY_TRACE'];
  const { stdout } = await promisify(execFile)(process.execPath, [benchMain, 'latency', '--quick'], {
    env,
    timeout: 120_000,
  });
  for (const title of ['Writes to the leader', 'Writes to a follower (forwarded)']) {
    const match = new RegExp(
      `${title.replace(/[()]/g, '\\$&')}: (\\d+) writes, (\\d+) with every stage traced`,
    ).exec(stdout);
    assert.ok(match !== null, `${title} in:\n${stdout}`);
    assert.ok(Number(match[1]) > 0 && Number(match[2]) > 0, match[0]);
  }
  for (const stage of [
    'follower: entry fsynced',
    'leader: Ready with the commit',
    'member: apply computed',
  ]) {
    assert.match(
      stdout,
      new RegExp(`\\| ${stage} \\| \\d+\\.\\d{3} \\| \\d+\\.\\d{3} \\| \\d+\\.\\d{3} \\|`),
    );
  }
});
