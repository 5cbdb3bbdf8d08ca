// The authorization layer of one server: the RBAC index fed from the registries' watch caches, the modes of
// --authorization-mode (or of the AuthorizationConfiguration file) in order, the union over them, and the
// system:masters bypass in front. `authorizer` is what the filter, impersonation and access reviews ask.

import type { Logger } from 'pino';
import { domainGroup, domainPrefix, type DomainContext } from '../apimachinery/kind.js';
import type { Registries } from '../registry/index.js';
import type { ResourceRegistry } from '../registry/store.js';
import type { AuthorizationFlags, AuthorizerType } from '../server/authorization-flags.js';
import { unreachable } from '../util/assert.js';
import { AbacAuthorizer } from './abac.js';
import type { AccessReviewer, NonResourceRule, ResourceRule, RulesResult } from './access-review.js';
import type { UserInfo } from './user.js';
import type { PolicyRule } from './rbac/rules.js';
import { alwaysAllow, alwaysDeny } from './always.js';
import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';
import { NodeAuthorizer, type PodSource } from './node-authorizer.js';
import { RbacAuthorizer } from './rbac/authorizer.js';
import { EscalationCheck } from './rbac/escalation.js';
import { RbacIndex, type RbacKind } from './rbac/index.js';
import { UnionAuthorizer, withPrivilegedGroup } from './authorizer-union.js';

export interface AuthorizationDeps {
  readonly registries: Registries;
  readonly domain: DomainContext;
  readonly logger: Logger;
}

const rbacResources: readonly [RbacKind, string][] = [
  ['Role', 'roles'],
  ['ClusterRole', 'clusterroles'],
  ['RoleBinding', 'rolebindings'],
  ['ClusterRoleBinding', 'clusterrolebindings'],
];

/** Pods by node from the pods watch cache (a scan; only node users ask). */
function podSource(registries: Registries): PodSource {
  const pods = registries.find('', 'v1', 'pods');
  return {
    podsOnNode: (node, namespace) => {
      if (pods === undefined) return [];
      const prefix = namespace === '' ? pods.prefix : `${pods.prefix}${namespace}/`;
      return pods.cache
        .snapshot(prefix)
        .entries.map((e) => e.object)
        .filter((p) => (p.spec as { nodeName?: unknown } | undefined)?.nodeName === node);
    },
  };
}

export interface NamedAuthorizer {
  readonly type: AuthorizerType;
  readonly name: string;
  readonly authorizer: Authorizer;
  /** Whether this mode can list a user's rules (SelfSubjectRulesReview); others make the answer incomplete. */
  readonly listsRules: boolean;
}

export class Authorization {
  readonly index = new RbacIndex();
  readonly rbac = new RbacAuthorizer(this.index);
  private chain: readonly NamedAuthorizer[] = [];
  /** system:masters, then the modes in order. */
  readonly authorizer: Authorizer;
  private readonly unsubscribes: (() => void)[] = [];

  private constructor(private readonly deps: AuthorizationDeps) {
    const union = new UnionAuthorizer(() => this.chain.map((c) => c.authorizer));
    this.authorizer = withPrivilegedGroup(union);
  }

  /** Builds the modes; a bad policy or configuration file throws (the server does not start). */
  static async create(flags: AuthorizationFlags, deps: AuthorizationDeps): Promise<Authorization> {
    const authorization = new Authorization(deps);
    const chain: NamedAuthorizer[] = [];
    for (const type of flags.modes) chain.push(await authorization.build(type, flags));
    authorization.chain = chain;
    return authorization;
  }

  get modes(): readonly NamedAuthorizer[] {
    return this.chain;
  }

  private async build(type: AuthorizerType, flags: AuthorizationFlags): Promise<NamedAuthorizer> {
    const name = type.toLowerCase();
    switch (type) {
      case 'AlwaysAllow':
        return { type, name, authorizer: alwaysAllow, listsRules: false };
      case 'AlwaysDeny':
        return { type, name, authorizer: alwaysDeny, listsRules: true };
      case 'RBAC':
        return { type, name, authorizer: this.rbac, listsRules: true };
      case 'Node':
        return {
          type,
          name,
          authorizer: new NodeAuthorizer(
            podSource(this.deps.registries),
            '',
            domainGroup(this.deps.domain, 'coordination'),
          ),
          listsRules: false,
        };
      case 'ABAC':
        return {
          type,
          name,
          authorizer: await AbacAuthorizer.load(flags.policyFile ?? '', domainPrefix(this.deps.domain)),
          listsRules: false,
        };
      case 'Webhook':
        throw new Error('authorization mode Webhook is not available yet');
      default:
        return unreachable(type);
    }
  }

  /** What the access review kinds ask: the whole chain, and the rules of the modes that can list them. */
  reviewer(selectorsEnabled: boolean): AccessReviewer {
    return {
      authorize: (attributes) => this.authorizer.authorize(attributes),
      rulesFor: (user, namespace) => this.rulesFor(user, namespace),
      selectorsEnabled,
    };
  }

  /** SelfSubjectRulesReview: rules of every mode in order; a mode that cannot list them makes it incomplete. */
  rulesFor(user: UserInfo, namespace: string): RulesResult {
    const resourceRules: ResourceRule[] = [];
    const nonResourceRules: NonResourceRule[] = [];
    let incomplete = false;
    const add = (rule: PolicyRule): void => {
      if (rule.nonResourceURLs.length > 0) {
        nonResourceRules.push({ verbs: [...rule.verbs], nonResourceURLs: [...rule.nonResourceURLs] });
      } else {
        resourceRules.push({
          verbs: [...rule.verbs],
          apiGroups: [...rule.apiGroups],
          resources: [...rule.resources],
          ...(rule.resourceNames.length > 0 ? { resourceNames: [...rule.resourceNames] } : {}),
        });
      }
    };
    for (const mode of this.chain) {
      switch (mode.type) {
        case 'RBAC':
          for (const rule of this.index.rulesFor(user, namespace)) add(rule);
          break;
        case 'AlwaysAllow':
          resourceRules.push({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] });
          nonResourceRules.push({ verbs: ['*'], nonResourceURLs: ['*'] });
          break;
        case 'AlwaysDeny':
          break;
        case 'ABAC':
        case 'Node':
        case 'Webhook':
          incomplete = true;
          break;
        default:
          unreachable(mode.type);
      }
    }
    return { resourceRules, nonResourceRules, incomplete, evaluationError: '' };
  }

  /** RBAC escalation prevention, for the resource handlers' write admission. */
  escalation(): EscalationCheck {
    return new EscalationCheck(
      this.index,
      this.authorizer,
      domainGroup(this.deps.domain, 'rbac.authorization'),
    );
  }

  /** Feeds the RBAC index from the watch caches (after the registries started). */
  start(): void {
    const group = domainGroup(this.deps.domain, 'rbac.authorization');
    for (const [kind, plural] of rbacResources) {
      const registry = this.deps.registries.find(group, 'v1', plural);
      if (registry !== undefined) this.follow(kind, registry);
    }
  }

  private follow(kind: RbacKind, registry: ResourceRegistry): void {
    const cache = registry.cache;
    const sub = cache.subscribe(cache.revision, (events) => {
      for (const e of events) {
        if (e.type === 'DELETED') this.index.remove(kind, e.object);
        else this.index.upsert(kind, e.object);
      }
    });
    this.unsubscribes.push(sub.unsubscribe);
    for (const entry of cache.snapshot().entries) this.index.upsert(kind, entry.object);
  }

  authorize(attributes: Attributes): Promise<AuthorizationResult> {
    return this.authorizer.authorize(attributes);
  }

  close(): void {
    for (const u of this.unsubscribes) u();
  }
}
