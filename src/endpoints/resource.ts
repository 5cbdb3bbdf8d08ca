// One handler per verb, generic over the kind: get, list, watch, create, update, patch, delete,
// deletecollection, for the main resource and its `status` sub-resource.

import type { Decoded } from '../apimachinery/codec.js';
import { asApiObject, type ApiObject } from '../apimachinery/meta.js';
import { CborDecodeError, decodeCbor, decodeCborLenient, type CborDecoded } from '../apimachinery/cbor.js';
import { negotiateBody, negotiateResponse, type BodyType } from '../apimachinery/negotiation.js';
import { mergePatch } from '../apimachinery/patch.js';
import {
  decodeObject,
  protobufMediaType,
  protobufMessageOf,
  ProtobufDecodeError,
} from '../apimachinery/protobuf.js';
import { compileValidator, type ObjectValidator, type Schema } from '../apimachinery/schema.js';
import { apiVersionOf, type CreateSubresource } from '../apimachinery/kind.js';
import { parseFieldSelector, parseLabelSelector, type Requirement } from '../apimachinery/selectors.js';
import { errors, successStatus, type ApiError, type FieldError } from '../apimachinery/status.js';
import { toTable } from '../apimachinery/table.js';
import {
  ResourceRegistry,
  type DeleteOptions,
  type ListRequest,
  type Subresource,
  type WriteAdmission,
} from '../registry/store.js';
import { limits } from '../util/limits.js';
import { unreachable } from '../util/assert.js';
import { protobufOption, respond, type RequestContext } from './context.js';
import {
  checkFields,
  decodeBody,
  dryRunOf,
  servePatch,
  updateTracker,
  validateWriteOptions,
} from './patch.js';
import { anonymousUser, type UserInfo } from '../auth/user.js';
import type { Authorizer } from '../auth/authorizer.js';
import { forbiddenError, requestAttributes } from '../filters/authorization.js';
import type { RequestInfo } from './requestinfo.js';
import { serveWatch, type WatchHooks } from './watch.js';

type ResourceInfo = Extract<RequestInfo, { isResourceRequest: true }>;

export interface ResourceDeps {
  readonly watchHooks: WatchHooks;
  readonly groupDomain: string;
  /** Periodic watch bookmarks this often (hidden flag --watch-bookmark-interval; default in limits). */
  readonly watchBookmarkIntervalMs?: number;
  /** Checks of writes that need the user (RBAC escalation prevention); undefined = none for this resource. */
  readonly admission?: (
    user: UserInfo,
    registry: ResourceRegistry,
    namespace: string,
  ) => WriteAdmission | undefined;
  /** Asked for `create` when an update or apply creates the object. */
  readonly authorizer?: Authorizer;
}

/**
 * The write checks of a request: the kind's admission (RBAC escalation prevention) and, for an update or patch
 * (server-side apply) that creates the object, the `create` permission kube-apiserver also demands then.
 */
function admitOf(
  ctx: RequestContext,
  registry: ResourceRegistry,
  namespace: string,
  deps: ResourceDeps,
): { admit?: WriteAdmission } {
  const user = ctx.user ?? anonymousUser;
  const admit = deps.admission?.(user, registry, namespace);
  const authorizer = deps.authorizer;
  const verb = ctx.info.verb;
  if (authorizer === undefined || (verb !== 'update' && verb !== 'patch'))
    return admit === undefined ? {} : { admit };
  return {
    admit: async (object, old) => {
      if (old === undefined) {
        const attributes = { ...requestAttributes(ctx, user), verb: 'create' };
        const { decision, reason } = await authorizer.authorize(attributes);
        if (decision !== 'allow') throw forbiddenError(attributes, reason);
      }
      await admit?.(object, old);
    },
  };
}

export async function readBody(ctx: RequestContext): Promise<Buffer> {
  const declared = Number(ctx.req.headers['content-length'] ?? '0');
  if (declared > limits.apiRequestBodyBytesMax) throw errors.tooLarge(limits.apiRequestBodyBytesMax);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limits.apiRequestBodyBytesMax) throw errors.tooLarge(limits.apiRequestBodyBytesMax);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The kind a body must hold: its group, version and kind (for protobuf, the message to decode). */
export interface BodyKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

function bodyKindOf(registry: ResourceRegistry, kind = registry.decl.kind): BodyKind {
  const slash = registry.apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: registry.apiVersion, kind }
    : { group: registry.apiVersion.slice(0, slash), version: registry.apiVersion.slice(slash + 1), kind };
}

/** Whether objects of this registry (or its list, `kind`) have a protobuf form. */
function hasProtobuf(deps: ResourceDeps, registry: ResourceRegistry, kind: string): boolean {
  const { group, version } = bodyKindOf(registry);
  return protobufMessageOf(deps.groupDomain, group, version, kind) !== undefined;
}

/** Decodes a protobuf body into the JSON form of `expected`, with kube-apiserver's errors for bad bytes. */
function decodeProtobufBody(groupDomain: string, body: Buffer, expected: BodyKind): Decoded {
  try {
    return { value: decodeObject(groupDomain, body, expected), duplicateFields: [] };
  } catch (error) {
    if (!(error instanceof ProtobufDecodeError)) throw error;
    const typeMeta = error.typeMeta;
    if (error.stage === 'envelope' || typeMeta === undefined || typeMeta.kind === '')
      throw errors.unrecognizedBody(expected.kind, error.message, body);
    const version = typeMeta.apiVersion.slice(typeMeta.apiVersion.indexOf('/') + 1);
    throw errors.undecodableObject(typeMeta.kind, version, expected.kind, error.message);
  }
}

/**
 * Reads a request body of one of the `allowed` types, or protobuf when `expected` has a protobuf message (kubectl
 * sends typed objects as protobuf), or CBOR wherever JSON is allowed when the CBOR gate is on. An empty body decodes to undefined when `emptyAllowed` (DELETE without
 * options). Handlers of virtual kinds (access reviews, token requests) read their bodies with it too.
 */
export async function readTypedBody(
  ctx: RequestContext,
  groupDomain: string,
  expected: BodyKind | undefined,
  allowed: readonly BodyType[] = ['json', 'yaml'],
  emptyAllowed = false,
): Promise<{ type: BodyType; decoded: Decoded; empty: boolean }> {
  const hasMessage =
    expected !== undefined &&
    protobufMessageOf(groupDomain, expected.group, expected.version, expected.kind) !== undefined;
  const protobufType = hasMessage ? protobufMediaType(groupDomain) : undefined;
  // Every body that may be JSON may be CBOR when CBOR is served.
  const withCbor: readonly BodyType[] = ctx.cbor && allowed.includes('json') ? [...allowed, 'cbor'] : allowed;
  const type = negotiateBody(
    ctx.req.headers['content-type'],
    hasMessage ? [...withCbor, 'protobuf'] : withCbor,
    { protobufMediaType: protobufType, cbor: ctx.cbor },
  );
  const body = await readBody(ctx);
  const binary = type === 'protobuf' || type === 'cbor';
  const text = binary ? '' : body.toString('utf8');
  if (emptyAllowed && (binary ? body.length === 0 : text.trim() === ''))
    return { type, decoded: { value: undefined, duplicateFields: [] }, empty: true };
  const decoded =
    type === 'protobuf' && expected !== undefined
      ? decodeProtobufBody(groupDomain, body, expected)
      : type === 'cbor'
        ? decodeCborBody(body, expected)
        : decodeBody(type, text);
  ctx.audit?.requestObject(decoded.value);
  return { type, decoded, empty: false };
}

/**
 * Decodes a CBOR body with kube-apiserver's errors: when not even apiVersion and kind can be read, the object is
 * unrecognized; when they can but the rest cannot, it cannot be handled as the expected kind. CBOR has no
 * duplicate-field warnings: a duplicate map key is a malformed body.
 */
function decodeCborBody(body: Buffer, expected: BodyKind | undefined): Decoded {
  const expectedKind = expected?.kind ?? 'Object';
  const unrecognized = (reason: string): ApiError =>
    errors.unrecognizedBody(expectedKind, `unable to determine group/version/kind: ${reason}`, body);
  let decoded: CborDecoded;
  try {
    decoded = decodeCbor(body);
  } catch (error) {
    if (!(error instanceof CborDecodeError)) throw error;
    if (error.stage === 'envelope') throw unrecognized(error.message);
    // The type could be read: decode what can be, to name it as kube-apiserver does.
    const typeMeta = typeMetaOf(body);
    if (typeMeta === undefined) throw unrecognized(error.message);
    throw errors.undecodableObject(
      typeMeta.kind === '' ? expectedKind : typeMeta.kind,
      typeMeta.version === '' ? (expected?.version ?? '') : typeMeta.version,
      expectedKind,
      error.message,
    );
  }
  if (decoded.type !== 'map')
    throw unrecognized(`cbor: cannot unmarshal ${decoded.type} into Go value of type v1.TypeMeta`);
  return { value: decoded.value, duplicateFields: [] };
}

/** The kind and version of a CBOR body whose content is refused (for the error message), read leniently. */
function typeMetaOf(body: Buffer): { kind: string; version: string } | undefined {
  const value = decodeCborLenient(body);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { kind, apiVersion } = value as { kind?: unknown; apiVersion?: unknown };
  const version = typeof apiVersion === 'string' ? apiVersion.slice(apiVersion.indexOf('/') + 1) : '';
  return { kind: typeof kind === 'string' && kind !== '' ? kind : '', version };
}

/** What a create body must be: the registry's own kind, or a create-only sub-resource's. */
interface ExpectedBody {
  readonly body: BodyKind;
  readonly apiVersion: string;
  readonly schema: Schema;
}

async function readObject(
  ctx: RequestContext,
  target: ResourceRegistry | ExpectedBody,
  deps: ResourceDeps,
): Promise<ApiObject> {
  const expected: ExpectedBody =
    target instanceof ResourceRegistry
      ? { body: bodyKindOf(target), apiVersion: target.apiVersion, schema: target.decl.schema }
      : target;
  const { decoded } = await readTypedBody(ctx, deps.groupDomain, expected.body);
  checkFields(ctx, expected.schema, decoded.value, decoded.duplicateFields, true);
  const object = asApiObject(decoded.value);
  if (object === undefined) throw errors.badRequest('the body of the request must be an object');
  if (object.kind !== undefined && object.kind !== expected.body.kind) {
    throw errors.badRequest(
      `the kind in the data (${String(object.kind)}) does not match the expected kind (${expected.body.kind})`,
    );
  }
  if (object.apiVersion !== undefined && object.apiVersion !== expected.apiVersion) {
    throw errors.badRequest(
      `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${expected.apiVersion})`,
    );
  }
  return object;
}

/** POST to a virtual kind's collection: decoded and validated like a create, answered by the kind's hook. */
async function createVirtual(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  deps: ResourceDeps,
): Promise<void> {
  const { decl } = registry;
  const hook = decl.virtual;
  if (hook === undefined) throw errors.pathNotFound();
  // Only the collection path exists (kube-apiserver registers no route with a name): other verbs are 405.
  if (info.name !== '' || info.subresource !== '') throw errors.pathNotFound();
  if (decl.namespaced && info.namespace === '') throw errors.pathNotFound();
  if (info.verb !== 'create') throw errors.methodNotAllowed();
  // Every version of a virtual kind has the same schema: the request's version is the answer's.
  const apiVersion = apiVersionOf(decl.group, info.version);
  const object = await readObject(
    ctx,
    { body: { ...bodyKindOf(registry), version: info.version }, apiVersion, schema: decl.schema },
    deps,
  );
  object.apiVersion = apiVersion;
  object.kind = decl.kind;
  registry.validateVirtual(object);
  const result = await hook.create(object, {
    user: ctx.user ?? anonymousUser,
    namespace: decl.namespaced ? info.namespace : '',
    name: '',
    dryRun: dryRunOf(ctx.query),
  });
  respond(ctx, 201, { ...result, apiVersion, kind: decl.kind });
}

const subresourceValidators = new WeakMap<Schema, ObjectValidator>();

/** POST NAME/SUBRESOURCE of a create-only sub-resource (serviceaccounts/NAME/token). */
async function createSubresource(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  sub: CreateSubresource,
  deps: ResourceDeps,
): Promise<void> {
  if (info.verb !== 'create') throw errors.methodNotAllowed();
  const { decl } = registry;
  if (decl.namespaced && info.namespace === '') throw errors.pathNotFound();
  const apiVersion = apiVersionOf(sub.group, sub.version);
  const object = await readObject(
    ctx,
    { body: { group: sub.group, version: sub.version, kind: sub.kind }, apiVersion, schema: sub.schema },
    deps,
  );
  object.apiVersion = apiVersion;
  object.kind = sub.kind;
  let validator = subresourceValidators.get(sub.schema);
  if (validator === undefined) {
    validator = compileValidator(sub.schema);
    subresourceValidators.set(sub.schema, validator);
  }
  const causes = validator(object);
  if (causes.length > 0) throw errors.invalid(sub.group, sub.kind, info.name, causes);
  const result = await sub.create(object, {
    user: ctx.user ?? anonymousUser,
    namespace: decl.namespaced ? info.namespace : '',
    name: info.name,
    dryRun: dryRunOf(ctx.query),
  });
  respond(ctx, 201, { ...result, apiVersion, kind: sub.kind });
}

function flag(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  return v !== null && v !== 'false' && v !== '0';
}

function listRequestOf(ctx: RequestContext, registry: ResourceRegistry, info: ResourceInfo): ListRequest {
  const q = ctx.query;
  const fieldSelector: Requirement[] = [
    ...parseFieldSelector(q.get('fieldSelector') ?? undefined, registry.selectableFields),
  ];
  const limitText = q.get('limit');
  const limit = limitText === null || limitText === '' ? 0 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 0)
    throw errors.badRequest(`limit must be a non-negative integer, got "${limitText}"`);
  const match = q.get('resourceVersionMatch');
  if (match !== null && match !== '' && match !== 'Exact' && match !== 'NotOlderThan') {
    throw errors.badRequest(
      `resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`,
    );
  }
  return {
    namespace: info.namespace,
    labelSelector: parseLabelSelector(q.get('labelSelector') ?? undefined),
    fieldSelector,
    resourceVersion: q.get('resourceVersion') ?? undefined,
    resourceVersionMatch: match === null || match === '' ? undefined : match,
    limit,
    continueToken: q.get('continue') ?? undefined,
  };
}

function tableOptions(ctx: RequestContext): { includeObject: 'None' | 'Object' | 'Metadata' } {
  const v = ctx.query.get('includeObject');
  return { includeObject: v === 'None' || v === 'Object' ? v : 'Metadata' };
}

export async function serveResource(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  deps: ResourceDeps,
): Promise<void> {
  const { decl } = registry;
  const subresource = info.subresource;
  if (decl.virtual !== undefined) {
    await createVirtual(ctx, registry, info, deps);
    return;
  }
  const createOnly = subresource === '' ? undefined : decl.createSubresources?.[subresource];
  if (createOnly !== undefined && info.name !== '') {
    await createSubresource(ctx, registry, info, createOnly, deps);
    return;
  }
  if (subresource === 'scale' && decl.scaleSubresource === true) {
    await serveScale(ctx, registry, info, deps.groupDomain);
    return;
  }
  if (subresource === 'eviction' && decl.evictionSubresource === true) {
    if (info.verb !== 'create') throw errors.methodNotAllowed();
    await evict(ctx, registry, info, deps.groupDomain);
    return;
  }
  if (subresource !== '' && !(subresource === 'status' && decl.statusSubresource)) {
    throw errors.pathNotFound();
  }
  const sub: Subresource = subresource === 'status' ? 'status' : '';
  if (!decl.namespaced && info.namespace !== '' && !(decl.plural === 'namespaces' && decl.group === ''))
    throw errors.pathNotFound();
  const namespace = decl.namespaced ? info.namespace : '';
  // Across all namespaces a namespaced resource can only be listed and watched.
  if (decl.namespaced && namespace === '' && info.verb !== 'list' && info.verb !== 'watch') {
    if (info.name !== '') throw errors.pathNotFound();
    throw errors.methodNotAllowed();
  }
  const q = ctx.query;
  switch (info.verb) {
    case 'get': {
      const format = negotiateResponse(ctx.req.headers.accept, {
        metaGroup: ctx.metaGroup,
        tableAllowed: sub === '',
        protobuf: protobufOption(ctx, hasProtobuf(deps, registry, decl.kind)),
        cbor: ctx.cbor,
      });
      const object = await registry.get(namespace, info.name, q.get('resourceVersion') ?? undefined);
      if (format.as === 'PartialObjectMetadata') {
        respond(ctx, 200, partialObjectMetadata(ctx.metaGroup, object), format);
      } else if (format.as === 'Table') {
        respond(
          ctx,
          200,
          toTable(decl, [object], {
            metaGroup: ctx.metaGroup,
            version: 'v1',
            ...tableOptions(ctx),
            listMeta: { resourceVersion: object.metadata.resourceVersion },
          }),
          format,
        );
      } else respond(ctx, 200, object, format);
      return;
    }
    case 'list': {
      const format = negotiateResponse(ctx.req.headers.accept, {
        metaGroup: ctx.metaGroup,
        tableAllowed: true,
        protobuf: protobufOption(ctx, hasProtobuf(deps, registry, `${decl.kind}List`)),
        cbor: ctx.cbor,
      });
      const result = await registry.list(listRequestOf(ctx, registry, info));
      const listMeta: Record<string, unknown> = { resourceVersion: String(result.resourceVersion) };
      if (result.continueToken !== undefined) listMeta.continue = result.continueToken;
      if (result.remainingItemCount !== undefined) listMeta.remainingItemCount = result.remainingItemCount;
      if (format.as === 'PartialObjectMetadata') {
        const items = result.items.map((i) => partialObjectMetadata(ctx.metaGroup, i));
        const list = {
          kind: 'PartialObjectMetadataList',
          apiVersion: `${ctx.metaGroup}/v1`,
          metadata: listMeta,
          items,
        };
        respond(ctx, 200, list, format);
      } else if (format.as === 'Table') {
        respond(
          ctx,
          200,
          toTable(decl, result.items, {
            metaGroup: ctx.metaGroup,
            version: 'v1',
            ...tableOptions(ctx),
            listMeta,
          }),
          format,
        );
      } else {
        respond(
          ctx,
          200,
          {
            kind: `${decl.kind}List`,
            apiVersion: registry.apiVersion,
            metadata: listMeta,
            items: result.items,
          },
          format,
        );
      }
      return;
    }
    case 'watch': {
      const format = negotiateResponse(ctx.req.headers.accept, {
        metaGroup: ctx.metaGroup,
        tableAllowed: true,
        protobuf: protobufOption(ctx, hasProtobuf(deps, registry, decl.kind)),
        cbor: ctx.cbor,
      });
      const list = listRequestOf(ctx, registry, info);
      const fieldSelector =
        info.name === ''
          ? list.fieldSelector
          : [...list.fieldSelector, { key: 'metadata.name', op: 'in' as const, values: [info.name] }];
      const timeoutText = q.get('timeoutSeconds');
      const sendInitial = q.get('sendInitialEvents');
      await serveWatch(
        ctx,
        registry,
        {
          namespace,
          labelSelector: list.labelSelector,
          fieldSelector,
          resourceVersion: list.resourceVersion,
          resourceVersionMatch: list.resourceVersionMatch,
          allowWatchBookmarks: flag(q, 'allowWatchBookmarks'),
          sendInitialEvents: sendInitial === null ? undefined : sendInitial === 'true' || sendInitial === '1',
          timeoutSeconds:
            timeoutText === null || timeoutText === '' ? undefined : Math.max(0, Number(timeoutText)),
          format,
          initialEventsAnnotation: `${deps.groupDomain}/initial-events-end`,
          bookmarkIntervalMs: deps.watchBookmarkIntervalMs ?? limits.apiWatchBookmarkIntervalMs,
        },
        deps.watchHooks,
      );
      return;
    }
    case 'create': {
      if (info.name !== '' || sub !== '') throw errors.methodNotAllowed();
      validateWriteOptions(ctx, 'CreateOptions', false);
      const object = await readObject(ctx, registry, deps);
      const created = await registry.create(namespace, object, {
        dryRun: dryRunOf(q),
        trackFields: updateTracker(ctx, registry, ''),
        ...admitOf(ctx, registry, namespace, deps),
      });
      respond(ctx, 201, created);
      return;
    }
    case 'update': {
      validateWriteOptions(ctx, 'UpdateOptions', false);
      const object = await readObject(ctx, registry, deps);
      const result = await registry.update(namespace, info.name, object, {
        dryRun: dryRunOf(q),
        subresource: sub,
        trackFields: updateTracker(ctx, registry, sub),
        ...admitOf(ctx, registry, namespace, deps),
      });
      respond(ctx, result.created ? 201 : 200, result.object);
      return;
    }
    case 'patch': {
      await servePatch(
        ctx,
        registry,
        namespace,
        info.name,
        sub,
        await readBody(ctx),
        admitOf(ctx, registry, namespace, deps),
      );
      return;
    }
    case 'delete': {
      const options = await deleteOptionsOf(ctx, deps.groupDomain, registry.unsafeDeletionAllowed);
      if (options.ignoreStoreReadError) {
        await authorizeUnsafeDelete(ctx, registry, deps.authorizer);
        await registry.unsafeDelete(namespace, info.name);
        // The object cannot be read, so there is none to return: a Status, as kube-apiserver answers.
        respond(ctx, 200, successStatus({ name: info.name, kind: registry.decl.kind }));
        return;
      }
      const result = await registry.delete(namespace, info.name, options);
      // As kube-apiserver: 202 only when the object is not gone yet and the client asked for cascading with
      // orphanDependents=false; otherwise 200 (also while finalizers or a grace period hold the object).
      respond(ctx, !result.deleted && options.orphanDependentsFalse === true ? 202 : 200, result.object);
      return;
    }
    case 'deletecollection': {
      const options = await deleteOptionsOf(ctx, deps.groupDomain, registry.unsafeDeletionAllowed);
      if (options.ignoreStoreReadError) {
        throw errors.invalid(`meta.${deps.groupDomain}`, 'DeleteOptions', '', [
          {
            type: 'FieldValueInvalid',
            field: ignoreStoreReadErrorField,
            value: true,
            detail: 'is not allowed with DELETECOLLECTION, try again after removing the option',
          },
        ]);
      }
      await registry.deleteCollection(listRequestOf(ctx, registry, info), options);
      respond(ctx, 200, successStatus());
      return;
    }
    default:
      return unreachable(info.verb);
  }
}

const ignoreStoreReadErrorField = 'ignoreStoreReadErrorWithClusterBreakingPotential';
const unsafeDeleteVerb = 'unsafe-delete-ignore-read-errors';

/** A boolean query parameter as Go's strconv.ParseBool reads it (kube-apiserver's parameter codec). */
function queryBool(q: URLSearchParams, name: string): boolean | undefined {
  const text = q.get(name);
  if (text === null) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  throw errors.badRequest(`strconv.ParseBool: parsing "${text}": invalid syntax`);
}

/**
 * DeleteOptions from the request body (JSON, YAML, protobuf or CBOR; may be empty) and the query, or `given`
 * (an Eviction's). `unsafeDeletionAllowed` is gate AllowUnsafeMalformedObjectDeletion: off, the option
 * ignoreStoreReadErrorWithClusterBreakingPotential is dropped unread, as kube-apiserver 1.32 drops it.
 */
async function deleteOptionsOf(
  ctx: RequestContext,
  groupDomain: string,
  unsafeDeletionAllowed: boolean,
  given?: unknown,
): Promise<DeleteOptions & { orphanDependentsFalse: boolean; ignoreStoreReadError: boolean }> {
  const q = ctx.query;
  let value = given;
  if (given === undefined) {
    const expected = { group: `meta.${groupDomain}`, version: 'v1', kind: 'DeleteOptions' };
    const read = await readTypedBody(ctx, groupDomain, expected, ['json', 'yaml'], true);
    value = read.empty ? {} : read.decoded.value;
  }
  const body = (value ?? {}) as {
    preconditions?: { uid?: string; resourceVersion?: string } | null;
    propagationPolicy?: string | null;
    orphanDependents?: boolean | null;
    gracePeriodSeconds?: number | null;
    dryRun?: string[] | null;
    ignoreStoreReadErrorWithClusterBreakingPotential?: boolean | null;
  };
  const policy =
    q.get('propagationPolicy') ??
    body.propagationPolicy ??
    (body.orphanDependents === true || q.get('orphanDependents') === 'true' ? 'Orphan' : undefined);
  if (policy !== undefined && policy !== 'Orphan' && policy !== 'Background' && policy !== 'Foreground') {
    throw errors.badRequest(
      `propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
    );
  }
  const grace =
    q.get('gracePeriodSeconds') ??
    (body.gracePeriodSeconds === undefined || body.gracePeriodSeconds === null
      ? undefined
      : String(body.gracePeriodSeconds));
  const dryRunValues = [...q.getAll('dryRun'), ...(body.dryRun ?? [])];
  const dryRun = dryRunOf(q) || dryRunValues.includes('All');
  const ignoreStoreReadError =
    unsafeDeletionAllowed &&
    (queryBool(q, ignoreStoreReadErrorField) ??
      body.ignoreStoreReadErrorWithClusterBreakingPotential ??
      false);
  if (ignoreStoreReadError) {
    // kube's ValidateDeleteOptions: the option stands alone (422 naming every companion that is set).
    const companions: [string, boolean][] = [
      ['dryRun', dryRunValues.length > 0],
      ['propagationPolicy', q.has('propagationPolicy') || isSet(body.propagationPolicy)],
      ['orphanDependents', q.has('orphanDependents') || isSet(body.orphanDependents)],
      ['gracePeriodSeconds', grace !== undefined],
      ['preconditions', isSet(body.preconditions)],
    ];
    const causes = companions
      .filter(([, set]) => set)
      .map(([name]): FieldError => ({
        type: 'FieldValueInvalid',
        field: ignoreStoreReadErrorField,
        value: true,
        detail: `cannot be set together with .${name}`,
      }));
    if (causes.length > 0) throw errors.invalid(`meta.${groupDomain}`, 'DeleteOptions', '', causes);
  }
  return {
    dryRun,
    ignoreStoreReadError,
    orphanDependentsFalse: body.orphanDependents === false || q.get('orphanDependents') === 'false',
    ...(isSet(body.preconditions) ? { preconditions: body.preconditions } : {}),
    ...(policy === undefined ? {} : { propagationPolicy: policy }),
    ...(grace === undefined ? {} : { gracePeriodSeconds: Number(grace) }),
  };
}

function isSet<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

/**
 * An unsafe delete needs, besides `delete`, the verb `unsafe-delete-ignore-read-errors` on the resource
 * (kube-apiserver asks the authorizer from the delete handler; its 403 comes from admission's wording).
 */
async function authorizeUnsafeDelete(
  ctx: RequestContext,
  registry: ResourceRegistry,
  authorizer: Authorizer | undefined,
): Promise<void> {
  const name = ctx.info.isResourceRequest ? ctx.info.name : '';
  if (!ctx.info.isResourceRequest || ctx.info.subresource !== '') {
    throw errors.forbiddenWrite(
      registry.gr,
      name,
      `${ignoreStoreReadErrorField} delete option is not allowed on a subresource or non-resource request`,
    );
  }
  if (authorizer === undefined)
    throw errors.internal('no authorizer provided, unable to authorize unsafe delete');
  const user = ctx.user ?? anonymousUser;
  const attributes = { ...requestAttributes(ctx, user), verb: unsafeDeleteVerb };
  const { decision, reason, error } = await authorizer.authorize(attributes);
  if (error !== undefined) {
    throw errors.forbiddenWrite(
      registry.gr,
      name,
      `error while checking permission for "${unsafeDeleteVerb}", ${error}`,
    );
  }
  if (decision !== 'allow') {
    throw errors.forbiddenWrite(
      registry.gr,
      name,
      `not permitted to do "${unsafeDeleteVerb}", reason: ${reason}`,
    );
  }
}

/** POST pods/NAME/eviction: an Eviction (policy/v1) whose deleteOptions delete the pod (no disruption budgets yet). */
async function evict(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  groupDomain: string,
): Promise<void> {
  const expected = { group: 'policy', version: 'v1', kind: 'Eviction' };
  const read = await readTypedBody(ctx, groupDomain, expected, ['json', 'yaml'], true);
  const eviction = (read.empty ? {} : (read.decoded.value ?? {})) as {
    metadata?: { name?: string };
    deleteOptions?: unknown;
  };
  if (eviction.metadata?.name !== undefined && eviction.metadata.name !== info.name) {
    throw errors.badRequest(`name in URL does not match name in Eviction object`);
  }
  const options = await deleteOptionsOf(ctx, groupDomain, false, eviction.deleteOptions ?? {});
  await registry.delete(info.namespace, info.name, options);
  respond(ctx, 201, { ...successStatus(), code: 201 });
}

/** The Scale view of an object: spec.replicas, status.replicas and the label selector as a string. */
function scaleOf(object: ApiObject): Record<string, unknown> {
  const spec = (object.spec ?? {}) as {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
  };
  const status = (object.status ?? {}) as { replicas?: number };
  const selector = Object.entries(spec.selector?.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const m = object.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: spec.replicas ?? 0 },
    status: { replicas: status.replicas ?? 0, ...(selector === '' ? {} : { selector }) },
  };
}

/** GET, PUT and PATCH (merge) of `scale`: reads and writes spec.replicas of the object. */
async function serveScale(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  groupDomain: string,
): Promise<void> {
  const namespace = registry.decl.namespaced ? info.namespace : '';
  if (info.verb === 'get') {
    respond(
      ctx,
      200,
      scaleOf(await registry.get(namespace, info.name, ctx.query.get('resourceVersion') ?? undefined)),
    );
    return;
  }
  if (info.verb !== 'update' && info.verb !== 'patch') throw errors.methodNotAllowed();
  const read =
    info.verb === 'update'
      ? await readTypedBody(ctx, groupDomain, { group: 'autoscaling', version: 'v1', kind: 'Scale' })
      : await readTypedBody(ctx, groupDomain, undefined, ['merge-patch']);
  const body = read.decoded.value as Record<string, unknown> | null;
  if (body === null || typeof body !== 'object') throw errors.badRequest('the body must be an object');
  const precondition = (body as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion;
  const { object } = await registry.guaranteedUpdate(
    namespace,
    info.name,
    {
      dryRun: dryRunOf(ctx.query),
      subresource: '',
      trackFields: updateTracker(ctx, registry, 'scale'),
      ...(info.verb === 'update' && typeof precondition === 'string'
        ? { preconditionVersion: precondition }
        : {}),
    },
    (current) => {
      const scale =
        info.verb === 'update' ? body : (mergePatch(scaleOf(current), body) as Record<string, unknown>);
      const replicas = (scale.spec as { replicas?: unknown } | undefined)?.replicas;
      if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
        throw errors.invalid('autoscaling', 'Scale', info.name, [
          {
            type: 'FieldValueInvalid',
            field: 'spec.replicas',
            value: replicas ?? null,
            detail: 'must be greater than or equal to 0',
          },
        ]);
      }
      current.spec = { ...(current.spec as object | undefined), replicas };
      return current;
    },
    () => Promise.reject(errors.notFound(registry.gr, info.name)),
  );
  respond(ctx, 200, scaleOf(object));
}

export function partialObjectMetadata(metaGroup: string, object: ApiObject): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: `${metaGroup}/v1`, metadata: object.metadata };
}
