// The protobuf media type (spec 2.5a): the `k8s\0` envelope around runtime.Unknown, and the conversion between the
// JSON form the rest of the server works with and the wire messages of ./protobuf-messages (Kubernetes' field
// numbers). Messages are keyed by (group prefix without the domain, version, kind), so `rbac.authorization.svc.io`
// and `rbac.authorization.k8s.io` share one definition. A kind without a message has no protobuf form: the
// negotiation then falls back to the client's next acceptable type (custom resources, like kube-apiserver's).

import protobuf from 'protobufjs';
import { authenticationPackages, authorizationPackages, rbacPackages } from './protobuf-messages/auth.js';
import { corePackages } from './protobuf-messages/core.js';
import { metaPackages } from './protobuf-messages/meta.js';
import { otherPackages } from './protobuf-messages/other.js';
import {
  parsePackages,
  toProtobufJsDescriptor,
  type FieldDef,
  type MessageDef,
} from './protobuf-messages/schema.js';

/** The four bytes that open every protobuf body: `k8s` and a zero (a new prefix would mean a new format). */
export const protobufPrefix: Buffer = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** `application/vnd.kubernetes.protobuf` with --group-domain=k8s.io, `application/vnd.service.protobuf` otherwise. */
export function protobufMediaType(groupDomain: string): string {
  return groupDomain === 'k8s.io'
    ? 'application/vnd.kubernetes.protobuf'
    : 'application/vnd.service.protobuf';
}

/** A body that is not a protobuf message this server can read; `stage` says which layer failed. */
export class ProtobufDecodeError extends Error {
  override readonly name = 'ProtobufDecodeError';
  constructor(
    readonly stage: 'envelope' | 'object',
    message: string,
    /** The envelope's type, when the envelope itself was readable. */
    readonly typeMeta?: { apiVersion: string; kind: string },
  ) {
    super(message);
  }
}

export interface Envelope {
  readonly apiVersion: string;
  readonly kind: string;
  readonly raw: Buffer;
  readonly contentType: string;
  readonly contentEncoding: string;
}

const allPackages = [
  ...metaPackages,
  ...corePackages,
  ...otherPackages,
  ...rbacPackages,
  ...authorizationPackages,
  ...authenticationPackages,
];

interface Registry {
  readonly messages: ReadonlyMap<string, MessageDef>;
  /** Per message: its fields by wire number. */
  readonly fieldsById: ReadonlyMap<string, ReadonlyMap<number, FieldDef>>;
  /** `prefix/version/kind` → full message name. */
  readonly kinds: ReadonlyMap<string, string>;
  /** meta/v1 kinds (Status, DeleteOptions, WatchEvent, ...) by kind: every group version knows them. */
  readonly metaKinds: ReadonlyMap<string, string>;
}

let registry: Registry | undefined;

function registryOf(): Registry {
  if (registry !== undefined) return registry;
  const messages = parsePackages(allPackages);
  const kinds = new Map<string, string>();
  const metaKinds = new Map<string, string>();
  for (const pkg of allPackages) {
    if (pkg.groupPrefix === undefined || pkg.version === undefined) continue;
    for (const def of messages.values()) {
      if (!def.isKind || !def.fullName.startsWith(`${pkg.name}.`)) continue;
      const kind = def.fullName.slice(pkg.name.length + 1);
      kinds.set(`${pkg.groupPrefix}/${pkg.version}/${kind}`, def.fullName);
      if (pkg.name === 'meta.v1') metaKinds.set(kind, def.fullName);
    }
  }
  const fieldsById = new Map<string, Map<number, FieldDef>>();
  for (const def of messages.values())
    fieldsById.set(def.fullName, new Map(def.fields.map((f) => [f.id, f])));
  registry = { messages, fieldsById, kinds, metaKinds };
  return registry;
}

function messageDef(reg: Registry, fullName: string): MessageDef {
  const def = reg.messages.get(fullName);
  if (def === undefined) throw new Error(`protobuf: no message ${fullName}`);
  return def;
}

/**
 * protobufjs's reflection of the same messages (a Root built from the descriptors). The codec below drives
 * protobufjs's Reader and Writer directly from the definitions, without intermediate message objects; the
 * reflection is an independent reading of the same schema, which the tests check the codec against.
 */
export function protobufRoot(): protobuf.Root {
  return protobuf.Root.fromJSON(toProtobufJsDescriptor(registryOf().messages));
}

type Json = Record<string, unknown>;

function isPlainObject(value: unknown): value is Json {
  return (
    value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function isZero(value: unknown): boolean {
  if (value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return isPlainObject(value) && Object.keys(value).length === 0;
}

// ---- Time ----------------------------------------------------------------------------------------------------

const rfc3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

function timeToWire(value: unknown): Json | undefined {
  if (typeof value !== 'string') return undefined;
  const m = rfc3339.exec(value);
  if (m === null) return undefined;
  const ms = Date.parse(`${m[1] ?? ''}${m[3] ?? 'Z'}`);
  if (Number.isNaN(ms)) return undefined;
  const nanos = m[2] === undefined ? 0 : Math.round(Number(`0${m[2]}`) * 1e9);
  return { seconds: Math.floor(ms / 1000), nanos };
}

function timeFromWire(value: Json, micro: boolean): string | undefined {
  if (value.seconds === undefined && value.nanos === undefined) return undefined; // Go's zero time
  const seconds = Number(value.seconds ?? 0);
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  if (!micro) return `${base}Z`;
  const micros = Math.floor(Number(value.nanos ?? 0) / 1000);
  return `${base}.${String(micros).padStart(6, '0')}Z`;
}

// ---- special messages: their JSON form is not an object of their fields ---------------------------------------

/** Messages whose JSON is not an object of their wire fields: a string, a number, null, or kept as sent. */
export const specialTypes: ReadonlySet<string> = new Set([
  'meta.v1.Time',
  'meta.v1.MicroTime',
  'intstr.IntOrString',
  'resource.Quantity',
  'meta.v1.FieldsV1',
  'runtime.RawExtension',
  'authentication.v1.ExtraValue',
  'authorization.v1.ExtraValue',
]);

/** The wire-shaped fields of a special message from its JSON value (undefined: nothing to write). */
function specialToWire(type: string, value: unknown): Json | undefined {
  switch (type) {
    case 'meta.v1.Time':
    case 'meta.v1.MicroTime':
      return timeToWire(value);
    case 'intstr.IntOrString':
      if (typeof value === 'number') return { type: 0, intVal: value };
      if (typeof value === 'string') return { type: 1, strVal: value };
      return undefined;
    case 'resource.Quantity':
      return typeof value === 'string' || typeof value === 'number' ? { string: String(value) } : undefined;
    case 'meta.v1.FieldsV1':
      return { Raw: Buffer.from(JSON.stringify(value)) };
    case 'runtime.RawExtension':
      return { raw: value instanceof Uint8Array ? value : Buffer.from(JSON.stringify(value)) };
    default:
      // ExtraValue
      return Array.isArray(value) ? { items: value.map(String) } : undefined;
  }
}

/** The JSON value of a special message from its wire fields (read with every zero kept). */
function specialFromWire(type: string, wire: Json): unknown {
  switch (type) {
    case 'meta.v1.Time':
      return timeFromWire(wire, false);
    case 'meta.v1.MicroTime':
      return timeFromWire(wire, true);
    case 'intstr.IntOrString':
      return Number(wire.type ?? 0) === 1 ? stringOf(wire.strVal) : Number(wire.intVal ?? 0);
    case 'resource.Quantity':
      return stringOf(wire.string);
    case 'meta.v1.FieldsV1':
      return wire.Raw === undefined ? undefined : parseJsonBytes(wire.Raw);
    case 'runtime.RawExtension':
      return wire.raw === undefined ? undefined : rawExtensionFromWire(wire.raw);
    default:
      return Array.isArray(wire.items) ? wire.items : [];
  }
}

function bytesOf(value: unknown): Buffer {
  if (typeof value === 'string') return Buffer.from(value, 'base64');
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return Buffer.alloc(0);
}

function parseJsonBytes(value: unknown): unknown {
  try {
    return JSON.parse(bytesOf(value).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function rawExtensionFromWire(value: unknown): unknown {
  const bytes = bytesOf(value);
  if (bytes.subarray(0, protobufPrefix.length).equals(protobufPrefix)) {
    try {
      return decodeAnyObject(bytes);
    } catch {
      return undefined;
    }
  }
  return parseJsonBytes(bytes);
}

// ---- JSON → wire -----------------------------------------------------------------------------------------------

const wireVarint = 0;
const wireFixed64 = 1;
const wireBytes = 2;

function integerOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return Number.isFinite(n) ? Math.trunc(n) : undefined;
}

/** Writes one value of `field` under wire number `id` (a map entry's value is written as field 2). */
function writeValue(reg: Registry, field: FieldDef, id: number, value: unknown, w: protobuf.Writer): void {
  if (field.scalar) {
    switch (field.type) {
      case 'string':
        if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
          w.uint32((id << 3) | wireBytes).string(String(value));
        return;
      case 'bool':
        if (typeof value === 'boolean') w.uint32((id << 3) | wireVarint).bool(value);
        return;
      case 'int32': {
        const n = integerOf(value);
        if (n !== undefined) w.uint32((id << 3) | wireVarint).int32(n);
        return;
      }
      case 'int64': {
        const n = integerOf(value);
        if (n !== undefined) w.uint32((id << 3) | wireVarint).int64(n);
        return;
      }
      case 'double':
        if (typeof value === 'number') w.uint32((id << 3) | wireFixed64).double(value);
        return;
      default:
        // bytes: base64 in JSON
        if (typeof value === 'string' || value instanceof Uint8Array)
          w.uint32((id << 3) | wireBytes).bytes(bytesOf(value));
        return;
    }
  }
  const payload = specialTypes.has(field.type)
    ? specialToWire(field.type, value)
    : isPlainObject(value)
      ? value
      : undefined;
  if (payload === undefined) return;
  w.uint32((id << 3) | wireBytes).fork();
  writeMessage(reg, messageDef(reg, field.type), payload, w);
  w.ldelim();
}

function writeMessage(reg: Registry, def: MessageDef, json: Json, w: protobuf.Writer): void {
  for (const field of def.fields) {
    const value = field.inline ? json : json[field.name];
    if (value === undefined || value === null) continue;
    if (field.map) {
      if (!isPlainObject(value)) continue;
      for (const [key, v] of Object.entries(value)) {
        if (v === undefined || v === null) continue;
        w.uint32((field.id << 3) | wireBytes).fork();
        w.uint32((1 << 3) | wireBytes).string(key);
        writeValue(reg, field, 2, v, w);
        w.ldelim();
      }
    } else if (field.repeated) {
      // proto2: repeated scalars unpacked, one tag per element (as Kubernetes writes them).
      if (Array.isArray(value))
        for (const v of value) if (v !== undefined && v !== null) writeValue(reg, field, field.id, v, w);
    } else {
      writeValue(reg, field, field.id, value, w);
    }
  }
}

// ---- wire → JSON -----------------------------------------------------------------------------------------------

const expectedWireType: Record<string, number> = {
  string: wireBytes,
  bytes: wireBytes,
  bool: wireVarint,
  int32: wireVarint,
  int64: wireVarint,
  double: wireFixed64,
};

function readScalar(type: string, r: protobuf.Reader): unknown {
  switch (type) {
    case 'string':
      return r.string();
    case 'bool':
      return r.bool();
    case 'int32':
      return r.int32();
    case 'int64': {
      const v = r.int64() as unknown;
      return typeof v === 'number' ? v : (v as { toNumber(): number }).toNumber();
    }
    case 'double':
      return r.double();
    default:
      return Buffer.from(r.bytes()).toString('base64');
  }
}

function readValue(reg: Registry, field: FieldDef, r: protobuf.Reader, wireType: number): unknown {
  const expected = field.scalar ? expectedWireType[field.type] : wireBytes;
  if (wireType !== expected) throw new Error(`proto: wrong wireType = ${wireType} for field ${field.name}`);
  if (field.scalar) return readScalar(field.type, r);
  const length = r.uint32();
  const end = r.pos + length;
  if (end > r.len) throw new RangeError(`index out of range: ${r.pos} + ${length} > ${r.len}`);
  const special = specialTypes.has(field.type);
  const wire = readMessage(reg, messageDef(reg, field.type), r, end, special);
  return special ? specialFromWire(field.type, wire) : wire;
}

function zeroOf(field: FieldDef): unknown {
  if (!field.scalar) return {};
  if (field.type === 'bool') return false;
  return field.type === 'string' || field.type === 'bytes' ? '' : 0;
}

/**
 * Reads a message up to `end`. Go writes every non-pointer field, zero or not: a zero there means "unset" and is
 * dropped, unless the field keeps zeros (a pointer, or a scalar Go's JSON always writes) or `keepZeros` (the
 * fields of special messages).
 */
function readMessage(
  reg: Registry,
  def: MessageDef,
  r: protobuf.Reader,
  end: number,
  keepZeros: boolean,
): Json {
  const byId = reg.fieldsById.get(def.fullName);
  const out: Json = {};
  while (r.pos < end) {
    const tag = r.uint32();
    const wireType = tag & 7;
    const field = byId?.get(tag >>> 3);
    if (field === undefined) {
      r.skipType(wireType);
      continue;
    }
    if (field.map) {
      if (wireType !== wireBytes)
        throw new Error(`proto: wrong wireType = ${wireType} for field ${field.name}`);
      const entryEnd = r.uint32() + r.pos;
      let key = '';
      let value: unknown;
      while (r.pos < entryEnd) {
        const entryTag = r.uint32();
        if (entryTag >>> 3 === 1) key = r.string();
        else if (entryTag >>> 3 === 2) value = readValue(reg, field, r, entryTag & 7);
        else r.skipType(entryTag & 7);
      }
      const map = (out[field.name] ??= {}) as Json;
      map[key] = value ?? zeroOf(field);
    } else if (field.repeated) {
      const list = (out[field.name] ??= []) as unknown[];
      if (field.scalar && wireType === wireBytes && expectedWireType[field.type] !== wireBytes) {
        // A packed run (other writers may pack; Kubernetes does not).
        const runEnd = r.uint32() + r.pos;
        while (r.pos < runEnd) list.push(readScalar(field.type, r));
      } else {
        list.push(readValue(reg, field, r, wireType) ?? zeroOf(field));
      }
    } else {
      const value = readValue(reg, field, r, wireType);
      if (value === undefined || (!keepZeros && !field.keepZero && isZero(value))) continue;
      if (field.inline && isPlainObject(value)) Object.assign(out, value);
      else out[field.name] = value;
    }
  }
  if (r.pos > end) throw new RangeError(`index out of range: ${r.pos} > ${end}`);
  return out;
}

// ---- public API ------------------------------------------------------------------------------------------------

function groupVersionOf(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

function groupPrefixOf(group: string, groupDomain: string): string {
  const suffix = `.${groupDomain}`;
  return group.endsWith(suffix) ? group.slice(0, -suffix.length) : group;
}

/** The full message name of a kind, or undefined when it has no protobuf form. */
export function protobufMessageOf(
  groupDomain: string,
  group: string,
  version: string,
  kind: string,
): string | undefined {
  const reg = registryOf();
  return reg.kinds.get(`${groupPrefixOf(group, groupDomain)}/${version}/${kind}`) ?? reg.metaKinds.get(kind);
}

/**
 * The message definitions of a built-in kind as Go declares it (field management builds Go's view of an object
 * from them), whatever domain its group carries (`rbac.authorization.svc.io` and `.k8s.io` share one); undefined
 * for a kind without one. `messages` resolves the names its fields refer to.
 */
export function goTypeOf(
  group: string,
  version: string,
  kind: string,
): { readonly def: MessageDef; readonly messages: ReadonlyMap<string, MessageDef> } | undefined {
  const reg = registryOf();
  const prefixes = new Set<string>();
  for (const key of reg.kinds.keys()) prefixes.add(key.slice(0, key.indexOf('/')));
  const prefix = [...prefixes]
    .sort((a, b) => b.length - a.length)
    .find((p) => group === p || (p !== '' && group.startsWith(`${p}.`)));
  const name = prefix === undefined ? undefined : reg.kinds.get(`${prefix}/${version}/${kind}`);
  return name === undefined ? undefined : { def: messageDef(reg, name), messages: reg.messages };
}

function messageOfObject(groupDomain: string, value: unknown): string | undefined {
  if (!isPlainObject(value) || typeof value.apiVersion !== 'string' || typeof value.kind !== 'string')
    return undefined;
  const { group, version } = groupVersionOf(value.apiVersion);
  return protobufMessageOf(groupDomain, group, version, value.kind);
}

/** Whether a JSON object (with apiVersion and kind) can be written as protobuf. */
export function canEncodeProtobuf(groupDomain: string, value: unknown): boolean {
  return messageOfObject(groupDomain, value) !== undefined;
}

function finish(w: protobuf.Writer): Buffer {
  const bytes = w.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Encodes a message's bytes (no envelope) from its JSON form. */
export function encodeMessage(messageName: string, json: Json): Buffer {
  const reg = registryOf();
  const w = protobuf.Writer.create();
  writeMessage(reg, messageDef(reg, messageName), json, w);
  return finish(w);
}

/** Decodes a message's bytes (no envelope) into its JSON form; malformed bytes throw. */
export function decodeMessage(messageName: string, bytes: Uint8Array): Json {
  const reg = registryOf();
  const r = protobuf.Reader.create(bytes);
  return readMessage(reg, messageDef(reg, messageName), r, r.len, false);
}

export function encodeEnvelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const unknown = encodeMessage('runtime.Unknown', {
    typeMeta: { apiVersion, kind },
    raw,
    contentEncoding: '',
    contentType: '',
  });
  return Buffer.concat([protobufPrefix, unknown]);
}

export function decodeEnvelope(body: Uint8Array): Envelope {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (bytes.length === 0) throw new ProtobufDecodeError('envelope', 'empty data');
  if (
    bytes.length < protobufPrefix.length ||
    !bytes.subarray(0, protobufPrefix.length).equals(protobufPrefix)
  ) {
    throw new ProtobufDecodeError(
      'envelope',
      `provided data does not appear to be a protobuf message, expected prefix [${[...protobufPrefix].join(' ')}]`,
    );
  }
  // Read by hand (not through the JSON conversion): raw stays a view of the body, not a base64 copy.
  const envelope: { -readonly [K in keyof Envelope]: Envelope[K] } = {
    apiVersion: '',
    kind: '',
    raw: Buffer.alloc(0),
    contentType: '',
    contentEncoding: '',
  };
  try {
    const r = protobuf.Reader.create(bytes.subarray(protobufPrefix.length));
    while (r.pos < r.len) {
      const tag = r.uint32();
      switch (tag) {
        case (1 << 3) | wireBytes: {
          const end = r.uint32() + r.pos;
          while (r.pos < end) {
            const inner = r.uint32();
            if (inner === ((1 << 3) | wireBytes)) envelope.apiVersion = r.string();
            else if (inner === ((2 << 3) | wireBytes)) envelope.kind = r.string();
            else r.skipType(inner & 7);
          }
          break;
        }
        case (2 << 3) | wireBytes:
          envelope.raw = bytesOf(r.bytes());
          break;
        case (3 << 3) | wireBytes:
          envelope.contentEncoding = r.string();
          break;
        case (4 << 3) | wireBytes:
          envelope.contentType = r.string();
          break;
        default:
          r.skipType(tag & 7);
      }
    }
  } catch (error) {
    throw new ProtobufDecodeError('envelope', (error as Error).message);
  }
  return envelope;
}

/** Encodes a JSON object (apiVersion and kind set, and a message known for them) in the envelope. */
export function encodeObject(groupDomain: string, value: Json): Buffer {
  const messageName = messageOfObject(groupDomain, value);
  if (messageName === undefined)
    throw new Error(`protobuf: no message for ${String(value.apiVersion)} ${String(value.kind)}`);
  return encodeEnvelope(String(value.apiVersion), String(value.kind), encodeMessage(messageName, value));
}

/** An object nested in a RawExtension: its group's domain is not known here, so every split is tried. */
function decodeAnyObject(bytes: Uint8Array): Json {
  const envelope = decodeEnvelope(bytes);
  const { group, version } = groupVersionOf(envelope.apiVersion);
  const labels = group.split('.');
  let messageName: string | undefined;
  for (let i = labels.length; i > 0 && messageName === undefined; i--) {
    messageName = protobufMessageOf(labels.slice(i).join('.'), group, version, envelope.kind);
  }
  messageName ??= protobufMessageOf('', group, version, envelope.kind);
  if (messageName === undefined)
    throw new ProtobufDecodeError('object', `no kind "${envelope.kind}" in version "${envelope.apiVersion}"`);
  return {
    apiVersion: envelope.apiVersion,
    kind: envelope.kind,
    ...decodeMessage(messageName, envelope.raw),
  };
}

/**
 * Decodes a request body into the JSON form of `expected` (the kind the endpoint takes). The envelope's type, if
 * set, names the message (the caller then compares it with what it expected, as for JSON bodies); apiVersion and
 * kind are copied into the result. Bad bytes throw ProtobufDecodeError.
 */
export function decodeObject(
  groupDomain: string,
  body: Uint8Array,
  expected: { group: string; version: string; kind: string },
): Json {
  const envelope = decodeEnvelope(body);
  const typeMeta = { apiVersion: envelope.apiVersion, kind: envelope.kind };
  if (envelope.contentType !== '' && !envelope.contentType.includes('protobuf')) {
    throw new ProtobufDecodeError(
      'object',
      `unsupported content type in envelope: ${envelope.contentType}`,
      typeMeta,
    );
  }
  const named =
    envelope.kind === ''
      ? undefined
      : protobufMessageOf(
          groupDomain,
          groupVersionOf(envelope.apiVersion).group,
          groupVersionOf(envelope.apiVersion).version,
          envelope.kind,
        );
  const messageName =
    named ?? protobufMessageOf(groupDomain, expected.group, expected.version, expected.kind);
  if (messageName === undefined) {
    throw new ProtobufDecodeError('object', `no protobuf message for kind "${expected.kind}"`, typeMeta);
  }
  let json: Json;
  try {
    json = decodeMessage(messageName, envelope.raw);
  } catch (error) {
    throw new ProtobufDecodeError('object', (error as Error).message, typeMeta);
  }
  return {
    ...(envelope.apiVersion === '' ? {} : { apiVersion: envelope.apiVersion }),
    ...(envelope.kind === '' ? {} : { kind: envelope.kind }),
    ...json,
  };
}

/** One frame of a protobuf watch stream: a 4-byte big-endian length, then a WatchEvent in the envelope. */
export function encodeWatchFrame(
  groupDomain: string,
  apiVersion: string,
  type: string,
  object: Json,
): Buffer {
  const event = encodeEnvelope(
    apiVersion,
    'WatchEvent',
    encodeMessage('meta.v1.WatchEvent', { type, object: encodeObject(groupDomain, object) }),
  );
  const length = Buffer.alloc(4);
  length.writeUInt32BE(event.length);
  return Buffer.concat([length, event]);
}
