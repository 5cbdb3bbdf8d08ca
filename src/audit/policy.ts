// The audit policy (audit.<domain>/v1 Policy, YAML or JSON) and its checker, as kube-apiserver 1.32 reads and
// evaluates it: rules in order, the first that matches gives the level, the stages to omit and whether managed
// fields are dropped from logged objects; no rule matching means level None (the request is not audited).

import { parse as parseYaml } from 'yaml';
import type { Attributes } from '../auth/authorizer.js';
import type { UserInfo } from '../auth/user.js';
import { isRecord } from '../util/record.js';

export const auditLevels = ['None', 'Metadata', 'Request', 'RequestResponse'] as const;
export type AuditLevel = (typeof auditLevels)[number];

export const auditStages = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'] as const;
export type AuditStage = (typeof auditStages)[number];

/** Whether `level` records at least what `floor` records (None < Metadata < Request < RequestResponse). */
export function levelAtLeast(level: AuditLevel, floor: AuditLevel): boolean {
  return auditLevels.indexOf(level) >= auditLevels.indexOf(floor);
}

export interface GroupResources {
  readonly group: string;
  readonly resources: readonly string[];
  readonly resourceNames: readonly string[];
}

export interface PolicyRule {
  readonly level: AuditLevel;
  readonly users: readonly string[];
  readonly userGroups: readonly string[];
  readonly verbs: readonly string[];
  readonly resources: readonly GroupResources[];
  readonly namespaces: readonly string[];
  readonly nonResourceURLs: readonly string[];
  readonly omitStages: readonly AuditStage[];
  /** Unset: the policy's own omitManagedFields decides. */
  readonly omitManagedFields?: boolean;
}

export interface AuditPolicy {
  readonly rules: readonly PolicyRule[];
  readonly omitStages: readonly AuditStage[];
  readonly omitManagedFields: boolean;
}

/** What the policy decided for one request. */
export interface RequestAuditConfig {
  readonly level: AuditLevel;
  readonly omitStages: readonly AuditStage[];
  readonly omitManagedFields: boolean;
}

/** The request as the policy sees it: authorization's attributes; no user when authentication failed. */
export type PolicyAttributes = Omit<Attributes, 'user'> & { readonly user: UserInfo | undefined };

/** A policy file that cannot be used: the message names the problem as kube-apiserver does. */
export class AuditPolicyError extends Error {
  override readonly name = 'AuditPolicyError';
}

/** Field errors are collected with kube's field paths and joined as its aggregate error does. */
class FieldErrors {
  readonly list: string[] = [];
  invalid(path: string, value: unknown, detail: string): void {
    this.list.push(`${path}: Invalid value: ${JSON.stringify(value)}: ${detail}`);
  }
}

function strings(value: unknown, path: string, errs: FieldErrors): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    errs.invalid(path, value, 'must be a list of strings');
    return [];
  }
  return value;
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function stagesOf(value: unknown, path: string, errs: FieldErrors): AuditStage[] {
  const out: AuditStage[] = [];
  strings(value, path, errs).forEach((stage, i) => {
    if ((auditStages as readonly string[]).includes(stage)) out.push(stage as AuditStage);
    else errs.invalid(`${path}[${i}]`, stage, `allowed stages are ${auditStages.join(',')}`);
  });
  return out;
}

function levelOf(value: unknown, path: string, errs: FieldErrors): AuditLevel {
  if (value === undefined || value === null || value === '') {
    errs.list.push(`${path}: Required value`);
    return 'None';
  }
  if (typeof value === 'string' && (auditLevels as readonly string[]).includes(value))
    return value as AuditLevel;
  errs.list.push(
    `${path}: Unsupported value: ${JSON.stringify(value)}: supported values: ${auditLevels.map((l) => `"${l}"`).join(', ')}`,
  );
  return 'None';
}

function groupResourcesOf(value: unknown, path: string, errs: FieldErrors): GroupResources[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    errs.invalid(path, value, 'must be a list');
    return [];
  }
  return value.map((entry: unknown, i) => {
    const item = isRecord(entry) ? entry : {};
    const group = typeof item.group === 'string' ? item.group : '';
    // kube's paths here name the list, not the entry (its validation does the same).
    if (group !== '' && !dnsSubdomain.test(group)) {
      errs.invalid(
        `${path}.group`,
        group,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      );
    }
    const resources = strings(item.resources, `${path}[${i}].resources`, errs);
    const resourceNames = strings(item.resourceNames, `${path}[${i}].resourceNames`, errs);
    if (resourceNames.length > 0 && resources.length === 0)
      errs.invalid(
        `${path}.resourceNames`,
        resourceNames,
        'using resourceNames requires at least one resource',
      );
    return { group, resources, resourceNames };
  });
}

function ruleOf(value: unknown, path: string, errs: FieldErrors): PolicyRule {
  const item = isRecord(value) ? value : {};
  const nonResourceURLs = strings(item.nonResourceURLs, `${path}.nonResourceURLs`, errs);
  nonResourceURLs.forEach((url, i) => {
    if (url === '*') return;
    if (!url.startsWith('/'))
      errs.invalid(
        `${path}.nonResourceURLs[${i}]`,
        url,
        "non-resource URL rules must begin with a '/' character",
      );
    if (url !== '' && url.slice(0, -1).includes('*'))
      errs.invalid(
        `${path}.nonResourceURLs[${i}]`,
        url,
        "non-resource URL wildcards '*' must be the final character of the rule",
      );
  });
  const resources = groupResourcesOf(item.resources, `${path}.resources`, errs);
  const namespaces = strings(item.namespaces, `${path}.namespaces`, errs);
  if (nonResourceURLs.length > 0 && (resources.length > 0 || namespaces.length > 0)) {
    errs.invalid(
      `${path}.nonResourceURLs`,
      nonResourceURLs,
      'rules cannot apply to both regular resources and non-resource URLs',
    );
  }
  const omitManagedFields = item.omitManagedFields;
  return {
    level: levelOf(item.level, `${path}.level`, errs),
    users: strings(item.users, `${path}.users`, errs),
    userGroups: strings(item.userGroups, `${path}.userGroups`, errs),
    verbs: strings(item.verbs, `${path}.verbs`, errs),
    resources,
    namespaces,
    nonResourceURLs,
    omitStages: stagesOf(item.omitStages, `${path}.omitStages`, errs),
    ...(typeof omitManagedFields === 'boolean' ? { omitManagedFields } : {}),
  };
}

/** Parses and validates a policy document (`auditGroup` is `audit.<domain>`); throws AuditPolicyError. */
export function parseAuditPolicy(source: string, auditGroup: string): AuditPolicy {
  let document: unknown;
  try {
    document = parseYaml(source);
  } catch (error) {
    throw new AuditPolicyError(`failed decoding: ${(error as Error).message}`);
  }
  if (!isRecord(document)) throw new AuditPolicyError("failed decoding: Object 'Kind' is missing");
  const apiVersion = typeof document.apiVersion === 'string' ? document.apiVersion : '';
  const kind = typeof document.kind === 'string' ? document.kind : '';
  if (kind === '')
    throw new AuditPolicyError(`failed decoding: Object 'Kind' is missing in '${source.trim()}'`);
  if (apiVersion !== `${auditGroup}/v1` || kind !== 'Policy') {
    const slash = apiVersion.indexOf('/');
    const group = slash < 0 ? '' : apiVersion.slice(0, slash);
    const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
    throw new AuditPolicyError(
      `failed decoding: no kind "${kind}" is registered for version "${apiVersion}" in scheme (want ${auditGroup}/v1 Policy; got ${group}/${version}, Kind=${kind})`,
    );
  }
  const errs = new FieldErrors();
  const rulesValue = document.rules;
  const rules = Array.isArray(rulesValue)
    ? rulesValue.map((rule: unknown, i) => ruleOf(rule, `rules[${i}]`, errs))
    : [];
  const omitStages = stagesOf(document.omitStages, 'omitStages', errs);
  if (errs.list.length === 1) throw new AuditPolicyError(errs.list[0] ?? '');
  if (errs.list.length > 1) throw new AuditPolicyError(`[${errs.list.join(', ')}]`);
  if (rules.length === 0) throw new AuditPolicyError('loaded illegal policy with 0 rules');
  return { rules, omitStages, omitManagedFields: document.omitManagedFields === true };
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function resourceMatches(rule: PolicyRule, attributes: PolicyAttributes): boolean {
  if (!attributes.isResourceRequest) return false;
  if (rule.namespaces.length > 0 && !rule.namespaces.includes(attributes.namespace)) return false;
  if (rule.resources.length === 0) return true;
  const { apiGroup, resource, subresource, name } = attributes;
  const combined = subresource === '' ? resource : `${resource}/${subresource}`;
  for (const gr of rule.resources) {
    if (gr.group !== apiGroup) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames.length > 0 && !gr.resourceNames.includes(name)) continue;
    for (const r of gr.resources) {
      if (r === combined || r === '*') return true;
      if (subresource !== '' && r.startsWith('*/') && r.slice(2) === subresource) return true;
      if (r.endsWith('/*') && r.slice(0, -2) === resource) return true;
    }
  }
  return false;
}

function ruleMatches(rule: PolicyRule, attributes: PolicyAttributes): boolean {
  const user = attributes.user;
  if (rule.users.length > 0 && (user === undefined || !rule.users.includes(user.name))) return false;
  if (rule.userGroups.length > 0) {
    if (user === undefined || !user.groups.some((g) => rule.userGroups.includes(g))) return false;
  }
  if (rule.verbs.length > 0 && !rule.verbs.includes(attributes.verb)) return false;
  if (rule.namespaces.length > 0 || rule.resources.length > 0) return resourceMatches(rule, attributes);
  if (rule.nonResourceURLs.length > 0) {
    return !attributes.isResourceRequest && rule.nonResourceURLs.some((s) => pathMatches(attributes.path, s));
  }
  return true;
}

/** kube's policy rule evaluator: the first matching rule, with the policy's omitStages added to every rule's. */
export class PolicyChecker {
  constructor(private readonly policy: AuditPolicy) {}

  evaluate(attributes: PolicyAttributes): RequestAuditConfig {
    for (const rule of this.policy.rules) {
      if (!ruleMatches(rule, attributes)) continue;
      return {
        level: rule.level,
        omitStages: [...new Set([...this.policy.omitStages, ...rule.omitStages])],
        omitManagedFields: rule.omitManagedFields ?? this.policy.omitManagedFields,
      };
    }
    return { level: 'None', omitStages: this.policy.omitStages, omitManagedFields: false };
  }
}
