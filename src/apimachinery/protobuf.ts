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
  readonly root: protobuf.Root;
  /** `prefix/version/kind` → full message name. */
  readonly kinds: ReadonlyMap<string, string>;
  /** meta/v1 kinds (Status, DeleteOptions, WatchEvent, ...) by kind: every group version knows them. */
  readonly metaKinds: ReadonlyMap<string, string>;
  readonly types: Map<string, protobuf.Type>;
}

let registry: Registry | undefined;

function registryOf(): Registry {
  if (registry !== undefined) return registry;
  const messages = parsePackages(allPackages);
  const root = protobuf.Root.fromJSON(toProtobufJsDescriptor(messages));
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
  registry = { messages, root, kinds, metaKinds, types: new Map() };
  return registry;
}

function typeOf(reg: Registry, fullName: string): protobuf.Type {
  let type = reg.types.get(fullName);
  if (type === undefined) {
    type = reg.root.lookupType(fullName);
    reg.types.set(fullName, type);
  }
  return type;
}

type Json = Record<string, unknown>;

function isPlainObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !Buffer.isBuffer(value);
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

// ---- JSON → wire -----------------------------------------------------------------------------------------------

function valueToWire(reg: Registry, field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (field.scalar) {
    if (typeof value === 'object' && !Buffer.isBuffer(value)) return undefined;
    return value;
  }
  switch (field.type) {
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
      return { raw: Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value)) };
    case 'authentication.v1.ExtraValue':
    case 'authorization.v1.ExtraValue':
      return Array.isArray(value) ? { items: value.map(String) } : undefined;
    default: {
      if (!isPlainObject(value)) return undefined;
      const def = reg.messages.get(field.type);
      return def === undefined ? undefined : messageToWire(reg, def, value);
    }
  }
}

function messageToWire(reg: Registry, def: MessageDef, json: Json): Json {
  const out: Json = {};
  for (const field of def.fields) {
    const value = field.inline ? json : json[field.name];
    if (value === undefined || value === null) continue;
    if (field.map) {
      if (!isPlainObject(value)) continue;
      const map: Json = {};
      for (const [k, v] of Object.entries(value)) {
        const w = valueToWire(reg, field, v);
        if (w !== undefined) map[k] = w;
      }
      out[field.name] = map;
    } else if (field.repeated) {
      if (!Array.isArray(value)) continue;
      out[field.name] = value.map((v) => valueToWire(reg, field, v)).filter((v) => v !== undefined);
    } else {
      const w = valueToWire(reg, field, value);
      if (w !== undefined && !(field.inline && isZero(w))) out[field.name] = w;
    }
  }
  return out;
}

// ---- wire → JSON -----------------------------------------------------------------------------------------------

function valueFromWire(reg: Registry, field: FieldDef, value: unknown): unknown {
  if (field.scalar) {
    // Bytes are read as buffers (the envelope's raw stays binary); in JSON they are base64.
    if (field.type === 'bytes' && value instanceof Uint8Array) return Buffer.from(value).toString('base64');
    return value;
  }
  const json = (value ?? {}) as Json;
  switch (field.type) {
    case 'meta.v1.Time':
      return timeFromWire(json, false);
    case 'meta.v1.MicroTime':
      return timeFromWire(json, true);
    case 'intstr.IntOrString':
      return Number(json.type ?? 0) === 1 ? stringOf(json.strVal) : Number(json.intVal ?? 0);
    case 'resource.Quantity':
      return stringOf(json.string);
    case 'meta.v1.FieldsV1':
      return json.Raw === undefined ? undefined : parseJsonBytes(json.Raw);
    case 'runtime.RawExtension':
      return json.raw === undefined ? undefined : rawExtensionFromWire(json.raw);
    case 'authentication.v1.ExtraValue':
    case 'authorization.v1.ExtraValue':
      return Array.isArray(json.items) ? json.items : [];
    default: {
      const def = reg.messages.get(field.type);
      return def === undefined ? undefined : messageFromWire(reg, def, json);
    }
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

function messageFromWire(reg: Registry, def: MessageDef, wire: Json): Json {
  const out: Json = {};
  for (const field of def.fields) {
    const value = wire[field.name];
    if (value === undefined || value === null) continue;
    if (field.map) {
      const map: Json = {};
      for (const [k, v] of Object.entries(value as Json)) map[k] = valueFromWire(reg, field, v) ?? '';
      if (Object.keys(map).length > 0) out[field.name] = map;
    } else if (field.repeated) {
      const items = (value as unknown[]).map((v) => valueFromWire(reg, field, v) ?? {});
      if (items.length > 0) out[field.name] = items;
    } else {
      const v = valueFromWire(reg, field, value);
      if (v === undefined) continue;
      // Go writes every non-pointer field, zero or not: a zero there means "unset". A pointer's zero is a value,
      // and a scalar without omitempty is always in Go's JSON.
      if (!field.keepZero && isZero(v)) continue;
      if (field.inline && isPlainObject(v)) Object.assign(out, v);
      else out[field.name] = v;
    }
  }
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

/** Encodes a message's bytes (no envelope) from its JSON form. */
export function encodeMessage(messageName: string, json: Json): Buffer {
  const reg = registryOf();
  const def = reg.messages.get(messageName);
  if (def === undefined) throw new Error(`protobuf: no message ${messageName}`);
  const type = typeOf(reg, messageName);
  return Buffer.from(type.encode(type.fromObject(messageToWire(reg, def, json))).finish());
}

/** Decodes a message's bytes (no envelope) into its JSON form; malformed bytes throw. */
export function decodeMessage(messageName: string, bytes: Uint8Array): Json {
  const reg = registryOf();
  const def = reg.messages.get(messageName);
  if (def === undefined) throw new Error(`protobuf: no message ${messageName}`);
  const type = typeOf(reg, messageName);
  const wire = type.toObject(type.decode(bytes), { longs: Number, bytes: Buffer, defaults: false });
  return messageFromWire(reg, def, wire);
}

export function encodeEnvelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const unknown = encodeMessage('runtime.Unknown', {
    typeMeta: { apiVersion, kind },
    raw: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength),
    contentEncoding: '',
    contentType: '',
  });
  return Buffer.concat([protobufPrefix, unknown]);
}

export function decodeEnvelope(body: Uint8Array): Envelope {
  const bytes = Buffer.from(body);
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
  let unknown: Json;
  try {
    // Read directly (not through the JSON conversion): raw stays a view of the body, not a base64 copy.
    const type = typeOf(registryOf(), 'runtime.Unknown');
    unknown = type.toObject(type.decode(bytes.subarray(protobufPrefix.length)), {
      bytes: Buffer,
      defaults: false,
    });
  } catch (error) {
    throw new ProtobufDecodeError('envelope', (error as Error).message);
  }
  const typeMeta = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  return {
    apiVersion: stringOf(typeMeta.apiVersion),
    kind: stringOf(typeMeta.kind),
    raw: bytesOf(unknown.raw),
    contentType: stringOf(unknown.contentType),
    contentEncoding: stringOf(unknown.contentEncoding),
  };
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
