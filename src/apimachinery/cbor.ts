// The CBOR media type (RFC 8949), as kube-apiserver 1.32 serves it behind the CBORServingAndStorage gate: what
// it writes (the self-described tag 55799 first, strings and map keys as byte strings, map keys in bytewise
// lexical order, floats in their shortest exact width, definite lengths only) and what it accepts on decode
// (indefinite lengths and tags are accepted; duplicate map keys, non-string map keys, invalid UTF-8 text, NaN and
// infinities, integers outside int64, more than 64 nested levels and more than 1024 elements in one array or map
// are refused). Errors carry the words of the Go CBOR library kube-apiserver uses.

import { isUtf8 } from 'node:buffer';

export const cborMediaType = 'application/cbor';
/** Watch responses in CBOR: one self-delimiting data item per event (RFC 8742). */
export const cborSequenceMediaType = 'application/cbor-seq';
export const applyPatchCborMediaType = 'application/apply-patch+cbor';

/** The head of tag 55799 ("self-described CBOR"): kube-apiserver's magic number on everything it encodes. */
export const selfDescribedCbor = Buffer.from([0xd9, 0xd9, 0xf7]);

const nestedLevelsMax = 64;
const arrayElementsMax = 1024;
const mapPairsMax = 1024;

// ---- Encoding

/**
 * The encoder's working buffer, kept between calls (encoding is synchronous): growing a fresh buffer for every
 * large list made the garbage collector the main cost. The result is copied out at its exact size.
 */
let scratch = Buffer.allocUnsafe(64 * 1024);
const scratchBytesMax = 4 * 1024 * 1024;

class Writer {
  private buffer = scratch;
  private length = 0;

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  bytes(value: Uint8Array): void {
    this.reserve(value.length);
    this.buffer.set(value, this.length);
    this.length += value.length;
  }

  /** A string as a byte string of its UTF-8, written in place. */
  byteString(value: string, byteLength: number): void {
    this.head(2, byteLength);
    this.reserve(byteLength);
    this.length += this.buffer.write(value, this.length, byteLength, 'utf8');
  }

  /** A data item's head: major type and argument, in the shortest form (RFC 8949 4.2.1). */
  head(major: number, argument: number): void {
    const m = major << 5;
    this.reserve(9);
    if (argument < 24) this.buffer[this.length++] = m | argument;
    else if (argument < 0x100) {
      this.buffer[this.length++] = m | 24;
      this.buffer[this.length++] = argument;
    } else if (argument < 0x10000) {
      this.buffer[this.length++] = m | 25;
      this.length = this.buffer.writeUInt16BE(argument, this.length);
    } else if (argument < 0x100000000) {
      this.buffer[this.length++] = m | 26;
      this.length = this.buffer.writeUInt32BE(argument, this.length);
    } else {
      this.buffer[this.length++] = m | 27;
      this.length = this.buffer.writeBigUInt64BE(BigInt(argument), this.length);
    }
  }

  float(value: number): void {
    this.reserve(9);
    const half = float16Bits(value);
    if (half !== undefined) {
      this.buffer[this.length++] = 0xf9;
      this.length = this.buffer.writeUInt16BE(half, this.length);
    } else if (Math.fround(value) === value) {
      this.buffer[this.length++] = 0xfa;
      this.length = this.buffer.writeFloatBE(value, this.length);
    } else {
      this.buffer[this.length++] = 0xfb;
      this.length = this.buffer.writeDoubleBE(value, this.length);
    }
  }

  /** The bytes written, in a buffer of their own; the working buffer goes back for the next encode. */
  result(): Buffer {
    const out = Buffer.allocUnsafe(this.length);
    this.buffer.copy(out, 0, 0, this.length);
    if (this.buffer.length <= scratchBytesMax) scratch = this.buffer;
    return out;
  }
}

/** The IEEE 754 half-precision bits of a finite value, when half precision holds it exactly. */
function float16Bits(value: number): number | undefined {
  if (value === 0) return Object.is(value, -0) ? 0x8000 : 0;
  const sign = value < 0 ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  let exponent = Math.floor(Math.log2(magnitude));
  if (2 ** exponent > magnitude) exponent--;
  if (exponent > 15) return undefined;
  if (exponent < -14) {
    // Subnormal: a multiple of 2^-24 below 2^-14.
    const units = magnitude / 2 ** -24;
    return Number.isInteger(units) && units < 1024 ? sign | units : undefined;
  }
  const mantissa = (magnitude / 2 ** exponent - 1) * 1024;
  if (!Number.isInteger(mantissa)) return undefined;
  return sign | ((exponent + 15) << 10) | mantissa;
}

interface EncodedKey {
  readonly key: string;
  /** The key's UTF-8 length (encoded as a byte string, its head is its length). */
  readonly byteLength: number;
}

/**
 * Bytewise lexical order of the encoded keys: the head holds the length, so shorter keys sort first; among
 * equal lengths UTF-8 order is code point order, which is JavaScript's order unless a surrogate is involved.
 */
function compareKeys(a: EncodedKey, b: EncodedKey): number {
  if (a.byteLength !== b.byteLength) return a.byteLength - b.byteLength;
  if (a.byteLength === a.key.length && b.byteLength === b.key.length)
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  return Buffer.compare(Buffer.from(a.key, 'utf8'), Buffer.from(b.key, 'utf8'));
}

/**
 * The []byte fields of built-in kinds (maps of them): Go's encoder writes each value as its raw bytes in tag 22
 * ("base64 when converted to JSON"), so a typed Go client reads bytes, not base64 text. Here the JSON form holds
 * base64, which is decoded for the wire; the decoder turns tag 22 back into base64.
 */
const byteMapFieldOf: Readonly<Record<string, string>> = { Secret: 'data', ConfigMap: 'binaryData' };

/** Canonical base64 as tag 22 over its bytes (true), or nothing written (false): Go's typed object has bytes. */
function writeBase64(writer: Writer, item: unknown): boolean {
  if (typeof item !== 'string') return false;
  const bytes = Buffer.from(item, 'base64');
  if (bytes.toString('base64') !== item) return false;
  writer.head(6, 22);
  writer.head(2, bytes.length);
  writer.bytes(bytes);
  return true;
}

function writeValue(writer: Writer, value: unknown, itemKind?: string): void {
  switch (typeof value) {
    case 'string':
      writer.byteString(value, Buffer.byteLength(value, 'utf8'));
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new Error(`cbor: unsupported value: ${String(value)}`);
      if (Number.isSafeInteger(value)) {
        if (value >= 0) writer.head(0, value);
        else writer.head(1, -1 - value);
      } else writer.float(value);
      return;
    case 'boolean':
      writer.byte(value ? 0xf5 : 0xf4);
      return;
    case 'undefined':
      writer.byte(0xf6);
      return;
    case 'object':
      if (value === null) writer.byte(0xf6);
      else if (Array.isArray(value)) {
        writer.head(4, value.length);
        for (const item of value) writeValue(writer, item, itemKind);
      } else writeObject(writer, value as Record<string, unknown>, itemKind);
      return;
    default:
      throw new Error(`cbor: unsupported type ${typeof value}`);
  }
}

/** How the values of one map are written: as they are, all as bytes, or by the object's kind. */
interface MapMode {
  /** Every value is a []byte (the map under a byte field). */
  readonly base64?: boolean;
  /** The field of this object that holds a map of []byte. */
  readonly byteField?: string | undefined;
  /** The kind of this list's items. */
  readonly listItemKind?: string | undefined;
}

const plainMap: MapMode = {};
const base64Map: MapMode = { base64: true };

/** An object: its kind (or, for a list's items, the list's item kind) says which fields hold bytes. */
function writeObject(writer: Writer, value: Record<string, unknown>, itemKind: string | undefined): void {
  const kind = typeof value.kind === 'string' ? value.kind : itemKind;
  if (kind === undefined) {
    writeMap(writer, value, plainMap);
    return;
  }
  const byteField = byteMapFieldOf[kind];
  const listItemKind = kind.endsWith('List') ? kind.slice(0, -'List'.length) : undefined;
  writeMap(
    writer,
    value,
    byteField === undefined && listItemKind === undefined ? plainMap : { byteField, listItemKind },
  );
}

function writeMap(writer: Writer, value: Record<string, unknown>, mode: MapMode): void {
  const keys: EncodedKey[] = [];
  for (const key of Object.keys(value)) {
    // As JSON.stringify does: a property holding undefined is not a field.
    if (value[key] !== undefined) keys.push({ key, byteLength: Buffer.byteLength(key, 'utf8') });
  }
  keys.sort(compareKeys);
  writer.head(5, keys.length);
  for (const { key, byteLength } of keys) {
    writer.byteString(key, byteLength);
    const item = value[key];
    if (mode === plainMap) writeValue(writer, item);
    else if (mode.base64 === true) {
      if (!writeBase64(writer, item)) writeValue(writer, item);
    } else if (key === mode.byteField && isPlainObject(item)) writeMap(writer, item, base64Map);
    else if (key === 'items' && mode.listItemKind !== undefined && Array.isArray(item))
      writeValue(writer, item, mode.listItemKind);
    else writeValue(writer, item);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** One data item, self-described (tag 55799), in kube-apiserver's deterministic encoding. */
export function encodeCbor(value: unknown): Buffer {
  const writer = new Writer();
  writer.bytes(selfDescribedCbor);
  writeValue(writer, value);
  return writer.result();
}

/**
 * One watch event of an `application/cbor-seq` stream: a self-described WatchEvent map whose `object` is itself
 * a self-described item (the embedded object is encoded on its own, then enclosed, as kube-apiserver does).
 */
export function encodeCborWatchEvent(type: string, object: unknown): Buffer {
  const writer = new Writer();
  writer.bytes(selfDescribedCbor);
  writer.head(5, 2);
  writeValue(writer, 'type');
  writeValue(writer, type);
  writeValue(writer, 'object');
  writer.bytes(selfDescribedCbor);
  writeValue(writer, object);
  return writer.result();
}

// ---- Decoding

const typeNames = [
  'positive integer',
  'negative integer',
  'byte string',
  'UTF-8 text string',
  'array',
  'map',
  'tag',
  'primitives',
] as const;

export type CborTypeName = (typeof typeNames)[number];

/**
 * A body kube-apiserver's decoder refuses. `stage` says how far a decode into a typed object gets: `envelope`
 * when not even the type (apiVersion, kind) can be read (malformed bytes, a top-level duplicate or non-string key),
 * `content` when the type can be read but the rest cannot (a nested duplicate key, NaN, an int64 overflow).
 */
export class CborDecodeError extends Error {
  constructor(
    message: string,
    readonly stage: 'envelope' | 'content',
  ) {
    super(message);
    this.name = 'CborDecodeError';
  }
}

export interface CborDecoded {
  readonly value: unknown;
  /** The CBOR type of the top-level item (under any tags), for "cannot unmarshal <type>" errors. */
  readonly type: CborTypeName;
}

const int64Max = 2n ** 63n - 1n;

interface Head {
  readonly major: number;
  readonly info: number;
  /** The argument (a length, a count, an integer, a tag number); undefined for indefinite lengths. */
  readonly argument: number | undefined;
  /** An 8-byte argument beyond Number.MAX_SAFE_INTEGER, exactly (then `argument` is only its rough value). */
  readonly wide?: bigint;
}

class Reader {
  offset = 0;
  depth = 0;
  /** The first error of decoding the top-level map's own keys (what a decode of apiVersion/kind meets). */
  topLevelError: string | undefined;
  /** The first error below the top level; reported only when the data is otherwise well-formed. */
  contentError: string | undefined;

  constructor(private readonly data: Buffer) {}

  get remaining(): number {
    return this.data.length - this.offset;
  }

  private need(bytes: number): void {
    if (this.offset + bytes > this.data.length) throw new CborDecodeError('unexpected EOF', 'envelope');
  }

  peekMajor(): number {
    this.need(1);
    return (this.data[this.offset] ?? 0) >> 5;
  }

  isBreak(): boolean {
    this.need(1);
    return this.data[this.offset] === 0xff;
  }

  head(): Head {
    this.need(1);
    const initial = this.data[this.offset++] ?? 0;
    const major = initial >> 5;
    const info = initial & 0x1f;
    if (info < 24) return { major, info, argument: info };
    if (info === 31) {
      if (major === 7) throw new CborDecodeError('cbor: unexpected "break" code', 'envelope');
      if (major === 0 || major === 1 || major === 6) throw this.invalidInfo(major, info);
      return { major, info, argument: undefined };
    }
    if (info > 27) throw this.invalidInfo(major, info);
    const size = 1 << (info - 24);
    this.need(size);
    let argument: number;
    let wide: bigint | undefined;
    if (size === 1) argument = this.data[this.offset] ?? 0;
    else if (size === 2) argument = this.data.readUInt16BE(this.offset);
    else if (size === 4) argument = this.data.readUInt32BE(this.offset);
    else {
      const high = this.data.readUInt32BE(this.offset);
      argument = high * 2 ** 32 + this.data.readUInt32BE(this.offset + 4);
      if (high >= 0x200000) wide = this.data.readBigUInt64BE(this.offset);
    }
    if (major === 7 && info === 24 && argument < 32) {
      this.offset += size;
      throw new CborDecodeError(`cbor: invalid simple value ${argument} for type primitives`, 'envelope');
    }
    // Floats are read from the bytes by the caller.
    if (major !== 7) this.offset += size;
    return wide === undefined ? { major, info, argument } : { major, info, argument, wide };
  }

  private invalidInfo(major: number, info: number): CborDecodeError {
    return new CborDecodeError(
      `cbor: invalid additional information ${info} for type ${typeNames[major] ?? 'primitives'}`,
      'envelope',
    );
  }

  /** A definite length that must fit in what is left of the data. */
  length(argument: number): number {
    if (argument > this.remaining) throw new CborDecodeError('unexpected EOF', 'envelope');
    return argument;
  }

  take(bytes: number): Buffer {
    this.need(bytes);
    const slice = this.data.subarray(this.offset, this.offset + bytes);
    this.offset += bytes;
    return slice;
  }

  float(info: number): number {
    const size = info === 25 ? 2 : info === 26 ? 4 : 8;
    this.need(size);
    const at = this.offset;
    this.offset += size;
    if (size === 4) return this.data.readFloatBE(at);
    if (size === 8) return this.data.readDoubleBE(at);
    return float16Value(this.data.readUInt16BE(at));
  }

  /** Records a refusal that a well-formed item can still meet; the first one is reported. */
  refuse(message: string, topLevel: boolean): void {
    if (topLevel) this.topLevelError ??= message;
    else this.contentError ??= message;
  }
}

function float16Value(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** The bytes of a byte or text string (definite, or indefinite: definite chunks of the same type). */
function readStringBytes(reader: Reader, head: Head): Buffer {
  if (head.argument !== undefined) return reader.take(reader.length(head.argument));
  const chunks: Buffer[] = [];
  while (!reader.isBreak()) {
    const chunk = reader.head();
    if (chunk.major !== head.major || chunk.argument === undefined) {
      throw new CborDecodeError(
        `cbor: wrong element type ${typeNames[chunk.major] ?? 'primitives'} for indefinite-length ${typeNames[head.major] ?? ''}`,
        'envelope',
      );
    }
    chunks.push(reader.take(reader.length(chunk.argument)));
  }
  reader.take(1);
  return Buffer.concat(chunks);
}

function readText(reader: Reader, head: Head): string {
  const bytes = readStringBytes(reader, head);
  if (!isUtf8(bytes)) throw new CborDecodeError('cbor: invalid UTF-8 string', 'envelope');
  return bytes.toString('utf8');
}

function enter(reader: Reader): void {
  reader.depth++;
  if (reader.depth > nestedLevelsMax)
    throw new CborDecodeError(`cbor: exceeded max nested level ${nestedLevelsMax}`, 'envelope');
}

/** An integer head's value: exact below 2^53 without BigInt; wider ones are checked against int64. */
function integer(reader: Reader, head: Head, topLevel: boolean): number {
  const negative = head.major === 1;
  if (head.wide === undefined) {
    const magnitude = head.argument ?? 0;
    return negative ? -1 - magnitude : magnitude;
  }
  const value = negative ? -1n - head.wide : head.wide;
  return checkedInt64(reader, value, negative ? 'negative integer' : 'positive integer', topLevel);
}

function checkedInt64(reader: Reader, value: bigint, type: CborTypeName, topLevel: boolean): number {
  if (value > int64Max || value < -int64Max - 1n) {
    reader.refuse(
      `cbor: cannot unmarshal ${type} into Go value of type int64 (${value} overflows Go's int64)`,
      topLevel,
    );
    return 0;
  }
  return Number(value);
}

/** Byte strings are strings (kube-apiserver decodes them to Go strings); tags 21-23 ask for an encoding. */
function readItem(reader: Reader, topLevel: boolean, encoding?: 'base64url' | 'base64' | 'hex'): unknown {
  const head = reader.head();
  const argument = head.argument;
  switch (head.major) {
    case 0:
    case 1:
      return integer(reader, head, topLevel);
    case 2: {
      const bytes = readStringBytes(reader, head);
      if (encoding === 'base64url') return bytes.toString('base64url');
      return bytes.toString(encoding ?? 'utf8');
    }
    case 3:
      return readText(reader, head);
    case 4:
      return readArray(reader, argument);
    case 5:
      return readMap(reader, argument, topLevel);
    case 6:
      return readTag(reader, head.wide ?? BigInt(argument ?? 0), topLevel);
    case 7:
      return readPrimitive(reader, head, topLevel);
    default:
      throw new CborDecodeError(`cbor: invalid major type ${head.major}`, 'envelope');
  }
}

function readArray(reader: Reader, count: number | undefined): unknown[] {
  enter(reader);
  const items: unknown[] = [];
  const tooMany = (): CborDecodeError =>
    new CborDecodeError(
      `cbor: exceeded max number of elements ${arrayElementsMax} for CBOR array`,
      'envelope',
    );
  if (count === undefined) {
    while (!reader.isBreak()) {
      if (items.length === arrayElementsMax) throw tooMany();
      items.push(readItem(reader, false));
    }
    reader.take(1);
  } else {
    if (count > arrayElementsMax) throw tooMany();
    for (let i = 0; i < count; i++) items.push(readItem(reader, false));
  }
  reader.depth--;
  return items;
}

function readMap(reader: Reader, count: number | undefined, topLevel: boolean): Record<string, unknown> {
  enter(reader);
  const map: Record<string, unknown> = {};
  const tooMany = (): CborDecodeError =>
    new CborDecodeError(
      `cbor: exceeded max number of key-value pairs ${mapPairsMax} for CBOR map`,
      'envelope',
    );
  if (count !== undefined && count > mapPairsMax) throw tooMany();
  for (let index = 0; count === undefined ? !reader.isBreak() : index < count; index++) {
    if (count === undefined && index === mapPairsMax) throw tooMany();
    const keyMajor = reader.peekMajor();
    const key = readItem(reader, false);
    const value = readItem(reader, false);
    if (typeof key !== 'string' || (keyMajor !== 2 && keyMajor !== 3)) {
      reader.refuse(
        `cbor: cannot unmarshal ${typeNames[keyMajor] ?? 'primitives'} into Go value of type string`,
        topLevel,
      );
      continue;
    }
    if (Object.hasOwn(map, key)) {
      reader.refuse(`cbor: found duplicate map key "${key}" at map element index ${index}`, topLevel);
      continue;
    }
    // `__proto__` is a field like any other (as JSON.parse makes it), not the prototype.
    if (key === '__proto__')
      Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
    else map[key] = value;
  }
  if (count === undefined) reader.take(1);
  reader.depth--;
  return map;
}

function readTag(reader: Reader, tag: bigint, topLevel: boolean): unknown {
  enter(reader);
  const contentMajor = reader.peekMajor();
  const mustBe = (majors: readonly number[], what: string): void => {
    if (!majors.includes(contentMajor)) {
      throw new CborDecodeError(
        `cbor: tag number ${tag} must be followed by ${what}, got ${typeNames[contentMajor] ?? 'primitives'}`,
        'envelope',
      );
    }
  };
  let value: unknown;
  if (tag === 0n) {
    mustBe([3], 'text string');
    value = readItem(reader, topLevel);
  } else if (tag === 1n) {
    mustBe([0, 1, 7], 'integer or floating-point number');
    value = readItem(reader, topLevel);
  } else if (tag === 2n || tag === 3n) {
    mustBe([2], 'byte string');
    const bytes = readStringBytes(reader, reader.head());
    const magnitude = bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
    value = checkedInt64(reader, tag === 2n ? magnitude : -1n - magnitude, 'tag', topLevel);
  } else if ((tag === 21n || tag === 22n || tag === 23n) && contentMajor === 2) {
    // Expected later encoding: the bytes become the string JSON would carry.
    value = readItem(reader, topLevel, tag === 21n ? 'base64url' : tag === 22n ? 'base64' : 'hex');
  } else {
    // Self-described CBOR (55799) and unrecognized tags: the content stands for itself.
    value = readItem(reader, topLevel);
  }
  reader.depth--;
  return value;
}

function readPrimitive(reader: Reader, head: Head, topLevel: boolean): unknown {
  switch (head.info) {
    case 20:
      return false;
    case 21:
      return true;
    case 22:
    case 23:
      // null and undefined both decode to Go's nil.
      return null;
    case 25:
    case 26:
    case 27: {
      const value = reader.float(head.info);
      if (Number.isNaN(value)) {
        reader.refuse(
          'cbor: data item of cbor type primitives is not accepted by protocol: floating-point NaN',
          topLevel,
        );
      } else if (!Number.isFinite(value)) {
        reader.refuse(
          'cbor: data item of cbor type primitives is not accepted by protocol: floating-point infinity',
          topLevel,
        );
      }
      return Number.isFinite(value) ? value : null;
    }
    default:
      reader.refuse(
        `cbor: data item of cbor type primitives is not accepted by protocol: simple value ${head.argument ?? 0}`,
        topLevel,
      );
      if (head.info === 24) reader.take(1);
      return null;
  }
}

/** Decodes one CBOR data item with kube-apiserver's rules; every refusal is a CborDecodeError. */
export function decodeCbor(data: Uint8Array): CborDecoded {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length === 0) throw new CborDecodeError('EOF', 'envelope');
  const reader = new Reader(bytes);
  let typeOffset = 0;
  // The type of the top-level item is the one under its tags.
  while (typeOffset < bytes.length && (bytes[typeOffset] ?? 0) >> 5 === 6) {
    const info = (bytes[typeOffset] ?? 0) & 0x1f;
    typeOffset += 1 + (info < 24 ? 0 : info <= 27 ? 1 << (info - 24) : 0);
  }
  const type = typeNames[(bytes[typeOffset] ?? 0xe0) >> 5] ?? 'primitives';
  const value = readItem(reader, true);
  if (reader.remaining > 0) {
    throw new CborDecodeError(
      `cbor: ${reader.remaining} bytes of extraneous data starting at index ${reader.offset}`,
      'envelope',
    );
  }
  if (reader.topLevelError !== undefined) throw new CborDecodeError(reader.topLevelError, 'envelope');
  if (reader.contentError !== undefined) throw new CborDecodeError(reader.contentError, 'content');
  return { value, type };
}

/** The value of a well-formed item, refusals ignored (to name the type of a body whose content is refused). */
export function decodeCborLenient(data: Uint8Array): unknown {
  try {
    return readItem(new Reader(Buffer.from(data.buffer, data.byteOffset, data.byteLength)), true);
  } catch (error) {
    if (error instanceof CborDecodeError) return undefined;
    throw error;
  }
}
