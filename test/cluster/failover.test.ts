// Proves the fast failover path with real `stoa serve` processes: after kill -9 of the leader, the survivors'
// transports see its process gone (connection lost, reconnect refused), they say so in their logs and admin
// status (leaderDownHints), a new leader is elected, and writes through a survivor succeed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adminStatusPath, down, freeBasePort, layout, status, up } from '../../cluster/harness.js';
import { httpsJson } from '../support/https.js';
import { adminTls, waitFor } from '../support/cluster.js';
import { tempDir } from '../support/tmp.js';

test('kill -9 of the leader: the survivors see its process gone, campaign early, and a new leader serves writes', async (t) => {
  const dir = await tempDir('failover');
  const basePort = await freeBasePort(3);
  const log = (): void => undefined;
  t.after(async () => {
    await down(dir.path, log).catch(() => undefined);
    await dir.remove();
  });
  // etcd's default timing (heartbeat 100 ms, election 1000 ms): what the flags default to.
  await up(
    { nodes: 3, basePort, dataDir: dir.path, extraServeFlags: [] },
    { nodes: true, basePort: true },
    log,
  );
  const tls = await adminTls(dir.path);
  const nodes = layout({ nodes: 3, basePort, dataDir: dir.path });
  const url = (i: number): string => `https://127.0.0.1:${nodes[i]?.apiPort}`;
  const old = await waitFor('a leader', async () => {
    const rows = await status(dir.path);
    const leader = rows.find((s) => s.role === 'leader');
    return leader !== undefined && rows.every((s) => s.leader === leader.name) ? leader : undefined;
  });
  assert.ok(old.pid !== null);
  const survivors = [0, 1, 2].filter((i) => nodes[i]?.name !== old.name);

  process.kill(old.pid, 'SIGKILL');
  const elected = await waitFor('a new leader', async () => {
    const rows = await status(dir.path);
    const leader = rows.find((s) => s.role === 'leader' && s.name !== old.name);
    return leader !== undefined && (leader.term ?? 0) > (old.term ?? 0) ? leader : undefined;
  });
  assert.notEqual(elected.name, old.name);

  const hints = await Promise.all(
    survivors.map(async (i) => {
      const reply = await httpsJson(`${url(i)}${adminStatusPath}`, tls);
      assert.equal(reply.status, 200);
      return (reply.body as { leaderDownHints: number }).leaderDownHints;
    }),
  );
  assert.ok(
    hints.some((h) => h >= 1),
    `a survivor took the fast path (leaderDownHints ${hints.join(', ')})`,
  );
  const logs = await Promise.all(
    survivors.map((i) => readFile(join(nodes[i]?.dir ?? '', 'stoa.log'), 'utf8')),
  );
  assert.ok(
    logs.some((text) => text.includes('peer process is gone: connection lost and reconnect refused')),
  );
  assert.ok(
    logs.some((text) => text.includes('leader process is gone (connection lost, reconnect refused)')),
  );

  for (const i of survivors) {
    const reply = await httpsJson(`${url(i)}/api/v1/namespaces/default/configmaps`, tls, 'POST', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `after-${i}` },
      data: { value: 'x' },
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
  }
});
