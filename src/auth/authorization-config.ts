// AuthorizationConfiguration (apiserver.config.<domain>/v1, also v1beta1 and v1alpha1), the file of
// --authorization-config: an ordered list of authorizers with a type and a name, webhooks with their TTLs,
// timeout, versions, failure policy, connection and CEL match conditions. Parsed and validated here with
// kube-apiserver's field paths; a bad file stops the server at start and is refused on reload.

import { parse as parseYaml } from 'yaml';
import { parseDuration } from '../server/flags.js';
import type { AuthorizerType } from '../server/authorization-flags.js';
import { compileCondition, type WebhookOptions } from './webhook-authorizer.js';

export interface AuthorizerSpec {
  readonly type: AuthorizerType;
  readonly name: string;
  readonly webhook?: Omit<WebhookOptions, 'group'>;
}

export class AuthorizationConfigError extends Error {
  override readonly name = 'AuthorizationConfigError';
}

const configTypes: readonly AuthorizerType[] = ['Webhook', 'Node', 'RBAC', 'AlwaysAllow', 'AlwaysDeny'];
const matchConditionsMax = 64;
const webhookTimeoutMsMax = 30_000;
const namePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

type Rec = Record<string, unknown>;

function rec(value: unknown): Rec {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Rec) : {};
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function durationMs(value: unknown, field: string, errors: string[]): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseDuration(text(value), field);
  } catch {
    errors.push(`${field}: Invalid value: ${JSON.stringify(value)}: not a duration`);
    return undefined;
  }
}

/** Parses and validates the file's text; every problem is listed (kube-apiserver's field paths). */
export function parseAuthorizationConfig(source: string, configGroup: string): AuthorizerSpec[] {
  let document: Rec;
  try {
    document = rec(parseYaml(source));
  } catch (error) {
    throw new AuthorizationConfigError(`not YAML or JSON: ${(error as Error).message}`);
  }
  const versions = ['v1', 'v1beta1', 'v1alpha1'].map((v) => `${configGroup}/${v}`);
  if (!versions.includes(text(document.apiVersion)) || document.kind !== 'AuthorizationConfiguration') {
    throw new AuthorizationConfigError(
      `want apiVersion ${versions.join(' or ')} and kind AuthorizationConfiguration, got ${JSON.stringify(document.apiVersion)} ${JSON.stringify(document.kind)}`,
    );
  }
  const errors: string[] = [];
  const list = Array.isArray(document.authorizers) ? document.authorizers.map(rec) : [];
  if (list.length === 0)
    errors.push('authorizers: Required value: at least one authorization mode must be defined');
  const seenTypes = new Set<string>();
  const seenNames = new Set<string>();
  const specs: AuthorizerSpec[] = [];
  list.forEach((a, i) => {
    const path = `authorizers[${i}]`;
    const type = text(a.type);
    const name = text(a.name);
    if (type === '') errors.push(`${path}.type: Required value`);
    else if (!(configTypes as readonly string[]).includes(type))
      errors.push(
        `${path}.type: Unsupported value: "${type}": supported values: ${configTypes.map((t) => `"${t}"`).join(', ')}`,
      );
    else if (type !== 'Webhook' && seenTypes.has(type))
      errors.push(`${path}.type: Duplicate value: "${type}"`);
    seenTypes.add(type);
    if (name === '') errors.push(`${path}.name: Required value`);
    else if (!namePattern.test(name))
      errors.push(
        `${path}.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      );
    else if (seenNames.has(name)) errors.push(`${path}.name: Duplicate value: "${name}"`);
    seenNames.add(name);
    if (type !== 'Webhook') {
      if (a.webhook !== undefined)
        errors.push(
          `${path}.webhook: Invalid value: "non-null": non-null webhook config is only allowed for Webhook type`,
        );
      if ((configTypes as readonly string[]).includes(type))
        specs.push({ type: type as AuthorizerType, name });
      return;
    }
    if (a.webhook === undefined) {
      errors.push(`${path}.webhook: Required value: required when type=Webhook`);
      return;
    }
    const webhook = parseWebhook(rec(a.webhook), `${path}.webhook`, name, errors);
    if (webhook !== undefined) specs.push({ type: 'Webhook', name, webhook });
  });
  if (errors.length > 0) throw new AuthorizationConfigError(errors.join('\n'));
  return specs;
}

function parseWebhook(w: Rec, path: string, name: string, errors: string[]): AuthorizerSpec['webhook'] {
  const timeoutMs = durationMs(w.timeout, `${path}.timeout`, errors);
  if (w.timeout === undefined) errors.push(`${path}.timeout: Required value`);
  else if (timeoutMs !== undefined && (timeoutMs <= 0 || timeoutMs > webhookTimeoutMsMax))
    errors.push(`${path}.timeout: Invalid value: "${text(w.timeout)}": must be > 0s and <= 30s`);
  const authorizedTtlMs = durationMs(w.authorizedTTL, `${path}.authorizedTTL`, errors) ?? 300_000;
  const unauthorizedTtlMs = durationMs(w.unauthorizedTTL, `${path}.unauthorizedTTL`, errors) ?? 30_000;
  if (authorizedTtlMs <= 0)
    errors.push(`${path}.authorizedTTL: Invalid value: "${text(w.authorizedTTL)}": must be > 0s`);
  if (unauthorizedTtlMs <= 0)
    errors.push(`${path}.unauthorizedTTL: Invalid value: "${text(w.unauthorizedTTL)}": must be > 0s`);
  const version = text(w.subjectAccessReviewVersion);
  if (version === '') errors.push(`${path}.subjectAccessReviewVersion: Required value`);
  else if (version !== 'v1' && version !== 'v1beta1')
    errors.push(
      `${path}.subjectAccessReviewVersion: Unsupported value: "${version}": supported values: "v1", "v1beta1"`,
    );
  const failurePolicy = text(w.failurePolicy);
  if (failurePolicy === '') errors.push(`${path}.failurePolicy: Required value`);
  else if (failurePolicy !== 'NoOpinion' && failurePolicy !== 'Deny')
    errors.push(
      `${path}.failurePolicy: Unsupported value: "${failurePolicy}": supported values: "Deny", "NoOpinion"`,
    );
  const connection = rec(w.connectionInfo);
  const connectionType = text(connection.type);
  const kubeconfigFile = text(connection.kubeConfigFile);
  if (connectionType === '') errors.push(`${path}.connectionInfo.type: Required value`);
  else if (connectionType === 'InClusterConfig')
    errors.push(
      `${path}.connectionInfo.type: Unsupported value: "InClusterConfig": this server cannot call its own review API; use "KubeConfigFile"`,
    );
  else if (connectionType !== 'KubeConfigFile')
    errors.push(
      `${path}.connectionInfo.type: Unsupported value: "${connectionType}": supported values: "InClusterConfig", "KubeConfigFile"`,
    );
  else if (kubeconfigFile === '') errors.push(`${path}.connectionInfo.kubeConfigFile: Required value`);
  const conditions = Array.isArray(w.matchConditions) ? w.matchConditions.map(rec) : [];
  if (conditions.length > matchConditionsMax)
    errors.push(
      `${path}.matchConditions: Too many: ${conditions.length}: must have at most ${matchConditionsMax} items`,
    );
  if (conditions.length > 0) {
    const conditionVersion = text(w.matchConditionSubjectAccessReviewVersion);
    if (conditionVersion === '')
      errors.push(`${path}.matchConditionSubjectAccessReviewVersion: Required value`);
    else if (conditionVersion !== 'v1')
      errors.push(
        `${path}.matchConditionSubjectAccessReviewVersion: Unsupported value: "${conditionVersion}": supported values: "v1"`,
      );
  }
  const expressions: string[] = [];
  conditions.forEach((c, j) => {
    const expression = text(c.expression);
    const field = `${path}.matchConditions[${j}].expression`;
    if (expression === '') errors.push(`${field}: Required value`);
    else if (expressions.includes(expression))
      errors.push(`${field}: Duplicate value: ${JSON.stringify(expression)}`);
    else {
      try {
        compileCondition(expression);
      } catch (error) {
        errors.push(
          `${field}: Invalid value: ${JSON.stringify(expression)}: compilation failed: ${(error as Error).message}`,
        );
      }
    }
    expressions.push(expression);
  });
  if (
    timeoutMs === undefined ||
    (version !== 'v1' && version !== 'v1beta1') ||
    (failurePolicy !== 'NoOpinion' && failurePolicy !== 'Deny')
  )
    return undefined;
  return {
    name,
    version,
    authorizedTtlMs,
    unauthorizedTtlMs,
    timeoutMs,
    failurePolicy,
    kubeconfigFile,
    matchConditions: expressions,
  };
}

/** A reload may reorder authorizers and change webhooks, but not add or remove Node or RBAC. */
export function reloadRefusal(
  before: readonly AuthorizerSpec[],
  after: readonly AuthorizerSpec[],
): string | undefined {
  for (const type of ['Node', 'RBAC'] as const) {
    const had = before.some((s) => s.type === type);
    const has = after.some((s) => s.type === type);
    if (had !== has) return `${had ? 'removing' : 'adding'} a ${type} authorizer is not allowed at run time`;
  }
  return undefined;
}
