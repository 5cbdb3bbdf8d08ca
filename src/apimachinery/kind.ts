// A kind is declared once, as data plus a few strategy hooks. Routing, discovery, OpenAPI, validation,
// defaulting, selectors and Table output are derived from this declaration (src/registry, src/endpoints).

import type { ApiObject, NameRule } from './meta.js';
import type { Schema } from './schema.js';
import type { FieldError } from './status.js';
import type { UserInfo } from '../auth/user.js';

export interface TableColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly format?: string;
  readonly description: string;
  /** 0 = shown by default; 1 = only with `-o wide`. */
  readonly priority: number;
  readonly cell: (object: ApiObject) => unknown;
}

/** What the kind's strategy may do beyond the generic store. Hooks mutate the object in place. */
export interface Strategy {
  /** On create, after metadata is filled in and before validation (clear status, set defaults that need code). */
  readonly prepareForCreate?: (object: ApiObject) => void;
  /**
   * On create, after field management recorded the request's fields: what kube-apiserver sets after its field
   * manager ran (mutating admission such as Pod priority, the REST storage's own choices such as a Service's IP
   * families), so that those fields are in no manager's managedFields entry, as there.
   */
  readonly prepareForCreateUntracked?: (object: ApiObject) => void;
  /** On update of the main resource: e.g. keep the old status. */
  readonly prepareForUpdate?: (object: ApiObject, old: ApiObject) => void;
  /**
   * What an update of the `status` sub-resource puts back from the old object (kube-apiserver's status strategy
   * and its GetResetFields: the spec, and per kind a few metadata fields); the rest of the request is kept, its
   * labels and annotations included, and owned by the writer. Without it only status changes (as for custom
   * resources).
   */
  readonly statusResetFields?: readonly (readonly string[])[];
  /** After the reset fields of a status update are put back: what else the kind's status strategy does. */
  readonly prepareForStatusUpdate?: (object: ApiObject, old: ApiObject) => void;
  readonly validate?: (object: ApiObject) => FieldError[];
  readonly validateUpdate?: (object: ApiObject, old: ApiObject) => FieldError[];
  /** Whether a spec change bumps metadata.generation (kinds with spec/status: yes). */
  readonly specFields?: readonly string[];
  /**
   * Graceful deletion: the default grace period of a delete of this object (0 or undefined = immediate).
   * A delete then only sets deletionTimestamp (now + grace) and deletionGracePeriodSeconds.
   */
  readonly gracePeriodSeconds?: (object: ApiObject) => number;
  /**
   * Cluster-wide reservations (e.g. service cluster IPs): on create `allocate` fills in the values and names
   * one store key per value; the registry creates those keys in the same transaction as the object, only if
   * none exists (so two servers can never hand out one value), retries a collision with a new allocation,
   * and deletes them with the object.
   */
  readonly reservations?: {
    /** Fills in the values; `collision` set = the value was the client's choice: no retry, this error. */
    readonly allocate: (object: ApiObject) => { keys: string[]; collision?: FieldError };
    readonly held: (object: ApiObject) => string[];
  };
}

/** What a create-only hook knows about the request (reviews, TokenRequest). */
export interface CreateRequest {
  /** The authenticated (or impersonated) user. */
  readonly user: UserInfo;
  /** The namespace of the URL ('' for cluster-scoped paths). */
  readonly namespace: string;
  /** For a sub-resource: the name of the parent object; '' otherwise. */
  readonly name: string;
  readonly dryRun: boolean;
}

/**
 * A kind that is only created, never stored (SelfSubjectReview, SubjectAccessReview, ...): the body goes through
 * the normal create path (decoding, field validation, schema validation), then this hook answers instead of the
 * store, with 201 as kube-apiserver does. Every other verb is 405 and discovery lists only `create`.
 */
export interface VirtualKind {
  readonly create: (object: ApiObject, request: CreateRequest) => Promise<ApiObject>;
}

/** A create-only sub-resource whose body is another kind (serviceaccounts/NAME/token takes a TokenRequest). */
export interface CreateSubresource {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly schema: Schema;
  readonly create: (object: ApiObject, request: CreateRequest) => Promise<ApiObject>;
}

export interface KindDeclaration {
  /** '' for the core group. */
  readonly group: string;
  /** Served versions; the first is preferred and is the storage version. */
  readonly versions: readonly string[];
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly namespaced: boolean;
  readonly nameRule: NameRule;
  readonly schema: Schema;
  /** Whether PUT to a missing object creates it. */
  readonly allowCreateOnUpdate: boolean;
  /** The `status` sub-resource: writes to the main resource keep status, writes to `status` keep the rest. */
  readonly statusSubresource: boolean;
  /** The `scale` sub-resource (autoscaling/v1 Scale): replicas live at spec.replicas, the selector at spec.selector. */
  readonly scaleSubresource?: boolean;
  /** The `eviction` sub-resource (pods): POST an Eviction to delete the object with its delete options. */
  readonly evictionSubresource?: boolean;
  readonly tableColumns?: readonly TableColumn[];
  /** Field selectors beyond metadata.name and metadata.namespace. */
  readonly selectableFields?: Readonly<Record<string, (object: ApiObject) => string>>;
  readonly strategy?: Strategy;
  /**
   * This kind is another view of a kind stored elsewhere (events.DOMAIN/v1 Event over core/v1 Event): objects
   * are kept in that kind's storage and converted on the way in and out.
   */
  readonly storage?: {
    readonly group: string;
    readonly plural: string;
    readonly toStorage: (object: ApiObject) => ApiObject;
    readonly fromStorage: (object: ApiObject) => ApiObject;
  };
  /**
   * Whether the schema's patch strategies and merge keys are Kubernetes' own, so that strategic merge patch is
   * served (built-in kinds: yes, the default). False for kinds without declared strategies (custom resources):
   * strategic merge patch is then 415, as kube-apiserver answers for custom resources.
   */
  readonly strategicMergePatch?: boolean;
  /** Only created, never stored: see VirtualKind. */
  readonly virtual?: VirtualKind;
  /** Create-only sub-resources by name (`token`). */
  readonly createSubresources?: Readonly<Record<string, CreateSubresource>>;
  /** Verbs this kind does not serve (e.g. events are never watched by name... most serve all). */
  readonly verbs?: readonly Verb[];
  /**
   * The deprecation of versions other than the preferred one (Kubernetes' prerelease-lifecycle tags), by
   * version. Requests to a deprecated version are answered with a Warning header and counted in
   * `apiserver_requested_deprecated_apis`. Only virtual kinds serve more than one version: their versions have
   * one schema, so converting is setting apiVersion.
   */
  readonly versionLifecycle?: Readonly<Record<string, VersionLifecycle>>;
}

/** When a version of a kind was deprecated and will stop being served (`[major, minor]`). */
export interface VersionLifecycle {
  readonly deprecated: readonly [number, number];
  readonly removed?: readonly [number, number];
  readonly replacement?: { readonly group: string; readonly version: string; readonly kind: string };
}

/**
 * kube-apiserver's deprecation warning for a request to a version deprecated at or before the served release
 * (`authentication.k8s.io/v1beta1 SelfSubjectReview is deprecated in v1.30+, unavailable in v1.33+`), or
 * undefined when the version is not deprecated (yet).
 */
export function deprecationWarning(
  decl: KindDeclaration,
  version: string,
  release: { readonly major: number; readonly minor: number },
): { message: string; removedRelease: string } | undefined {
  const life = decl.versionLifecycle?.[version];
  if (life === undefined) return undefined;
  const [major, minor] = life.deprecated;
  if (release.major < major || (release.major === major && release.minor < minor)) return undefined;
  let message = `${apiVersionOf(decl.group, version)} ${decl.kind} is deprecated in v${major}.${minor}+`;
  if (life.removed !== undefined) message += `, unavailable in v${life.removed[0]}.${life.removed[1]}+`;
  if (life.replacement !== undefined) {
    message += `; use ${apiVersionOf(life.replacement.group, life.replacement.version)} ${life.replacement.kind}`;
  }
  const removedRelease = life.removed === undefined ? '' : `${life.removed[0]}.${life.removed[1]}`;
  return { message, removedRelease };
}

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';
export const allVerbs: readonly Verb[] = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
];

/** Where names that depend on --group-domain are resolved. */
export interface DomainContext {
  /** `svc.io` by default; `k8s.io` gives Kubernetes' own names. */
  readonly groupDomain: string;
  /** Service cluster IPs are allocated from this CIDR (`--service-cluster-ip-range`). */
  readonly serviceClusterIpRange: string;
}

/** A group that carries the domain: `events` → `events.svc.io` (or `events.k8s.io`). */
export function domainGroup(ctx: DomainContext, prefix: string): string {
  return `${prefix}.${ctx.groupDomain}`;
}

/** Domain-qualified labels and annotations: `kubernetes.io/...` with k8s.io, `svc.io/...` otherwise. */
export function domainPrefix(ctx: DomainContext): string {
  return ctx.groupDomain === 'k8s.io' ? 'kubernetes.io' : ctx.groupDomain;
}

/** The verbs discovery lists for a kind. */
export function verbsOf(decl: KindDeclaration): readonly Verb[] {
  return decl.virtual !== undefined ? ['create'] : (decl.verbs ?? allVerbs);
}

export function apiVersionOf(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}
