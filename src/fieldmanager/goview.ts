// An object as kube-apiserver's field manager sees it: the JSON Go writes for the decoded object. kube-apiserver
// compares the old and the new object after both went through the Go types, so what Go always writes is present
// on both sides and never "added": a non-pointer struct (`spec.template`, `spec.strategy`, `metadata`, `status`)
// is there as its zero value (`{}` with its own always-written fields), a list or map without omitempty
// (`containers`) as `null`, a Time as `null`. What Go never writes is absent on both sides: omitempty zeros
// (`hostNetwork: false`, `""`, `[]`) and nulls. The facts come from the protobuf message definitions
// (../apimachinery/protobuf-messages: `?` a pointer, `!` no omitempty, `...` an embedded struct). Keys a
// message does not declare are kept as sent.

import { specialTypes } from '../apimachinery/protobuf.js';
import type { FieldDef, MessageDef } from '../apimachinery/protobuf-messages/schema.js';

type JsonObject = Record<string, unknown>;

export interface GoType {
  readonly def: MessageDef;
  readonly messages: ReadonlyMap<string, MessageDef>;
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What Go writes for a zero scalar-like message: Time and MicroTime `null`, IntOrString 0, Quantity "0". */
function specialZero(type: string): unknown {
  switch (type) {
    case 'intstr.IntOrString':
      return 0;
    case 'resource.Quantity':
      return '0';
    default:
      return null;
  }
}

function scalarZero(type: string): unknown {
  if (type === 'bool') return false;
  return type === 'string' || type === 'bytes' ? '' : 0;
}

function isScalarZero(value: unknown): boolean {
  return value === '' || value === 0 || value === false;
}

/** Marks a field Go does not write. */
const absent = Symbol('absent');

/** Go's JSON of one value of a message-typed item (a list item or a map value). */
function itemValue(field: FieldDef, value: unknown, messages: GoType['messages']): unknown {
  if (field.scalar || specialTypes.has(field.type) || !isObject(value)) return value;
  return goObject(value, messageOf(messages, field.type), messages);
}

function fieldValue(field: FieldDef, value: unknown, messages: GoType['messages']): unknown {
  if (field.repeated) {
    if (Array.isArray(value)) {
      if (value.length === 0) return field.keepZero ? [] : absent;
      return value.map((item) => itemValue(field, item, messages));
    }
    if (value === undefined || value === null) return field.keepZero ? null : absent;
    return value;
  }
  if (field.map) {
    if (isObject(value)) {
      const entries = Object.entries(value);
      if (entries.length === 0) return field.keepZero ? {} : absent;
      return Object.fromEntries(entries.map(([k, v]) => [k, itemValue(field, v, messages)]));
    }
    if (value === undefined || value === null) return field.keepZero ? null : absent;
    return value;
  }
  if (field.scalar) {
    if (value === undefined || value === null)
      return field.keepZero && !field.pointer ? scalarZero(field.type) : absent;
    return !field.keepZero && isScalarZero(value) ? absent : value;
  }
  // A struct. Go writes a non-pointer one always (omitempty never drops a struct), a pointer one when set.
  if (value === undefined || value === null) {
    if (field.pointer) return absent;
    return specialTypes.has(field.type)
      ? specialZero(field.type)
      : goObject({}, messageOf(messages, field.type), messages);
  }
  if (specialTypes.has(field.type) || !isObject(value)) return value;
  return goObject(value, messageOf(messages, field.type), messages);
}

function messageOf(messages: GoType['messages'], name: string): MessageDef {
  const def = messages.get(name);
  if (def === undefined) throw new Error(`goview: no message ${name}`);
  return def;
}

const declaredKeysCache = new WeakMap<MessageDef, ReadonlySet<string>>();

/** The JSON keys a message declares, its embedded structs' included. */
function declaredKeys(def: MessageDef, messages: GoType['messages']): ReadonlySet<string> {
  const cached = declaredKeysCache.get(def);
  if (cached !== undefined) return cached;
  const out = new Set<string>();
  for (const field of def.fields) {
    if (field.inline) for (const key of declaredKeys(messageOf(messages, field.type), messages)) out.add(key);
    else out.add(field.name);
  }
  declaredKeysCache.set(def, out);
  return out;
}

function fill(out: JsonObject, value: JsonObject, def: MessageDef, messages: GoType['messages']): void {
  for (const field of def.fields) {
    if (field.inline) {
      fill(out, value, messageOf(messages, field.type), messages);
      continue;
    }
    const v = fieldValue(field, value[field.name], messages);
    if (v !== absent) out[field.name] = v;
  }
}

function goObject(value: JsonObject, def: MessageDef, messages: GoType['messages']): JsonObject {
  const declared = declaredKeys(def, messages);
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) if (!declared.has(key)) out[key] = v;
  fill(out, value, def, messages);
  return out;
}

/** The JSON Go writes for `value` decoded into the kind's Go type (a new object; `value` is not changed). */
export function goView(value: JsonObject, type: GoType): JsonObject {
  return goObject(value, type.def, type.messages);
}
