// RBAC at start and at run time: the default cluster roles and bindings are reconciled at every start (missing
// ones created, missing rules, subjects, labels and annotations added, nothing removed; skipped when annotated
// autoupdate=false), and the aggregation controller keeps each aggregated ClusterRole's rules equal to the union
// of the rules of the ClusterRoles its selectors match (manual rules are overwritten).

import type { Logger } from 'pino';
import { domainGroup, type DomainContext } from '../apimachinery/kind.js';
import type { ApiObject } from '../apimachinery/meta.js';
import { ApiError } from '../apimachinery/status.js';
import { autoupdateAnnotations, bootstrapPolicy } from '../auth/rbac/bootstrap.js';
import { policyRule, uncovered } from '../auth/rbac/rules.js';
import type { Registries } from '../registry/index.js';
import type { ResourceRegistry } from '../registry/store.js';

const retryIntervalMs = 500;

function rbacRegistry(registries: Registries, ctx: DomainContext, plural: string): ResourceRegistry {
  const registry = registries.find(domainGroup(ctx, 'rbac.authorization'), 'v1', plural);
  if (registry === undefined) throw new Error(`${plural} are not registered`);
  return registry;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function keepsAsIs(object: ApiObject, ctx: DomainContext): boolean {
  const annotations = object.metadata.annotations ?? {};
  return autoupdateAnnotations(ctx).some((a) => annotations[a] === 'false');
}

function mergedMeta(existing: ApiObject, expected: ApiObject): void {
  existing.metadata.labels = { ...expected.metadata.labels, ...existing.metadata.labels };
  existing.metadata.annotations = { ...expected.metadata.annotations, ...existing.metadata.annotations };
}

function reconcileRole(existing: ApiObject, expected: ApiObject): ApiObject {
  const next = structuredClone(existing);
  mergedMeta(next, expected);
  if (expected.aggregationRule !== undefined) {
    const have = list(
      (next.aggregationRule as { clusterRoleSelectors?: unknown } | undefined)?.clusterRoleSelectors,
    );
    const want = list((expected.aggregationRule as { clusterRoleSelectors?: unknown }).clusterRoleSelectors);
    const missing = want.filter((w) => !have.some((h) => JSON.stringify(h) === JSON.stringify(w)));
    next.aggregationRule = { clusterRoleSelectors: [...have, ...missing] };
    return next;
  }
  const missing = uncovered(list(next.rules).map(policyRule), list(expected.rules).map(policyRule));
  if (missing.length > 0) {
    next.rules = [
      ...list(next.rules),
      ...missing.map((m) =>
        Object.fromEntries(Object.entries(m).filter(([, v]) => (v as unknown[]).length > 0)),
      ),
    ];
  }
  return next;
}

function reconcileBinding(existing: ApiObject, expected: ApiObject): ApiObject {
  const next = structuredClone(existing);
  mergedMeta(next, expected);
  const have = list(next.subjects);
  const key = (s: unknown): string => {
    const o = s as Record<string, unknown>;
    return JSON.stringify([o.kind, o.namespace ?? '', o.name]);
  };
  const missing = list(expected.subjects).filter((w) => !have.some((h) => key(h) === key(w)));
  if (missing.length > 0) next.subjects = [...have, ...missing];
  return next;
}

async function ensure(
  registry: ResourceRegistry,
  expected: ApiObject,
  ctx: DomainContext,
  reconcile: (existing: ApiObject, expected: ApiObject) => ApiObject,
): Promise<'created' | 'updated' | 'kept'> {
  const name = expected.metadata.name ?? '';
  const namespace = expected.metadata.namespace ?? '';
  const cached = registry.cache.get(registry.key(namespace, name));
  if (cached === undefined) {
    try {
      await registry.create(namespace, structuredClone(expected), { dryRun: false });
      return 'created';
    } catch (error) {
      if (!(error instanceof ApiError && error.reason === 'AlreadyExists')) throw error;
      return 'kept';
    }
  }
  const existing = cached.object;
  if (keepsAsIs(existing, ctx)) return 'kept';
  const roleRefChanged =
    expected.roleRef !== undefined && JSON.stringify(existing.roleRef) !== JSON.stringify(expected.roleRef);
  if (roleRefChanged) {
    await registry.delete(namespace, name, { dryRun: false });
    await registry.create(namespace, structuredClone(expected), { dryRun: false });
    return 'updated';
  }
  const next = reconcile(existing, expected);
  if (JSON.stringify(next) === JSON.stringify(existing)) return 'kept';
  await registry.patch(namespace, name, (current) => reconcile(current, expected), {
    dryRun: false,
    subresource: '',
  });
  return 'updated';
}

/** Creates or completes the default cluster roles and bindings (kube-apiserver's rbac/bootstrap-roles hook). */
export async function reconcileDefaultRbac(
  registries: Registries,
  ctx: DomainContext,
  logger: Logger,
): Promise<void> {
  const policy = bootstrapPolicy(ctx);
  const roles = rbacRegistry(registries, ctx, 'clusterroles');
  const bindings = rbacRegistry(registries, ctx, 'clusterrolebindings');
  for (const role of policy.clusterRoles) {
    const outcome = await ensure(roles, role, ctx, reconcileRole);
    if (outcome !== 'kept') logger.info({ clusterrole: role.metadata.name, outcome }, 'default RBAC');
  }
  for (const binding of policy.clusterRoleBindings) {
    const outcome = await ensure(bindings, binding, ctx, reconcileBinding);
    if (outcome !== 'kept')
      logger.info({ clusterrolebinding: binding.metadata.name, outcome }, 'default RBAC');
  }
  // cluster-info in kube-public is readable anonymously (what kubeadm sets up for bootstrap-token discovery).
  const labels = policy.clusterRoles[0]?.metadata.labels ?? {};
  const name = 'kubeadm:bootstrap-signer-clusterinfo';
  const rbacGroup = domainGroup(ctx, 'rbac.authorization');
  const role: ApiObject = {
    metadata: { name, namespace: 'kube-public', labels },
    rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'], verbs: ['get'] }],
  };
  const binding: ApiObject = {
    metadata: { name, namespace: 'kube-public', labels },
    roleRef: { apiGroup: rbacGroup, kind: 'Role', name },
    subjects: [{ apiGroup: rbacGroup, kind: 'User', name: 'system:anonymous' }],
  };
  for (const [plural, object, reconcile] of [
    ['roles', role, reconcileRole],
    ['rolebindings', binding, reconcileBinding],
  ] as const) {
    const outcome = await ensure(rbacRegistry(registries, ctx, plural), object, ctx, reconcile);
    if (outcome !== 'kept') logger.info({ [plural]: `kube-public/${name}`, outcome }, 'default RBAC');
  }
}

// ---- aggregation

interface LabelSelector {
  readonly matchLabels?: Record<string, string>;
  readonly matchExpressions?: readonly { key: string; operator: string; values?: string[] }[];
}

export function labelSelectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  const matchLabels = selector.matchLabels ?? {};
  const expressions = selector.matchExpressions ?? [];
  // An empty selector selects nothing here (as kube-apiserver's aggregation: a role must opt in).
  if (Object.keys(matchLabels).length === 0 && expressions.length === 0) return false;
  for (const [k, v] of Object.entries(matchLabels)) if (labels[k] !== v) return false;
  for (const e of expressions) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key] ?? '';
    const values = e.values ?? [];
    const ok =
      e.operator === 'In'
        ? has && values.includes(value)
        : e.operator === 'NotIn'
          ? !has || !values.includes(value)
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** The rules an aggregated role should have: those of the roles its selectors match, in name order, deduplicated. */
export function aggregatedRules(role: ApiObject, all: readonly ApiObject[]): unknown[] {
  const selectors = list(
    (role.aggregationRule as { clusterRoleSelectors?: unknown } | undefined)?.clusterRoleSelectors,
  );
  const sources = all
    .filter((other) => other.metadata.name !== role.metadata.name)
    .filter((other) =>
      selectors.some((s) => labelSelectorMatches(s as LabelSelector, other.metadata.labels ?? {})),
    )
    .sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
  const out: unknown[] = [];
  const seen = new Set<string>();
  for (const source of sources) {
    for (const rule of list(source.rules)) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(rule);
    }
  }
  return out;
}

export class AggregationController {
  private running = false;
  private pending = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly roles: ResourceRegistry;

  constructor(
    registries: Registries,
    ctx: DomainContext,
    private readonly logger: Logger,
  ) {
    this.roles = rbacRegistry(registries, ctx, 'clusterroles');
  }

  start(): void {
    const cache = this.roles.cache;
    this.unsubscribe = cache.subscribe(cache.revision, () => this.kick()).unsubscribe;
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
  }

  private kick(): void {
    if (this.stopped) return;
    this.pending = true;
    if (!this.running) void this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.pending && !this.stopped) {
        this.pending = false;
        try {
          await this.syncAll();
        } catch (error) {
          this.logger.warn({ err: error }, 'cluster role aggregation failed; will retry');
          this.retryTimer = setTimeout(() => this.kick(), retryIntervalMs);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async syncAll(): Promise<void> {
    const all = this.roles.cache.snapshot().entries.map((e) => e.object);
    for (const role of all) {
      if (role.aggregationRule === undefined || role.aggregationRule === null) continue;
      const rules = aggregatedRules(role, all);
      if (JSON.stringify(list(role.rules)) === JSON.stringify(rules)) continue;
      await this.roles
        .patch('', role.metadata.name ?? '', (current) => ({ ...current, rules }), {
          dryRun: false,
          subresource: '',
        })
        .catch((error: unknown) => {
          if (!(error instanceof ApiError && error.reason === 'NotFound')) throw error;
        });
    }
  }
}
