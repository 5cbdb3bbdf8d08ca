// Field management: who owns which field of an object, kept in `metadata.managedFields` as kube-apiserver keeps
// it. One entry per (manager, operation, sub-resource) — and per apiVersion for Update entries — with its time and
// its fields in FieldsV1. Updates (POST, PUT, non-apply patches) never conflict: the changed fields move to the
// updating manager. Applies own exactly the fields of their configuration; changing a field another manager owns
// is a conflict unless forced; fields the applier gave up and nobody else owns are removed.

import type { ApiObject } from '../apimachinery/meta.js';
import type { Schema } from '../apimachinery/schema.js';
import { errors, type StatusCause } from '../apimachinery/status.js';
import { FieldSet, pathString, type FieldPath } from './fieldset.js';
import { goView, type GoType } from './goview.js';
import { compare, merge, removeAt, toFieldSet, valueAt } from './typed.js';
import { isRecord } from '../util/record.js';

export type Operation = 'Apply' | 'Update';

export interface ManagedEntry {
  readonly manager: string;
  readonly operation: Operation;
  readonly apiVersion: string;
  readonly subresource: string;
  time: string | undefined;
  set: FieldSet;
}

/** Same manager: Apply entries regardless of apiVersion, Update entries per apiVersion (as kube-apiserver). */
function sameManager(a: ManagedEntry, b: Omit<ManagedEntry, 'time' | 'set'>): boolean {
  return (
    a.manager === b.manager &&
    a.operation === b.operation &&
    a.subresource === b.subresource &&
    (a.operation === 'Apply' || a.apiVersion === b.apiVersion)
  );
}

/** Reads managedFields; undefined when any entry is malformed (as kube-apiserver's decoder refuses it). */
export function decodeManagedFields(list: unknown): ManagedEntry[] | undefined {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) return undefined;
  const out: ManagedEntry[] = [];
  for (const raw of list) {
    if (!isRecord(raw)) return undefined;
    const { manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource } = raw;
    if (operation !== 'Apply' && operation !== 'Update') return undefined;
    if (typeof apiVersion !== 'string' || apiVersion === '') return undefined;
    if (fieldsType !== 'FieldsV1') return undefined;
    const set = FieldSet.fromFieldsV1(fieldsV1 ?? {});
    if (set === undefined) return undefined;
    out.push({
      manager: typeof manager === 'string' ? manager : '',
      operation,
      apiVersion,
      subresource: typeof subresource === 'string' ? subresource : '',
      time: typeof time === 'string' ? time : undefined,
      set,
    });
  }
  return out;
}

/** Entries in kube-apiserver's order: Apply before Update, then by time, manager, apiVersion, sub-resource. */
export function encodeManagedFields(entries: readonly ManagedEntry[]): Record<string, unknown>[] {
  const seconds = (t: string | undefined): number => (t === undefined ? 0 : Math.floor(Date.parse(t) / 1000));
  const sorted = [...entries].sort(
    (p, q) =>
      (p.operation < q.operation ? -1 : p.operation > q.operation ? 1 : 0) ||
      seconds(p.time) - seconds(q.time) ||
      (p.manager < q.manager ? -1 : p.manager > q.manager ? 1 : 0) ||
      (p.apiVersion < q.apiVersion ? -1 : p.apiVersion > q.apiVersion ? 1 : 0) ||
      (p.subresource < q.subresource ? -1 : p.subresource > q.subresource ? 1 : 0),
  );
  return sorted.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    ...(e.time === undefined ? {} : { time: e.time }),
    fieldsType: 'FieldsV1',
    fieldsV1: e.set.toFieldsV1(),
    ...(e.subresource === '' ? {} : { subresource: e.subresource }),
  }));
}

/** `[{}]`: the request that clears managedFields (an empty list does not). */
function isReset(list: unknown): boolean {
  return Array.isArray(list) && list.length === 1 && isRecord(list[0]) && Object.keys(list[0]).length === 0;
}

/** How kube-apiserver names a manager in a conflict. */
function managerText(e: ManagedEntry): string {
  const name = JSON.stringify(e.manager);
  const withSub = e.subresource === '' ? name : `${name} with subresource ${JSON.stringify(e.subresource)}`;
  return e.operation === 'Update' ? `${withSub} using ${e.apiVersion}` : withSub;
}

function conflictError(conflicts: readonly { entry: ManagedEntry; path: FieldPath }[]): Error {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${managerText(c.entry)}`,
    field: pathString(c.path),
  }));
  const first = conflicts[0];
  if (conflicts.length === 1 && first !== undefined) {
    return errors.applyConflict(
      `Apply failed with 1 conflict: conflict with ${managerText(first.entry)}: ${pathString(first.path)}`,
      causes,
    );
  }
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const key = managerText(c.entry);
    byManager.set(key, [...(byManager.get(key) ?? []), pathString(c.path)]);
  }
  const lines: string[] = [];
  for (const manager of [...byManager.keys()].sort()) {
    lines.push(`conflicts with ${manager}:`);
    for (const p of byManager.get(manager) ?? []) lines.push(`- ${p}`);
  }
  return errors.applyConflict(`Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`, causes);
}

/** kube-apiserver keeps at most this many Update entries; older ones merge into `ancient-changes`. */
export const updateEntriesMax = 10;
const ancientChanges = 'ancient-changes';

/** Merges the oldest Update entries (per apiVersion) into one `ancient-changes` entry until at most 10 remain. */
function capUpdateEntries(entries: ManagedEntry[]): ManagedEntry[] {
  const updates = entries.filter((e) => e.operation === 'Update');
  if (updates.length <= updateEntriesMax) return entries;
  const byAge = [...updates].sort((a, b) => Date.parse(a.time ?? '') - Date.parse(b.time ?? ''));
  let out = [...entries];
  let count = updates.length;
  for (const oldest of byAge) {
    if (count <= updateEntriesMax) break;
    if (oldest.manager === ancientChanges && oldest.subresource === '') continue;
    const bucket = out.find(
      (e) =>
        e.manager === ancientChanges &&
        e.operation === 'Update' &&
        e.subresource === '' &&
        e.apiVersion === oldest.apiVersion,
    );
    if (bucket === undefined) {
      out = out.map((e) => (e === oldest ? { ...e, manager: ancientChanges, subresource: '' } : e));
      continue;
    }
    bucket.set = bucket.set.union(oldest.set);
    bucket.time = oldest.time;
    out = out.filter((e) => e !== oldest);
    count--;
  }
  return out;
}

const strippedMetadata = [
  'name',
  'namespace',
  'creationTimestamp',
  'selfLink',
  'uid',
  'clusterName',
  'generation',
  'managedFields',
  'resourceVersion',
];

export interface FieldManagerOptions {
  readonly schema: Schema;
  readonly apiVersion: string;
  /** Kinds with a status sub-resource: the main resource never owns status, `status` owns only status. */
  readonly statusSubresource: boolean;
  /**
   * What a status update puts back (the kind's status strategy): `status` then owns everything else it
   * changes, metadata included. Without it `status` owns only status.
   */
  readonly statusResetFields?: readonly (readonly string[])[];
  /**
   * The kind's Go type (built-in kinds): Update entries then compare the objects as Go writes them, as
   * kube-apiserver does. Without it (custom resources) objects are compared as they are.
   */
  readonly goType?: GoType;
}

/** Removes a nested field (`['metadata', 'labels']`), leaving its parents. */
function deletePath(object: Record<string, unknown>, path: readonly string[]): void {
  let parent: unknown = object;
  for (const part of path.slice(0, -1)) {
    if (!isRecord(parent)) return;
    parent = parent[part];
  }
  const last = path.at(-1);
  if (isRecord(parent) && last !== undefined) delete parent[last];
}

export class FieldManager {
  constructor(private readonly options: FieldManagerOptions) {}

  /**
   * The part of an object whose fields are managed: without identity and server-owned metadata, and with the
   * fields the sub-resource resets (status on the main resource, everything but status on `status`).
   */
  private managedView(object: ApiObject | undefined, subresource: string): Record<string, unknown> {
    if (object === undefined) return this.zero(subresource);
    const copy = JSON.parse(JSON.stringify(object)) as Record<string, unknown>;
    const resets = this.options.statusResetFields;
    if (subresource === 'status' && resets === undefined) {
      return copy.status === undefined ? {} : { status: copy.status };
    }
    delete copy.apiVersion;
    delete copy.kind;
    if (isRecord(copy.metadata)) for (const field of strippedMetadata) delete copy.metadata[field];
    if (subresource === 'status') {
      for (const path of resets ?? []) deletePath(copy, path);
    } else if (this.options.statusSubresource) delete copy.status;
    return copy;
  }

  /** The object as kube-apiserver's field manager compares it: as Go writes it, for a kind with a Go type. */
  private compared(object: ApiObject | undefined, subresource: string): Record<string, unknown> {
    const { goType } = this.options;
    // Without a Go type (custom resources) a create compares with an empty object, so `spec` is added with the
    // rest, as kube-apiserver records a custom resource's creation (`f:spec: {".": {}, ...}`).
    if (goType === undefined) return object === undefined ? {} : this.managedView(object, subresource);
    // A create compares with the kind's empty Go value (its New()).
    const base = object === undefined ? {} : (object as unknown as Record<string, unknown>);
    return this.managedView(goView(base, goType) as unknown as ApiObject, subresource);
  }

  /** The empty object a create starts from: metadata and a spec (as a Go zero value has them). */
  private zero(subresource: string): Record<string, unknown> {
    if (subresource === 'status') return {};
    const spec = this.options.schema.properties?.spec;
    return spec?.properties !== undefined ? { metadata: {}, spec: {} } : { metadata: {} };
  }

  private view(set: FieldSet): FieldSet {
    // The metadata node itself is never owned (kube-apiserver strips it), only fields beneath it.
    set.members.delete('f:metadata');
    return set;
  }

  /**
   * Records an Update (create, PUT, non-apply patch) by `manager`, setting next.metadata.managedFields. The
   * request's own managedFields are used when valid and non-empty (on the main resource); `[{}]` resets them.
   */
  update(
    live: ApiObject | undefined,
    next: ApiObject,
    manager: string,
    subresource: string,
    nowMs: number,
  ): void {
    const requested = next.metadata.managedFields;
    let entries: ManagedEntry[];
    if (subresource === '' && isReset(requested)) entries = [];
    else {
      const fromRequest =
        subresource === '' && Array.isArray(requested) && requested.length > 0
          ? decodeManagedFields(requested)
          : undefined;
      entries = fromRequest ?? decodeManagedFields(live?.metadata.managedFields) ?? [];
    }
    const cmp = compare(
      this.compared(live, subresource),
      this.compared(next, subresource),
      this.options.schema,
    );
    const changed = this.view(cmp.modified.union(cmp.added));
    for (const e of entries) e.set = e.set.difference(cmp.removed).difference(changed);
    if (!changed.isEmpty()) {
      const key = { manager, operation: 'Update' as const, apiVersion: this.options.apiVersion, subresource };
      const own = entries.find((e) => sameManager(e, key));
      const time = new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z');
      if (own === undefined) entries.push({ ...key, time, set: changed });
      else {
        own.set = own.set.union(changed);
        own.time = time;
      }
    }
    this.write(next, entries);
  }

  private write(object: ApiObject, entries: readonly ManagedEntry[]): void {
    const kept = capUpdateEntries(entries.filter((e) => !e.set.isEmpty()));
    if (kept.length === 0) delete object.metadata.managedFields;
    else object.metadata.managedFields = encodeManagedFields(kept);
  }

  /**
   * Server-side apply of `config` by `manager` onto `live` (undefined: the object is created). Returns the
   * merged object, with its managedFields, before defaulting and validation. Throws 409 on conflicts unless
   * `force`, in which case the conflicting fields move to the applier.
   */
  apply(
    live: ApiObject | undefined,
    config: ApiObject,
    manager: string,
    subresource: string,
    force: boolean,
    nowMs: number,
  ): ApiObject {
    const { schema } = this.options;
    const entries = decodeManagedFields(live?.metadata.managedFields) ?? [];
    const key = { manager, operation: 'Apply' as const, apiVersion: this.options.apiVersion, subresource };
    const own = entries.find((e) => sameManager(e, key));
    const others = entries.filter((e) => e !== own);
    const applied = this.view(toFieldSet(this.managedView(config, subresource), schema));

    const liveBody =
      live === undefined ? this.zero(subresource) : (JSON.parse(JSON.stringify(live)) as ApiObject);
    // managedFields stay where they are in the object (written below), so that a no-op apply is byte-equal.
    const merged = merge(liveBody, config, schema) as ApiObject;
    if (own !== undefined)
      this.prune(
        merged,
        own.set,
        others.reduce((u, e) => u.union(e.set), applied),
      );

    const cmp = compare(this.managedView(live, subresource), this.managedView(merged, subresource), schema);
    const changed = this.view(cmp.modified.union(cmp.added));
    const conflicts: { entry: ManagedEntry; path: FieldPath }[] = [];
    for (const e of [...others].sort((a, b) => managerText(a).localeCompare(managerText(b)))) {
      for (const path of e.set.intersection(changed).paths()) conflicts.push({ entry: e, path });
    }
    if (conflicts.length > 0 && !force) throw conflictError(conflicts);
    for (const e of others) {
      e.set = e.set.difference(cmp.removed);
      if (force) e.set = e.set.difference(changed);
    }
    const unchanged = changed.isEmpty() && cmp.removed.isEmpty();
    const time = new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z');
    const entry: ManagedEntry = {
      ...key,
      time: own !== undefined && unchanged && own.set.equals(applied) ? own.time : time,
      set: applied,
    };
    this.write(merged, [entry, ...others]);
    return merged;
  }

  /**
   * Removes what the applier owned before and nobody owns now (`owned` = every manager's set after this apply),
   * then the maps and lists that became empty on the way up, when nobody owns anything in them.
   */
  private prune(object: ApiObject, previous: FieldSet, owned: FieldSet): void {
    const { schema } = this.options;
    const paths = previous.paths().filter((p) => !owned.covers(p));
    // Deepest first, so that removing an item does not move the items a later path names.
    paths.sort((a, b) => b.length - a.length);
    for (const path of paths) {
      removeAt(object, schema, path);
      for (let depth = path.length - 1; depth > 0; depth--) {
        const parent = path.slice(0, depth);
        if (owned.covers(parent)) break;
        const value = valueAt(object, schema, parent);
        const empty =
          (Array.isArray(value) && value.length === 0) ||
          (isRecord(value) && Object.keys(value).length === 0);
        if (!empty) break;
        removeAt(object, schema, parent);
      }
    }
  }
}
