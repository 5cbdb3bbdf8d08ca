// Proves `--net netns`: without root it refuses with the reason; as root (CI is) a 3-node cluster runs in network
// namespaces on a private bridge, a blackhole route cuts exactly the link it names (A->B cut, C->B still passes),
// isolating the leader makes the other two elect a new one and healing lets the old one rejoin, and every
// namespace, link and bridge is gone after close. Skipped where there is no root or no iproute2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { ChaosCluster } from '../../chaos/cluster.js';
import { NetnsNetwork, netnsUnavailable } from '../../chaos/netns.js';
import { nodeIdFromName } from '../../src/replica/ids.js';
import { tempDir } from '../support/tmp.js';

const unavailable = netnsUnavailable();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function leftovers(names: { namespaces: readonly string[]; bridge: string }): string[] {
  const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  return [
    ...names.namespaces.filter((ns) => namespaces.includes(ns)),
    ...(links.includes(`${names.bridge}:`) ? [names.bridge] : []),
    ...(links.includes(`stoav${process.pid}x`) ? ['a veth'] : []),
  ];
}

/** Whether a TCP connection from inside namespace `ns` to host:port succeeds within 1 s (a child in that ns). */
function connects(prefix: readonly string[], host: string, port: number): Promise<boolean> {
  const script = `const s=require('net').connect(${port},'${host}',()=>{s.destroy();process.exit(0)});s.on('error',()=>process.exit(1));setTimeout(()=>process.exit(1),1000)`;
  return new Promise((resolve) => {
    const child = spawn(prefix[0]!, [...prefix.slice(1), process.execPath, '-e', script], {
      stdio: 'ignore',
    });
    child.on('exit', (code) => resolve(code === 0));
    child.on('error', () => resolve(false));
  });
}

test('without root, --net netns refuses with the reason', () => {
  assert.match(netnsUnavailable(1000) ?? '', /--net netns needs root/);
});

test('links are cut one at a time by routes; close removes everything', { skip: unavailable }, async (t) => {
  const ids = ['node-1', 'node-2', 'node-3'].map(nodeIdFromName);
  const network = NetnsNetwork.create(ids, { needNetem: false });
  t.after(() => network.close());
  const names = network.names;
  assert.deepEqual(
    leftovers(names).sort(),
    [...names.namespaces, names.bridge, 'a veth'].sort(),
    'three namespaces, their veth pairs and the bridge exist',
  );
  // An echo server in node-2's namespace, on its address.
  const port = 17_000 + (process.pid % 1000);
  const server = spawn(
    'ip',
    [
      ...network.launchPrefix(1).slice(1),
      process.execPath,
      '-e',
      `require('net').createServer((s)=>s.pipe(s)).listen(${port},'${network.hosts[1]}',()=>console.log('up'))`,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  t.after(() => {
    if (server.pid !== undefined && server.exitCode === null && server.signalCode === null)
      process.kill(server.pid, 'SIGKILL');
  });
  await new Promise<void>((resolve) => server.stdout.once('data', () => resolve()));
  const from = (i: number): Promise<boolean> => connects(network.launchPrefix(i), network.hosts[1]!, port);

  assert.equal(await from(0), true, 'node-1 reaches node-2');
  assert.equal(await from(2), true, 'node-3 reaches node-2');
  assert.equal(
    await connects(['env'], network.hosts[1]!, port),
    true,
    'the runner reaches node-2 over the bridge',
  );
  network.cutOneWay(ids[0]!, ids[1]!);
  assert.equal(await from(0), false, 'node-1 -> node-2 is cut');
  assert.equal(await from(2), true, 'node-3 -> node-2 still passes');
  assert.equal(await connects(['env'], network.hosts[1]!, port), true, 'API traffic is not cut');
  network.healAll();
  assert.equal(await from(0), true, 'healed');
  assert.throws(
    () => network.setFault(ids[0]!, ids[1]!, { kind: 'delay', delayMs: 5, jitterMs: 0 }),
    /setFaultAll/,
  );

  process.kill(server.pid!, 'SIGKILL');
  await new Promise((resolve) => server.once('exit', resolve));
  await network.close();
  assert.deepEqual(leftovers(names), []);
});

test(
  'a 3-node cluster in namespaces elects a new leader when the old one is isolated',
  { skip: unavailable, timeout: 90_000 },
  async (t) => {
    const dir = await tempDir('chaos-netns');
    t.after(() => dir.remove());
    const cluster = await ChaosCluster.start({
      nodes: 3,
      seed: 1,
      dataDir: dir.path,
      extraServeFlags: ['--v=warn'],
      log: () => undefined,
      net: 'netns',
    });
    t.after(() => cluster.close());
    assert.match(cluster.apiUrl(0), /^https:\/\/10\.213\.\d+\.1:\d+$/);
    const leaderWithin = async (ms: number, not?: number): Promise<number> => {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const statuses = await Promise.all([0, 1, 2].map((i) => cluster.status(i, 1000)));
        const leaders = statuses.flatMap((s, i) => (s?.role === 'leader' && i !== not ? [i] : []));
        if (leaders.length === 1) return leaders[0]!;
        await sleep(200);
      }
      throw new Error('no leader');
    };
    const first = await leaderWithin(30_000);
    cluster.mesh.isolate(cluster.id(first));
    const second = await leaderWithin(20_000, first);
    assert.notEqual(second, first);
    cluster.mesh.healAll();
    // The old leader rejoins: it follows the new term's leader.
    const deadline = Date.now() + 20_000;
    let rejoined = false;
    while (!rejoined && Date.now() < deadline) {
      const status = await cluster.status(first, 1000);
      rejoined = status?.role === 'follower' && status.leader !== null;
      if (!rejoined) await sleep(200);
    }
    assert.ok(rejoined, 'the isolated leader rejoined as a follower');
    await cluster.close();
  },
);
