// How objects are stored: JSON without metadata.resourceVersion (the store's modRevision is the version), under
// /registry/<group or core>/<resource>/[<namespace>/]<name>.

import { randomInt } from 'node:crypto';
import type { ApiObject } from '../apimachinery/meta.js';
import type { KeyValue } from '../storage/contract.js';
import { assert } from '../util/assert.js';
import type { Revision } from '../util/brand.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function resourcePrefix(group: string, plural: string): string {
  return `/registry/${group === '' ? 'core' : group}/${plural}/`;
}

export function objectKey(prefix: string, namespace: string, name: string): string {
  assert(!name.includes('/'), 'names never contain a slash');
  return namespace === '' ? `${prefix}${name}` : `${prefix}${namespace}/${name}`;
}

export function encodeObject(object: ApiObject): Uint8Array {
  const { resourceVersion: _drop, ...metadata } = object.metadata;
  return encoder.encode(JSON.stringify({ ...object, metadata }));
}

export function decodeObject(kv: KeyValue, version: Revision = kv.modRevision): ApiObject {
  const object = JSON.parse(decoder.decode(kv.value)) as ApiObject;
  assert(
    typeof object === 'object' && object !== null && typeof object.metadata === 'object',
    `stored object at ${kv.key} has no metadata`,
  );
  object.metadata.resourceVersion = String(version);
  return object;
}

/** A deep copy through JSON (objects are plain JSON values). */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** RFC 3339 with second precision, as Kubernetes writes metav1.Time. */
export function timestamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

const generatedNameAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** generateName: the prefix plus five random characters (kube-apiserver's alphabet, without vowels). */
export function generateName(prefix: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += generatedNameAlphabet[randomInt(generatedNameAlphabet.length)] ?? 'x';
  return `${prefix.slice(0, 63 - 5)}${suffix}`;
}
