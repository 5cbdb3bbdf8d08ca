// Proves --experimental-peer-dial-urls routes a member's peer traffic through the fault proxies: the flag parses
// (and rejects bad values), and isolating the leader at the proxies of a real 3-process cluster makes the
// others elect a new leader, which healing keeps; closing the chaos cluster leaves no process behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseServeFlags } from '../../src/server/flags.js';
import { parsePeerDialUrls } from '../../src/server/cluster-flags.js';
import { ChaosCluster } from '../../chaos/cluster.js';
import { tempDir } from '../support/tmp.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('the dial URL flag parses name=url pairs and names what is wrong', () => {
  const urls = parsePeerDialUrls('a=https://127.0.0.1:9001, b=https://127.0.0.1:9002');
  assert.deepEqual(
    [...urls],
    [
      ['a', 'https://127.0.0.1:9001'],
      ['b', 'https://127.0.0.1:9002'],
    ],
  );
  assert.equal(parsePeerDialUrls('').size, 0);
  assert.throws(() => parsePeerDialUrls('a'), /name=https:\/\/host:port/);
  assert.throws(() => parsePeerDialUrls('a=http://127.0.0.1:1'), /name=https:\/\/host:port/);
  assert.throws(() => parsePeerDialUrls('a=https://127.0.0.1'), /name=https:\/\/host:port/);
  assert.throws(() => parsePeerDialUrls('a=https://h:1,a=https://h:2'), /twice/);
  const options = parseServeFlags([
    '--name=a',
    '--initial-cluster=a=https://127.0.0.1:7001,b=https://127.0.0.1:7002',
    '--peer-cert-file=x',
    '--peer-key-file=y',
    '--peer-trusted-ca-file=z',
    '--experimental-peer-dial-urls=b=https://127.0.0.1:9002',
  ]);
  assert.ok(options !== 'help');
  assert.equal(options.cluster?.peerDialUrls.get('b'), 'https://127.0.0.1:9002');
});

test('isolating the leader at the proxies elects another; healing keeps one leader', async (t) => {
  const dir = await tempDir('peer-dial');
  const cluster = await ChaosCluster.start({
    nodes: 3,
    seed: 7,
    dataDir: dir.path,
    extraServeFlags: ['--heartbeat-interval=50', '--election-timeout=500', '--v=warn'],
    log: () => undefined,
  });
  const pids: number[] = [];
  t.after(async () => {
    await cluster.close();
    await dir.remove();
  });
  for (let i = 0; i < 3; i++) pids.push((await cluster.pid(i)) ?? -1);

  const waitLeader = async (not?: number): Promise<number> => {
    for (let i = 0; i < 150; i++) {
      const leader = await cluster.leader();
      if (leader !== undefined && leader !== not) return leader;
      await sleep(100);
    }
    throw new Error('no leader');
  };
  const first = await waitLeader();
  cluster.mesh.isolate(cluster.id(first));
  // Only the proxies separate the nodes: if they dialled each other directly, nothing would change.
  const second = await waitLeader(first);
  assert.notEqual(second, first);
  const isolated = await cluster.status(first);
  assert.notEqual(
    isolated?.leader,
    cluster.node(second).name,
    'the isolated node cannot hear the new leader',
  );

  cluster.mesh.healAll();
  for (let i = 0; i < 100; i++) {
    const statuses = await Promise.all([0, 1, 2].map((k) => cluster.status(k)));
    const leaders = new Set(statuses.map((s) => s?.leader));
    if (leaders.size === 1 && !leaders.has(null) && !leaders.has(undefined)) break;
    await sleep(100);
  }
  const statuses = await Promise.all([0, 1, 2].map((k) => cluster.status(k)));
  assert.equal(new Set(statuses.map((s) => s?.leader)).size, 1, JSON.stringify(statuses));

  await cluster.close();
  for (const pid of pids) {
    assert.throws(() => process.kill(pid, 0), 'every node process is gone');
  }
});
