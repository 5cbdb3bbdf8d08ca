// RBAC policy rules and how a request matches them (kube-apiserver's rbac.RuleAllows), plus coverage of one
// rule set by another for escalation checks (its validation.Covers). Rules only add: there is no deny rule.

import type { Attributes } from '../authorizer.js';

export interface PolicyRule {
  readonly verbs: readonly string[];
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly resourceNames: readonly string[];
  readonly nonResourceURLs: readonly string[];
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** A rule from its JSON form; missing lists are empty. */
export function policyRule(value: unknown): PolicyRule {
  const r = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  return {
    verbs: strings(r.verbs),
    apiGroups: strings(r.apiGroups),
    resources: strings(r.resources),
    resourceNames: strings(r.resourceNames),
    nonResourceURLs: strings(r.nonResourceURLs),
  };
}

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === '*' || v === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return rule.apiGroups.some((g) => g === '*' || g === group);
}

/**
 * `*` matches all; `pods/log` that sub-resource; `*\/scale` the scale sub-resource of any resource. As in
 * kube-apiserver, `pods/*` is not a wildcard when authorizing (only when checking coverage).
 */
export function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource === '' ? resource : `${resource}/${subresource}`;
  return rule.resources.some(
    (r) => r === '*' || r === combined || (subresource !== '' && r === `*/${subresource}`),
  );
}

/** No names = all names; otherwise the request must name one of them (an unnamed request never matches). */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  return rule.resourceNames.length === 0 || (name !== '' && rule.resourceNames.includes(name));
}

/** `*` matches all; a trailing `*` matches by prefix; otherwise the exact path. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  return rule.nonResourceURLs.some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

export function ruleAllows(attributes: Attributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, attributes.verb)) return false;
  if (attributes.isResourceRequest) {
    return (
      apiGroupMatches(rule, attributes.apiGroup) &&
      resourceMatches(rule, attributes.resource, attributes.subresource) &&
      resourceNameMatches(rule, attributes.name)
    );
  }
  return nonResourceURLMatches(rule, attributes.path);
}

// ---- coverage (escalation prevention)

function hasAll(values: readonly string[], wildcard: string): boolean {
  return values.includes(wildcard);
}

/** One servant rule broken into rules of a single verb, group, resource and name (or URL). */
function atoms(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs) {
    for (const url of rule.nonResourceURLs)
      out.push({ verbs: [verb], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [url] });
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        if (rule.resourceNames.length === 0)
          out.push({
            verbs: [verb],
            apiGroups: [group],
            resources: [resource],
            resourceNames: [],
            nonResourceURLs: [],
          });
        for (const name of rule.resourceNames)
          out.push({
            verbs: [verb],
            apiGroups: [group],
            resources: [resource],
            resourceNames: [name],
            nonResourceURLs: [],
          });
      }
    }
  }
  return out;
}

function resourceCovers(owner: readonly string[], servant: string): boolean {
  if (owner.includes('*') || owner.includes(servant)) return true;
  const slash = servant.indexOf('/');
  return (
    slash > 0 &&
    (owner.includes(`${servant.slice(0, slash)}/*`) || owner.includes(`*/${servant.slice(slash + 1)}`))
  );
}

function urlCovers(owner: readonly string[], servant: string): boolean {
  return owner.some(
    (u) => u === servant || u === '*' || (u.endsWith('*') && servant.startsWith(u.slice(0, -1))),
  );
}

function ruleCovers(owner: PolicyRule, servant: PolicyRule): boolean {
  const verbs = hasAll(owner.verbs, '*') || servant.verbs.every((v) => owner.verbs.includes(v));
  const groups = hasAll(owner.apiGroups, '*') || servant.apiGroups.every((g) => owner.apiGroups.includes(g));
  const resources = servant.resources.every((r) => resourceCovers(owner.resources, r));
  const urls = servant.nonResourceURLs.every((u) => urlCovers(owner.nonResourceURLs, u));
  const names =
    owner.resourceNames.length === 0 || servant.resourceNames.every((n) => owner.resourceNames.includes(n));
  // A rule limited to names never covers an unnamed one.
  const namedOnly = owner.resourceNames.length > 0 && servant.resourceNames.length === 0;
  return verbs && groups && resources && urls && names && !namedOnly;
}

/** The servant rules `owner` does not cover (empty = covered), as atomic rules. */
export function uncovered(owner: readonly PolicyRule[], servant: readonly PolicyRule[]): PolicyRule[] {
  const missing: PolicyRule[] = [];
  for (const rule of servant)
    for (const atom of atoms(rule)) if (!owner.some((o) => ruleCovers(o, atom))) missing.push(atom);
  return missing;
}

/** As kube-apiserver prints rules in escalation errors: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`. */
export function compactRuleString(rule: PolicyRule): string {
  const q = (values: readonly string[]): string => `[${values.map((v) => JSON.stringify(v)).join(' ')}]`;
  const parts: string[] = [];
  if (rule.apiGroups.length > 0) parts.push(`APIGroups:${q(rule.apiGroups)}`);
  if (rule.resources.length > 0) parts.push(`Resources:${q(rule.resources)}`);
  if (rule.resourceNames.length > 0) parts.push(`ResourceNames:${q(rule.resourceNames)}`);
  if (rule.nonResourceURLs.length > 0) parts.push(`NonResourceURLs:${q(rule.nonResourceURLs)}`);
  parts.push(`Verbs:${q(rule.verbs)}`);
  return `{${parts.join(', ')}}`;
}
