// Proves `--net netns`: without root it refuses with the reason; as root (CI is) a 3-node cluster runs in network
// namespaces on a private bridge, a blackhole route cuts exactly the link it names (A->B cut, C->B still passes),
// isolating the leader makes the other two elect a new one and healing lets the old one rejoin, nftables loss
// really drops packets between namespaces (UDP counts fall, a TCP transfer completes with retransmissions) and is
// gone after heal, a short chaos run with loss passes its checks, delay is refused with the reason on a kernel
// without netem, and every namespace, link and bridge is gone after close. Skipped where there is no root, no
// iproute2 or (the loss tests) no nft.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { ChaosCluster } from '../../chaos/cluster.js';
import { faultUnavailable, NetnsNetwork, netnsUnavailable } from '../../chaos/netns.js';
import { runChaos } from '../../chaos/run.js';
import { terminalSummary } from '../../chaos/report.js';
import { nodeIdFromName } from '../../src/replica/ids.js';
import { tempDir } from '../support/tmp.js';

const unavailable = netnsUnavailable();
const nftMissing = ((): string | undefined => {
  if (unavailable !== undefined) return unavailable;
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'no nft (apt-get install nftables)';
  }
})();
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
  const network = NetnsNetwork.create(ids, { faults: [] });
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

/** Runs a Node.js script in node `index`'s namespace; `onLine` hears its stdout lines; resolves with all of it. */
function inNamespace(
  network: NetnsNetwork,
  index: number,
  script: string,
  onLine: (line: string) => void = () => undefined,
): Promise<string> {
  const prefix = network.launchPrefix(index);
  const child = spawn(prefix[0]!, [...prefix.slice(1), process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    for (const line of chunk.split('\n')) if (line !== '') onLine(line);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`script in namespace ${index} exited with ${code}: ${out}`));
    });
  });
}

/** Datagrams node 1 receives of `count` that node 0 sends it (paced, 50 per 5 ms). */
async function udpDelivered(network: NetnsNetwork, port: number, count: number): Promise<number> {
  const host = network.hosts[1]!;
  let up: () => void = () => undefined;
  const listening = new Promise<void>((resolve) => (up = resolve));
  const receiver = inNamespace(
    network,
    1,
    `const d=require('dgram').createSocket('udp4');let n=0;d.on('message',()=>n++);` +
      `d.bind(${port},'${host}',()=>{console.log('up');setTimeout(()=>{console.log('n='+n);process.exit(0)},${count * 0.1 + 1500})})`,
    (line) => line === 'up' && up(),
  );
  await listening;
  await inNamespace(
    network,
    0,
    `const d=require('dgram').createSocket('udp4');let i=0;const t=setInterval(()=>{` +
      `for(let k=0;k<50&&i<${count};k++,i++)d.send('x',${port},'${host}');` +
      `if(i>=${count}){clearInterval(t);setTimeout(()=>process.exit(0),200)}},5)`,
  );
  const m = /n=(\d+)/.exec(await receiver);
  assert.ok(m !== null);
  return Number(m[1]);
}

/** What node `index`'s loss rule has dropped so far (its nftables counter). */
function droppedPackets(network: NetnsNetwork, index: number): number {
  const m = /counter packets (\d+) bytes \d+ drop/.exec(network.ruleset(index));
  assert.ok(m !== null, 'the loss rule counts its drops');
  return Number(m[1]);
}

test(
  'loss drops packets between namespaces at random; heal removes the rule',
  { skip: nftMissing, timeout: 90_000 },
  async (t) => {
    const ids = ['node-1', 'node-2', 'node-3'].map(nodeIdFromName);
    const network = NetnsNetwork.create(ids, { faults: ['loss'] });
    t.after(() => network.close());
    const names = network.names;
    const port = 18_000 + (process.pid % 1000);

    assert.ok((await udpDelivered(network, port, 1000)) >= 980, 'no loss before the fault');
    network.setFaultAll({ kind: 'loss', probability: 0.3 });
    assert.match(network.ruleset(0), /numgen random mod 10000 < 3000 counter packets \d+ bytes \d+ drop/);
    assert.doesNotMatch(
      network.ruleset(0),
      new RegExp(network.hosts[0]!.replace(/\./g, '\\.') + '[,}]'),
      'not to itself',
    );
    const delivered = await udpDelivered(network, port, 1000);
    assert.ok(
      delivered > 500 && delivered < 850,
      `about 70 % of 1000 datagrams arrive under 30 % loss: ${delivered}`,
    );

    // A TCP transfer of 64 KiB still completes although some of its segments are dropped (the rule's counter).
    // It is sent as 128 separate segments (no Nagle, one write every 2 ms): one large write leaves the namespace
    // as a few offloaded super-packets, of which under 30 % loss none is dropped often enough to be flaky.
    const droppedBefore = droppedPackets(network, 0);
    const host = network.hosts[1]!;
    let up: () => void = () => undefined;
    const listening = new Promise<void>((resolve) => (up = resolve));
    const sink = inNamespace(
      network,
      1,
      `let n=0;const s=require('net').createServer((c)=>c.on('data',(b)=>{n+=b.length;if(n>=65536){console.log('got '+n);process.exit(0)}}));` +
        `s.listen(${port},'${host}',()=>console.log('up'))`,
      (line) => line === 'up' && up(),
    );
    await listening;
    await inNamespace(
      network,
      0,
      `const c=require('net').connect(${port},'${host}',()=>{c.setNoDelay(true);let i=0;const t=setInterval(()=>{` +
        `c.write(Buffer.alloc(512,1));if(++i>=128){clearInterval(t);c.end()}},2)});c.on('close',()=>process.exit(0))`,
    );
    assert.match(await sink, /got 65536/);
    assert.ok(droppedPackets(network, 0) > droppedBefore, 'segments of the transfer were dropped');

    network.healAll();
    assert.doesNotMatch(network.ruleset(0), /stoa_chaos_loss/, 'heal removes the rule');
    assert.doesNotMatch(network.ruleset(2), /stoa_chaos_loss/);
    assert.ok((await udpDelivered(network, port, 1000)) >= 980, 'no loss after heal');
    await network.close();
    assert.deepEqual(leftovers(names), []);
  },
);

test('delay without netem is refused with the reason; loss needs only nftables', () => {
  assert.match(
    faultUnavailable('delay', { netem: false, nftLoss: true }) ?? '',
    /no tc netem \(sch_netem\).*delay cannot be injected in netns mode.*--net proxy/,
  );
  assert.equal(faultUnavailable('delay', { netem: true, nftLoss: true }), undefined);
  assert.equal(faultUnavailable('loss', { netem: false, nftLoss: true }), undefined);
  assert.match(faultUnavailable('loss', { netem: true, nftLoss: false }) ?? '', /apt-get install nftables/);
});

test(
  'a short --net netns chaos run with loss and partitions passes its checks',
  { skip: nftMissing, timeout: 150_000 },
  async () => {
    const lines: string[] = [];
    const report = await runChaos({
      nodes: 3,
      durationMs: 20_000,
      faults: ['loss', 'partition'],
      seed: 8,
      clients: 4,
      keys: 8,
      watchers: 2,
      checkBudgetMs: 20_000,
      log: (line) => lines.push(line),
      net: 'netns',
    });
    const summary = terminalSummary(report);
    assert.equal(report.verdict, 'pass', summary);
    const injected = new Set(report.timeline.filter((e) => e.event === 'start').map((e) => e.kind));
    assert.ok(injected.has('loss'), `loss was injected: ${summary}`);
    const acknowledged = Object.values(report.counts).reduce((sum, c) => sum + c.ok, 0);
    assert.ok(acknowledged > 50, `the workload made progress (${acknowledged} acknowledged)`);
  },
);
