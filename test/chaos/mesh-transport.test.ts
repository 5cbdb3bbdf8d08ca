// Proves the peer transport behaves under the proxy mesh's faults, over real mutual TLS: every link goes through
// its proxy, a one-way partition cuts exactly one direction, an isolated node is cut off and detected as dead
// and comes back after heal, a delayed link keeps order, and a partitioned link's queue stays bounded.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { PeerProxyMesh } from '../../chaos/peer-proxies.js';
import { PeerTransport, type TransportLimits } from '../../src/transport/index.js';
import { seededRandom } from '../../src/util/clock.js';
import type { NodeId } from '../../src/util/brand.js';
import {
  createPeerCa,
  fastLimits,
  ids,
  sleep,
  waitFor,
  type PeerCa,
  type TestMessage,
} from '../transport/helpers.js';

let pki: PeerCa;
before(async () => {
  pki = await createPeerCa();
});

interface Node {
  readonly id: NodeId;
  readonly transport: PeerTransport<TestMessage>;
  readonly received: TestMessage[];
}

interface Cluster {
  readonly mesh: PeerProxyMesh;
  node(id: NodeId): Node;
  send(from: NodeId, to: NodeId, seq: number, data?: Uint8Array): void;
  seqs(at: NodeId, from: NodeId): number[];
}

async function cluster(
  t: { after: (fn: () => Promise<void>) => void },
  limits: Partial<TransportLimits> = {},
): Promise<Cluster> {
  const nodes = new Map<NodeId, Node>();
  for (const id of [ids.a, ids.b, ids.c]) {
    const transport = await PeerTransport.create<TestMessage>({
      clusterId: 'mesh',
      nodeId: id,
      tls: await pki.tlsFor(`node-${id}`),
      listen: { host: '127.0.0.1', port: 0 },
      random: seededRandom(id),
      limits: { ...fastLimits, ...limits },
    });
    const received: TestMessage[] = [];
    transport.onMessage((m) => received.push(m));
    t.after(() => transport.close());
    nodes.set(id, { id, transport, received });
  }
  const mesh = await PeerProxyMesh.start(
    [...nodes.values()].map((n) => ({ id: n.id, host: '127.0.0.1', port: n.transport.address?.port ?? 0 })),
    { seed: 42 },
  );
  t.after(() => mesh.close());
  for (const node of nodes.values()) {
    for (const [peer, url] of mesh.peerUrlsFor(node.id)) node.transport.addPeer(peer, url);
  }
  const node = (id: NodeId): Node => {
    const n = nodes.get(id);
    assert.ok(n !== undefined);
    return n;
  };
  return {
    mesh,
    node,
    send: (from, to, seq, data) =>
      node(from).transport.send([data === undefined ? { from, to, seq } : { from, to, seq, data }]),
    seqs: (at, from) =>
      node(at)
        .received.filter((m) => m.from === from)
        .map((m) => m.seq),
  };
}

const increasing = (xs: readonly number[]): boolean => xs.every((x, i) => i === 0 || (xs[i - 1] ?? 0) < x);

test('with every link passing, each node reaches each other through the proxy of that link', async (t) => {
  const c = await cluster(t);
  const all = [ids.a, ids.b, ids.c];
  for (const from of all) for (const to of all) if (from !== to) c.send(from, to, 1);
  await waitFor('all six messages', () => all.every((id) => c.node(id).received.length === 2));
  for (const from of all) {
    for (const to of all) {
      if (from === to) continue;
      assert.ok(c.mesh.link(from, to).stats().connectionsAccepted >= 1, `link ${from}->${to} used`);
      assert.deepEqual(c.seqs(to, from), [1]);
    }
  }
});

test('a one-way partition cuts A->B while B->A passes; after heal A reaches B again, in order', async (t) => {
  const c = await cluster(t);
  c.send(ids.a, ids.b, 1);
  c.send(ids.b, ids.a, 1);
  await waitFor(
    'both ways before',
    () => c.seqs(ids.b, ids.a).length === 1 && c.seqs(ids.a, ids.b).length === 1,
  );

  c.mesh.cutOneWay(ids.a, ids.b);
  c.send(ids.a, ids.b, 2);
  c.send(ids.b, ids.a, 2);
  await waitFor('B->A still passes', () => c.seqs(ids.a, ids.b).includes(2));
  await sleep(300);
  assert.deepEqual(c.seqs(ids.b, ids.a), [1], 'nothing from A reached B during the cut');

  c.mesh.healAll();
  c.send(ids.a, ids.b, 3);
  await waitFor('A->B after heal', () => c.seqs(ids.b, ids.a).includes(3));
  // Message 2 was held by the cut link: it arrives (before 3) or, if its connection was given up, never.
  assert.ok(increasing(c.seqs(ids.b, ids.a)), `in order: ${c.seqs(ids.b, ids.a).join(',')}`);
});

test('an isolated node is cut off both ways, its dead links are noticed, and it rejoins after heal', async (t) => {
  const c = await cluster(t);
  for (const [from, to] of [
    [ids.a, ids.c],
    [ids.c, ids.a],
  ] as const) {
    c.send(from, to, 1);
  }
  await waitFor(
    'A and C connected',
    () => c.seqs(ids.c, ids.a).length === 1 && c.seqs(ids.a, ids.c).length === 1,
  );

  c.mesh.isolate(ids.c);
  c.send(ids.a, ids.c, 2);
  c.send(ids.c, ids.a, 2);
  c.send(ids.a, ids.b, 2);
  await waitFor('A and B still talk', () => c.seqs(ids.b, ids.a).includes(2));
  // The blackholed connections hear no keepalives: both sides give them up (keepalive timeout 1 s in tests).
  await waitFor(
    'A notices its link to C is dead',
    () => c.node(ids.a).transport.stats().peers.get(ids.c)?.connected === false,
  );
  await waitFor(
    'C notices its link to A is dead',
    () => c.node(ids.c).transport.stats().peers.get(ids.a)?.connected === false,
  );
  assert.deepEqual(c.seqs(ids.c, ids.a), [1]);
  assert.deepEqual(c.seqs(ids.a, ids.c), [1]);

  c.mesh.healAll();
  c.send(ids.a, ids.c, 3);
  c.send(ids.c, ids.a, 3);
  await waitFor('A->C after heal', () => c.seqs(ids.c, ids.a).includes(3));
  await waitFor('C->A after heal', () => c.seqs(ids.a, ids.c).includes(3));
  assert.ok(increasing(c.seqs(ids.c, ids.a)) && increasing(c.seqs(ids.a, ids.c)));
  assert.ok((c.node(ids.a).transport.stats().peers.get(ids.c)?.reconnects ?? 0) >= 1);
});

test('a delayed, jittery link delivers every message in order', async (t) => {
  const c = await cluster(t);
  c.mesh.setFault(ids.a, ids.b, { kind: 'delay', delayMs: 40, jitterMs: 40 });
  const startMs = performance.now();
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 20; i++) c.send(ids.a, ids.b, round * 20 + i);
    await sleep(5);
  }
  await waitFor('all 200', () => c.seqs(ids.b, ids.a).length === 200);
  assert.deepEqual(
    c.seqs(ids.b, ids.a),
    Array.from({ length: 200 }, (_, i) => i),
  );
  assert.ok(performance.now() - startMs >= 40); // a lower bound only
});

test('a partitioned link backs up into a bounded queue that drops and counts; it drains after heal', async (t) => {
  const queueBytesMax = 2 * 1024 * 1024;
  const c = await cluster(t, { queueBytesMax, keepaliveTimeoutMs: 5000 });
  c.send(ids.a, ids.b, 0);
  await waitFor('connected', () => c.seqs(ids.b, ids.a).length === 1);
  c.mesh.cutOneWay(ids.a, ids.b);
  const data = new Uint8Array(256 * 1024);
  // 40 MiB offered, in turns of the event loop so the socket can report backpressure between them.
  for (let i = 1; i <= 160; i++) {
    c.send(ids.a, ids.b, i, data);
    const stats = c.node(ids.a).transport.stats().peers.get(ids.b);
    assert.ok((stats?.queueBytes ?? Infinity) <= queueBytesMax, 'queue within its byte bound');
    if (i % 8 === 0) await sleep(5);
  }
  const stats = c.node(ids.a).transport.stats().peers.get(ids.b);
  assert.ok((stats?.messagesDropped ?? 0) > 0, `dropped ${stats?.messagesDropped}`);
  c.mesh.healAll();
  await waitFor(
    'the queue drains',
    () => c.node(ids.a).transport.stats().peers.get(ids.b)?.queueMessages === 0,
    20_000,
  );
  c.send(ids.a, ids.b, 1000);
  await waitFor('a message after heal', () => c.seqs(ids.b, ids.a).includes(1000), 20_000);
  assert.ok(increasing(c.seqs(ids.b, ids.a)));
});

test('a peer that restarts behind a blackholed connection is redialled at once, not after the keepalive timeout', async (t) => {
  // Keepalive timeout far beyond the test: only the incarnation in the restarted peer's hello can reveal it.
  const limits = { keepaliveTimeoutMs: 60_000 };
  const c = await cluster(t, limits);
  c.send(ids.a, ids.b, 1);
  await waitFor('A->B connected', () => c.seqs(ids.b, ids.a).length === 1);
  c.mesh.cutOneWay(ids.a, ids.b); // A's connection to B is held open by the proxy: A cannot see B go
  const bPort = c.node(ids.b).transport.address?.port ?? 0;
  await c.node(ids.b).transport.close();

  const restarted = await PeerTransport.create<TestMessage>({
    clusterId: 'mesh',
    nodeId: ids.b,
    tls: await pki.tlsFor('node-2'),
    listen: { host: '127.0.0.1', port: bPort },
    random: seededRandom(99),
    limits: { ...fastLimits, ...limits },
  });
  t.after(() => restarted.close());
  const received: TestMessage[] = [];
  restarted.onMessage((m) => received.push(m));
  for (const [peer, url] of c.mesh.peerUrlsFor(ids.b)) restarted.addPeer(peer, url);
  assert.equal(c.node(ids.a).transport.stats().peers.get(ids.b)?.connected, true);
  restarted.send([{ from: ids.b, to: ids.a, seq: 5 }]);
  await waitFor('the restarted B reaches A', () => c.seqs(ids.a, ids.b).includes(5));
  await waitFor(
    'A drops its connection to the old B',
    () => c.node(ids.a).transport.stats().peers.get(ids.b)?.connected === false,
  );
  c.mesh.healAll();
  c.send(ids.a, ids.b, 6);
  await waitFor('A reaches the restarted B', () => received.some((m) => m.seq === 6));
});
