// Proves the peer framing over real TCP sockets: frames split across reads, frames coalesced into one read and
// multi-MiB frames all decode to what was sent; a length over the limit breaks the stream; batches split to fit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import fc from 'fast-check';
import {
  FrameDecoder,
  batchPayloadBytes,
  decodeFramePayload,
  encodeBatchFrame,
  encodeControlFrame,
  encodeMessage,
  messageBytesMax,
  splitIntoBatches,
  type Frame,
} from '../../src/transport/framing.js';
import { nodeId } from '../../src/util/brand.js';
import { waitFor } from './helpers.js';

/** A connected pair of loopback TCP sockets; the receiving side feeds a FrameDecoder. */
async function socketPair(
  t: { after: (fn: () => void) => void },
  frameBytesMax = 16 * 1024 * 1024,
): Promise<{ writer: net.Socket; frames: Frame[]; received: () => number; errors: string[] }> {
  const frames: Frame[] = [];
  const errors: string[] = [];
  let receivedBytes = 0;
  const server = net.createServer((socket) => {
    const decoder = new FrameDecoder(frameBytesMax);
    socket.on('data', (chunk: Buffer) => {
      receivedBytes += chunk.length;
      const error = decoder.push(chunk, (payload) => {
        const decoded = decodeFramePayload(payload);
        assert.ok(decoded.ok);
        frames.push(decoded.frame);
      });
      if (error !== undefined) {
        errors.push(error);
        socket.destroy(); // the defined outcome: the connection is closed
      }
    });
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const writer = net.connect({ host: '127.0.0.1', port });
  writer.setNoDelay(true);
  writer.on('error', () => undefined);
  await once(writer, 'connect');
  t.after(() => {
    writer.destroy();
    server.close();
  });
  return { writer, frames, received: () => receivedBytes, errors };
}

const write = (socket: net.Socket, bytes: Uint8Array): Promise<void> =>
  new Promise((resolve, reject) => socket.write(bytes, (error) => (error ? reject(error) : resolve())));

const message = (seq: number, extra: object = {}) => ({ from: nodeId(1), to: nodeId(2), seq, ...extra });

test('a batch frame round-trips plain data: numbers, strings, bytes, arrays, nested objects', () => {
  const sent = [
    message(1, { term: 2 ** 40 + 1, big: Number.MAX_SAFE_INTEGER, neg: -7, ratio: 0.25 }),
    message(2, { data: new Uint8Array([0, 1, 255]), text: 'héllo', entries: [{ index: 3, kind: 'x' }] }),
  ];
  const frame = encodeBatchFrame(sent.map(encodeMessage));
  assert.equal(frame.readUInt32BE(0), frame.length - 4);
  const decoded = decodeFramePayload(frame.subarray(4));
  assert.ok(decoded.ok && decoded.frame.type === 'batch');
  const [first, second] = decoded.frame.messages as Record<string, unknown>[];
  assert.deepEqual(first, sent[0]);
  assert.deepEqual(Array.from(second?.['data'] as Uint8Array), [0, 1, 255]);
  assert.equal(second?.['text'], 'héllo');
  assert.deepEqual(second?.['entries'], [{ index: 3, kind: 'x' }]);
});

test('array headers of every width decode (0, 15, 16, 65535, 65536 messages)', () => {
  for (const count of [0, 15, 16, 65_535, 65_536]) {
    const one = encodeMessage(1);
    const frame = encodeBatchFrame(Array.from({ length: count }, () => one));
    assert.equal(frame.length - 4, batchPayloadBytes(count, count * one.length));
    const decoded = decodeFramePayload(frame.subarray(4));
    assert.ok(decoded.ok && decoded.frame.type === 'batch');
    assert.equal(decoded.frame.messages.length, count);
  }
});

test('frames split at every awkward point arrive whole (partial reads)', async (t) => {
  const pair = await socketPair(t);
  const frames = [
    encodeBatchFrame([encodeMessage(message(1)), encodeMessage(message(2))]),
    encodeControlFrame({ type: 'keepalive' }),
    encodeBatchFrame([encodeMessage(message(3, { data: new Uint8Array(1000).fill(7) }))]),
  ];
  const bytes = Buffer.concat(frames);
  // Cut inside the first header, inside the first payload, between frames, and inside the third header.
  const first = frames[0]?.length ?? 0;
  const second = frames[1]?.length ?? 0;
  const cuts = [2, 7, first, first + second + 3, bytes.length];
  let at = 0;
  for (const cut of cuts) {
    await write(pair.writer, bytes.subarray(at, cut));
    // The receiver has seen exactly the bytes up to this cut, so it held a partial frame in between.
    await waitFor(`receiver got ${cut} bytes`, () => pair.received() === cut);
    at = cut;
  }
  assert.deepEqual(
    pair.frames.map((f) => f.type),
    ['batch', 'keepalive', 'batch'],
  );
  const last = pair.frames[2];
  assert.ok(last?.type === 'batch');
  assert.equal(((last.messages[0] as Record<string, unknown>)['data'] as Uint8Array).length, 1000);
  assert.deepEqual(pair.errors, []);
});

test('many frames coalesced into one write all decode, in order', async (t) => {
  const pair = await socketPair(t);
  const count = 500;
  const bytes = Buffer.concat(
    Array.from({ length: count }, (_, i) => encodeBatchFrame([encodeMessage(message(i))])),
  );
  await write(pair.writer, bytes);
  await waitFor('all frames', () => pair.frames.length === count);
  const seqs = pair.frames.map((f) => (f.type === 'batch' ? (f.messages[0] as { seq: number }).seq : -1));
  assert.deepEqual(
    seqs,
    Array.from({ length: count }, (_, i) => i),
  );
});

test('a 6 MiB frame (a large snapshot chunk) crosses many reads intact', async (t) => {
  const pair = await socketPair(t);
  const data = new Uint8Array(6 * 1024 * 1024);
  for (let i = 0; i < data.length; i += 4096) data[i] = i % 251;
  await write(
    pair.writer,
    encodeBatchFrame([encodeMessage(message(1, { data })), encodeMessage(message(2))]),
  );
  await waitFor('the large frame', () => pair.frames.length === 1);
  const frame = pair.frames[0];
  assert.ok(frame?.type === 'batch');
  const got = (frame.messages[0] as { data: Uint8Array }).data;
  assert.equal(got.length, data.length);
  assert.ok(Buffer.from(got).equals(Buffer.from(data)));
  assert.equal((frame.messages[1] as { seq: number }).seq, 2);
});

test('a frame length over the limit breaks the stream and the receiver closes the connection', async (t) => {
  const pair = await socketPair(t, 1024);
  const ok = encodeBatchFrame([encodeMessage(message(1))]);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(1025, 0);
  const closed = once(pair.writer, 'close');
  await write(pair.writer, Buffer.concat([ok, header]));
  await closed;
  assert.equal(pair.frames.length, 1);
  assert.equal(pair.errors.length, 1);
  assert.match(pair.errors[0] ?? '', /1025 bytes exceeds the limit of 1024/);
});

test('malformed payloads are reported, not thrown', () => {
  for (const payload of [Buffer.from([0xc1]), encodeMessage({ not: 'a frame' }), encodeMessage([99])]) {
    const decoded = decodeFramePayload(payload);
    assert.equal(decoded.ok, false);
  }
});

test('splitting keeps order and puts every batch under the frame limit (property)', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 64, max: 4096 }),
      fc.array(fc.integer({ min: 1, max: 4096 }), { maxLength: 200 }),
      (frameBytesMax, sizes) => {
        const max = messageBytesMax(frameBytesMax);
        const encoded = sizes.map((n, i) => {
          const m = new Uint8Array(Math.min(n, max));
          m[0] = i % 256;
          return m;
        });
        const batches = splitIntoBatches(encoded, frameBytesMax);
        for (const batch of batches) {
          assert.ok(batch.length > 0);
          assert.ok(encodeBatchFrame(batch).length - 4 <= frameBytesMax);
        }
        assert.deepEqual(batches.flat(), encoded);
      },
    ),
    { numRuns: 200 },
  );
});
