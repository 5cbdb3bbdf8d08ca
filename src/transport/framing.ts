// Peer wire format: length-prefixed frames of msgpack over a byte stream (TLS in production, TCP in tests).
//
// A frame is a u32 big-endian payload length followed by that many bytes of msgpack. The payload is a msgpack
// array whose first element is the frame type (see `Frame`). A batch frame carries many messages; each message
// is encoded once, when it is queued, and a frame is built by concatenating encodings after an array header,
// so the queue can count exact bytes and a batch can be split without encoding anything twice.

import { Packr, Unpackr } from 'msgpackr';
import { assert, unreachable } from '../util/assert.js';
import type { NodeId } from '../util/brand.js';

/** What the transport needs of a message; the rest of it is the Raft core's business. */
export interface PeerMessage {
  readonly from: NodeId;
  readonly to: NodeId;
}

/** Version of this wire format; a hello with another version is refused. */
export const peerProtocolVersion = 1;

export const frameHeaderBytes = 4;

/** Frame types, as the first element of the payload array. */
export const FrameType = {
  hello: 1,
  welcome: 2,
  refusal: 3,
  batch: 4,
  keepalive: 5,
} as const;

/** Dialler -> listener, first frame on a connection: who is calling, in which cluster. */
export interface Hello {
  readonly type: 'hello';
  readonly protocolVersion: number;
  readonly clusterId: string;
  readonly from: NodeId;
  readonly to: NodeId;
  /** Random per process start: a change tells the listener its peer restarted. */
  readonly incarnation: number;
}
/** Listener -> dialler: the hello is accepted; messages may flow. */
export interface Welcome {
  readonly type: 'welcome';
  readonly from: NodeId;
  readonly incarnation: number;
}
/** Listener -> dialler: the hello is refused; the listener closes the connection after it. */
export interface Refusal {
  readonly type: 'refusal';
  readonly reason: string;
}
/** Dialler -> listener: messages, in the order they were sent. */
export interface Batch {
  readonly type: 'batch';
  readonly messages: readonly unknown[];
}
/** Listener -> dialler: "this connection is alive" (the dialler otherwise hears nothing after the welcome). */
export interface Keepalive {
  readonly type: 'keepalive';
}
export type Frame = Hello | Welcome | Refusal | Batch | Keepalive;

// Records off: plain msgpack maps, decodable by any msgpack reader and independent of connection history.
const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** Encodes one message for a batch frame. The result is never reused by the encoder. */
export function encodeMessage(message: unknown): Buffer {
  return packr.pack(message);
}

/** Encodes a control frame (anything but a batch), header included. */
export function encodeControlFrame(frame: Exclude<Frame, Batch>): Buffer {
  let payload: Buffer;
  switch (frame.type) {
    case 'hello':
      payload = packr.pack([
        FrameType.hello,
        {
          protocolVersion: frame.protocolVersion,
          clusterId: frame.clusterId,
          from: frame.from,
          to: frame.to,
          incarnation: frame.incarnation,
        },
      ]);
      break;
    case 'welcome':
      payload = packr.pack([FrameType.welcome, { from: frame.from, incarnation: frame.incarnation }]);
      break;
    case 'refusal':
      payload = packr.pack([FrameType.refusal, { reason: frame.reason }]);
      break;
    case 'keepalive':
      payload = packr.pack([FrameType.keepalive]);
      break;
    default:
      return unreachable(frame);
  }
  const out = Buffer.allocUnsafe(frameHeaderBytes + payload.length);
  out.writeUInt32BE(payload.length, 0);
  payload.copy(out, frameHeaderBytes);
  return out;
}

function arrayHeaderBytes(count: number): number {
  return count < 16 ? 1 : count < 0x10000 ? 3 : 5;
}

/** Bytes of a batch frame's payload holding `count` messages of `messageBytes` encoded bytes in total. */
export function batchPayloadBytes(count: number, messageBytes: number): number {
  // fixarray(2), fixint type, array header, messages
  return 2 + arrayHeaderBytes(count) + messageBytes;
}

/** The largest single encoded message that fits in a batch frame under `frameBytesMax`. */
export function messageBytesMax(frameBytesMax: number): number {
  return frameBytesMax - batchPayloadBytes(1, 0);
}

/** Builds one batch frame, header included, from encoded messages. The caller keeps it under the limit. */
export function encodeBatchFrame(encoded: readonly Uint8Array[]): Buffer {
  let messageBytes = 0;
  for (const m of encoded) messageBytes += m.length;
  const payloadBytes = batchPayloadBytes(encoded.length, messageBytes);
  const out = Buffer.allocUnsafe(frameHeaderBytes + payloadBytes);
  let at = out.writeUInt32BE(payloadBytes, 0);
  at = out.writeUInt8(0x92, at); // fixarray of 2
  at = out.writeUInt8(FrameType.batch, at); // positive fixint
  const count = encoded.length;
  if (count < 16) at = out.writeUInt8(0x90 | count, at);
  else if (count < 0x10000) at = out.writeUInt16BE(count, out.writeUInt8(0xdc, at));
  else at = out.writeUInt32BE(count, out.writeUInt8(0xdd, at));
  for (const m of encoded) {
    out.set(m, at);
    at += m.length;
  }
  assert(at === out.length, 'batch frame length mismatch');
  return out;
}

/**
 * How many messages from `start` on fit one batch frame under `frameBytesMax` (at least one), and their bytes.
 * Every message must fit on its own (see messageBytesMax); the transport drops any that does not when queued.
 */
export function fittingPrefix(
  encoded: readonly Uint8Array[],
  start: number,
  frameBytesMax: number,
): { count: number; bytes: number } {
  let count = 0;
  let bytes = 0;
  for (let i = start; i < encoded.length; i++) {
    const m = encoded[i];
    assert(m !== undefined && m.length <= messageBytesMax(frameBytesMax), 'message larger than a frame');
    if (count > 0 && batchPayloadBytes(count + 1, bytes + m.length) > frameBytesMax) break;
    count += 1;
    bytes += m.length;
  }
  return { count, bytes };
}

/** Splits encoded messages, in order, into groups that each fit one batch frame under `frameBytesMax`. */
export function splitIntoBatches(encoded: readonly Uint8Array[], frameBytesMax: number): Uint8Array[][] {
  const batches: Uint8Array[][] = [];
  for (let at = 0; at < encoded.length;) {
    const { count } = fittingPrefix(encoded, at, frameBytesMax);
    batches.push(encoded.slice(at, at + count));
    at += count;
  }
  return batches;
}

export type DecodeResult =
  { readonly ok: true; readonly frame: Frame } | { readonly ok: false; readonly reason: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

const isNodeIdValue = (v: unknown): v is NodeId => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** Decodes and checks the shape of one frame payload. Malformed input is an operating error, not a throw. */
export function decodeFramePayload(payload: Uint8Array): DecodeResult {
  let value: unknown;
  try {
    value = unpackr.unpack(payload);
  } catch (error) {
    return { ok: false, reason: `malformed msgpack: ${(error as Error).message}` };
  }
  if (!Array.isArray(value) || typeof value[0] !== 'number')
    return { ok: false, reason: 'frame is not [type, ...]' };
  const body: unknown = value[1];
  switch (value[0]) {
    case FrameType.hello:
      if (
        isRecord(body) &&
        typeof body['protocolVersion'] === 'number' &&
        typeof body['clusterId'] === 'string' &&
        isNodeIdValue(body['from']) &&
        isNodeIdValue(body['to']) &&
        typeof body['incarnation'] === 'number'
      ) {
        return {
          ok: true,
          frame: {
            type: 'hello',
            protocolVersion: body['protocolVersion'],
            clusterId: body['clusterId'],
            from: body['from'],
            to: body['to'],
            incarnation: body['incarnation'],
          },
        };
      }
      return { ok: false, reason: 'malformed hello' };
    case FrameType.welcome:
      if (isRecord(body) && isNodeIdValue(body['from']) && typeof body['incarnation'] === 'number') {
        return { ok: true, frame: { type: 'welcome', from: body['from'], incarnation: body['incarnation'] } };
      }
      return { ok: false, reason: 'malformed welcome' };
    case FrameType.refusal:
      if (isRecord(body) && typeof body['reason'] === 'string') {
        return { ok: true, frame: { type: 'refusal', reason: body['reason'] } };
      }
      return { ok: false, reason: 'malformed refusal' };
    case FrameType.batch:
      if (Array.isArray(body)) return { ok: true, frame: { type: 'batch', messages: body } };
      return { ok: false, reason: 'malformed batch' };
    case FrameType.keepalive:
      return { ok: true, frame: { type: 'keepalive' } };
    default:
      return { ok: false, reason: `unknown frame type ${value[0]}` };
  }
}

/** Checks that a decoded message has the envelope the transport relies on. */
export function isPeerMessageShape(value: unknown): value is PeerMessage {
  return isRecord(value) && isNodeIdValue(value['from']) && isNodeIdValue(value['to']);
}

/**
 * Reassembles frame payloads from stream chunks of any size: a frame split over many chunks (partial reads)
 * and many frames in one chunk (coalesced writes) come out the same. Memory is bounded by the frame limit:
 * a length above it is reported at once, before its bytes arrive, and the decoder stops.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  private failed = false;

  constructor(private readonly frameBytesMax: number) {}

  /**
   * Feeds a chunk; calls `onPayload` for each complete frame payload, in order. Returns an error reason when
   * the stream is broken (a frame over the limit); the caller MUST then close the connection.
   */
  push(chunk: Buffer, onPayload: (payload: Buffer) => void): string | undefined {
    assert(!this.failed, 'push after a decode failure');
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.bufferedBytes += chunk.length;
    }
    for (;;) {
      if (this.bufferedBytes < frameHeaderBytes) return undefined;
      const length = this.peekLength();
      if (length > this.frameBytesMax) {
        this.failed = true;
        this.chunks = [];
        this.bufferedBytes = 0;
        return `frame of ${length} bytes exceeds the limit of ${this.frameBytesMax}`;
      }
      if (this.bufferedBytes < frameHeaderBytes + length) return undefined;
      const frame = this.take(frameHeaderBytes + length);
      onPayload(frame.subarray(frameHeaderBytes));
    }
  }

  private peekLength(): number {
    const first = this.chunks[0];
    assert(first !== undefined);
    if (first.length >= frameHeaderBytes) return first.readUInt32BE(0);
    return this.take(frameHeaderBytes, false).readUInt32BE(0);
  }

  /** The first `bytes` buffered bytes; removes them unless `consume` is false. */
  private take(bytes: number, consume = true): Buffer {
    const first = this.chunks[0];
    assert(first !== undefined && bytes <= this.bufferedBytes);
    let out: Buffer;
    if (first.length >= bytes) {
      out = first.subarray(0, bytes);
      if (consume) {
        if (first.length === bytes) this.chunks.shift();
        else this.chunks[0] = first.subarray(bytes);
      }
    } else {
      // Spans chunks: copy once into a fresh buffer (never a shared one: decoded binaries may view it).
      out = Buffer.allocUnsafe(bytes);
      let at = 0;
      let index = 0;
      while (at < bytes) {
        const chunk = this.chunks[index];
        assert(chunk !== undefined);
        const n = Math.min(chunk.length, bytes - at);
        chunk.copy(out, at, 0, n);
        at += n;
        if (consume) {
          if (n === chunk.length) this.chunks.shift();
          else this.chunks[0] = chunk.subarray(n);
        } else {
          index += 1;
        }
      }
    }
    if (consume) this.bufferedBytes -= bytes;
    return out;
  }
}
