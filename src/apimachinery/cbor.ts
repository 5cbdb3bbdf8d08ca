// The CBOR media type (RFC 8949), as kube-apiserver 1.32 serves it behind the CBORServingAndStorage gate: what
// it writes (the self-described tag 55799 first, strings and map keys as byte strings, map keys in bytewise
// lexical order, floats in their shortest exact width, definite lengths only) and what it accepts on decode
// (indefinite lengths and tags are accepted; duplicate map keys, non-string map keys, invalid UTF-8 text, NaN and
// infinities, integers outside int64, more than 64 nested levels and more than 1024 elements in one array or map
// are refused). Errors carry the words of the Go CBOR library kube-apiserver uses.
//
// cbor-x writes and reads the bytes. Encoding shapes the value first (strings as Buffers, objects as Maps in
// kube's key order, the tags as cbor-x Tags); decoding lets cbor-x build the values and checks them afterwards,
// after a validating pre-scan of the raw bytes for what the decoded values no longer show (see `Scanner`).

import { isUtf8 } from 'node:buffer';
import { Decoder, Encoder, Tag } from 'cbor-x';

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
 * cbor-x as kube-apiserver's encode mode allows: plain maps (no tag 259, no records), shortest lengths, plain
 * byte strings for Buffers (no typed-array tags), floats always as float64 (cbor-x has no float16 and its float32
 * modes round), integers of 2^32 and beyond passed as BigInt so they stay 8-byte integers.
 */
const encoder = new Encoder({
  useRecords: false,
  mapsAsObjects: false,
  variableMapSize: true,
  tagUint8Array: false,
  useFloat32: 0,
  pack: false,
  structuredClone: false,
  useTag259ForMaps: false,
} as ConstructorParameters<typeof Encoder>[0]);

/**
 * The UTF-8 of map keys and short string values, kept (up to a bound): the same few hundred field names and
 * values ("TCP", "True", "Always") come back in every object, and a Buffer for each was the main cost.
 */
const keyBytesCache = new Map<string, Buffer>();
const keyBytesCacheMax = 8192;
const shortStringMax = 24;

function keyBytes(key: string): Buffer {
  let bytes = keyBytesCache.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(key, 'utf8');
    if (keyBytesCache.size < keyBytesCacheMax) keyBytesCache.set(key, bytes);
  }
  return bytes;
}

/** Bytewise lexical order of the encoded keys: the head holds the length, so shorter keys sort first. */
function compareKeys(a: [Buffer, unknown], b: [Buffer, unknown]): number {
  return a[0].length - b[0].length || Buffer.compare(a[0], b[0]);
}

/**
 * The []byte fields of built-in kinds (maps of them): Go's encoder writes each value as its raw bytes in tag 22
 * ("base64 when converted to JSON"), so a typed Go client reads bytes, not base64 text. Here the JSON form holds
 * base64, which is decoded for the wire; the decoder turns tag 22 back into base64.
 */
const byteMapFieldOf: Readonly<Record<string, string>> = { Secret: 'data', ConfigMap: 'binaryData' };

/** Canonical base64 as tag 22 over its bytes, or undefined when it is not (then it is written as it is). */
function base64Tag(item: unknown): Tag | undefined {
  if (typeof item !== 'string') return undefined;
  const bytes = Buffer.from(item, 'base64');
  if (bytes.toString('base64') !== item) return undefined;
  return new Tag(bytes, 22);
}

const uint32Limit = 2 ** 32;

/** A JSON value as cbor-x should write it. */
function shape(value: unknown, itemKind?: string): unknown {
  switch (typeof value) {
    case 'string':
      return value.length <= shortStringMax ? keyBytes(value) : Buffer.from(value, 'utf8');
    case 'number':
      if (!Number.isFinite(value)) throw new Error(`cbor: unsupported value: ${String(value)}`);
      // cbor-x writes integers beyond 32 bits as float64; as a BigInt it writes the 8-byte integer.
      if (Number.isSafeInteger(value) && (value >= uint32Limit || value < -uint32Limit)) return BigInt(value);
      return value;
    case 'boolean':
      return value;
    case 'undefined':
      return null;
    case 'object':
      if (value === null) return null;
      if (Array.isArray(value)) return value.map((item) => shape(item, itemKind));
      return shapeObject(value as Record<string, unknown>, itemKind);
    default:
      throw new Error(`cbor: unsupported type ${typeof value}`);
  }
}

/** How the values of one map are shaped: as they are, all as bytes, or by the object's kind. */
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
function shapeObject(value: Record<string, unknown>, itemKind: string | undefined): Map<Buffer, unknown> {
  const kind = typeof value.kind === 'string' ? value.kind : itemKind;
  if (kind === undefined) return shapeMap(value, plainMap);
  const byteField = byteMapFieldOf[kind];
  const listItemKind = kind.endsWith('List') ? kind.slice(0, -'List'.length) : undefined;
  return shapeMap(
    value,
    byteField === undefined && listItemKind === undefined ? plainMap : { byteField, listItemKind },
  );
}

function shapeMap(value: Record<string, unknown>, mode: MapMode): Map<Buffer, unknown> {
  const entries: [Buffer, unknown][] = [];
  for (const key of Object.keys(value)) {
    const item = value[key];
    // As JSON.stringify does: a property holding undefined is not a field.
    if (item === undefined) continue;
    let shaped: unknown;
    if (mode === plainMap) shaped = shape(item);
    else if (mode.base64 === true) shaped = base64Tag(item) ?? shape(item);
    else if (key === mode.byteField && isPlainObject(item)) shaped = shapeMap(item, base64Map);
    else if (key === 'items' && mode.listItemKind !== undefined && Array.isArray(item))
      shaped = shape(item, mode.listItemKind);
    else shaped = shape(item);
    entries.push([keyBytes(key), shaped]);
  }
  entries.sort(compareKeys);
  return new Map(entries);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** cbor-x's bytes in a buffer of their own (its result shares the encoder's working buffer). */
function encodeOwned(value: unknown): Buffer {
  return Buffer.from(encoder.encode(value));
}

/** One data item, self-described (tag 55799), in kube-apiserver's deterministic encoding. */
export function encodeCbor(value: unknown): Buffer {
  return encodeOwned(new Tag(shape(value), 55799));
}

/**
 * One watch event of an `application/cbor-seq` stream: a self-described WatchEvent map whose `object` is itself
 * a self-described item (the embedded object is encoded on its own, then enclosed, as kube-apiserver does).
 */
export function encodeCborWatchEvent(type: string, object: unknown): Buffer {
  const event = new Map<Buffer, unknown>([
    [keyBytes('type'), Buffer.from(type, 'utf8')],
    [keyBytes('object'), new Tag(shape(object), 55799)],
  ]);
  return encodeOwned(new Tag(event, 55799));
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
const int64Min = -int64Max - 1n;

/** The first refusal of a well-formed item at each stage; the top level's is what reading the type meets. */
class Refusals {
  topLevel: string | undefined;
  content: string | undefined;

  add(message: string, topLevel: boolean): void {
    if (topLevel) this.topLevel ??= message;
    else this.content ??= message;
  }
}

interface Head {
  readonly major: number;
  readonly info: number;
  /** The argument (a length, a count, an integer, a tag number); undefined for indefinite lengths. */
  readonly argument: number | undefined;
}

/** Tags cbor-x reads as kube does: bignums (to BigInt), expected encodings (as Tags), self-described. */
const tagsForCborX = new Set([2, 3, 21, 22, 23, 55799]);
const nullItem = Buffer.of(0xf6);

/**
 * The validating pre-scan: walks the raw bytes once, for what cbor-x's values no longer show or what cbor-x reads
 * differently from kube. It throws the Go library's words for malformed bytes (truncation, reserved additional
 * information, stray breaks, wrong chunk types, tag content types), invalid UTF-8 in text strings (cbor-x would
 * put in U+FFFD), nesting beyond 64 levels (which also bounds both walkers' recursion) and more than 1024
 * elements in an array or map (at the head, as the Go library checks them while it checks well-formedness, so
 * before any truncation further on); it records duplicate
 * map keys (cbor-x's Map keeps the last), keys that are not strings (after decoding, a tagged key or a float 1.0
 * key no longer shows its CBOR type), simple values (cbor-x refuses them in its own words) and bignum tags beyond
 * int64 (cbor-x's BigInt no longer says it came from a tag). What cbor-x cannot take as kube means it is rewritten
 * in a copy, only when present: indefinite-length strings become definite (cbor-x refuses them), tags other than
 * `tagsForCborX` are dropped (their content stands for itself in kube; cbor-x makes Dates, Sets, records of
 * them), and refused simple values and bignums become null.
 */
class Scanner {
  offset = 0;
  private depth = 0;
  private pieces: Buffer[] | undefined;
  private copied = 0;

  constructor(
    private readonly data: Buffer,
    readonly refusals: Refusals,
  ) {}

  get remaining(): number {
    return this.data.length - this.offset;
  }

  /** The bytes for cbor-x: the data itself, or the data with this scan's rewrites. */
  result(): Buffer {
    if (this.pieces === undefined) return this.data;
    this.pieces.push(this.data.subarray(this.copied));
    return Buffer.concat(this.pieces);
  }

  /** Puts `replacement` in place of data[start, end) in the copy (rewrites come in document order). */
  private replace(start: number, end: number, replacement?: Buffer): void {
    this.pieces ??= [];
    this.pieces.push(this.data.subarray(this.copied, start));
    if (replacement !== undefined) this.pieces.push(replacement);
    this.copied = end;
  }

  private need(bytes: number): void {
    if (this.offset + bytes > this.data.length) throw new CborDecodeError('unexpected EOF', 'envelope');
  }

  private peekMajor(): number {
    this.need(1);
    return (this.data[this.offset] ?? 0) >> 5;
  }

  private isBreak(): boolean {
    this.need(1);
    return this.data[this.offset] === 0xff;
  }

  private head(): Head {
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
    if (size === 1) argument = this.data[this.offset] ?? 0;
    else if (size === 2) argument = this.data.readUInt16BE(this.offset);
    else if (size === 4) argument = this.data.readUInt32BE(this.offset);
    else argument = this.data.readUInt32BE(this.offset) * 2 ** 32 + this.data.readUInt32BE(this.offset + 4);
    this.offset += size;
    if (major === 7 && info === 24 && argument < 32)
      throw new CborDecodeError(`cbor: invalid simple value ${argument} for type primitives`, 'envelope');
    return { major, info, argument };
  }

  private invalidInfo(major: number, info: number): CborDecodeError {
    return new CborDecodeError(
      `cbor: invalid additional information ${info} for type ${typeNames[major] ?? 'primitives'}`,
      'envelope',
    );
  }

  private take(bytes: number): Buffer {
    if (bytes > this.remaining) throw new CborDecodeError('unexpected EOF', 'envelope');
    const slice = this.data.subarray(this.offset, this.offset + bytes);
    this.offset += bytes;
    return slice;
  }

  private enter(): void {
    this.depth++;
    if (this.depth > nestedLevelsMax)
      throw new CborDecodeError(`cbor: exceeded max nested level ${nestedLevelsMax}`, 'envelope');
  }

  /**
   * The bytes of a byte or text string (definite, or indefinite: definite chunks of the same type); an indefinite
   * one is rewritten as definite when `rewrite`.
   */
  private string(head: Head, start: number, rewrite: boolean): Buffer {
    if (head.argument !== undefined) return this.take(head.argument);
    return this.indefiniteString(head, start, rewrite);
  }

  /** A string item whose bytes are not needed: a definite one is only skipped. */
  private skipString(head: Head, start: number): void {
    if (head.argument === undefined) this.indefiniteString(head, start, true);
    else if (head.argument > this.remaining) throw new CborDecodeError('unexpected EOF', 'envelope');
    else this.offset += head.argument;
  }

  private indefiniteString(head: Head, start: number, rewrite: boolean): Buffer {
    const chunks: Buffer[] = [];
    while (!this.isBreak()) {
      const chunk = this.head();
      if (chunk.major !== head.major || chunk.argument === undefined) {
        throw new CborDecodeError(
          `cbor: wrong element type ${typeNames[chunk.major] ?? 'primitives'} for indefinite-length ${typeNames[head.major] ?? ''}`,
          'envelope',
        );
      }
      chunks.push(this.take(chunk.argument));
    }
    this.offset++;
    const bytes = Buffer.concat(chunks);
    if (rewrite) this.replace(start, this.offset, Buffer.concat([itemHead(head.major, bytes.length), bytes]));
    return bytes;
  }

  /** One item; returns the bytes of a string item (for map keys), else undefined. */
  item(topLevel: boolean, wantBytes = false): Buffer | undefined {
    const start = this.offset;
    const head = this.head();
    switch (head.major) {
      case 0:
      case 1:
        return undefined;
      case 2:
        if (wantBytes) return this.string(head, start, true);
        this.skipString(head, start);
        return undefined;
      case 3: {
        const bytes = this.string(head, start, true);
        if (!isUtf8(bytes)) throw new CborDecodeError('cbor: invalid UTF-8 string', 'envelope');
        return bytes;
      }
      case 4:
        this.enter();
        if (head.argument === undefined) {
          for (let count = 0; !this.isBreak(); count++) {
            if (count === arrayElementsMax) throw tooMany('array');
            this.item(false);
          }
          this.offset++;
        } else {
          if (head.argument > arrayElementsMax) throw tooMany('array');
          for (let i = 0; i < head.argument; i++) this.item(false);
        }
        this.depth--;
        return undefined;
      case 5:
        this.enter();
        this.map(head.argument, topLevel);
        this.depth--;
        return undefined;
      case 6:
        this.enter();
        this.tag(head.argument ?? 0, start, topLevel);
        this.depth--;
        return undefined;
      case 7:
        if (head.info === 20 || head.info === 21 || head.info === 22 || head.info === 23) return undefined;
        // A float (its bytes are behind the head): cbor-x reads it; NaN and infinities are refused on its value.
        if (head.info >= 25) return undefined;
        this.refusals.add(
          `cbor: data item of cbor type primitives is not accepted by protocol: simple value ${head.argument ?? 0}`,
          topLevel,
        );
        this.replace(start, this.offset, nullItem);
        return undefined;
      default:
        throw new CborDecodeError(`cbor: invalid major type ${head.major}`, 'envelope');
    }
  }

  private map(count: number | undefined, topLevel: boolean): void {
    // Duplicates: compared with the keys before while few, then through a set of their bytes.
    const keys: Buffer[] = [];
    let seen: Set<string> | undefined;
    if (count !== undefined && count > mapPairsMax) throw tooMany('map');
    for (let index = 0; count === undefined ? !this.isBreak() : index < count; index++) {
      if (count === undefined && index === mapPairsMax) throw tooMany('map');
      const keyMajor = this.peekMajor();
      const key = this.item(false, true);
      this.item(false);
      if (key === undefined || (keyMajor !== 2 && keyMajor !== 3)) {
        this.refusals.add(
          `cbor: cannot unmarshal ${typeNames[keyMajor] ?? 'primitives'} into Go value of type string`,
          topLevel,
        );
        continue;
      }
      // Text and byte strings with the same bytes are the same Go string.
      let duplicate: boolean;
      if (seen === undefined && keys.length < 16) {
        duplicate = keys.some((other) => other.equals(key));
        keys.push(key);
      } else {
        seen ??= new Set(keys.map((other) => other.toString('latin1')));
        const name = key.toString('latin1');
        duplicate = seen.has(name);
        seen.add(name);
      }
      if (duplicate) {
        this.refusals.add(
          `cbor: found duplicate map key "${key.toString('utf8')}" at map element index ${index}`,
          topLevel,
        );
      }
    }
    if (count === undefined) this.offset++;
  }

  private tag(tag: number, start: number, topLevel: boolean): void {
    const contentStart = this.offset;
    const contentMajor = this.peekMajor();
    const mustBe = (majors: readonly number[], what: string): void => {
      if (!majors.includes(contentMajor)) {
        throw new CborDecodeError(
          `cbor: tag number ${tag} must be followed by ${what}, got ${typeNames[contentMajor] ?? 'primitives'}`,
          'envelope',
        );
      }
    };
    if (tag === 0) mustBe([3], 'text string');
    else if (tag === 1) mustBe([0, 1, 7], 'integer or floating-point number');
    else if (tag === 2 || tag === 3) {
      mustBe([2], 'byte string');
      const contentHead = this.head();
      const bytes = this.string(contentHead, contentStart, false);
      const magnitude = bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
      const value = tag === 2 ? magnitude : -1n - magnitude;
      if (value > int64Max || value < int64Min) {
        this.refusals.add(
          `cbor: cannot unmarshal tag into Go value of type int64 (${value} overflows Go's int64)`,
          topLevel,
        );
        this.replace(start, this.offset, nullItem);
      } else if (contentHead.argument === undefined) {
        const definite = Buffer.concat([itemHead(6, tag), itemHead(2, bytes.length), bytes]);
        this.replace(start, this.offset, definite);
      }
      return;
    }
    // Self-described CBOR (55799), expected encodings and unrecognized tags: the content stands for itself.
    if (!tagsForCborX.has(tag)) this.replace(start, contentStart);
    this.item(topLevel);
  }
}

/** A definite head in its shortest form. */
function itemHead(major: number, argument: number): Buffer {
  const m = major << 5;
  if (argument < 24) return Buffer.of(m | argument);
  if (argument < 0x100) return Buffer.of(m | 24, argument);
  if (argument < 0x10000) return Buffer.of(m | 25, argument >> 8, argument & 0xff);
  const head = Buffer.alloc(5);
  head[0] = m | 26;
  head.writeUInt32BE(argument, 1);
  return head;
}

/** cbor-x as the pre-scanned bytes need it: maps as Maps (keys of any type), byte strings as Buffers. */
const decoder = new Decoder({ useRecords: false, mapsAsObjects: false });

function tooMany(what: 'array' | 'map'): CborDecodeError {
  return new CborDecodeError(
    what === 'array'
      ? `cbor: exceeded max number of elements ${arrayElementsMax} for CBOR array`
      : `cbor: exceeded max number of key-value pairs ${mapPairsMax} for CBOR map`,
    'envelope',
  );
}

/**
 * cbor-x's value in JSON terms, with kube's checks on it: byte strings become strings (kube-apiserver decodes
 * them to Go strings), tags 21-23 over bytes become the encoding they ask for, NaN and infinities and integers
 * beyond int64 are refused.
 */
function toJson(value: unknown, refusals: Refusals, topLevel: boolean): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'undefined':
      // null and undefined both decode to Go's nil.
      return null;
    case 'number':
      if (Number.isFinite(value)) return value;
      refusals.add(
        `cbor: data item of cbor type primitives is not accepted by protocol: floating-point ${Number.isNaN(value) ? 'NaN' : 'infinity'}`,
        topLevel,
      );
      return null;
    case 'bigint':
      if (value <= int64Max && value >= int64Min) return Number(value);
      refusals.add(
        `cbor: cannot unmarshal ${value < 0n ? 'negative' : 'positive'} integer into Go value of type int64 (${value} overflows Go's int64)`,
        topLevel,
      );
      return 0;
    case 'object':
      if (value === null) return null;
      if (value instanceof Uint8Array) return bytesOf(value).toString('utf8');
      if (Array.isArray(value)) {
        return value.map((item: unknown) => toJson(item, refusals, false));
      }
      if (value instanceof Map) return mapToJson(value as Map<unknown, unknown>, refusals);
      if (value instanceof Tag) {
        const content: unknown = value.value;
        if (content instanceof Uint8Array && (value.tag === 21 || value.tag === 22 || value.tag === 23))
          return bytesOf(content).toString(
            value.tag === 21 ? 'base64url' : value.tag === 22 ? 'base64' : 'hex',
          );
        return toJson(content, refusals, topLevel);
      }
      throw new CborDecodeError(
        `cbor: unexpected value ${Object.prototype.toString.call(value)}`,
        'envelope',
      );
    default:
      throw new CborDecodeError(`cbor: unexpected value of type ${typeof value}`, 'envelope');
  }
}

function bytesOf(value: Uint8Array): Buffer {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** A map's string keys (the pre-scan refused the others and duplicates; the first of equal keys is kept). */
function mapToJson(map: Map<unknown, unknown>, refusals: Refusals): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [rawKey, rawValue] of map) {
    const key =
      typeof rawKey === 'string'
        ? rawKey
        : rawKey instanceof Uint8Array
          ? bytesOf(rawKey).toString('utf8')
          : undefined;
    if (key === undefined || Object.hasOwn(object, key)) continue;
    const value = toJson(rawValue, refusals, false);
    // `__proto__` is a field like any other (as JSON.parse makes it), not the prototype.
    if (key === '__proto__')
      Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
    else object[key] = value;
  }
  return object;
}

/** Pre-scan, cbor-x, checks: the value and the refusals of a well-formed item (malformed bytes throw). */
function decodeChecked(data: Uint8Array): { value: unknown; refusals: Refusals } {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length === 0) throw new CborDecodeError('EOF', 'envelope');
  const refusals = new Refusals();
  const scanner = new Scanner(bytes, refusals);
  scanner.item(true);
  if (scanner.remaining > 0) {
    throw new CborDecodeError(
      `cbor: ${scanner.remaining} bytes of extraneous data starting at index ${scanner.offset}`,
      'envelope',
    );
  }
  let decoded: unknown;
  try {
    decoded = decoder.decode(scanner.result());
  } catch (error) {
    throw new CborDecodeError(`cbor: ${error instanceof Error ? error.message : String(error)}`, 'envelope');
  }
  return { value: toJson(decoded, refusals, true), refusals };
}

/** Decodes one CBOR data item with kube-apiserver's rules; every refusal is a CborDecodeError. */
export function decodeCbor(data: Uint8Array): CborDecoded {
  const { value, refusals } = decodeChecked(data);
  if (refusals.topLevel !== undefined) throw new CborDecodeError(refusals.topLevel, 'envelope');
  if (refusals.content !== undefined) throw new CborDecodeError(refusals.content, 'content');
  return { value, type: topLevelType(data) };
}

/** The type of the top-level item: the one under its tags. */
function topLevelType(bytes: Uint8Array): CborTypeName {
  let offset = 0;
  while (offset < bytes.length && (bytes[offset] ?? 0) >> 5 === 6) {
    const info = (bytes[offset] ?? 0) & 0x1f;
    offset += 1 + (info < 24 ? 0 : info <= 27 ? 1 << (info - 24) : 0);
  }
  return typeNames[(bytes[offset] ?? 0xe0) >> 5] ?? 'primitives';
}

/** The value of a well-formed item, refusals ignored (to name the type of a body whose content is refused). */
export function decodeCborLenient(data: Uint8Array): unknown {
  try {
    return decodeChecked(data).value;
  } catch (error) {
    if (error instanceof CborDecodeError) return undefined;
    throw error;
  }
}
