// Object metadata: the schema every kind shares, typed access to it, and the name/label/annotation rules.

import { unreachable } from '../util/assert.js';
import { s, type Schema } from './schema.js';
import type { FieldError } from './status.js';

export type JsonObject = Record<string, unknown>;

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
  readonly blockOwnerDeletion?: boolean;
}

/** The metadata fields the server reads and writes. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
  [other: string]: unknown;
}

/** An API object as stored and served. */
export interface ApiObject extends JsonObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export function asApiObject(value: unknown): ApiObject | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const record = value as JsonObject;
  if (record.metadata === undefined) record.metadata = {};
  if (record.metadata === null || typeof record.metadata !== 'object' || Array.isArray(record.metadata))
    return undefined;
  return record as ApiObject;
}

export const ownerReferenceSchema: Schema = s.obj(
  {
    apiVersion: s.str(),
    kind: s.str(),
    name: s.str(),
    uid: s.str(),
    controller: s.bool(),
    blockOwnerDeletion: s.bool(),
  },
  ['apiVersion', 'kind', 'name', 'uid'],
);

export const objectMetaSchema: Schema = s.obj({
  name: s.str(),
  generateName: s.str(),
  namespace: s.str(),
  selfLink: s.str(),
  uid: s.str(),
  resourceVersion: s.str(),
  generation: s.int(),
  creationTimestamp: s.time(),
  deletionTimestamp: s.time(),
  deletionGracePeriodSeconds: s.int(),
  labels: s.map(),
  annotations: s.map(),
  ownerReferences: s.listMap(ownerReferenceSchema, ['uid']),
  finalizers: s.listSet(s.str(), { 'x-kubernetes-patch-strategy': 'merge' }),
  managedFields: s.listAtomic(
    s.obj({
      manager: s.str(),
      operation: s.str(),
      apiVersion: s.str(),
      time: s.time(),
      fieldsType: s.str(),
      fieldsV1: s.free(),
      subresource: s.str(),
    }),
  ),
});

/** The schema of a whole object: typed kind/apiVersion/metadata and the kind's own top-level fields. */
export function objectSchema(fields: Record<string, Schema>, required: string[] = []): Schema {
  return s.obj({ apiVersion: s.str(), kind: s.str(), metadata: objectMetaSchema, ...fields }, required);
}

// Name rules (k8s.io/apimachinery/pkg/util/validation).

const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123SubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export type NameRule = 'dns-subdomain' | 'dns-label' | 'path-segment';

export function validateName(rule: NameRule, name: string): string[] {
  switch (rule) {
    case 'dns-label':
      if (name.length > 63) return ['must be no more than 63 characters'];
      return dns1123LabelPattern.test(name)
        ? []
        : [
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          ];
    case 'dns-subdomain':
      if (name.length > 253) return ['must be no more than 253 characters'];
      return dns1123SubdomainPattern.test(name)
        ? []
        : [
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          ];
    case 'path-segment':
      if (name === '.' || name === '..') return [`may not be '${name}'`];
      if (name.includes('/') || name.includes('%')) return [`may not contain '/' or '%'`];
      return [];
    default:
      return unreachable(rule);
  }
}

const qualifiedNamePattern = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

function validateQualifiedKey(key: string, field: string): FieldError[] {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? '' : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  const bad = (detail: string): FieldError => ({ type: 'FieldValueInvalid', field, value: key, detail });
  if (slash >= 0 && (prefix === '' || validateName('dns-subdomain', prefix).length > 0)) {
    return [bad('prefix part must be a valid DNS subdomain')];
  }
  if (name.length === 0 || name.length > 63 || !qualifiedNamePattern.test(name)) {
    return [
      bad(
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      ),
    ];
  }
  return [];
}

const labelValuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const annotationsBytesMax = 256 * 1024;

export function validateLabelsAndAnnotations(meta: ObjectMeta): FieldError[] {
  const out: FieldError[] = [];
  for (const [key, value] of Object.entries(meta.labels ?? {})) {
    out.push(...validateQualifiedKey(key, 'metadata.labels'));
    if (value.length > 63 || !labelValuePattern.test(value)) {
      out.push({
        type: 'FieldValueInvalid',
        field: 'metadata.labels',
        value,
        detail:
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
      });
    }
  }
  let annotationBytes = 0;
  for (const [key, value] of Object.entries(meta.annotations ?? {})) {
    out.push(...validateQualifiedKey(key.toLowerCase(), 'metadata.annotations'));
    annotationBytes += key.length + value.length;
  }
  if (annotationBytes > annotationsBytesMax) {
    out.push({
      type: 'FieldValueTooLong',
      field: 'metadata.annotations',
      detail: `must have at most ${annotationsBytesMax} bytes`,
    });
  }
  return out;
}
