// The authorization layer of one server: the RBAC index fed from the registries' watch caches, the modes of
// --authorization-mode (or of the AuthorizationConfiguration file) in order, the union over them, and the
// system:masters bypass in front. `authorizer` is what the filter, impersonation and access reviews ask.

import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { domainGroup, domainPrefix, type DomainContext } from '../apimachinery/kind.js';
import type { Registries } from '../registry/index.js';
import type { ResourceRegistry } from '../registry/store.js';
import type { AuthorizationFlags, AuthorizerType } from '../server/authorization-flags.js';
import { unreachable } from '../util/assert.js';
import { AbacAuthorizer } from './abac.js';
import {
  AuthorizationConfigError,
  parseAuthorizationConfig,
  reloadRefusal,
  type AuthorizerSpec,
} from './authorization-config.js';
import { readWebhookKubeconfig, WebhookAuthorizer } from './webhook-authorizer.js';
import {
  requirementsOfRaw,
  type AccessReviewer,
  type NonResourceRule,
  type ResourceRule,
  type RulesResult,
} from './access-review.js';
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

const configReloadIntervalMs = 60_000;
/** How long file events must be quiet before the changed file is read. */
const configChangeSettleMs = 100;

function parseAuthorizationConfigFile(source: string, file: string, domain: DomainContext): AuthorizerSpec[] {
  try {
    return parseAuthorizationConfig(source, domainGroup(domain, 'apiserver.config'));
  } catch (error) {
    if (error instanceof AuthorizationConfigError)
      throw new AuthorizationConfigError(`--authorization-config ${file}: ${error.message}`);
    throw error;
  }
}

function specsOfFlags(flags: AuthorizationFlags): AuthorizerSpec[] {
  return flags.modes.map((type) =>
    type === 'Webhook'
      ? {
          type,
          name: 'webhook',
          webhook: {
            name: 'webhook',
            version: flags.webhookVersion,
            authorizedTtlMs: flags.webhookAuthorizedTtlMs,
            unauthorizedTtlMs: flags.webhookUnauthorizedTtlMs,
            timeoutMs: 30_000,
            failurePolicy: 'NoOpinion',
            kubeconfigFile: flags.webhookConfigFile ?? '',
            matchConditions: [],
          },
        }
      : { type, name: type.toLowerCase() },
  );
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
  private specs: readonly AuthorizerSpec[] = [];
  private node: NodeAuthorizer | undefined;
  private configFile: string | undefined;
  private lastSource: string | undefined;
  private reloading = false;
  private reloadTimer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
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
    if (flags.configFile !== undefined) {
      authorization.configFile = flags.configFile;
      authorization.specs = authorization.readConfig(await readFile(flags.configFile, 'utf8'));
    } else {
      authorization.specs = specsOfFlags(flags);
    }
    authorization.chain = await authorization.buildChain(authorization.specs, flags.policyFile);
    return authorization;
  }

  /**
   * Reads and checks every file the modes need (ABAC policy, AuthorizationConfiguration, webhook kubeconfigs)
   * before the server opens its store, so a bad file stops the start cleanly with a message naming it.
   */
  static async preflight(flags: AuthorizationFlags, domain: DomainContext): Promise<void> {
    const specs =
      flags.configFile === undefined
        ? specsOfFlags(flags)
        : parseAuthorizationConfigFile(await readFile(flags.configFile, 'utf8'), flags.configFile, domain);
    for (const spec of specs) {
      if (spec.type === 'ABAC') await AbacAuthorizer.load(flags.policyFile ?? '', domainPrefix(domain));
      if (spec.webhook !== undefined) readWebhookKubeconfig(spec.webhook.kubeconfigFile);
    }
  }

  get modes(): readonly NamedAuthorizer[] {
    return this.chain;
  }

  private readConfig(source: string): AuthorizerSpec[] {
    return parseAuthorizationConfigFile(source, this.configFile ?? '', this.deps.domain);
  }

  private async buildChain(
    specs: readonly AuthorizerSpec[],
    policyFile?: string,
  ): Promise<NamedAuthorizer[]> {
    const chain: NamedAuthorizer[] = [];
    for (const spec of specs) chain.push(await this.build(spec, policyFile));
    return chain;
  }

  private async build(spec: AuthorizerSpec, policyFile: string | undefined): Promise<NamedAuthorizer> {
    const { type, name } = spec;
    switch (type) {
      case 'AlwaysAllow':
        return { type, name, authorizer: alwaysAllow, listsRules: true };
      case 'AlwaysDeny':
        return { type, name, authorizer: alwaysDeny, listsRules: true };
      case 'RBAC':
        return { type, name, authorizer: this.rbac, listsRules: true };
      case 'Node':
        this.node ??= new NodeAuthorizer(
          podSource(this.deps.registries),
          '',
          domainGroup(this.deps.domain, 'coordination'),
        );
        return { type, name, authorizer: this.node, listsRules: false };
      case 'ABAC':
        return {
          type,
          name,
          authorizer: await AbacAuthorizer.load(policyFile ?? '', domainPrefix(this.deps.domain)),
          listsRules: false,
        };
      case 'Webhook': {
        if (spec.webhook === undefined) throw new Error(`webhook authorizer ${name} has no configuration`);
        const webhook = new WebhookAuthorizer({
          ...spec.webhook,
          group: domainGroup(this.deps.domain, 'authorization'),
        });
        return { type, name, authorizer: webhook, listsRules: false };
      }
      default:
        return unreachable(type);
    }
  }

  /**
   * --authorization-config is read again when the file changes and every 60 s; a new valid configuration
   * replaces the chain, unless it adds or removes Node or RBAC (then it is refused and the old one stays).
   */
  startReload(): void {
    const file = this.configFile;
    if (file === undefined) return;
    // A change that arrives while a reload runs is not dropped: that reload may have read the file half
    // written (an editor truncates, then writes), so it runs once more afterwards.
    let again = false;
    const reload = (): void => {
      if (this.reloading) {
        again = true;
        return;
      }
      this.reloading = true;
      void this.reload(file).finally(() => {
        this.reloading = false;
        if (again) {
          again = false;
          reload();
        }
      });
    };
    this.reloadTimer = setInterval(reload, configReloadIntervalMs);
    this.reloadTimer.unref();
    // File events come in bursts (truncate, write): read once they settle.
    let settle: NodeJS.Timeout | undefined;
    const changed = (): void => {
      clearTimeout(settle);
      settle = setTimeout(reload, configChangeSettleMs);
      settle.unref();
    };
    try {
      this.watcher = watch(file, changed);
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No file watching here: the 60 s interval still reloads.
    }
  }

  /** Returns whether the new configuration was taken (or identical). */
  async reload(file: string): Promise<boolean> {
    let source: string;
    try {
      source = await readFile(file, 'utf8');
    } catch (error) {
      this.deps.logger.error({ err: error, file }, 'authorization configuration reload failed');
      return false;
    }
    if (source === this.lastSource) return true;
    try {
      const specs = this.readConfig(source);
      const refusal = reloadRefusal(this.specs, specs);
      if (refusal !== undefined) throw new AuthorizationConfigError(refusal);
      this.chain = await this.buildChain(specs);
      this.specs = specs;
      this.lastSource = source;
      this.deps.logger.info(
        { file, authorizers: specs.map((s) => s.name) },
        'authorization configuration reloaded',
      );
      return true;
    } catch (error) {
      this.deps.logger.error({ err: error, file }, 'authorization configuration reload refused');
      return false;
    }
  }

  /**
   * What the request filter asks: the chain, and with the AuthorizeWithSelectors gate the request's label and
   * field selectors as requirements (webhooks receive them; they can only limit a request).
   */
  requestAuthorizer(selectorsEnabled: boolean): Authorizer {
    if (!selectorsEnabled) return this.authorizer;
    return {
      authorize: (a) => {
        const field = a.fieldSelector === undefined ? undefined : requirementsOfRaw(a.fieldSelector, 'field');
        const label = a.labelSelector === undefined ? undefined : requirementsOfRaw(a.labelSelector, 'label');
        return this.authorizer.authorize({
          ...a,
          ...(field === undefined ? {} : { fieldRequirements: field }),
          ...(label === undefined ? {} : { labelRequirements: label }),
        });
      },
    };
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
    if (this.reloadTimer !== undefined) clearInterval(this.reloadTimer);
    this.watcher?.close();
    for (const u of this.unsubscribes) u();
  }
}
