// Patches: JSON merge patch (RFC 7386), and strategic merge patch driven by the patch strategies and merge keys the
// kind's schema declares (what kubectl's client-side apply and `kubectl patch` send for built-in kinds).

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

/** A strategic merge patch that cannot be applied: kube-apiserver answers these with 400. */
export class PatchFormatError extends Error {
  override readonly name = 'PatchFormatError';
}

const directivePrefixes = ['$setElementOrder/', '$deleteFromPrimitiveList/', '$retainKeys', '$patch'];

function isDirective(key: string): boolean {
  return directivePrefixes.some((p) => key.startsWith(p));
}

/** A patch value with its directives removed, as stored when nothing in the target merges with it. */
function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) {
    return value
      .filter((v) => !(isObject(v) && (v.$patch === 'delete' || v.$patch === 'replace')))
      .map(stripDirectives);
  }
  if (!isObject(value)) return value;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(value)) {
    if (isDirective(k) || v === null) continue;
    out[k] = stripDirectives(v);
  }
  return out;
}

function strategyOf(schema: Schema | undefined): string[] {
  return (schema?.['x-kubernetes-patch-strategy'] ?? '').split(',').filter((s) => s !== '');
}

function sameJson(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Strategic merge patch (k8s.io/apimachinery's strategicpatch), driven by the kind's schema: lists whose patch
 * strategy is `merge` are merged element by element on their merge key (scalars: by value), other lists and
 * `replace` fields are replaced; `$patch: replace | delete | merge` in a map or a list element,
 * `$retainKeys` (fields with the `retainKeys` strategy drop the keys it does not name),
 * `$setElementOrder/<list>` (the order of the merged list) and `$deleteFromPrimitiveList/<list>` are honoured.
 */
export function strategicMergePatch(target: Json, patch: Json, schema: Schema | undefined): Json {
  if (!isObject(patch)) return patch;
  const directive = patch.$patch;
  if (directive !== undefined) {
    if (directive === 'replace') return stripDirectives(patch);
    if (directive === 'delete') return undefined;
    if (directive !== 'merge')
      throw new PatchFormatError(`Unknown patch type: ${JSON.stringify(directive).replace(/^"|"$/g, '')}`);
  }
  let out: Record<string, Json> = isObject(target) ? { ...target } : {};
  const retain = patch.$retainKeys;
  if (retain !== undefined) {
    if (!Array.isArray(retain) || retain.some((k) => typeof k !== 'string'))
      throw new PatchFormatError('invalid patch format for retainKeys: must be a list of strings');
    out = Object.fromEntries(Object.entries(out).filter(([k]) => retain.includes(k)));
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      if (!Array.isArray(value))
        throw new PatchFormatError(`invalid patch format for $deleteFromPrimitiveList/${field}`);
      const current = out[field];
      if (Array.isArray(current)) {
        const kept = current.filter((v) => !value.some((d) => sameJson(d, v)));
        if (kept.length === 0) delete out[field];
        else out[field] = kept;
      }
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (isDirective(key)) continue;
    const sub = childSchema(schema, key);
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value)) {
      const merged = mergeList(out[key], value, sub);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    } else if (isObject(value) && strategyOf(sub).includes('replace')) {
      out[key] = stripDirectives(value);
    } else {
      const merged = strategicMergePatch(out[key], value, sub);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (!key.startsWith('$setElementOrder/')) continue;
    const field = key.slice('$setElementOrder/'.length);
    if (!Array.isArray(value))
      throw new PatchFormatError(`invalid patch format for $setElementOrder/${field}`);
    const current = out[field];
    if (Array.isArray(current)) out[field] = orderList(current, value, childSchema(schema, field));
  }
  return out;
}

function identity(element: Json, mergeKey: string | undefined): string {
  return JSON.stringify(mergeKey !== undefined && isObject(element) ? element[mergeKey] : element);
}

/** The merged list in the order `$setElementOrder` gives; elements it does not name follow, in their order. */
function orderList(list: Json[], order: Json[], schema: Schema | undefined): Json[] {
  const mergeKey = schema?.['x-kubernetes-patch-merge-key'];
  const wanted = order.map((o) => identity(o, mergeKey));
  const ranked = list.map((element, index) => {
    const at = wanted.indexOf(identity(element, mergeKey));
    return { element, rank: at < 0 ? wanted.length + index : at };
  });
  return ranked.sort((a, b) => a.rank - b.rank).map((r) => r.element);
}

function mergeList(target: Json, patch: Json[], schema: Schema | undefined): Json[] | undefined {
  const current = Array.isArray(target) ? target : [];
  if (!strategyOf(schema).includes('merge')) return stripDirectives(patch) as Json[];
  const mergeKey = schema?.['x-kubernetes-patch-merge-key'];
  if (mergeKey === undefined) {
    // A list of scalars: union, keeping order.
    const out = [...current];
    for (const v of patch) {
      if (isObject(v)) throw new PatchFormatError('invalid patch format for a list of primitives');
      if (!out.some((c) => sameJson(c, v))) out.push(v);
    }
    return out;
  }
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return stripDirectives(patch.filter((p) => !(isObject(p) && p.$patch === 'replace'))) as Json[];
  }
  const out = [...current];
  for (const element of patch) {
    if (!isObject(element)) throw new PatchFormatError(`merging an object in a list keyed by ${mergeKey}`);
    if (element[mergeKey] === undefined) {
      throw new PatchFormatError(
        `map: ${JSON.stringify(element)} does not contain declared merge key: ${mergeKey}`,
      );
    }
    const index = out.findIndex((c) => isObject(c) && sameJson(c[mergeKey], element[mergeKey]));
    if (element.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = strategicMergePatch(out[index], element, schema?.items);
    else out.push(strategicMergePatch({}, element, schema?.items));
  }
  return out;
}
