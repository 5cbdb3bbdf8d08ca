// Patches: JSON merge patch (RFC 7386), and a strategic merge patch that merges lists of objects by the merge
// key the kind's schema declares (what kubectl's client-side apply sends for built-in kinds).

import type { Schema } from './schema.js';

type Json = unknown;

function isObject(value: Json): value is Record<string, Json> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function childSchema(schema: Schema | undefined, key: string): Schema | undefined {
  if (schema === undefined) return undefined;
  return (
    schema.properties?.[key] ??
    (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined)
  );
}

/**
 * Strategic merge patch: like a merge patch, except that lists whose schema has a patch merge key are merged
 * element by element on that key (`$patch: delete` in an element removes it), `$patch: replace` replaces, and
 * the `$setElementOrder/` and `$retainKeys` directives are accepted (order and retention are not enforced).
 */
export function strategicMergePatch(target: Json, patch: Json, schema: Schema | undefined): Json {
  if (!isObject(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _drop, ...rest } = patch;
    return rest;
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$setElementOrder/') || key === '$retainKeys' || key === '$patch') continue;
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value))
        out[field] = current.filter((v) => !value.includes(v));
      continue;
    }
    const sub = childSchema(schema, key);
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value) && sub?.type === 'array') {
      out[key] = mergeList(out[key], value, sub);
    } else {
      const merged = strategicMergePatch(out[key], value, sub);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    }
  }
  return out;
}

function mergeList(target: Json, patch: Json[], schema: Schema): Json[] {
  const mergeKey = schema['x-kubernetes-patch-merge-key'];
  const strategy = schema['x-kubernetes-patch-strategy'] ?? '';
  const current = Array.isArray(target) ? [...target] : [];
  if (!strategy.includes('merge')) return patch.filter((p) => !(isObject(p) && p.$patch !== undefined));
  if (mergeKey === undefined) {
    // A set of scalars: union, keeping order.
    const out = [...current];
    for (const v of patch) if (!out.some((c) => JSON.stringify(c) === JSON.stringify(v))) out.push(v);
    return out;
  }
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace'));
  }
  const out = [...current];
  for (const element of patch) {
    if (!isObject(element)) continue;
    const index = out.findIndex((c) => isObject(c) && c[mergeKey] === element[mergeKey]);
    if (element.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = strategicMergePatch(out[index], element, schema.items);
    else out.push(strategicMergePatch({}, element, schema.items));
  }
  return out;
}
