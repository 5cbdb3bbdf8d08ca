// The MVCC key layout in LevelDB and the checksummed record codec.
//
// Every MVCC key starts with the byte 'm' (0x6d); other owners of the same LevelDB (the replicated engine's
// applied index, the Raft log) MUST use keys with another first byte. Below 'm':
//   'mM'                                   the meta record: format version, revision, compaction state
//   'mK' + utf8(key)                       the latest state of each live key (fast current reads)
//   'mH' + esc(utf8(key)) + 00 01 + rev8   one record per change of the key (put or tombstone), by revision
//   'mR' + rev8                            the change log: the keys changed at a revision, for watch catch-up
// esc() doubles every 0x00 byte as 00 ff, so 00 01 ends the key unambiguously and the byte order of escaped
// keys is the byte order of the keys: every record of one key is contiguous, keys in order, revisions in order.
// rev8 is the revision as 8 bytes big-endian, so revisions sort numerically.
//
// Every value is [crc32 (4 bytes, big-endian) of key bytes + body][msgpack body]: a record moved under another
// key or damaged on disk fails its check on read.

import * as zlib from 'node:zlib';
import { pack, unpack } from 'msgpackr';
import { StorageError } from '../contract.js';

export const metaKey = Buffer.from('mM', 'latin1');
export const latestPrefix = Buffer.from('mK', 'latin1');
export const historyPrefix = Buffer.from('mH', 'latin1');
export const changePrefix = Buffer.from('mR', 'latin1');
const keyTerminator = Buffer.from([0x00, 0x01]);

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE), in JavaScript: for Node.js releases without zlib.crc32 (before 20.15). */
function crc32Js(parts: readonly Uint8Array[]): number {
  let crc = 0xffffffff;
  for (const bytes of parts) {
    for (let i = 0; i < bytes.length; i++) {
      crc = (crcTable[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8)) >>> 0;
    }
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** The same CRC-32, natively, where Node.js has it (20.15+). */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

export function crc32(parts: readonly Uint8Array[]): number {
  if (nativeCrc32 === undefined) return crc32Js(parts);
  let crc = 0;
  for (const bytes of parts) crc = nativeCrc32(bytes, crc);
  return crc;
}

export { crc32Js as crc32ForTests };

/** Encodes a msgpack record body under its key: checksum first, then the body. */
export function encodeRecord(key: Uint8Array, body: unknown): Buffer {
  const packed = pack(body);
  const out = Buffer.allocUnsafe(4 + packed.length);
  packed.copy(out, 4);
  out.writeUInt32BE(crc32([key, packed]), 0);
  return out;
}

function corrupt(key: Uint8Array, dataDir: string, why: string): StorageError {
  return new StorageError(
    'Corrupt',
    `corrupt record in LevelDB data dir ${dataDir}: key ${Buffer.from(key).toString('hex')}: ${why}`,
  );
}

/** Checks a record's checksum and returns its body; a bad one fails with Corrupt naming the data dir and key. */
export function checkRecord(key: Uint8Array, value: Buffer, dataDir: string): Buffer {
  if (value.length < 5) throw corrupt(key, dataDir, 'record too short');
  const body = value.subarray(4);
  if (value.readUInt32BE(0) !== crc32([key, body])) throw corrupt(key, dataDir, 'checksum mismatch');
  return body;
}

/** Decodes and checks a msgpack record (meta, change log). */
export function decodeRecord(key: Uint8Array, value: Buffer, dataDir: string): unknown {
  const body = checkRecord(key, value, dataDir);
  try {
    return unpack(body);
  } catch (error) {
    throw corrupt(key, dataDir, `undecodable body (${String(error)})`);
  }
}

// The latest-state and history records are read on every range, so they have a fixed binary body instead of
// msgpack: numbers as 8 bytes big-endian, then the value bytes (decoded without a copy).

function writeNumber(out: Buffer, offset: number, n: number): void {
  out.writeUInt32BE(Math.floor(n / 0x1_0000_0000), offset);
  out.writeUInt32BE(n >>> 0, offset + 4);
}

function readNumber(bytes: Buffer, offset: number): number {
  return bytes.readUInt32BE(offset) * 0x1_0000_0000 + bytes.readUInt32BE(offset + 4);
}

export interface LatestRecord {
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly value: Buffer;
}

/** Latest-state body: createRevision, modRevision, version, value. */
export function encodeLatest(key: Buffer, record: Omit<LatestRecord, 'value'>, value: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(4 + 24 + value.length);
  writeNumber(out, 4, record.createRevision);
  writeNumber(out, 12, record.modRevision);
  writeNumber(out, 20, record.version);
  out.set(value, 28);
  out.writeUInt32BE(crc32([key, out.subarray(4)]), 0);
  return out;
}

export function decodeLatest(key: Buffer, stored: Buffer, dataDir: string): LatestRecord {
  const body = checkRecord(key, stored, dataDir);
  if (body.length < 24) throw corrupt(key, dataDir, 'latest-state record too short');
  return {
    createRevision: readNumber(body, 0),
    modRevision: readNumber(body, 8),
    version: readNumber(body, 16),
    value: body.subarray(24),
  };
}

export interface HistoryRecord {
  readonly createRevision: number;
  readonly version: number;
  readonly value: Buffer;
}

/** History body: 01, createRevision, version, value for a put; 00 for a tombstone (null). */
export function encodeHistory(
  key: Buffer,
  record: Omit<HistoryRecord, 'value'> | null,
  value?: Uint8Array,
): Buffer {
  if (record === null) {
    const out = Buffer.allocUnsafe(5);
    out[4] = 0;
    out.writeUInt32BE(crc32([key, out.subarray(4)]), 0);
    return out;
  }
  const bytes = value ?? new Uint8Array(0);
  const out = Buffer.allocUnsafe(5 + 16 + bytes.length);
  out[4] = 1;
  writeNumber(out, 5, record.createRevision);
  writeNumber(out, 13, record.version);
  out.set(bytes, 21);
  out.writeUInt32BE(crc32([key, out.subarray(4)]), 0);
  return out;
}

export function decodeHistory(key: Buffer, stored: Buffer, dataDir: string): HistoryRecord | null {
  const body = checkRecord(key, stored, dataDir);
  if (body[0] === 0 && body.length === 1) return null;
  if (body[0] !== 1 || body.length < 17) throw corrupt(key, dataDir, 'bad history record');
  return { createRevision: readNumber(body, 1), version: readNumber(body, 9), value: body.subarray(17) };
}

export function revisionBytes(revision: number): Buffer {
  const out = Buffer.allocUnsafe(8);
  out.writeUInt32BE(Math.floor(revision / 0x1_0000_0000), 0);
  out.writeUInt32BE(revision >>> 0, 4);
  return out;
}

export function readRevisionBytes(bytes: Buffer, offset: number): number {
  return bytes.readUInt32BE(offset) * 0x1_0000_0000 + bytes.readUInt32BE(offset + 4);
}

function escapeKey(key: Buffer): Buffer {
  if (!key.includes(0)) return key;
  const out: number[] = [];
  for (const byte of key) {
    out.push(byte);
    if (byte === 0) out.push(0xff);
  }
  return Buffer.from(out);
}

function unescapeKey(escaped: Buffer): Buffer {
  if (!escaped.includes(0)) return escaped;
  const out: number[] = [];
  for (let i = 0; i < escaped.length; i++) {
    const byte = escaped[i]!;
    out.push(byte);
    if (byte === 0) i++; // skip the 0xff that doubles it
  }
  return Buffer.from(out);
}

export const latestKey = (key: Buffer): Buffer => Buffer.concat([latestPrefix, key]);
export const historyKey = (key: Buffer, revision: number): Buffer =>
  Buffer.concat([historyPrefix, escapeKey(key), keyTerminator, revisionBytes(revision)]);
export const changeKey = (revision: number): Buffer => Buffer.concat([changePrefix, revisionBytes(revision)]);

/** Splits a history key into the user key bytes and the revision. */
export function parseHistoryKey(stored: Buffer): { key: Buffer; revision: number } {
  const end = stored.length - 8 - keyTerminator.length;
  return {
    key: unescapeKey(stored.subarray(historyPrefix.length, end)),
    revision: readRevisionBytes(stored, stored.length - 8),
  };
}

/** The escaped-key bounds of every history record of keys in [from, to) (to undefined = to the namespace end). */
export function historyBounds(from: Buffer, to: Buffer | undefined): { gte: Buffer; lt: Buffer } {
  return {
    gte: Buffer.concat([historyPrefix, escapeKey(from)]),
    lt: to === undefined ? prefixEnd(historyPrefix)! : Buffer.concat([historyPrefix, escapeKey(to)]),
  };
}

/** The smallest byte string greater than every string starting with `prefix`; undefined when there is none. */
export function prefixEnd(prefix: Buffer): Buffer | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i]! < 0xff) {
      const out = Buffer.from(prefix.subarray(0, i + 1));
      out[i] = prefix[i]! + 1;
      return out;
    }
  }
  return undefined;
}
