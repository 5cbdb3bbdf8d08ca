// Escalation prevention (kube-apiserver's RBAC storage wrappers): a user may create or update a Role or
// ClusterRole only with every permission it grants (held through RBAC in that namespace) or the `escalate`
// verb on it; a RoleBinding or ClusterRoleBinding only with every permission of the referenced role or the
// `bind` verb on it. system:masters is exempt. Changes only the garbage collector makes are not checked.

import type { ApiObject } from '../../apimachinery/meta.js';
import { errors, type GroupResource } from '../../apimachinery/status.js';
import type { ResourceRegistry, WriteAdmission } from '../../registry/store.js';
import type { Attributes, Authorizer } from '../authorizer.js';
import { privilegedGroup } from '../authorizer-union.js';
import type { UserInfo } from '../user.js';
import type { RbacIndex } from './index.js';
import { compactRuleString, policyRule, uncovered, type PolicyRule } from './rules.js';

const everything: PolicyRule[] = [policyRule({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] })];

function rulesOf(object: ApiObject): PolicyRule[] {
  return (Array.isArray(object.rules) ? object.rules : []).map(policyRule);
}

/** Only ownerReferences or finalizers changed (what the garbage collector writes). */
function onlyGcFields(object: ApiObject, old: ApiObject | undefined): boolean {
  if (old === undefined) return false;
  const strip = (o: ApiObject): string => {
    const {
      ownerReferences: _o,
      finalizers: _f,
      resourceVersion: _r,
      managedFields: _m,
      ...meta
    } = o.metadata;
    return JSON.stringify({ ...o, metadata: meta });
  };
  return strip(object) === strip(old);
}

function goQuoted(values: readonly string[]): string {
  return `[${values.map((v) => JSON.stringify(v)).join(' ')}]`;
}

export class EscalationCheck {
  constructor(
    private readonly index: RbacIndex,
    private readonly authorizer: Authorizer,
    private readonly rbacGroup: string,
  ) {}

  /** The admission for a write to `registry` by `user`, or undefined when it is not an RBAC kind. */
  admissionFor(user: UserInfo, registry: ResourceRegistry, namespace: string): WriteAdmission | undefined {
    if (registry.decl.group !== this.rbacGroup || user.groups.includes(privilegedGroup)) return undefined;
    const gr = registry.gr;
    switch (registry.decl.kind) {
      case 'Role':
      case 'ClusterRole':
        return (object, old) => this.checkRole(user, gr, namespace, object, old);
      case 'RoleBinding':
      case 'ClusterRoleBinding':
        return (object, old) => this.checkBinding(user, gr, namespace, object, old);
      default:
        return undefined;
    }
  }

  private async allowed(
    user: UserInfo,
    verb: string,
    resource: string,
    namespace: string,
    name: string,
  ): Promise<boolean> {
    const attributes: Attributes = {
      user,
      verb,
      isResourceRequest: true,
      path: '',
      apiGroup: this.rbacGroup,
      apiVersion: '*',
      resource,
      subresource: '',
      namespace,
      name,
    };
    return (await this.authorizer.authorize(attributes)).decision === 'allow';
  }

  private refuse(user: UserInfo, gr: GroupResource, name: string, missing: readonly PolicyRule[]): never {
    throw errors.forbiddenWrite(
      gr,
      name,
      `user ${JSON.stringify(user.name)} (groups=${goQuoted(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${missing.map(compactRuleString).join('\n')}`,
    );
  }

  private async checkRole(
    user: UserInfo,
    gr: GroupResource,
    namespace: string,
    object: ApiObject,
    old: ApiObject | undefined,
  ): Promise<void> {
    if (onlyGcFields(object, old)) return;
    const name = object.metadata.name ?? '';
    if (await this.allowed(user, 'escalate', gr.resource, namespace, name)) return;
    const owner = this.index.rulesFor(user, namespace);
    // An aggregated role may gather any permission: it needs them all.
    const granted =
      object.aggregationRule !== undefined && object.aggregationRule !== null ? everything : rulesOf(object);
    const missing = uncovered(owner, granted);
    if (missing.length > 0) this.refuse(user, gr, name, missing);
  }

  private async checkBinding(
    user: UserInfo,
    gr: GroupResource,
    namespace: string,
    object: ApiObject,
    old: ApiObject | undefined,
  ): Promise<void> {
    if (onlyGcFields(object, old)) return;
    const name = object.metadata.name ?? '';
    const roleRef = (object.roleRef ?? {}) as { kind?: unknown; name?: unknown };
    const roleKind = roleRef.kind === 'Role' ? 'Role' : 'ClusterRole';
    const roleName = typeof roleRef.name === 'string' ? roleRef.name : '';
    const roleResource = roleKind === 'Role' ? 'roles' : 'clusterroles';
    if (await this.allowed(user, 'bind', roleResource, namespace, roleName)) return;
    const rules = this.index.roleRules(roleKind, roleKind === 'Role' ? namespace : '', roleName);
    if (rules === undefined) {
      throw errors.forbiddenWrite(gr, name, `${roleResource}.${this.rbacGroup} "${roleName}" not found`);
    }
    const missing = uncovered(this.index.rulesFor(user, namespace), rules);
    if (missing.length > 0) this.refuse(user, gr, name, missing);
  }
}
