// Proves a cluster of real `stoa serve` processes keeps every acknowledged write: kill -9 of the leader under a
// stream of writes, a new leader, writes resuming, the killed node restarted by `cluster up` and caught up
// through a snapshot; and membership with real processes and the real `stoa member` CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { down, freeBasePort, layout, serveFlags, status, up } from '../../cluster/harness.js';
import { issueCertificate, loadOrCreate } from '../../src/pki/index.js';
import { httpsJson } from '../support/https.js';
import { adminTls, waitFor } from '../support/cluster.js';
import { tempDir } from '../support/tmp.js';

const stoa = fileURLToPath(new URL('../../src/server/main.js', import.meta.url));
const fastRaft = ['--heartbeat-interval=50', '--election-timeout=500'];

const configMap = (name: string, value: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data: { value },
});

test('kill -9 of the leader under writes loses nothing acknowledged; the killed node catches up by a streamed snapshot', async (t) => {
  const dir = await tempDir('cluster');
  const basePort = await freeBasePort(3);
  const log = (): void => undefined;
  t.after(async () => {
    await down(dir.path, log).catch(() => undefined);
    await dir.remove();
  });
  // Small chunks: the killed node's catch-up state (a few hundred objects and their history) takes several.
  const extra = [
    ...fastRaft,
    '--snapshot-count=40',
    '--experimental-snapshot-catchup-entries=10',
    '--experimental-snapshot-chunk-bytes=4096',
  ];
  await up(
    { nodes: 3, basePort, dataDir: dir.path, extraServeFlags: extra },
    { nodes: true, basePort: true },
    log,
  );
  const tls = await adminTls(dir.path);
  const nodes = layout({ nodes: 3, basePort, dataDir: dir.path });
  const url = (i: number) => `https://127.0.0.1:${nodes[i]?.apiPort}`;
  const leaderName = await waitFor(
    'a leader',
    async () => (await status(dir.path)).find((s) => s.role === 'leader')?.name,
  );
  const leaderIndex = nodes.findIndex((n) => n.name === leaderName);
  const survivors = [0, 1, 2].filter((i) => i !== leaderIndex);

  const acknowledged: string[] = [];
  let killed = false;
  let failures = 0;
  const deadline = Date.now() + 90_000;
  for (let i = 0; i < 3_000 && Date.now() < deadline && acknowledged.length < 250; i++) {
    const target = killed ? survivors[i % 2]! : i % 3;
    const name = `cm-${i}`;
    const reply = await httpsJson(
      `${url(target)}/api/v1/namespaces/default/configmaps`,
      tls,
      'POST',
      configMap(name, `v${i}`),
    ).catch(() => ({ status: 0, body: undefined }));
    if (reply.status === 201) acknowledged.push(name);
    else {
      // Only an unknown outcome or unavailability is acceptable while the leader is gone, never a false success.
      assert.ok(
        reply.status === 0 || reply.status === 503 || reply.status === 504 || reply.status === 409,
        `${reply.status} ${JSON.stringify(reply.body)}`,
      );
      failures++;
    }
    if (!killed && acknowledged.length === 50) {
      const pid = (await status(dir.path)).find((s) => s.name === leaderName)?.pid;
      assert.ok(pid !== null && pid !== undefined);
      process.kill(pid, 'SIGKILL');
      killed = true;
    }
  }
  assert.ok(
    acknowledged.length >= 250,
    `writes resumed after the kill (${acknowledged.length} acknowledged, ${failures} failed)`,
  );
  const newLeader = (await status(dir.path)).find((s) => s.role === 'leader');
  assert.ok(newLeader !== undefined && newLeader.name !== leaderName, 'a new leader was elected');

  await up(
    { nodes: 3, basePort, dataDir: dir.path, extraServeFlags: extra },
    { nodes: false, basePort: false },
    log,
  );
  await waitFor('the restarted node to catch up', async () => {
    const rows = await status(dir.path);
    const applied = rows.map((r) => r.appliedIndex ?? -1);
    return rows.every((r) => r.healthy) && new Set(applied).size === 1 ? true : undefined;
  });
  const restarted = await httpsJson(`${url(leaderIndex)}/stoa/admin/v1/status`, tls);
  assert.ok(
    restarted.body.snapshotsRestored >= 1,
    `caught up through a snapshot: ${JSON.stringify(restarted.body)}`,
  );
  assert.ok(
    restarted.body.snapshotChunksReceived >= 5,
    `the snapshot's state came in several chunks: ${JSON.stringify(restarted.body)}`,
  );
  // Each member's /metrics tells the same story: one leader, everyone knows it, and its peer links are up.
  const metric = (text: string, name: string): number[] =>
    [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) => Number(m[1]));
  const scraped = await Promise.all(
    [0, 1, 2].map(async (i) => String((await httpsJson(`${url(i)}/metrics`, tls)).body)),
  );
  assert.deepEqual(
    scraped.map((text) => metric(text, 'stoa_raft_is_leader')[0]).sort(),
    [0, 0, 1],
    'exactly one member reports itself leader',
  );
  for (const text of scraped) {
    assert.match(text, /# HELP stoa_raft_term \[ALPHA\] /);
    assert.deepEqual(metric(text, 'stoa_raft_has_leader'), [1]);
    assert.deepEqual(metric(text, 'stoa_peer_connected'), [1, 1], 'both peer links up');
  }
  assert.ok((metric(scraped[leaderIndex] ?? '', 'stoa_raft_snapshots_restored_total')[0] ?? 0) >= 1);
  for (const i of [0, 1, 2]) {
    const list = await httpsJson(`${url(i)}/api/v1/namespaces/default/configmaps`, tls);
    assert.equal(list.status, 200);
    const names = new Set(
      (list.body.items as { metadata: { name: string } }[]).map((item) => item.metadata.name),
    );
    const missing = acknowledged.filter((name) => !names.has(name));
    assert.deepEqual(missing, [], `node ${nodes[i]?.name} is missing acknowledged writes`);
  }

  // Without a majority, a member stays live but is not ready (kube-apiserver's etcd-readiness check).
  const rows = await status(dir.path);
  for (const row of rows.slice(1)) if (row.pid !== null) process.kill(row.pid, 'SIGKILL');
  const ready = await waitFor('the survivor to turn not ready', async () => {
    const reply = await httpsJson(`${url(0)}/readyz?verbose`, tls);
    return reply.status !== 200 ? reply : undefined;
  });
  assert.match(String(ready.body), /\[-\]etcd-readiness failed/);
  assert.equal((await httpsJson(`${url(0)}/livez`, tls)).status, 200);
});

test('a member is added as a learner, promoted, and a removed member stops serving (real processes, stoa member)', async (t) => {
  const dir = await tempDir('cluster-members');
  const basePort = await freeBasePort(4);
  const log = (): void => undefined;
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await down(dir.path, log).catch(() => undefined);
    await dir.remove();
  });
  await up(
    { nodes: 3, basePort, dataDir: dir.path, extraServeFlags: fastRaft },
    { nodes: true, basePort: true },
    log,
  );
  const tls = await adminTls(dir.path);
  const all = layout({ nodes: 4, basePort, dataDir: dir.path });
  const node4 = all[3]!;
  const kubeconfig = join(dir.path, 'admin.kubeconfig');
  const member = (args: string[]) =>
    spawnSync(process.execPath, [stoa, 'member', ...args, '--kubeconfig', kubeconfig], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  await waitFor('a leader', async () => (await status(dir.path)).find((s) => s.role === 'leader'));
  const added = member(['add', 'node-4', '--peer-url', `https://127.0.0.1:${node4.peerPort}`]);
  assert.equal(added.status, 0, added.stderr);
  assert.match(added.stdout, /added node-4 .* as a learner/);

  // Start node-4 with the cluster's CA, joining the existing cluster.
  const pki = join(dir.path, 'pki');
  const ca = {
    certPem: await readFile(join(pki, 'ca.crt'), 'utf8'),
    keyPem: await readFile(join(pki, 'ca.key'), 'utf8'),
  };
  await loadOrCreate(pki, 'node-4-serving', () =>
    issueCertificate(ca, {
      commonName: 'node-4',
      ipAddresses: ['127.0.0.1'],
      dnsNames: ['localhost'],
      usage: 'server',
    }),
  );
  await loadOrCreate(pki, 'node-4-peer', () =>
    issueCertificate(ca, { commonName: 'node-4', ipAddresses: ['127.0.0.1'], usage: 'peer' }),
  );
  const flags = serveFlags(node4, all, pki).map((f) =>
    f === '--initial-cluster-state=new' ? '--initial-cluster-state=existing' : f,
  );
  const logFd = openSync(join(dir.path, 'node-4.log'), 'a');
  children.push(
    spawn(process.execPath, [stoa, 'serve', ...flags, ...fastRaft], { stdio: ['ignore', logFd, logFd] }),
  );
  closeSync(logFd);
  const node4Url = `https://127.0.0.1:${node4.apiPort}`;
  await waitFor('node-4 to catch up as a learner', async () => {
    const s = (await httpsJson(`${node4Url}/stoa/admin/v1/status`, tls)).body;
    return s.role === 'learner' && s.appliedIndex >= s.commitIndex && s.commitIndex > 0 ? s : undefined;
  });
  await waitFor('the promotion', async () => (member(['promote', 'node-4']).status === 0 ? true : undefined));
  const listed = member(['list']);
  assert.equal(listed.status, 0, listed.stderr);
  assert.equal((listed.stdout.match(/\bvoter\b/g) ?? []).length, 4, listed.stdout);

  const removed = spawnSync(
    process.execPath,
    [stoa, 'member', 'remove', 'node-1', '--kubeconfig', kubeconfig, '--context', 'node-2'],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  assert.equal(removed.status, 0, removed.stderr);
  const refused = await waitFor('node-1 to stop serving writes', async () => {
    const reply = await httpsJson(
      `https://127.0.0.1:${all[0]?.apiPort}/api/v1/namespaces/default/configmaps`,
      tls,
      'POST',
      configMap('after-removal', 'x'),
    );
    return reply.status === 503 ? reply : undefined;
  });
  assert.match(JSON.stringify(refused.body), /removed from the cluster/);
  const created = await httpsJson(
    `${node4Url}/api/v1/namespaces/default/configmaps`,
    tls,
    'POST',
    configMap('via-node-4', 'y'),
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const read = await httpsJson(
    `https://127.0.0.1:${all[1]?.apiPort}/api/v1/namespaces/default/configmaps/via-node-4`,
    tls,
  );
  assert.equal(read.body.data.value, 'y');

  // A backup through the admin API of a member, with the real CLI.
  const backupFile = join(dir.path, 'backup.db');
  const saved = spawnSync(
    process.execPath,
    [stoa, 'snapshot', 'save', backupFile, '--kubeconfig', kubeconfig, '--context', 'node-3'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(saved.status, 0, saved.stderr);
  const inspected = spawnSync(process.execPath, [stoa, 'snapshot', 'status', backupFile], {
    encoding: 'utf8',
  });
  assert.equal(inspected.status, 0, inspected.stderr);
  const backupStatus = JSON.parse(inspected.stdout) as { revision: number; records: number };
  assert.ok(backupStatus.revision > 1 && backupStatus.records > 0, inspected.stdout);
});
