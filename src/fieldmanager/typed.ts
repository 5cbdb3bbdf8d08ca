// An object seen through its schema, as structured-merge-diff sees it: which parts are scalars, atomic values,
// granular maps and structs, sets, or lists keyed by fields. From that: the field set an object sets, the
// comparison of two objects (added, modified, removed paths), the merge of an applied configuration into a live
// object, and the removal of one path. Parts without a schema (kept as sent) are unstructured: every key is a
// field and every list is atomic.

import type { Schema } from '../apimachinery/schema.js';
import { FieldSet, type FieldPath, type PathElement } from './fieldset.js';

type Json = unknown;
type JsonObject = Record<string, Json>;

export type Shape =
  | { readonly kind: 'scalar' }
  | { readonly kind: 'atomic' }
  | { readonly kind: 'map'; readonly schema: Schema | undefined }
  | { readonly kind: 'set'; readonly item: Schema | undefined }
  | { readonly kind: 'assoc'; readonly item: Schema | undefined; readonly keys: readonly string[] };

function isObject(value: Json): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The list type a list schema declares; a `merge` patch strategy reads as set or map (spec 4.4). */
function listShape(schema: Schema): Shape {
  const mergeKey = schema['x-kubernetes-patch-merge-key'];
  const merges = (schema['x-kubernetes-patch-strategy'] ?? '').split(',').includes('merge');
  const type =
    schema['x-kubernetes-list-type'] ?? (merges ? (mergeKey === undefined ? 'set' : 'map') : 'atomic');
  switch (type) {
    case 'atomic':
      return { kind: 'atomic' };
    case 'set':
      return { kind: 'set', item: schema.items };
    case 'map':
      return {
        kind: 'assoc',
        item: schema.items,
        keys: schema['x-kubernetes-list-map-keys'] ?? (mergeKey === undefined ? [] : [mergeKey]),
      };
    default:
      return { kind: 'atomic' };
  }
}

export function shapeOf(schema: Schema | undefined, value: Json): Shape {
  if (schema === undefined) {
    if (isObject(value)) return { kind: 'map', schema: undefined };
    return Array.isArray(value) ? { kind: 'atomic' } : { kind: 'scalar' };
  }
  if (schema.type === 'array')
    return Array.isArray(value) || value === undefined ? listShape(schema) : { kind: 'scalar' };
  const objectLike =
    schema.type === 'object' ||
    schema.properties !== undefined ||
    schema.additionalProperties !== undefined ||
    schema['x-kubernetes-preserve-unknown-fields'] === true;
  if (objectLike && (isObject(value) || value === undefined)) {
    if (schema['x-kubernetes-map-type'] === 'atomic') return { kind: 'atomic' };
    return { kind: 'map', schema };
  }
  return Array.isArray(value) ? { kind: 'atomic' } : { kind: 'scalar' };
}

/** The schema of one field of a map or struct (undefined: unstructured). */
export function fieldSchema(schema: Schema | undefined, key: string): Schema | undefined {
  if (schema === undefined) return undefined;
  const declared = schema.properties?.[key];
  if (declared !== undefined) return declared;
  return typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
}

/** Whether a key is an element of a map rather than a named field of a struct (unstructured keys are fields). */
function isMapElement(schema: Schema | undefined, key: string): boolean {
  if (schema === undefined) return false;
  if (schema.properties?.[key] !== undefined) return false;
  return typeof schema.additionalProperties === 'object';
}

/** The key of an item of a keyed list: its key fields (missing ones take their schema default), sorted by name. */
function keyOf(item: Json, keys: readonly string[], itemSchema: Schema | undefined): JsonObject {
  const out: JsonObject = {};
  for (const k of [...keys].sort()) {
    const v = isObject(item) ? item[k] : undefined;
    const fallback = itemSchema?.properties?.[k]?.default;
    if (v !== undefined) out[k] = v;
    else if (fallback !== undefined) out[k] = fallback;
  }
  return out;
}

export function itemElement(shape: Shape, item: Json, index: number): PathElement {
  if (shape.kind === 'set') return `v:${JSON.stringify(item)}`;
  if (shape.kind === 'assoc') {
    const key = keyOf(item, shape.keys, shape.item);
    return Object.keys(key).length === 0 ? `i:${index}` : `k:${JSON.stringify(key)}`;
  }
  return `i:${index}`;
}

function itemsByElement(shape: Shape, list: Json): Map<PathElement, Json> {
  const out = new Map<PathElement, Json>();
  if (!Array.isArray(list)) return out;
  list.forEach((item, i) => {
    const e = itemElement(shape, item, i);
    if (!out.has(e)) out.set(e, item);
  });
  return out;
}

/** The fields an object sets (structured-merge-diff's ToFieldSet): what an applier comes to own. */
export function toFieldSet(value: Json, schema: Schema | undefined): FieldSet {
  const set = new FieldSet();
  walkSet(value, schema, [], set);
  return set;
}

function walkSet(value: Json, schema: Schema | undefined, path: PathElement[], set: FieldSet): void {
  const shape = shapeOf(schema, value);
  switch (shape.kind) {
    case 'scalar':
    case 'atomic':
      if (path.length > 0) set.insert(path);
      return;
    case 'map': {
      if (!isObject(value)) return;
      for (const [key, child] of Object.entries(value)) {
        const childPath = [...path, `f:${key}`];
        walkSet(child, fieldSchema(shape.schema, key), childPath, set);
        if (
          child === null ||
          (isObject(child) && Object.keys(child).length === 0) ||
          isMapElement(shape.schema, key)
        )
          set.insert(childPath);
      }
      return;
    }
    case 'set':
    case 'assoc': {
      if (!Array.isArray(value)) return;
      value.forEach((item, i) => {
        const itemPath = [...path, itemElement(shape, item, i)];
        walkSet(item, shape.item, itemPath, set);
        set.insert(itemPath);
      });
      return;
    }
  }
}

/** Nothing beneath: absent, null, an empty list or an empty map. */
function isEmptyNode(value: Json): boolean {
  return (
    value === undefined ||
    value === null ||
    (Array.isArray(value) && value.length === 0) ||
    (isObject(value) && Object.keys(value).length === 0)
  );
}

export interface Comparison {
  readonly added: FieldSet;
  readonly modified: FieldSet;
  readonly removed: FieldSet;
}

function sameJson(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** What changes from `lhs` to `rhs`, path by path (structured-merge-diff's Compare). */
export function compare(lhs: Json, rhs: Json, schema: Schema | undefined): Comparison {
  const out = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  walkCompare(lhs, rhs, schema, [], out);
  return out;
}

function walkCompare(
  l: Json,
  r: Json,
  schema: Schema | undefined,
  path: PathElement[],
  out: Comparison,
): void {
  if (l === undefined && r === undefined) return;
  // With a schema, a null list or map is an empty one that is there (Go writes a nil `containers` as null): it
  // takes the other side's shape, and a list or map that is empty or null on both sides is a leaf.
  const typedNull = (v: Json): boolean => schema !== undefined && v === null;
  const shape = shapeOf(schema, r === undefined || typedNull(r) ? l : r);
  const leftShape = l === undefined || typedNull(l) ? shape : shapeOf(schema, l);
  const rightShape = typedNull(r) ? shape : shapeOf(schema, r === undefined ? l : r);
  const leaf =
    shape.kind === 'scalar' ||
    shape.kind === 'atomic' ||
    leftShape.kind !== shape.kind ||
    rightShape.kind !== shape.kind ||
    (isEmptyNode(l) && isEmptyNode(r));
  if (leaf) {
    if (path.length === 0) return;
    if (l === undefined) out.added.insert(path);
    else if (r === undefined) out.removed.insert(path);
    else if (!sameJson(l, r)) out.modified.insert(path);
    return;
  }
  if (shape.kind === 'map') {
    const lm = isObject(l) ? l : {};
    const rm = isObject(r) ? r : {};
    for (const key of new Set([...Object.keys(lm), ...Object.keys(rm)])) {
      walkCompare(lm[key], rm[key], fieldSchema(shape.schema, key), [...path, `f:${key}`], out);
    }
  } else if (shape.kind === 'set' || shape.kind === 'assoc') {
    const li = itemsByElement(shape, l);
    const ri = itemsByElement(shape, r);
    for (const e of new Set([...li.keys(), ...ri.keys()])) {
      walkCompare(li.get(e), ri.get(e), shape.item, [...path, e], out);
    }
  }
  if (path.length === 0) return;
  if (l === undefined) out.added.insert(path);
  else if (r === undefined) out.removed.insert(path);
}

/**
 * Merges an applied configuration into a live object (structured-merge-diff's Merge): maps and structs key by
 * key, sets by value, keyed lists item by item (live order, new items appended), scalars and atomic values
 * replaced. A null in the configuration removes the field.
 */
export function merge(live: Json, config: Json, schema: Schema | undefined): Json {
  if (config === undefined) return live;
  const shape = shapeOf(schema, config);
  switch (shape.kind) {
    case 'scalar':
    case 'atomic':
      return clone(config);
    case 'map': {
      if (!isObject(config)) return clone(config);
      const out: JsonObject = isObject(live) ? { ...live } : {};
      for (const [key, value] of Object.entries(config)) {
        if (value === null) delete out[key];
        else out[key] = merge(out[key], value, fieldSchema(shape.schema, key));
      }
      return out;
    }
    case 'set':
    case 'assoc': {
      if (!Array.isArray(config)) return clone(config);
      const out: Json[] = Array.isArray(live) ? [...live] : [];
      const index = new Map<PathElement, number>();
      out.forEach((item, i) => index.set(itemElement(shape, item, i), i));
      config.forEach((item, i) => {
        const e = itemElement(shape, item, out.length + i);
        const at = index.get(e);
        if (at === undefined) {
          index.set(e, out.length);
          out.push(shape.kind === 'set' ? clone(item) : merge(undefined, item, shape.item));
        } else if (shape.kind === 'assoc') out[at] = merge(out[at], item, shape.item);
      });
      return out;
    }
  }
}

function clone(value: Json): Json {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as Json);
}

/** Finds the container holding a path's last element and that element's position in it. */
function locate(
  root: Json,
  schema: Schema | undefined,
  path: FieldPath,
): { parent: JsonObject | Json[]; at: string | number; schema: Schema | undefined } | undefined {
  let node = root;
  let nodeSchema = schema;
  for (let i = 0; i < path.length; i++) {
    const element = path[i] as PathElement;
    const last = i === path.length - 1;
    const shape = shapeOf(nodeSchema, node);
    if (element.startsWith('f:')) {
      if (!isObject(node)) return undefined;
      const key = element.slice(2);
      const childSchema = shape.kind === 'map' ? fieldSchema(shape.schema, key) : undefined;
      if (last) return { parent: node, at: key, schema: childSchema };
      node = node[key];
      nodeSchema = childSchema;
    } else {
      if (!Array.isArray(node)) return undefined;
      const index = node.findIndex((item, j) => itemElement(shape, item, j) === element);
      if (index < 0) return undefined;
      const itemSchema = shape.kind === 'set' || shape.kind === 'assoc' ? shape.item : undefined;
      if (last) return { parent: node, at: index, schema: itemSchema };
      node = node[index];
      nodeSchema = itemSchema;
    }
  }
  return undefined;
}

export function valueAt(root: Json, schema: Schema | undefined, path: FieldPath): Json {
  const found = locate(root, schema, path);
  if (found === undefined) return undefined;
  return Array.isArray(found.parent) ? found.parent[found.at as number] : found.parent[found.at as string];
}

/** Removes the value at a path, in place; false when nothing is there. */
export function removeAt(root: Json, schema: Schema | undefined, path: FieldPath): boolean {
  const found = locate(root, schema, path);
  if (found === undefined) return false;
  if (Array.isArray(found.parent)) found.parent.splice(found.at as number, 1);
  else if (Object.prototype.hasOwnProperty.call(found.parent, found.at))
    delete found.parent[found.at as string];
  else return false;
  return true;
}
