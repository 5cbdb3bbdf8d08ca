// Proves the peer transport over real mutual-TLS sockets on loopback: delivery and per-link order among three
// nodes, multi-MiB messages, batch splitting, reconnect after a peer restarts, refusal of a foreign CA, a wrong
// cluster ID and an unknown node, bounded queues that drop and count, closing an oversize-frame connection, and
// reporting a peer down only when its process is gone (connection lost, reconnect refused), not when partitioned.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import * as tls from 'node:tls';
import { once } from 'node:events';
import { Registry } from 'prom-client';
import {
  PeerTransport,
  registerTransportMetrics,
  type PeerTlsOptions,
  type TransportLimits,
} from '../../src/transport/index.js';
import { encodeControlFrame } from '../../src/transport/framing.js';
import { FaultProxy } from '../../chaos/proxy.js';
import { seededRandom } from '../../src/util/clock.js';
import type { NodeId } from '../../src/util/brand.js';
import {
  RecordingLogger,
  createPeerCa,
  fastLimits,
  ids,
  peerUrl,
  waitFor,
  type PeerCa,
  type TestMessage,
} from './helpers.js';

let pki: PeerCa;
before(async () => {
  pki = await createPeerCa();
});

interface Started {
  readonly transport: PeerTransport<TestMessage>;
  readonly logger: RecordingLogger;
  readonly received: TestMessage[];
  readonly port: number;
}

async function start(
  t: { after: (fn: () => Promise<void>) => void },
  id: NodeId,
  options: {
    clusterId?: string;
    port?: number;
    limits?: Partial<TransportLimits>;
    tls?: PeerTlsOptions;
  } = {},
): Promise<Started> {
  const logger = new RecordingLogger();
  const transport = await PeerTransport.create<TestMessage>({
    clusterId: options.clusterId ?? 'cluster-1',
    nodeId: id,
    tls: options.tls ?? (await pki.tlsFor(`node-${id}`)),
    listen: { host: '127.0.0.1', port: options.port ?? 0 },
    logger,
    random: seededRandom(id),
    limits: { ...fastLimits, ...options.limits },
  });
  const received: TestMessage[] = [];
  transport.onMessage((m) => received.push(m));
  t.after(() => transport.close());
  const port = transport.address?.port;
  assert.ok(port !== undefined);
  return { transport, logger, received, port };
}

function connectAll(nodes: readonly { id: NodeId; started: Started }[]): void {
  for (const a of nodes) {
    for (const b of nodes) {
      if (a.id !== b.id) a.started.transport.addPeer(b.id, peerUrl(b.started.port));
    }
  }
}

test('three nodes deliver every message, in order per link', async (t) => {
  const nodes = [
    { id: ids.a, started: await start(t, ids.a) },
    { id: ids.b, started: await start(t, ids.b) },
    { id: ids.c, started: await start(t, ids.c) },
  ];
  connectAll(nodes);
  const perLink = 300;
  // Sent in several calls and turns of the event loop, some before the connections are even up.
  for (let round = 0; round < 6; round++) {
    for (const from of nodes) {
      const batch: TestMessage[] = [];
      for (const to of nodes) {
        if (to.id === from.id) continue;
        for (let i = 0; i < perLink / 6; i++)
          batch.push({ from: from.id, to: to.id, seq: round * (perLink / 6) + i });
      }
      from.started.transport.send(batch);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  await waitFor('all delivered', () => nodes.every((n) => n.started.received.length === 2 * perLink));
  for (const to of nodes) {
    for (const from of nodes) {
      if (from.id === to.id) continue;
      const seqs = to.started.received.filter((m) => m.from === from.id).map((m) => m.seq);
      assert.deepEqual(
        seqs,
        Array.from({ length: perLink }, (_, i) => i),
        `order ${from.id} -> ${to.id}`,
      );
      assert.ok(to.started.received.every((m) => m.to === to.id));
    }
    const stats = to.started.transport.stats();
    for (const [, peer] of stats.peers) {
      assert.equal(peer.messagesSent, perLink);
      assert.equal(peer.messagesDropped, 0);
      assert.equal(peer.messagesReceived, perLink);
      assert.ok(peer.framesSent < perLink, 'messages were batched into fewer frames');
      assert.equal(peer.connected, true);
    }
  }
});

test('one send() is written before it returns, as one frame per connected peer, and delivered in order', async (t) => {
  const a = await start(t, ids.a);
  const b = await start(t, ids.b);
  const c = await start(t, ids.c);
  a.transport.addPeer(ids.b, peerUrl(b.port));
  a.transport.addPeer(ids.c, peerUrl(c.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  c.transport.addPeer(ids.a, peerUrl(a.port));
  const peer = (id: NodeId) => a.transport.stats().peers.get(id);
  await waitFor('links open', () => peer(ids.b)?.connected === true && peer(ids.c)?.connected === true);
  const message = (to: NodeId, seq: number): TestMessage => ({ from: ids.a, to, seq });
  const frames = (id: NodeId): number => peer(id)?.framesSent ?? -1;
  const [framesB, framesC] = [frames(ids.b), frames(ids.c)];
  a.transport.send([message(ids.b, 1), message(ids.c, 1), message(ids.b, 2), message(ids.b, 3)]);
  // Synchronously after the call, not at the end of the event loop's turn:
  assert.equal(frames(ids.b), framesB + 1);
  assert.equal(frames(ids.c), framesC + 1);
  a.transport.send([message(ids.b, 4)]);
  assert.equal(frames(ids.b), framesB + 2);
  await waitFor('all delivered', () => b.received.length === 4 && c.received.length === 1);
  assert.deepEqual(
    b.received.map((m) => m.seq),
    [1, 2, 3, 4],
  );
});

test('multi-MiB messages pass, and a queue larger than a frame is split into several frames', async (t) => {
  const frameBytesMax = 8 * 1024 * 1024;
  const a = await start(t, ids.a, { limits: { frameBytesMax } });
  const b = await start(t, ids.b, { limits: { frameBytesMax } });
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  const chunk = (seq: number): TestMessage => {
    const data = new Uint8Array(3 * 1024 * 1024);
    data.fill(seq);
    return { from: ids.a, to: ids.b, seq, data };
  };
  // Five 3 MiB snapshot-sized chunks queued at once: 15 MiB cannot be one 8 MiB frame.
  a.transport.send([chunk(1), chunk(2), chunk(3), chunk(4), chunk(5)]);
  await waitFor('five chunks', () => b.received.length === 5, 20_000);
  assert.deepEqual(
    b.received.map((m) => m.seq),
    [1, 2, 3, 4, 5],
  );
  for (const m of b.received) {
    assert.equal(m.data?.length, 3 * 1024 * 1024);
    assert.ok(m.data?.every((byte) => byte === m.seq));
  }
  const stats = a.transport.stats().peers.get(ids.b);
  assert.ok(stats !== undefined && stats.framesSent >= 3, `framesSent ${stats?.framesSent}`);
});

test('a message larger than a frame is dropped and counted, and the link carries on', async (t) => {
  const a = await start(t, ids.a, { limits: { frameBytesMax: 64 * 1024 } });
  const b = await start(t, ids.b, { limits: { frameBytesMax: 64 * 1024 } });
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.send([
    { from: ids.a, to: ids.b, seq: 1 },
    { from: ids.a, to: ids.b, seq: 2, data: new Uint8Array(128 * 1024) },
    { from: ids.a, to: ids.b, seq: 3 },
  ]);
  await waitFor('two delivered', () => b.received.length === 2);
  assert.deepEqual(
    b.received.map((m) => m.seq),
    [1, 3],
  );
  assert.equal(a.transport.stats().peers.get(ids.b)?.messagesDropped, 1);
  assert.equal(a.logger.matching('larger than the frame limit').length, 1);
});

test('a restarted peer is reconnected to, and messages queued meanwhile are delivered', async (t) => {
  const a = await start(t, ids.a);
  let b = await start(t, ids.b);
  const bPort = b.port;
  a.transport.addPeer(ids.b, peerUrl(bPort));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.send([{ from: ids.a, to: ids.b, seq: 1 }]);
  await waitFor('first message', () => b.received.length === 1);

  await b.transport.close();
  await waitFor('a sees the link down', () => a.transport.stats().peers.get(ids.b)?.connected === false);
  a.transport.send([
    { from: ids.a, to: ids.b, seq: 2 },
    { from: ids.a, to: ids.b, seq: 3 },
  ]);
  b = await start(t, ids.b, { port: bPort });
  b.transport.addPeer(ids.a, peerUrl(a.port));
  await waitFor('queued messages after restart', () => b.received.length === 2);
  assert.deepEqual(
    b.received.map((m) => m.seq),
    [2, 3],
  );
  const stats = a.transport.stats().peers.get(ids.b);
  assert.ok(stats !== undefined && stats.reconnects >= 1);
  assert.ok(a.logger.matching('peer connection lost').length >= 1);
  // And the restarted node reaches a again.
  b.transport.send([{ from: ids.b, to: ids.a, seq: 9 }]);
  await waitFor('b -> a after restart', () => a.received.some((m) => m.seq === 9));
});

test('a peer whose certificate is from another CA is refused, both as dialler and as listener', async (t) => {
  const foreign = await createPeerCa('foreign-ca');
  const a = await start(t, ids.a);
  // b's certificate is from the foreign CA; it trusts the real one (so only its own certificate is wrong).
  const bTls = await foreign.tlsFor('node-2');
  const b = await start(t, ids.b, {
    tls: { ...bTls, trustedCaPem: pki.ca.certPem },
  });
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.send([{ from: ids.a, to: ids.b, seq: 1 }]);
  b.transport.send([{ from: ids.b, to: ids.a, seq: 1 }]);
  await waitFor('a refuses b as a client', () => a.logger.matching('TLS handshake failed').length > 0);
  await waitFor('a refuses b as a server', () => a.logger.matching('peer connection failed').length > 0);
  assert.match(JSON.stringify(a.logger.matching('peer connection failed')[0]?.fields), /certificate/i);
  assert.equal(a.received.length, 0);
  assert.equal(b.received.length, 0);
  assert.ok(a.transport.stats().inboundRefused >= 1);
  assert.equal(a.transport.stats().peers.get(ids.b)?.connected, false);
});

test('a peer of another cluster is refused with a clear log line on both sides', async (t) => {
  const a = await start(t, ids.a, { clusterId: 'cluster-1' });
  const b = await start(t, ids.b, { clusterId: 'cluster-2' });
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.send([{ from: ids.b, to: ids.a, seq: 1 }]);
  await waitFor('a refuses', () => a.logger.matching('cluster ID mismatch').length > 0);
  await waitFor('b is told why', () => b.logger.matching('peer refused our connection').length > 0);
  assert.match(
    a.logger.matching('cluster ID mismatch')[0]?.message ?? '',
    /this node is in cluster "cluster-1", the peer in "cluster-2"/,
  );
  assert.equal(a.received.length, 0);
  assert.equal(b.transport.stats().peers.get(ids.a)?.connected, false);
});

test('a node that is not a known peer is refused', async (t) => {
  const a = await start(t, ids.a);
  const c = await start(t, ids.c);
  c.transport.addPeer(ids.a, peerUrl(a.port)); // a never added c
  c.transport.send([{ from: ids.c, to: ids.a, seq: 1 }]);
  await waitFor('a refuses c', () => a.logger.matching('unknown node 3').length > 0);
  assert.equal(a.received.length, 0);
  // Removing a peer refuses it from then on, too.
  const b = await start(t, ids.b);
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  b.transport.send([{ from: ids.b, to: ids.a, seq: 1 }]);
  await waitFor('b delivers', () => a.received.length === 1);
  a.transport.removePeer(ids.b);
  await waitFor('a refuses b once removed', () => a.logger.matching('unknown node 2').length > 0);
  b.transport.send([{ from: ids.b, to: ids.a, seq: 2 }]);
  a.transport.send([{ from: ids.a, to: ids.b, seq: 2 }]);
  assert.equal(a.transport.stats().messagesDroppedUnknownPeer, 1);
});

test('a full queue drops and counts instead of growing, in messages and in bytes', async (t) => {
  // The peer's port has nobody listening: every dial fails, so everything stays queued.
  const nobody = await start(t, ids.b);
  const deadPort = nobody.port;
  await nobody.transport.close();
  const a = await start(t, ids.a, { limits: { queueMessagesMax: 100, queueBytesMax: 1024 * 1024 } });
  a.transport.addPeer(ids.b, peerUrl(deadPort));
  for (let i = 0; i < 1000; i++) a.transport.send([{ from: ids.a, to: ids.b, seq: i }]);
  let stats = a.transport.stats().peers.get(ids.b);
  assert.equal(stats?.queueMessages, 100);
  assert.equal(stats?.messagesDropped, 900);
  a.transport.removePeer(ids.b);
  a.transport.addPeer(ids.b, peerUrl(deadPort));
  const big = new Uint8Array(300 * 1024);
  for (let i = 0; i < 10; i++) a.transport.send([{ from: ids.a, to: ids.b, seq: i, data: big }]);
  stats = a.transport.stats().peers.get(ids.b);
  assert.equal(stats?.queueMessages, 3);
  assert.ok((stats?.queueBytes ?? Infinity) <= 1024 * 1024);
  assert.equal(stats?.messagesDropped, 7);
  await waitFor('a dial failed', () => (a.transport.stats().peers.get(ids.b)?.connectFailures ?? 0) > 0);
});

test('a frame over the limit from an authenticated peer closes that connection and is logged', async (t) => {
  const a = await start(t, ids.a, { limits: { frameBytesMax: 1024 } });
  a.transport.addPeer(ids.b, 'https://127.0.0.1:1'); // known, but a never reaches it
  const bTls = await pki.tlsFor('node-2');
  const socket = tls.connect({
    host: '127.0.0.1',
    port: a.port,
    ca: bTls.trustedCaPem,
    cert: bTls.certPem,
    key: bTls.keyPem,
  });
  socket.on('error', () => undefined);
  socket.resume(); // read (and discard) the welcome, so the close is seen
  t.after(async () => {
    socket.destroy();
  });
  await once(socket, 'secureConnect');
  socket.write(
    encodeControlFrame({
      type: 'hello',
      protocolVersion: 1,
      clusterId: 'cluster-1',
      from: ids.b,
      to: ids.a,
      incarnation: 1,
    }),
  );
  const header = Buffer.alloc(4);
  header.writeUInt32BE(4096, 0);
  socket.write(header);
  await once(socket, 'close');
  await waitFor('logged', () => a.logger.matching('exceeds the limit').length > 0);
  assert.equal(a.received.length, 0);
});

test('a message not from the authenticated peer, or a hello meant for another node, is refused', async (t) => {
  const a = await start(t, ids.a);
  const b = await start(t, ids.b);
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  b.transport.send([{ from: ids.b, to: ids.a, seq: 1 }]);
  await waitFor('genuine message', () => a.received.length === 1);
  // b, authenticated as node 2, sends a message claiming to be from node 3.
  b.transport.send([{ from: ids.c, to: ids.a, seq: 2 }]);
  await waitFor(
    'spoofed message refused',
    () => a.logger.matching('not from the authenticated peer').length > 0,
  );
  // b believes node 3 lives at a's address: its hello names node 3, and a is node 1.
  b.transport.addPeer(ids.c, peerUrl(a.port));
  b.transport.send([{ from: ids.b, to: ids.c, seq: 3 }]);
  await waitFor('wrong node refused', () => a.logger.matching('wrong node: this is node 1').length > 0);
  assert.deepEqual(
    a.received.map((m) => m.seq),
    [1],
  );
});

test('per-peer stats are exported as Prometheus metrics at scrape time', async (t) => {
  const a = await start(t, ids.a, { limits: { queueMessagesMax: 3 } });
  const b = await start(t, ids.b);
  const registry = new Registry();
  registerTransportMetrics(
    (options) => ({ ...options, registers: [registry] }),
    () => a.transport.stats(),
  );
  a.transport.addPeer(ids.b, peerUrl(b.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  // Five in one turn: three fit the queue, two are dropped.
  a.transport.send([1, 2, 3, 4, 5].map((seq) => ({ from: ids.a, to: ids.b, seq })));
  a.transport.send([{ from: ids.a, to: ids.c, seq: 6 }]);
  b.transport.send([{ from: ids.b, to: ids.a, seq: 1 }]);
  await waitFor('delivered', () => b.received.length === 3 && a.received.length === 1);
  const text = await registry.metrics();
  assert.match(text, /stoa_peer_sent_messages_total\{peer="2"\} 3/);
  assert.match(text, /stoa_peer_dropped_messages_total\{peer="2"\} 2/);
  assert.match(text, /stoa_peer_received_messages_total\{peer="2"\} 1/);
  assert.match(text, /stoa_peer_queue_messages\{peer="2"\} 0/);
  assert.match(text, /stoa_peer_connected\{peer="2"\} 1/);
  assert.match(text, /stoa_peer_dropped_unknown_messages_total 1/);
});

test('a peer whose process is gone (connection lost, reconnect refused) is reported down once, and up when back', async (t) => {
  const a = await start(t, ids.a);
  let b = await start(t, ids.b);
  const bPort = b.port;
  const states: string[] = [];
  a.transport.onPeerState((peer, state) => states.push(`${peer} ${state}`));
  a.transport.addPeer(ids.b, peerUrl(bPort));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.send([{ from: ids.a, to: ids.b, seq: 1 }]);
  await waitFor('first message', () => b.received.length === 1);
  assert.deepEqual(states, [], 'nothing reported while the peer is up');

  // Closing b's transport closes its listener and sockets, as the kernel does for a killed process.
  await b.transport.close();
  await waitFor('b reported down', () => states.length === 1);
  assert.deepEqual(states, [`${ids.b} down`]);
  await waitFor(
    'more refused dials',
    () => (a.transport.stats().peers.get(ids.b)?.connectFailures ?? 0) >= 3,
  );
  const stats = a.transport.stats().peers.get(ids.b);
  assert.equal(stats?.downReports, 1, 'reported once, not per refused dial');
  assert.equal(stats?.down, true);
  assert.equal(a.logger.matching('peer process is gone').length, 1);

  b = await start(t, ids.b, { port: bPort });
  b.transport.addPeer(ids.a, peerUrl(a.port));
  await waitFor('b reported up', () => states.length === 2);
  assert.deepEqual(states, [`${ids.b} down`, `${ids.b} up`]);
  assert.equal(a.transport.stats().peers.get(ids.b)?.down, false);
});

test('a peer behind a partition (a blackhole, not a refusal) is never reported down', async (t) => {
  const a = await start(t, ids.a, { limits: { keepaliveTimeoutMs: 300, handshakeTimeoutMs: 300 } });
  const b = await start(t, ids.b);
  const proxy = await FaultProxy.start({
    target: { host: '127.0.0.1', port: b.port },
    random: seededRandom(5),
  });
  t.after(() => proxy.close());
  const states: string[] = [];
  a.transport.onPeerState((peer, state) => states.push(`${peer} ${state}`));
  a.transport.addPeer(ids.b, peerUrl(proxy.port));
  b.transport.addPeer(ids.a, peerUrl(a.port));
  a.transport.send([{ from: ids.a, to: ids.b, seq: 1 }]);
  await waitFor('first message', () => b.received.length === 1);
  proxy.setFault({ kind: 'partition' });
  // The open connection goes silent and is dropped; every redial then times out unanswered.
  await waitFor('the connection lost', () => a.logger.matching('peer connection lost').length >= 1);
  await waitFor('redials time out', () => (a.transport.stats().peers.get(ids.b)?.connectFailures ?? 0) >= 3);
  assert.deepEqual(states, []);
  assert.equal(a.transport.stats().peers.get(ids.b)?.downReports, 0);
});
