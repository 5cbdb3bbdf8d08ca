// Structural schemas (an OpenAPI v3 / JSON Schema subset with Kubernetes' list and map markers), the small
// builders kinds declare them with, and the two walks over an object that use them: pruning unknown fields
// (reported for field validation) and validation with defaulting (ajv).

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FieldError } from './status.js';

export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  /** A map: every value has this schema. */
  additionalProperties?: Schema | boolean;
  items?: Schema;
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  anyOf?: Schema[];
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-patch-strategy'?: string;
  'x-kubernetes-patch-merge-key'?: string;
}

// Builders. `obj` with required names; lists say their list type (Kubernetes' defaults when unsaid: atomic).

export const s = {
  str: (extra: Schema = {}): Schema => ({ type: 'string', ...extra }),
  int: (extra: Schema = {}): Schema => ({ type: 'integer', ...extra }),
  num: (extra: Schema = {}): Schema => ({ type: 'number', ...extra }),
  bool: (extra: Schema = {}): Schema => ({ type: 'boolean', ...extra }),
  time: (): Schema => ({ type: 'string', format: 'date-time', nullable: true }),
  intOrString: (extra: Schema = {}): Schema => ({
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    ...extra,
  }),
  obj: (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...extra,
  }),
  map: (values: Schema = { type: 'string' }, extra: Schema = {}): Schema => ({
    type: 'object',
    additionalProperties: values,
    ...extra,
  }),
  /** A list of objects merged by key (strategic merge: patchStrategy merge, patchMergeKey). */
  listMap: (items: Schema, keys: string[], extra: Schema = {}): Schema => ({
    type: 'array',
    items,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': keys,
    'x-kubernetes-patch-strategy': 'merge',
    'x-kubernetes-patch-merge-key': keys[0] ?? 'name',
    ...extra,
  }),
  listSet: (items: Schema = { type: 'string' }, extra: Schema = {}): Schema => ({
    type: 'array',
    items,
    'x-kubernetes-list-type': 'set',
    ...extra,
  }),
  listAtomic: (items: Schema, extra: Schema = {}): Schema => ({
    type: 'array',
    items,
    'x-kubernetes-list-type': 'atomic',
    ...extra,
  }),
  /** A part of a kind this server does not model field by field: kept as sent. */
  free: (description = ''): Schema => ({
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
    ...(description === '' ? {} : { description }),
  }),
};

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Removes the fields of `value` that `schema` does not know, in place, and returns their paths (as
 * kube-apiserver reports them: `spec.containers[0].foo`). Values of the wrong type are left to validation.
 */
export function pruneUnknownFields(schema: Schema, value: unknown, path = ''): string[] {
  const unknown: string[] = [];
  walkPrune(schema, value, path, unknown);
  return unknown;
}

function walkPrune(schema: Schema, value: unknown, path: string, out: string[]): void {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && schema.properties === undefined) return;
  if (Array.isArray(value)) {
    if (schema.items !== undefined)
      value.forEach((item, i) => walkPrune(schema.items as Schema, item, `${path}[${i}]`, out));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const record = value as Record<string, unknown>;
  if (schema.properties !== undefined) {
    for (const key of Object.keys(record)) {
      const child = schema.properties[key];
      if (child !== undefined) walkPrune(child, record[key], join(path, key), out);
      else if (
        schema['x-kubernetes-preserve-unknown-fields'] !== true &&
        typeof schema.additionalProperties !== 'object'
      ) {
        out.push(join(path, key));
        delete record[key];
      }
    }
  } else if (typeof schema.additionalProperties === 'object') {
    for (const key of Object.keys(record))
      walkPrune(schema.additionalProperties, record[key], join(path, key), out);
  }
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, validateFormats: false });
ajv.addVocabulary([
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-patch-strategy',
  'x-kubernetes-patch-merge-key',
]);

/** A deep copy for ajv (which supports OpenAPI's `nullable` itself), so compiled schemas share nothing with declarations. */
function toJsonSchema(schema: Schema): object {
  const out: Record<string, unknown> = { ...schema };
  if (schema.properties !== undefined) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([k, v]) => [k, toJsonSchema(v)]),
    );
  }
  if (typeof schema.additionalProperties === 'object')
    out.additionalProperties = toJsonSchema(schema.additionalProperties);
  if (schema.items !== undefined) out.items = toJsonSchema(schema.items);
  if (schema.anyOf !== undefined) out.anyOf = schema.anyOf.map(toJsonSchema);
  return out;
}

export interface ObjectValidator {
  /** Applies defaults in place and returns the type errors (wrong type, missing required, bad enum). */
  (value: unknown): FieldError[];
}

export function compileValidator(schema: Schema): ObjectValidator {
  const validate: ValidateFunction = ajv.compile(toJsonSchema(schema));
  return (value) => {
    if (validate(value)) return [];
    return dedupe((validate.errors ?? []).map(fieldErrorOf));
  };
}

function dedupe(list: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return list.filter((e) => {
    const key = `${e.type}|${e.field}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function pathOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : join(acc, part)), '');
}

function fieldErrorOf(e: ErrorObject): FieldError {
  const field = pathOf(e.instancePath);
  switch (e.keyword) {
    case 'required':
      return { type: 'FieldValueRequired', field: join(field, String(e.params.missingProperty)) };
    case 'enum':
      return {
        type: 'FieldValueNotSupported',
        field,
        value: e.data,
        detail: `supported values: ${(e.params.allowedValues as unknown[]).map((v) => `"${String(v)}"`).join(', ')}`,
      };
    case 'type':
      return {
        type: 'FieldValueTypeInvalid',
        field,
        value: e.data,
        detail: `must be of type ${String(e.params.type)}`,
      };
    default:
      return { type: 'FieldValueInvalid', field, value: e.data, detail: e.message ?? e.keyword };
  }
}
