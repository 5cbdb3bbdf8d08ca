// The generic store: create, read, update, patch, delete and list for any declared kind, over the storage
// contract, with the kind's strategy hooks. Optimistic concurrency is the store's compare on modRevision.

import { randomUUID } from 'node:crypto';
import { apiVersionOf, type KindDeclaration } from '../apimachinery/kind.js';
import {
  asApiObject,
  validateLabelsAndAnnotations,
  validateName,
  type ApiObject,
} from '../apimachinery/meta.js';
import { goTypeOf } from '../apimachinery/protobuf.js';
import { compileValidator, type ObjectValidator } from '../apimachinery/schema.js';
import { matches, type Selector } from '../apimachinery/selectors.js';
import {
  ApiError,
  corruptCausesMax,
  errors,
  type FieldError,
  type GroupResource,
} from '../apimachinery/status.js';
import type { Compare, KeyValue, KVStore, TxnOp } from '../storage/contract.js';
import { StorageError } from '../storage/contract.js';
import { revision, type Revision } from '../util/brand.js';
import type { Clock } from '../util/clock.js';
import { unreachable } from '../util/assert.js';
import { WaitTimeout, WatchCache } from '../watchcache/cache.js';
import { FieldManager } from '../fieldmanager/manager.js';
import {
  clone,
  decodeObject,
  encodeObject,
  generateName,
  objectKey,
  resourcePrefix,
  timestamp,
  UndecodableObject,
} from './objects.js';
import { isRecord } from '../util/record.js';

/** How long a read waits for the cache to reach a requested resourceVersion before 504. */
export const resourceVersionWaitMs = 3000;
const updateRetriesMax = 16;
const generateNameRetriesMax = 8;
const reservationRetriesMax = 16;

export type NamespaceState = 'active' | 'terminating' | 'missing';

export interface RegistryDeps {
  readonly store: KVStore;
  readonly clock: Clock;
  readonly watchCacheEventsMax: number;
  /** For create in a namespace: does it exist, is it being deleted. */
  readonly namespaceState: (namespace: string) => Promise<NamespaceState>;
  /**
   * Gate AllowUnsafeMalformedObjectDeletion (spec 3.2): reads of corrupt objects answer kube's corrupt-object
   * errors (a list names every corrupt key), and `unsafeDelete` is possible. Off: the decoder's error, as 500.
   */
  readonly allowUnsafeMalformedObjectDeletion?: boolean;
}

/**
 * A check of the object about to be written (with the current one on update) that needs the requesting user:
 * RBAC's escalation prevention. It throws to refuse; it runs for dry runs too (authorized identically).
 */
export type WriteAdmission = (object: ApiObject, old: ApiObject | undefined) => Promise<void>;

export interface WriteOptions {
  readonly dryRun: boolean;
  /**
   * Field management: called with the live object (undefined on create) and the new one after defaulting and
   * validation, to set the new object's metadata.managedFields. Writes without it keep managedFields as they are.
   */
  readonly trackFields?: TrackFields;
  readonly admit?: WriteAdmission;
}

export type TrackFields = (live: ApiObject | undefined, next: ApiObject, nowMs: number) => void;

export interface DeleteOptions extends WriteOptions {
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  readonly gracePeriodSeconds?: number;
}

export interface ListRequest {
  readonly namespace: string;
  readonly labelSelector: Selector;
  readonly fieldSelector: Selector;
  readonly resourceVersion: string | undefined;
  readonly resourceVersionMatch: 'Exact' | 'NotOlderThan' | undefined;
  readonly limit: number;
  readonly continueToken: string | undefined;
}

export interface ListResult {
  readonly items: ApiObject[];
  readonly resourceVersion: Revision;
  readonly continueToken?: string;
  readonly remainingItemCount?: number;
}

/** `finalize` exists for namespaces only: it changes spec.finalizers and nothing else. */
export type Subresource = '' | 'status' | 'finalize';

interface ContinueToken {
  readonly v: string;
  readonly rv: number;
  readonly start: string;
}

export function encodeContinue(rv: Revision, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start } satisfies ContinueToken)).toString(
    'base64url',
  );
}

function decodeContinue(token: string, prefix: string): { rv: Revision; startKey: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<ContinueToken>;
    if (typeof parsed.rv !== 'number' || typeof parsed.start !== 'string' || parsed.v !== 'meta.k8s.io/v1')
      throw new Error();
    return { rv: revision(parsed.rv), startKey: prefix + parsed.start };
  } catch {
    throw errors.badRequest(
      'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
  }
}

function parseResourceVersion(text: string, what = 'resourceVersion'): Revision {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) {
    throw errors.badRequest(`Invalid value: "${text}": ${what} must be an unsigned integer`);
  }
  return revision(n);
}

/** Equal JSON values, whatever the order of object keys (a no-op write that only reorders keys is no write). */
function sameContent(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameContent(x, b[i]))
    );
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra).filter((k) => ra[k] !== undefined);
  if (keys.length !== Object.keys(rb).filter((k) => rb[k] !== undefined).length) return false;
  return keys.every((k) => sameContent(ra[k], rb[k]));
}

export class ResourceRegistry {
  readonly prefix: string;
  readonly gr: GroupResource;
  readonly apiVersion: string;
  private readonly validator: ObjectValidator;
  private cacheInstance: WatchCache<ApiObject> | undefined;
  readonly selectableFields: ReadonlySet<string>;
  /** Who owns which field (metadata.managedFields). */
  readonly fields: FieldManager;

  constructor(
    readonly decl: KindDeclaration,
    private readonly deps: RegistryDeps,
  ) {
    // Built-in kinds are Go types in kube-apiserver; custom resources (no strategic merge) are not.
    const goType =
      decl.strategicMergePatch === false
        ? undefined
        : goTypeOf(decl.group, decl.versions[0] ?? 'v1', decl.kind);
    this.fields = new FieldManager({
      schema: decl.schema,
      apiVersion: apiVersionOf(decl.group, decl.versions[0] ?? 'v1'),
      statusSubresource: decl.statusSubresource,
      ...(decl.strategy?.statusResetFields === undefined
        ? {}
        : { statusResetFields: decl.strategy.statusResetFields }),
      ...(goType === undefined ? {} : { goType }),
    });
    this.prefix =
      decl.storage === undefined
        ? resourcePrefix(decl.group, decl.plural)
        : resourcePrefix(decl.storage.group, decl.storage.plural);
    this.gr = { group: decl.group, resource: decl.plural };
    this.apiVersion = apiVersionOf(decl.group, decl.versions[0] ?? 'v1');
    this.validator = compileValidator(decl.schema);
    this.selectableFields = new Set([
      'metadata.name',
      ...(decl.namespaced ? ['metadata.namespace'] : []),
      ...Object.keys(decl.selectableFields ?? {}),
    ]);
  }

  async start(): Promise<void> {
    this.cacheInstance = await WatchCache.start<ApiObject>({
      store: this.deps.store,
      prefix: this.prefix,
      decode: (kv) => this.decode(kv),
      decodeDeleted: (prev, rev) => this.decode(prev, rev),
      eventsMax: this.deps.watchCacheEventsMax,
      clock: this.deps.clock,
    });
  }

  /** Gate AllowUnsafeMalformedObjectDeletion: DELETE honours ignoreStoreReadErrorWithClusterBreakingPotential. */
  get unsafeDeletionAllowed(): boolean {
    return this.deps.allowUnsafeMalformedObjectDeletion === true;
  }

  get cache(): WatchCache<ApiObject> {
    if (this.cacheInstance === undefined) throw new Error(`watch cache of ${this.decl.plural} not started`);
    return this.cacheInstance;
  }

  close(): void {
    this.cacheInstance?.close();
  }

  /** The server's clock (managedFields times). */
  nowMs(): number {
    return this.deps.clock.nowMs();
  }

  key(namespace: string, name: string): string {
    return objectKey(this.prefix, this.decl.namespaced ? namespace : '', name);
  }

  /** The stored form: this kind's own, or the storage kind's when this kind is a view of another's storage. */
  private encode(object: ApiObject): Uint8Array {
    return encodeObject(
      this.decl.storage === undefined ? object : this.decl.storage.toStorage(clone(object)),
    );
  }

  private decode(kv: KeyValue, version?: Revision): ApiObject {
    try {
      return this.decodeStored(kv, version);
    } catch (error) {
      if (error instanceof UndecodableObject) throw this.corruptError(error);
      throw error;
    }
  }

  /** Like decode, but a corrupt object stays an UndecodableObject (lists collect them; unsafe delete looks). */
  private decodeStored(kv: KeyValue, version?: Revision): ApiObject {
    const stored = decodeObject(kv, version);
    const object = this.decl.storage === undefined ? stored : this.decl.storage.fromStorage(stored);
    object.apiVersion = this.apiVersion;
    object.kind = this.decl.kind;
    return object;
  }

  /** What a read of a corrupt object answers: kube-apiserver 1.32's error with the gate on, or off. */
  private corruptError(error: UndecodableObject): ApiError {
    return this.deps.allowUnsafeMalformedObjectDeletion === true
      ? errors.corruptObject(error.key, error.modRevision, error.detail)
      : errors.undecodableObject500(error.detail);
  }

  /**
   * An update or patch reads through kube's storage layer directly, where a corrupt object is never turned into
   * a Status: 500 without a reason, the (wrapped, with the gate on) decoder error as the message.
   */
  private decodeForUpdate(kv: KeyValue): ApiObject {
    try {
      return this.decodeStored(kv);
    } catch (error) {
      if (!(error instanceof UndecodableObject)) throw error;
      throw errors.undecodableObject500(
        this.deps.allowUnsafeMalformedObjectDeletion === true
          ? `object not decodable revision=${error.modRevision}: ${error.detail}`
          : error.detail,
      );
    }
  }

  /** The fields a field selector can use, for one object. */
  fieldsOf(object: ApiObject): Record<string, string> {
    const out: Record<string, string> = { 'metadata.name': object.metadata.name ?? '' };
    if (this.decl.namespaced) out['metadata.namespace'] = object.metadata.namespace ?? '';
    for (const [field, read] of Object.entries(this.decl.selectableFields ?? {})) out[field] = read(object);
    return out;
  }

  selects(object: ApiObject, labelSelector: Selector, fieldSelector: Selector): boolean {
    return (
      matches(labelSelector, object.metadata.labels ?? {}) && matches(fieldSelector, this.fieldsOf(object))
    );
  }

  // ---- reads

  async get(namespace: string, name: string, resourceVersion: string | undefined): Promise<ApiObject> {
    const key = this.key(namespace, name);
    // A corrupt object is not in the cache: the read goes to the store, which reports it (kube delegates reads
    // to the store while its cache cannot hold the resource's state).
    if (resourceVersion === undefined || resourceVersion === '' || this.cache.hasCorrupt(key)) {
      const result = await this.deps.store.range({ key });
      const kv = result.kvs[0];
      if (kv === undefined) throw errors.notFound(this.gr, name);
      return this.decode(kv);
    }
    const rv = parseResourceVersion(resourceVersion);
    if (rv > 0) await this.waitForCache(rv);
    const entry = this.cache.get(key);
    if (entry === undefined) throw errors.notFound(this.gr, name);
    return clone(entry.object);
  }

  async waitForCache(rv: Revision): Promise<void> {
    try {
      await this.cache.waitFor(rv, resourceVersionWaitMs);
    } catch (error) {
      if (error instanceof WaitTimeout) throw errors.tooLargeResourceVersion(rv, error.current);
      throw error;
    }
  }

  /** The store's current revision, read linearizably (the "most recent" of the resourceVersion table). */
  async currentRevision(): Promise<Revision> {
    const result = await this.deps.store.range({ key: this.prefix }, { countOnly: true });
    return result.header.revision;
  }

  async list(request: ListRequest): Promise<ListResult> {
    const { resourceVersion, resourceVersionMatch, limit, continueToken } = request;
    if (resourceVersionMatch !== undefined && (resourceVersion === undefined || resourceVersion === '')) {
      throw errors.badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
    }
    const prefix =
      this.decl.namespaced && request.namespace !== '' ? `${this.prefix}${request.namespace}/` : this.prefix;
    if (continueToken !== undefined && continueToken !== '') {
      if (resourceVersion !== undefined && resourceVersion !== '' && resourceVersion !== '0') {
        throw errors.badRequest('specifying resource version is not allowed when using continue');
      }
      if (resourceVersionMatch !== undefined) {
        throw errors.badRequest('resourceVersionMatch is forbidden when continue is provided');
      }
      const token = decodeContinue(continueToken, this.prefix);
      return this.listFromStore(request, prefix, token.rv, token.startKey, true);
    }
    const rv =
      resourceVersion === undefined || resourceVersion === ''
        ? undefined
        : parseResourceVersion(resourceVersion);
    switch (resourceVersionMatch) {
      case 'Exact':
        if (rv === undefined || rv === 0)
          throw errors.badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
        return this.listFromStore(request, prefix, rv, prefix, false);
      case 'NotOlderThan':
        return this.listFromCache(request, prefix, rv ?? revision(0));
      case undefined:
        if (rv === undefined) {
          if (limit > 0)
            return this.listFromStore(request, prefix, await this.currentRevision(), prefix, false);
          return this.listFromCache(request, prefix, await this.currentRevision());
        }
        if (rv === 0) return this.listFromCache(request, prefix, rv);
        if (limit > 0) return this.listFromStore(request, prefix, rv, prefix, false);
        return this.listFromCache(request, prefix, rv);
      default:
        return unreachable(resourceVersionMatch);
    }
  }

  private async listFromCache(request: ListRequest, prefix: string, atLeast: Revision): Promise<ListResult> {
    if (atLeast > 0) await this.waitForCache(atLeast);
    // Corrupt objects are not in the cache: the list goes to the store, which reports them.
    if (this.cache.hasCorrupt(prefix)) {
      return this.listFromStore(
        { ...request, limit: 0 },
        prefix,
        await this.currentRevision(),
        prefix,
        false,
      );
    }
    const snapshot = this.cache.snapshot(prefix);
    const items: ApiObject[] = [];
    for (const entry of snapshot.entries) {
      if (this.selects(entry.object, request.labelSelector, request.fieldSelector))
        items.push(clone(entry.object));
    }
    return { items, resourceVersion: snapshot.revision };
  }

  /** Exact reads and chunks: ranges at one revision; a compacted revision is 410. */
  private async listFromStore(
    request: ListRequest,
    prefix: string,
    rv: Revision,
    startKey: string,
    continuing: boolean,
  ): Promise<ListResult> {
    const filtering = request.labelSelector.length > 0 || request.fieldSelector.length > 0;
    const items: ApiObject[] = [];
    let from = startKey;
    let more = false;
    let lastKey = '';
    let remaining = 0;
    // With the gate on, corrupt objects are collected (up to corruptCausesMax) and reported together at the end.
    const corrupt: UndecodableObject[] = [];
    let truncated = false;
    const collectCorrupt = this.deps.allowUnsafeMalformedObjectDeletion === true;
    try {
      // With selectors, keep reading until the chunk is full or the span ends (as kube-apiserver does).
      for (let round = 0; round < 1000 && !truncated; round++) {
        const want = request.limit > 0 ? request.limit - items.length : 0;
        const result = await this.deps.store.range({ prefix }, { revision: rv, limit: want, startKey: from });
        for (const kv of result.kvs) {
          lastKey = kv.key;
          let object: ApiObject;
          try {
            object = this.decodeStored(kv);
          } catch (error) {
            if (!(error instanceof UndecodableObject)) throw error;
            if (!collectCorrupt) throw this.corruptError(error);
            if (corrupt.length >= corruptCausesMax) {
              truncated = true;
              break;
            }
            corrupt.push(error);
            continue;
          }
          if (this.selects(object, request.labelSelector, request.fieldSelector)) items.push(object);
        }
        if (truncated) break;
        more = result.more;
        remaining = result.count - result.kvs.length;
        if (!more || request.limit === 0 || items.length >= request.limit) break;
        from = `${lastKey}\x00`;
      }
    } catch (error) {
      if (error instanceof StorageError && error.code === 'Compacted') {
        if (continuing) throw errors.continueExpired();
        throw errors.resourceExpired(`The resourceVersion for the provided list is too old.`);
      }
      if (error instanceof StorageError && error.code === 'FutureRevision') {
        throw errors.tooLargeResourceVersion(rv, error.revision ?? 0);
      }
      throw error;
    }
    if (corrupt.length > 0) {
      throw errors.storeReadError(
        this.gr,
        corrupt.map((c) => ({ key: c.key, modRevision: c.modRevision, detail: c.detail })),
        truncated,
      );
    }
    if (!more) return { items, resourceVersion: rv };
    return {
      items,
      resourceVersion: rv,
      continueToken: encodeContinue(rv, `${lastKey.slice(this.prefix.length)}\x00`),
      ...(filtering ? {} : { remainingItemCount: remaining }),
    };
  }

  // ---- writes

  /** The body's identity checks and the metadata the server owns, for create. */
  private async admitCreate(namespace: string, input: ApiObject): Promise<ApiObject> {
    const object = clone(input);
    const meta = object.metadata;
    if (this.decl.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta.namespace = namespace;
    } else {
      delete meta.namespace;
    }
    if (
      (meta.name === undefined || meta.name === '') &&
      (meta.generateName === undefined || meta.generateName === '')
    ) {
      throw errors.invalid(this.decl.group, this.decl.kind, '', [
        { type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' },
      ]);
    }
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp(this.deps.clock.nowMs());
    // metadata.generation is kept by kinds whose strategy names spec fields (as kube-apiserver's strategies).
    if (this.decl.strategy?.specFields !== undefined) meta.generation = 1;
    else delete meta.generation;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    object.apiVersion = this.apiVersion;
    object.kind = this.decl.kind;
    if (this.decl.namespaced) {
      const state = await this.deps.namespaceState(namespace);
      if (state === 'missing') throw errors.notFound({ group: '', resource: 'namespaces' }, namespace);
      if (state === 'terminating')
        throw errors.namespaceTerminating(this.gr, meta.name ?? meta.generateName ?? '', namespace);
    }
    this.decl.strategy?.prepareForCreate?.(object);
    return object;
  }

  validate(object: ApiObject, old: ApiObject | undefined): void {
    const causes: FieldError[] = [];
    const name = object.metadata.name ?? '';
    for (const detail of validateName(this.decl.nameRule, name)) {
      causes.push({ type: 'FieldValueInvalid', field: 'metadata.name', value: name, detail });
    }
    if (this.decl.namespaced && (object.metadata.namespace ?? '') === '')
      causes.push({ type: 'FieldValueRequired', field: 'metadata.namespace' });
    causes.push(...this.validator(object));
    causes.push(...validateLabelsAndAnnotations(object.metadata));
    causes.push(...(this.decl.strategy?.validate?.(object) ?? []));
    if (old !== undefined) causes.push(...(this.decl.strategy?.validateUpdate?.(object, old) ?? []));
    if (causes.length > 0) throw errors.invalid(this.decl.group, this.decl.kind, name, causes);
  }

  /** A virtual kind's body: the schema and the strategy's checks (no name: reviews have none). */
  validateVirtual(object: ApiObject): void {
    const causes = [...this.validator(object), ...(this.decl.strategy?.validate?.(object) ?? [])];
    if (causes.length > 0)
      throw errors.invalid(this.decl.group, this.decl.kind, object.metadata.name ?? '', causes);
  }

  async create(namespace: string, input: ApiObject, options: WriteOptions): Promise<ApiObject> {
    const admitted = await this.admitCreate(namespace, input);
    const generate = admitted.metadata.name === undefined || admitted.metadata.name === '';
    for (let attempt = 0; ; attempt++) {
      const object = clone(admitted);
      if (generate) object.metadata.name = generateName(object.metadata.generateName ?? '');
      this.validate(object, undefined);
      options.trackFields?.(undefined, object, this.deps.clock.nowMs());
      this.decl.strategy?.prepareForCreateUntracked?.(object);
      await options.admit?.(object, undefined);
      const name = object.metadata.name ?? '';
      const key = this.key(namespace, name);
      const reservation = this.decl.strategy?.reservations?.allocate(object);
      const reserved = reservation?.keys ?? [];
      const compare: Compare[] = [{ key, target: 'createRevision', op: '=', value: 0 }];
      const success: TxnOp[] = [{ type: 'put', key, value: this.encode(object) }];
      for (const r of reserved) {
        compare.push({ key: r, target: 'createRevision', op: '=', value: 0 });
        success.push({ type: 'put', key: r, value: new TextEncoder().encode(key) });
      }
      if (options.dryRun) {
        const existing = await this.deps.store.range({ key }, { countOnly: true });
        if (existing.count > 0) throw errors.alreadyExists(this.gr, name);
        object.metadata.resourceVersion = '';
        return object;
      }
      const result = await this.deps.store.txn({
        compare,
        success,
        failure: [{ type: 'range', span: { key }, options: { countOnly: true } }],
      });
      if (result.succeeded) {
        object.metadata.resourceVersion = String(result.header.revision);
        return object;
      }
      const first = result.responses[0];
      const exists = first?.type === 'range' && first.result.count > 0;
      if (exists) {
        if (generate && attempt < generateNameRetriesMax) continue;
        throw errors.alreadyExists(this.gr, name);
      }
      // A reservation collided: a value chosen by the client is an error, a random one is tried again.
      if (reservation?.collision !== undefined)
        throw errors.invalid(this.decl.group, this.decl.kind, name, [reservation.collision]);
      if (attempt >= reservationRetriesMax)
        throw errors.internal('could not allocate a free value after many attempts');
    }
  }

  /**
   * Read-modify-write with optimistic concurrency. `mutate` gets the current object (a copy) and returns the
   * new one; when the caller named a resourceVersion and it is stale, 409. Missing objects go to `onMissing`.
   */
  async guaranteedUpdate(
    namespace: string,
    name: string,
    options: WriteOptions & { subresource: Subresource; preconditionVersion?: string },
    mutate: (current: ApiObject) => ApiObject,
    onMissing: () => Promise<{ object: ApiObject; created: boolean }>,
  ): Promise<{ object: ApiObject; created: boolean }> {
    const key = this.key(namespace, name);
    for (let attempt = 0; attempt < updateRetriesMax; attempt++) {
      const read = await this.deps.store.range({ key });
      const kv = read.kvs[0];
      if (kv === undefined) return onMissing();
      const current = this.decodeForUpdate(kv);
      if (
        options.preconditionVersion !== undefined &&
        options.preconditionVersion !== '' &&
        options.preconditionVersion !== current.metadata.resourceVersion
      ) {
        throw errors.staleUpdate(this.gr, name);
      }
      const next = this.prepareUpdate(mutate(clone(current)), current, options.subresource);
      options.trackFields?.(current, next, this.deps.clock.nowMs());
      if (sameContent(next, current)) return { object: current, created: false };
      await options.admit?.(next, current);
      if (options.dryRun) return { object: next, created: false };
      if (
        next.metadata.deletionTimestamp !== undefined &&
        (next.metadata.finalizers ?? []).length === 0 &&
        !this.namespaceHoldsSpecFinalizers(next)
      ) {
        const deleted = await this.deleteNow(kv, next);
        if (deleted !== undefined) return { object: deleted, created: false };
        continue;
      }
      const result = await this.deps.store.txn({
        compare: [{ key, target: 'modRevision', op: '=', value: kv.modRevision }],
        success: [{ type: 'put', key, value: this.encode(next) }],
        failure: [],
      });
      if (result.succeeded) {
        next.metadata.resourceVersion = String(result.header.revision);
        return { object: next, created: false };
      }
      // Someone wrote (or deleted) the object between the read and the write: read again and decide on the fresh
      // state, as kube-apiserver does: a precondition that no longer holds is 409, a deleted object is 404.
    }
    throw errors.conflict(this.gr, name, 'too many concurrent updates, try again');
  }

  private namespaceHoldsSpecFinalizers(object: ApiObject): boolean {
    if (this.decl.group !== '' || this.decl.plural !== 'namespaces') return false;
    const spec = object.spec as { finalizers?: unknown[] } | undefined;
    return (spec?.finalizers ?? []).length > 0;
  }

  /** Keeps what the client may not change, applies the strategy, validates. */
  private prepareUpdate(input: ApiObject, current: ApiObject, subresource: Subresource): ApiObject {
    const object = asApiObject(input);
    if (object === undefined) throw errors.badRequest('the object has no metadata');
    const meta = object.metadata;
    const name = current.metadata.name ?? '';
    if (meta.name !== undefined && meta.name !== name) {
      throw errors.badRequest(
        `the name of the object (${meta.name}) does not match the name on the URL (${name})`,
      );
    }
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== current.metadata.uid) {
      throw errors.invalid(this.decl.group, this.decl.kind, name, [
        { type: 'FieldValueInvalid', field: 'metadata.uid', value: meta.uid, detail: 'field is immutable' },
      ]);
    }
    let next: ApiObject;
    if (subresource === 'finalize') {
      next = clone(current);
      next.spec = {
        ...(current.spec as object | undefined),
        finalizers: (object.spec as { finalizers?: unknown } | undefined)?.finalizers ?? [],
      };
    } else if (subresource === 'status') {
      const resets = this.decl.strategy?.statusResetFields;
      if (resets !== undefined) {
        next = object;
        for (const path of resets) restorePath(next, current, path);
        this.decl.strategy?.prepareForStatusUpdate?.(next, current);
      } else {
        // Only status changes through the status sub-resource.
        next = clone(current);
        if (object.status === undefined) delete next.status;
        else next.status = object.status;
      }
    } else {
      next = object;
      if (this.decl.statusSubresource) {
        if (current.status === undefined) delete next.status;
        else next.status = current.status;
      }
      this.decl.strategy?.prepareForUpdate?.(next, current);
    }
    const m = next.metadata;
    m.name = name;
    if (this.decl.namespaced) m.namespace = current.metadata.namespace ?? '';
    else delete m.namespace;
    m.uid = current.metadata.uid ?? '';
    m.creationTimestamp = current.metadata.creationTimestamp ?? null;
    if (current.metadata.deletionTimestamp !== undefined)
      m.deletionTimestamp = current.metadata.deletionTimestamp;
    else delete m.deletionTimestamp;
    if (current.metadata.deletionGracePeriodSeconds !== undefined)
      m.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
    else delete m.deletionGracePeriodSeconds;
    if (current.metadata.generateName !== undefined && m.generateName === undefined)
      m.generateName = current.metadata.generateName;
    m.resourceVersion = current.metadata.resourceVersion ?? '';
    next.apiVersion = this.apiVersion;
    next.kind = this.decl.kind;
    const specChanged = (this.decl.strategy?.specFields ?? []).some(
      (f) => JSON.stringify(next[f]) !== JSON.stringify(current[f]),
    );
    if (this.decl.strategy?.specFields !== undefined) {
      m.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    } else delete m.generation;
    this.validate(next, current);
    return next;
  }

  async update(
    namespace: string,
    name: string,
    input: ApiObject,
    options: WriteOptions & { subresource: Subresource },
  ): Promise<{ object: ApiObject; created: boolean }> {
    const preconditionVersion = input.metadata.resourceVersion;
    return this.guaranteedUpdate(
      namespace,
      name,
      { ...options, ...(preconditionVersion === undefined ? {} : { preconditionVersion }) },
      () => clone(input),
      async () => {
        if (!this.decl.allowCreateOnUpdate || options.subresource !== '')
          throw errors.notFound(this.gr, name);
        if (input.metadata.name !== undefined && input.metadata.name !== name) {
          throw errors.badRequest(
            `the name of the object (${input.metadata.name}) does not match the name on the URL (${name})`,
          );
        }
        const created = await this.create(
          namespace,
          { ...input, metadata: { ...input.metadata, name } },
          options,
        );
        return { object: created, created: true };
      },
    );
  }

  async patch(
    namespace: string,
    name: string,
    apply: (current: ApiObject) => ApiObject,
    options: WriteOptions & { subresource: Subresource },
  ): Promise<ApiObject> {
    const { object } = await this.guaranteedUpdate(namespace, name, options, apply, () =>
      Promise.reject(errors.notFound(this.gr, name)),
    );
    return object;
  }

  /** Deletes now, releasing reservations; undefined when the object changed meanwhile (the caller retries). */
  private async deleteNow(kv: KeyValue, last: ApiObject): Promise<ApiObject | undefined> {
    const held = this.decl.strategy?.reservations?.held(last) ?? [];
    const result = await this.deps.store.txn({
      compare: [{ key: kv.key, target: 'modRevision', op: '=', value: kv.modRevision }],
      success: [
        { type: 'delete', span: { key: kv.key } },
        ...held.map((r): TxnOp => ({ type: 'delete', span: { key: r } })),
      ],
      failure: [],
    });
    if (!result.succeeded) return undefined;
    last.metadata.resourceVersion = String(result.header.revision);
    return last;
  }

  /** Returns the object and whether it is gone (false: finalization pending, 202). */
  async delete(
    namespace: string,
    name: string,
    options: DeleteOptions,
  ): Promise<{ object: ApiObject; deleted: boolean }> {
    const key = this.key(namespace, name);
    for (let attempt = 0; attempt < updateRetriesMax; attempt++) {
      const read = await this.deps.store.range({ key });
      const kv = read.kvs[0];
      if (kv === undefined) throw errors.notFound(this.gr, name);
      const current = this.decode(kv);
      const pre = options.preconditions;
      if (pre?.uid !== undefined && pre.uid !== current.metadata.uid) {
        throw errors.conflict(
          this.gr,
          name,
          `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid ?? ''}`,
        );
      }
      if (pre?.resourceVersion !== undefined && pre.resourceVersion !== current.metadata.resourceVersion) {
        throw errors.conflict(
          this.gr,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion ?? ''}`,
        );
      }
      const next = clone(current);
      const finalizers = new Set(next.metadata.finalizers ?? []);
      if (current.metadata.deletionTimestamp === undefined) {
        if (options.propagationPolicy === 'Orphan') finalizers.add('orphan');
        if (options.propagationPolicy === 'Foreground') finalizers.add('foregroundDeletion');
      }
      const isNamespace = this.decl.group === '' && this.decl.plural === 'namespaces';
      // Graceful deletion (pods bound to a node): deletionTimestamp = now + grace; the node finishes it, or a
      // later delete with a shorter grace period (0 = now) does.
      const graceDefault = this.decl.strategy?.gracePeriodSeconds?.(current);
      const grace = graceDefault === undefined ? 0 : (options.gracePeriodSeconds ?? graceDefault);
      const graceful =
        grace > 0 && (current.metadata.deletionGracePeriodSeconds ?? Number.MAX_SAFE_INTEGER) > grace;
      const holds = finalizers.size > 0 || this.namespaceHoldsSpecFinalizers(current);
      if (grace > 0 && !graceful && !holds && current.metadata.deletionTimestamp !== undefined) {
        return { object: current, deleted: false };
      }
      if (holds || graceful) {
        if (current.metadata.deletionTimestamp !== undefined && !graceful)
          return { object: current, deleted: false };
        next.metadata.deletionTimestamp = timestamp(this.deps.clock.nowMs() + grace * 1000);
        next.metadata.deletionGracePeriodSeconds = grace;
        if (finalizers.size > 0) next.metadata.finalizers = [...finalizers];
        if (isNamespace) next.status = { ...(next.status as object | undefined), phase: 'Terminating' };
        if (options.dryRun) return { object: next, deleted: false };
        const result = await this.deps.store.txn({
          compare: [{ key, target: 'modRevision', op: '=', value: kv.modRevision }],
          success: [{ type: 'put', key, value: this.encode(next) }],
          failure: [],
        });
        if (!result.succeeded) continue;
        next.metadata.resourceVersion = String(result.header.revision);
        return { object: next, deleted: false };
      }
      if (options.dryRun) return { object: current, deleted: true };
      const deleted = await this.deleteNow(kv, current);
      if (deleted !== undefined) return { object: deleted, deleted: true };
    }
    throw errors.conflict(this.gr, name, 'too many concurrent updates, try again');
  }

  /**
   * Spec 3.2, DELETE with ignoreStoreReadErrorWithClusterBreakingPotential (gate on, caller authorized for
   * `unsafe-delete-ignore-read-errors`): only a corrupt object qualifies (a readable or missing one is 422). The
   * normal delete is tried first; when it fails with the corrupt-object error, the key is removed from the store
   * directly: no finalizers, preconditions, grace period or reservation release (the object cannot be read).
   * Returns whether this request removed the key (false: someone else removed it meanwhile).
   */
  async unsafeDelete(namespace: string, name: string): Promise<{ deleted: boolean }> {
    const key = this.key(namespace, name);
    const read = await this.deps.store.range({ key });
    const kv = read.kvs[0];
    if (kv === undefined || this.decodable(kv)) throw errors.unsafeDeleteOfReadable(this.gr, name);
    try {
      const { deleted } = await this.delete(namespace, name, { dryRun: false });
      return { deleted };
    } catch (error) {
      if (!(error instanceof ApiError && error.message.includes('corrupt object'))) throw error;
    }
    for (let attempt = 0; attempt < updateRetriesMax; attempt++) {
      const current = (await this.deps.store.range({ key })).kvs[0];
      if (current === undefined) return { deleted: false };
      const result = await this.deps.store.txn({
        compare: [{ key, target: 'modRevision', op: '=', value: current.modRevision }],
        success: [{ type: 'delete', span: { key } }],
        failure: [],
      });
      if (result.succeeded) return { deleted: true };
    }
    throw errors.conflict(this.gr, name, 'too many concurrent updates, try again');
  }

  private decodable(kv: KeyValue): boolean {
    try {
      this.decodeStored(kv);
      return true;
    } catch (error) {
      if (error instanceof UndecodableObject) return false;
      throw error;
    }
  }

  async deleteCollection(request: ListRequest, options: DeleteOptions): Promise<ApiObject[]> {
    const listed = await this.list({ ...request, limit: 0, continueToken: undefined });
    const out: ApiObject[] = [];
    for (const item of listed.items) {
      try {
        const { object } = await this.delete(
          item.metadata.namespace ?? '',
          item.metadata.name ?? '',
          options,
        );
        out.push(object);
      } catch (error) {
        if (!(error instanceof ApiError && error.reason === 'NotFound')) throw error;
      }
    }
    return out;
  }
}

/** Puts back the old object's field at `path` (a status update's reset fields), or removes it if it had none. */
function restorePath(object: ApiObject, old: ApiObject, path: readonly string[]): void {
  const last = path.at(-1);
  if (last === undefined) return;
  let from: unknown = old;
  for (const part of path) from = isRecord(from) ? from[part] : undefined;
  let into: Record<string, unknown> = object;
  for (const part of path.slice(0, -1)) {
    const child = into[part];
    if (!isRecord(child)) {
      if (from === undefined) return;
      into[part] = {};
    }
    into = into[part] as Record<string, unknown>;
  }
  if (from === undefined) delete into[last];
  else into[last] = clone(from);
}
