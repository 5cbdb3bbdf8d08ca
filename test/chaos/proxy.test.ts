// Proves the fault proxy on real TCP sockets: it forwards intact, delays without reordering, holds everything
// during a partition and delivers it on heal, resets connections on loss with replayable seeded decisions,
// and closes every connection it holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { FaultProxy } from '../../chaos/proxy.js';
import { seededRandom } from '../../src/util/clock.js';
import { sleep, waitFor } from '../transport/helpers.js';

type After = { after: (fn: () => Promise<void> | void) => void };

async function echoServer(t: After): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as net.AddressInfo).port;
}

async function proxyTo(t: After, port: number, seed = 1): Promise<FaultProxy> {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port }, random: seededRandom(seed) });
  t.after(() => proxy.close());
  return proxy;
}

/** Resolves on 'close' (events.once would reject on the 'error' a reset emits first). */
const closedOf = (socket: net.Socket): Promise<void> =>
  new Promise((resolve) => (socket.closed ? resolve() : socket.once('close', () => resolve())));

interface Client {
  readonly socket: net.Socket;
  received(): Buffer;
}

async function connect(t: After, port: number): Promise<Client> {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  socket.on('error', () => undefined);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  t.after(() => {
    socket.destroy();
  });
  await once(socket, 'connect');
  return { socket, received: () => Buffer.concat(chunks) };
}

test('pass forwards bytes both ways intact', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  const client = await connect(t, proxy.port);
  const data = randomBytes(2 * 1024 * 1024);
  client.socket.write(data);
  await waitFor('echo', () => client.received().length === data.length);
  assert.ok(client.received().equals(data));
  assert.equal(proxy.stats().bytesForwarded, 2 * data.length);
});

test('delay holds each chunk at least delayMs per direction and never reorders under jitter', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  proxy.setFault({ kind: 'delay', delayMs: 100, jitterMs: 80 });
  const client = await connect(t, proxy.port);
  const sent: Buffer[] = [];
  const startMs = performance.now();
  for (let i = 0; i < 40; i++) {
    const chunk = Buffer.from(`chunk-${i};`);
    sent.push(chunk);
    client.socket.write(chunk);
    if (i % 8 === 0) await sleep(5); // separate writes reach the proxy as separate chunks with their own jitter
  }
  const expected = Buffer.concat(sent);
  await waitFor('echo', () => client.received().length === expected.length);
  // A lower bound only (a slow machine can only add to it): two delayed hops, each at least 100 ms.
  assert.ok(performance.now() - startMs >= 200);
  assert.equal(client.received().toString(), expected.toString());
});

test('a partition holds bytes both ways and answers no new connection; heal delivers everything', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  const before = await connect(t, proxy.port);
  before.socket.write('ping');
  await waitFor('echo before the partition', () => before.received().toString() === 'ping');

  proxy.setFault({ kind: 'partition' });
  before.socket.write('-during');
  const during = await connect(t, proxy.port); // accepted: a blackhole, not a refusal
  during.socket.write('new');
  await sleep(300);
  assert.equal(before.received().toString(), 'ping');
  assert.equal(during.received().length, 0);

  proxy.heal();
  await waitFor('held bytes after heal', () => before.received().toString() === 'ping-during');
  await waitFor('the new connection works after heal', () => during.received().toString() === 'new');
});

test('a partition stops reading, so a sender that writes a lot sees backpressure instead of buffering', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  proxy.setFault({ kind: 'partition' });
  const client = await connect(t, proxy.port);
  const chunk = Buffer.alloc(64 * 1024);
  let writes = 0;
  // Bounded: stop at the first write that asks us to wait, or after 64 MiB (a proxy that buffered all).
  while (client.socket.write(chunk) && writes < 1024) writes += 1;
  assert.ok(writes < 1024, 'the sender was told to wait');
  proxy.heal();
  await once(client.socket, 'drain');
});

test('loss 1 resets the connection at the first chunk; loss 0 passes', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  proxy.setFault({ kind: 'loss', probability: 1 });
  const lost = await connect(t, proxy.port);
  const closed = closedOf(lost.socket);
  lost.socket.write('x');
  await closed;
  assert.equal(lost.received().length, 0);
  assert.equal(proxy.stats().connectionsReset, 1);
  proxy.setFault({ kind: 'loss', probability: 0 });
  const kept = await connect(t, proxy.port);
  kept.socket.write('y');
  await waitFor('echo', () => kept.received().toString() === 'y');
});

test('loss decisions replay from the seed', async (t) => {
  const port = await echoServer(t);
  const pattern = async (seed: number): Promise<boolean[]> => {
    const proxy = await proxyTo(t, port, seed);
    proxy.setFault({ kind: 'loss', probability: 0.5 });
    const outcomes: boolean[] = [];
    for (let i = 0; i < 12; i++) {
      const client = await connect(t, proxy.port);
      const closed = closedOf(client.socket);
      client.socket.write('z'); // one chunk to the server; the echo is a second decision
      await waitFor('echo or reset', () => client.received().length === 1 || client.socket.closed);
      outcomes.push(client.received().length === 1);
      client.socket.destroy();
      await closed;
    }
    return outcomes;
  };
  const first = await pattern(7);
  assert.deepEqual(await pattern(7), first);
  assert.ok(first.includes(true) && first.includes(false), `mixed outcomes: ${first.join(',')}`);
});

test('close() ends every proxied connection', async (t) => {
  const proxy = await proxyTo(t, await echoServer(t));
  const client = await connect(t, proxy.port);
  client.socket.write('a');
  await waitFor('echo', () => client.received().length === 1);
  const closed = closedOf(client.socket);
  await proxy.close();
  await closed;
  assert.equal(proxy.stats().connectionsOpen, 0);
});
