// The RBAC index: roles' compiled rules by name, and bindings by subject, so a decision looks up only the
// bindings that name the user, its groups or its service account (never a scan of every binding). It is fed
// object by object (from the registries' watch caches in the server, directly in tests and the benchmark).

import type { ApiObject } from '../../apimachinery/meta.js';
import { unreachable } from '../../util/assert.js';
import type { UserInfo } from '../user.js';
import { policyRule, type PolicyRule } from './rules.js';

export type RbacKind = 'Role' | 'ClusterRole' | 'RoleBinding' | 'ClusterRoleBinding';

interface BindingEntry {
  readonly kind: 'RoleBinding' | 'ClusterRoleBinding';
  readonly namespace: string;
  readonly name: string;
  readonly roleKind: 'Role' | 'ClusterRole';
  readonly roleName: string;
  /** Index keys this binding is filed under (to unfile it on change). */
  readonly keys: readonly string[];
}

/** A rule together with where it came from (for reasons and rules reviews). */
export interface SourcedRule {
  readonly rule: PolicyRule;
  readonly binding: BindingEntry;
  readonly subject: string;
}

const serviceAccountPrefix = 'system:serviceaccount:';

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The user names and groups a subject stands for, as index keys (`u:` + user name, `g:` + group). */
function subjectKey(subject: Record<string, unknown>, bindingNamespace: string): string | undefined {
  const name = text(subject.name);
  switch (subject.kind) {
    case 'User':
      return `u:${name}`;
    case 'Group':
      return `g:${name}`;
    case 'ServiceAccount': {
      const namespace = text(subject.namespace) === '' ? bindingNamespace : text(subject.namespace);
      return namespace === '' ? undefined : `u:${serviceAccountPrefix}${namespace}:${name}`;
    }
    default:
      return undefined;
  }
}

function subjectText(key: string): string {
  return key.startsWith('u:') ? `User "${key.slice(2)}"` : `Group "${key.slice(2)}"`;
}

export class RbacIndex {
  private readonly clusterRoles = new Map<string, PolicyRule[]>();
  private readonly roles = new Map<string, PolicyRule[]>();
  /** subject key → bindings (ClusterRoleBindings under the bare key, RoleBindings under `ns\0key`). */
  private readonly bySubject = new Map<string, Map<string, BindingEntry>>();
  private readonly bindings = new Map<string, BindingEntry>();

  get bindingCount(): number {
    return this.bindings.size;
  }

  upsert(kind: RbacKind, object: ApiObject): void {
    const namespace = object.metadata.namespace ?? '';
    const name = object.metadata.name ?? '';
    switch (kind) {
      case 'Role':
        this.roles.set(`${namespace}/${name}`, rulesOf(object));
        return;
      case 'ClusterRole':
        this.clusterRoles.set(name, rulesOf(object));
        return;
      case 'RoleBinding':
      case 'ClusterRoleBinding':
        this.remove(kind, object);
        this.addBinding(kind, namespace, name, object);
        return;
      default:
        unreachable(kind);
    }
  }

  remove(kind: RbacKind, object: ApiObject): void {
    const namespace = object.metadata.namespace ?? '';
    const name = object.metadata.name ?? '';
    switch (kind) {
      case 'Role':
        this.roles.delete(`${namespace}/${name}`);
        return;
      case 'ClusterRole':
        this.clusterRoles.delete(name);
        return;
      case 'RoleBinding':
      case 'ClusterRoleBinding': {
        const id = `${kind}/${namespace}/${name}`;
        const entry = this.bindings.get(id);
        if (entry === undefined) return;
        this.bindings.delete(id);
        for (const key of entry.keys) {
          const filed = this.bySubject.get(key);
          filed?.delete(id);
          if (filed?.size === 0) this.bySubject.delete(key);
        }
        return;
      }
      default:
        unreachable(kind);
    }
  }

  private addBinding(
    kind: 'RoleBinding' | 'ClusterRoleBinding',
    namespace: string,
    name: string,
    object: ApiObject,
  ): void {
    const roleRef = (object.roleRef ?? {}) as Record<string, unknown>;
    const roleKind = roleRef.kind === 'Role' && kind === 'RoleBinding' ? 'Role' : 'ClusterRole';
    const keys = new Set<string>();
    for (const raw of Array.isArray(object.subjects) ? object.subjects : []) {
      if (raw === null || typeof raw !== 'object') continue;
      const key = subjectKey(raw as Record<string, unknown>, namespace);
      if (key !== undefined) keys.add(kind === 'RoleBinding' ? `${namespace}\0${key}` : key);
    }
    const id = `${kind}/${namespace}/${name}`;
    const entry: BindingEntry = {
      kind,
      namespace,
      name,
      roleKind,
      roleName: text(roleRef.name),
      keys: [...keys],
    };
    this.bindings.set(id, entry);
    for (const key of keys) {
      let filed = this.bySubject.get(key);
      if (filed === undefined) this.bySubject.set(key, (filed = new Map()));
      filed.set(id, entry);
    }
  }

  private rulesOfBinding(binding: BindingEntry): readonly PolicyRule[] {
    return binding.roleKind === 'Role'
      ? (this.roles.get(`${binding.namespace}/${binding.roleName}`) ?? [])
      : (this.clusterRoles.get(binding.roleName) ?? []);
  }

  /** The rules of a role as stored (for escalation checks of bindings); undefined when it does not exist. */
  roleRules(
    kind: 'Role' | 'ClusterRole',
    namespace: string,
    name: string,
  ): readonly PolicyRule[] | undefined {
    return kind === 'Role' ? this.roles.get(`${namespace}/${name}`) : this.clusterRoles.get(name);
  }

  /**
   * Visits every rule that applies to `user` in `namespace` ('' = cluster-wide bindings only) until `visit`
   * returns true; returns the rule that stopped the walk.
   */
  visit(user: UserInfo, namespace: string, visit: (rule: SourcedRule) => boolean): SourcedRule | undefined {
    const keys = [`u:${user.name}`, ...user.groups.map((g) => `g:${g}`)];
    for (const key of keys) {
      const found = this.visitFiled(key, key, visit);
      if (found !== undefined) return found;
    }
    if (namespace === '') return undefined;
    for (const key of keys) {
      const found = this.visitFiled(`${namespace}\0${key}`, key, visit);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  private visitFiled(
    indexKey: string,
    subject: string,
    visit: (rule: SourcedRule) => boolean,
  ): SourcedRule | undefined {
    const filed = this.bySubject.get(indexKey);
    if (filed === undefined) return undefined;
    for (const binding of filed.values()) {
      for (const rule of this.rulesOfBinding(binding)) {
        const sourced = { rule, binding, subject };
        if (visit(sourced)) return sourced;
      }
    }
    return undefined;
  }

  /** Every rule that applies to `user` in `namespace` (rules reviews, escalation checks). */
  rulesFor(user: UserInfo, namespace: string): PolicyRule[] {
    const out: PolicyRule[] = [];
    this.visit(user, namespace, (r) => {
      out.push(r.rule);
      return false;
    });
    return out;
  }
}

function rulesOf(object: ApiObject): PolicyRule[] {
  return (Array.isArray(object.rules) ? object.rules : []).map(policyRule);
}

/** kube-apiserver's allow reason: `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`. */
export function allowReason(rule: SourcedRule): string {
  const b = rule.binding;
  const where =
    b.kind === 'RoleBinding' ? `RoleBinding "${b.name}/${b.namespace}"` : `ClusterRoleBinding "${b.name}"`;
  return `RBAC: allowed by ${where} of ${b.roleKind} "${b.roleName}" to ${subjectText(rule.subject)}`;
}
