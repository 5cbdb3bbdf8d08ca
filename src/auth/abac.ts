// ABAC: kube-apiserver's policy file, one JSON Policy object per line (`abac.authorization.<prefix>/v1beta1`,
// or the unversioned v0 form), blank lines and `#` comments skipped. A request is allowed when a policy's
// subject (user or group, `*` for all), readonly flag, and resource (namespace, resource, apiGroup) or
// non-resource path match; otherwise no opinion. Errors name the line, and stop the server at start.

import { readFile } from 'node:fs/promises';
import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';

export interface AbacPolicy {
  readonly user: string;
  readonly group: string;
  readonly readonly: boolean;
  readonly apiGroup: string;
  readonly resource: string;
  readonly namespace: string;
  readonly nonResourcePath: string;
}

export class AbacPolicyError extends Error {
  override readonly name = 'AbacPolicyError';
}

const readOnlyVerbs = new Set(['get', 'list', 'watch']);

function str(value: unknown, field: string, line: number): string {
  if (value === undefined) return '';
  if (typeof value !== 'string')
    throw new AbacPolicyError(`line ${line}: ${field}: expected a string, got ${JSON.stringify(value)}`);
  return value;
}

/** Parses the policy file's text. `prefix` is `kubernetes.io` with --group-domain=k8s.io, else the domain. */
export function parseAbacPolicies(text: string, prefix: string): AbacPolicy[] {
  const apiVersion = `abac.authorization.${prefix}/v1beta1`;
  const out: AbacPolicy[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      throw new AbacPolicyError(`line ${line}: not a JSON object: ${(error as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new AbacPolicyError(`line ${line}: not a JSON object`);
    const object = value as Record<string, unknown>;
    let spec: Record<string, unknown>;
    if (object.apiVersion === undefined) {
      // v0: flat fields. No user and no group = every authenticated user; no resource = everything.
      spec = { ...object };
      const user = str(object.user, 'user', line);
      const group = str(object.group, 'group', line);
      if (user === '' && group === '') spec.group = 'system:authenticated';
      const resource = str(object.resource, 'resource', line);
      spec.apiGroup = '*';
      spec.namespace = str(object.namespace, 'namespace', line) === '' ? '*' : object.namespace;
      spec.resource = resource === '' ? '*' : resource;
      spec.nonResourcePath = resource === '' ? '*' : '';
    } else {
      if (object.apiVersion !== apiVersion)
        throw new AbacPolicyError(
          `line ${line}: unknown apiVersion ${JSON.stringify(object.apiVersion)}, want "${apiVersion}"`,
        );
      if (object.kind !== 'Policy')
        throw new AbacPolicyError(`line ${line}: unknown kind ${JSON.stringify(object.kind)}, want "Policy"`);
      if (object.spec === null || typeof object.spec !== 'object' || Array.isArray(object.spec))
        throw new AbacPolicyError(`line ${line}: spec: expected an object`);
      spec = object.spec as Record<string, unknown>;
    }
    const readonly = spec.readonly ?? false;
    if (typeof readonly !== 'boolean')
      throw new AbacPolicyError(`line ${line}: spec.readonly: expected a boolean`);
    const policy: AbacPolicy = {
      user: str(spec.user, 'spec.user', line),
      group: str(spec.group, 'spec.group', line),
      readonly,
      apiGroup: str(spec.apiGroup, 'spec.apiGroup', line),
      resource: str(spec.resource, 'spec.resource', line),
      namespace: str(spec.namespace, 'spec.namespace', line),
      nonResourcePath: str(spec.nonResourcePath, 'spec.nonResourcePath', line),
    };
    if (policy.user === '' && policy.group === '')
      throw new AbacPolicyError(`line ${line}: a policy needs a user or a group`);
    out.push(policy);
  });
  return out;
}

function subjectMatches(p: AbacPolicy, a: Attributes): boolean {
  if (p.user === '*' || p.group === '*') return true;
  if (p.user !== '' && p.user === a.user.name) return true;
  return p.group !== '' && a.user.groups.includes(p.group);
}

function pathMatches(pattern: string, path: string): boolean {
  if (pattern === '*' || pattern === path) return true;
  return pattern.endsWith('*') && path.startsWith(pattern.slice(0, -1));
}

export function policyMatches(p: AbacPolicy, a: Attributes): boolean {
  if (!subjectMatches(p, a)) return false;
  if (p.readonly && !readOnlyVerbs.has(a.verb)) return false;
  if (a.isResourceRequest) {
    return (
      (p.namespace === '*' || p.namespace === a.namespace) &&
      (p.resource === '*' || p.resource === a.resource) &&
      (p.apiGroup === '*' || p.apiGroup === a.apiGroup)
    );
  }
  return p.nonResourcePath !== '' && pathMatches(p.nonResourcePath, a.path);
}

export class AbacAuthorizer implements Authorizer {
  constructor(readonly policies: readonly AbacPolicy[]) {}

  static async load(file: string, prefix: string): Promise<AbacAuthorizer> {
    const text = await readFile(file, 'utf8');
    try {
      return new AbacAuthorizer(parseAbacPolicies(text, prefix));
    } catch (error) {
      if (error instanceof AbacPolicyError) throw new AbacPolicyError(`${file}: ${error.message}`);
      throw error;
    }
  }

  authorize(attributes: Attributes): Promise<AuthorizationResult> {
    const allowed = this.policies.some((p) => policyMatches(p, attributes));
    return Promise.resolve({ decision: allowed ? 'allow' : 'noOpinion', reason: '' });
  }
}
