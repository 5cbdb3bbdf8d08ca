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

/**
 * Stored bytes that are not an object (garbage written under the key, a foreign encoding): a corrupt object.
 * An operating error, not a programmer error: reads report it (spec 3.2) and an unsafe delete can remove it.
 */
export class UndecodableObject extends Error {
  override readonly name = 'UndecodableObject';
  constructor(
    readonly key: string,
    readonly modRevision: Revision,
    readonly detail: string,
  ) {
    super(`object at ${key} (revision ${modRevision}) not decodable: ${detail}`);
  }
}

export function decodeObject(kv: KeyValue, version: Revision = kv.modRevision): ApiObject {
  let object: ApiObject;
  try {
    object = JSON.parse(decoder.decode(kv.value)) as ApiObject;
  } catch (error) {
    throw new UndecodableObject(
      kv.key,
      kv.modRevision,
      error instanceof Error ? error.message : String(error),
    );
  }
  if (
    typeof object !== 'object' ||
    object === null ||
    Array.isArray(object) ||
    typeof object.metadata !== 'object' ||
    object.metadata === null
  ) {
    throw new UndecodableObject(kv.key, kv.modRevision, 'the stored value is not an object with metadata');
  }
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
