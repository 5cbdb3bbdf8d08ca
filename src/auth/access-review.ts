// Access reviews (authorization.<domain>/v1): SelfSubjectAccessReview, SubjectAccessReview,
// LocalSubjectAccessReview and SelfSubjectRulesReview. Create-only virtual kinds: each answers from the
// server's authorizer chain (or, for rules, from the modes that can list rules; the others make the answer
// `incomplete`). Selector attributes are honored only with the AuthorizeWithSelectors gate; without it they
// are dropped, as kube-apiserver drops disabled fields.

import { domainGroup, type DomainContext, type KindDeclaration } from '../apimachinery/kind.js';
import { objectSchema, type ApiObject } from '../apimachinery/meta.js';
import { s, type Schema } from '../apimachinery/schema.js';
import { errors, type FieldError } from '../apimachinery/status.js';
import { parseFieldSelector, parseLabelSelector } from '../apimachinery/selectors.js';
import {
  nonResourceAttributes,
  type Attributes,
  type AuthorizationResult,
  type SelectorRequirement,
} from './authorizer.js';
import type { UserInfo } from './user.js';

export interface ResourceRule {
  readonly verbs: string[];
  readonly apiGroups: string[];
  readonly resources: string[];
  readonly resourceNames?: string[];
}

export interface NonResourceRule {
  readonly verbs: string[];
  readonly nonResourceURLs: string[];
}

export interface RulesResult {
  readonly resourceRules: ResourceRule[];
  readonly nonResourceRules: NonResourceRule[];
  readonly incomplete: boolean;
  readonly evaluationError: string;
}

/** What the review kinds ask the server (bound late: the kinds exist before the authorizers). */
export interface AccessReviewer {
  authorize(attributes: Attributes): Promise<AuthorizationResult>;
  rulesFor(user: UserInfo, namespace: string): RulesResult;
  readonly selectorsEnabled: boolean;
}

const selectorSchema: Schema = s.obj({
  rawSelector: s.str(),
  requirements: s.listAtomic(
    s.obj({ key: s.str(), operator: s.str(), values: s.listAtomic(s.str()) }, ['key', 'operator']),
  ),
});

const resourceAttributesSchema: Schema = s.obj({
  namespace: s.str(),
  verb: s.str(),
  group: s.str(),
  version: s.str(),
  resource: s.str(),
  subresource: s.str(),
  name: s.str(),
  fieldSelector: selectorSchema,
  labelSelector: selectorSchema,
});

const nonResourceAttributesSchema: Schema = s.obj({ path: s.str(), verb: s.str() });

const accessStatusSchema: Schema = s.obj(
  { allowed: s.bool(), denied: s.bool(), reason: s.str(), evaluationError: s.str() },
  ['allowed'],
);

const subjectFields: Record<string, Schema> = {
  user: s.str(),
  groups: s.listAtomic(s.str()),
  extra: s.map(s.listAtomic(s.str())),
  uid: s.str(),
};

type Spec = Record<string, unknown>;

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function validateSpec(object: ApiObject, withSubject: boolean): FieldError[] {
  const spec = record(object.spec) ?? {};
  const out: FieldError[] = [];
  const resource = record(spec.resourceAttributes);
  const nonResource = record(spec.nonResourceAttributes);
  if (resource !== undefined && nonResource !== undefined) {
    out.push({
      type: 'FieldValueInvalid',
      field: 'spec.nonResourceAttributes',
      value: nonResource,
      detail: 'cannot be specified in combination with resourceAttributes',
    });
  }
  if (resource === undefined && nonResource === undefined) {
    out.push({
      type: 'FieldValueInvalid',
      field: 'spec.resourceAttributes',
      value: 'null',
      detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified',
    });
  }
  if (withSubject && str(spec.user) === '' && strings(spec.groups).length === 0) {
    out.push({
      type: 'FieldValueInvalid',
      field: 'spec.user',
      value: '',
      detail: 'at least one of user or group must be specified',
    });
  }
  return out;
}

const operators = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/**
 * The five selector rules of spec 2.6: empty = unlimited; raw only = parsed, limited if it parses; requirements
 * only = honored; both = 400; requirements not understood = unlimited (they can only limit).
 */
function selectorRequirements(
  selector: Record<string, unknown> | undefined,
  field: string,
  kind: 'field' | 'label',
): SelectorRequirement[] | undefined {
  if (selector === undefined) return undefined;
  const raw = str(selector.rawSelector);
  const requirements = Array.isArray(selector.requirements)
    ? selector.requirements.map((r) => record(r) ?? {})
    : [];
  if (raw !== '' && requirements.length > 0)
    throw errors.badRequest(
      `${field}.rawSelector: Invalid value: "${raw}": may not specified at the same time as requirements`,
    );
  if (requirements.length > 0) {
    const causes: FieldError[] = [];
    const out: SelectorRequirement[] = [];
    requirements.forEach((r, i) => {
      const path = `${field}.requirements[${i}]`;
      const op = str(r.operator);
      const values = strings(r.values);
      if (str(r.key) === '') causes.push({ type: 'FieldValueRequired', field: `${path}.key` });
      if (!operators.has(op)) {
        causes.push({
          type: 'FieldValueNotSupported',
          field: `${path}.operator`,
          value: op,
          detail: 'supported values: "DoesNotExist", "Exists", "In", "NotIn"',
        });
      } else if ((op === 'In' || op === 'NotIn') && values.length === 0) {
        causes.push({
          type: 'FieldValueRequired',
          field: `${path}.values`,
          detail: `must be specified when \`operator\` is 'In' or 'NotIn'`,
        });
      } else if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0) {
        causes.push({
          type: 'FieldValueForbidden',
          field: `${path}.values`,
          detail: `may not be specified when \`operator\` is 'Exists' or 'DoesNotExist'`,
        });
      }
      out.push({ key: str(r.key), operator: op, values });
    });
    if (causes.length > 0) throw errors.invalid('', 'SubjectAccessReview', '', causes);
    return out;
  }
  if (raw === '') return undefined;
  return requirementsOfRaw(raw, kind);
}

/** A raw selector as requirements; undefined when it does not parse (not understood = unlimited: safe). */
export function requirementsOfRaw(raw: string, kind: 'field' | 'label'): SelectorRequirement[] | undefined {
  try {
    const keys = new Set(raw.split(',').map((term) => (term.split(/!=|==|=/)[0] ?? '').trim()));
    const parsed = kind === 'label' ? parseLabelSelector(raw) : parseFieldSelector(raw, keys);
    return parsed.map((p) => {
      switch (p.op) {
        case 'in':
          return { key: p.key, operator: 'In', values: [...p.values] };
        case 'notin':
          return { key: p.key, operator: 'NotIn', values: [...p.values] };
        case 'exists':
          return { key: p.key, operator: 'Exists', values: [] };
        case '!':
          return { key: p.key, operator: 'DoesNotExist', values: [] };
        default:
          return p satisfies never;
      }
    });
  } catch {
    return undefined;
  }
}

function attributesOf(spec: Spec, user: UserInfo, selectors: boolean): Attributes {
  const resource = record(spec.resourceAttributes);
  if (resource === undefined) {
    const nonResource = record(spec.nonResourceAttributes) ?? {};
    return nonResourceAttributes(user, str(nonResource.verb), str(nonResource.path));
  }
  const field = selectors
    ? selectorRequirements(record(resource.fieldSelector), 'spec.resourceAttributes.fieldSelector', 'field')
    : undefined;
  const label = selectors
    ? selectorRequirements(record(resource.labelSelector), 'spec.resourceAttributes.labelSelector', 'label')
    : undefined;
  return {
    user,
    verb: str(resource.verb),
    isResourceRequest: true,
    path: '',
    apiGroup: str(resource.group),
    apiVersion: str(resource.version),
    resource: str(resource.resource),
    subresource: str(resource.subresource),
    namespace: str(resource.namespace),
    name: str(resource.name),
    ...(field === undefined ? {} : { fieldRequirements: field }),
    ...(label === undefined ? {} : { labelRequirements: label }),
  };
}

/** Without the gate, selector attributes are dropped from the request (and so from the answer). */
function dropDisabledSelectors(spec: Spec, enabled: boolean): void {
  const resource = record(spec.resourceAttributes);
  if (enabled || resource === undefined) return;
  delete resource.fieldSelector;
  delete resource.labelSelector;
}

function statusOf(result: AuthorizationResult): Record<string, unknown> {
  return {
    allowed: result.decision === 'allow',
    ...(result.decision === 'deny' ? { denied: true } : {}),
    ...(result.reason === '' ? {} : { reason: result.reason }),
    ...(result.error === undefined ? {} : { evaluationError: result.error }),
  };
}

function subjectOf(spec: Spec): UserInfo {
  const extra = record(spec.extra) ?? {};
  return {
    name: str(spec.user),
    uid: str(spec.uid),
    groups: strings(spec.groups),
    extra: Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, strings(v)])),
  };
}

type Variant = 'SelfSubjectAccessReview' | 'SubjectAccessReview' | 'LocalSubjectAccessReview';

function accessReviewKind(
  ctx: DomainContext,
  kind: Variant,
  reviewer: () => AccessReviewer,
): KindDeclaration {
  const withSubject = kind !== 'SelfSubjectAccessReview';
  const specSchema = s.obj({
    resourceAttributes: resourceAttributesSchema,
    nonResourceAttributes: nonResourceAttributesSchema,
    ...(withSubject ? subjectFields : {}),
  });
  return {
    group: domainGroup(ctx, 'authorization'),
    versions: ['v1'],
    kind,
    plural: `${kind.toLowerCase()}s`,
    singular: kind.toLowerCase(),
    shortNames: [],
    categories: [],
    namespaced: kind === 'LocalSubjectAccessReview',
    nameRule: 'path-segment',
    schema: objectSchema({ spec: specSchema, status: accessStatusSchema }, ['spec']),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    strategy: { validate: (o) => validateSpec(o, withSubject) },
    virtual: {
      create: async (object, request) => {
        const r = reviewer();
        const spec = record(object.spec) ?? {};
        dropDisabledSelectors(spec, r.selectorsEnabled);
        if (kind === 'LocalSubjectAccessReview') {
          const metaNamespace = object.metadata.namespace ?? '';
          if (metaNamespace !== '' && metaNamespace !== request.namespace)
            throw errors.badRequest(
              `spec.resourceAttributes.namespace must match namespace: ${request.namespace}`,
            );
          object.metadata.namespace = request.namespace;
          const causes: FieldError[] = [];
          const resource = record(spec.resourceAttributes);
          if (spec.nonResourceAttributes !== undefined)
            causes.push({
              type: 'FieldValueInvalid',
              field: 'spec.nonResourceAttributes',
              value: spec.nonResourceAttributes,
              detail: 'disallowed on this kind of request',
            });
          if (resource !== undefined && str(resource.namespace) !== request.namespace)
            causes.push({
              type: 'FieldValueInvalid',
              field: 'spec.resourceAttributes.namespace',
              value: str(resource.namespace),
              detail: 'must match metadata.namespace',
            });
          if (causes.length > 0) throw errors.invalid(domainGroup(ctx, 'authorization'), kind, '', causes);
        }
        const user = withSubject ? subjectOf(spec) : request.user;
        const result = await r.authorize(attributesOf(spec, user, r.selectorsEnabled));
        return { metadata: { ...object.metadata, creationTimestamp: null }, spec, status: statusOf(result) };
      },
    },
  };
}

function rulesReviewKind(ctx: DomainContext, reviewer: () => AccessReviewer): KindDeclaration {
  const rule = s.obj(
    {
      verbs: s.listAtomic(s.str()),
      apiGroups: s.listAtomic(s.str()),
      resources: s.listAtomic(s.str()),
      resourceNames: s.listAtomic(s.str()),
    },
    ['verbs'],
  );
  const nonResourceRule = s.obj({ verbs: s.listAtomic(s.str()), nonResourceURLs: s.listAtomic(s.str()) }, [
    'verbs',
  ]);
  return {
    group: domainGroup(ctx, 'authorization'),
    versions: ['v1'],
    kind: 'SelfSubjectRulesReview',
    plural: 'selfsubjectrulesreviews',
    singular: 'selfsubjectrulesreview',
    shortNames: [],
    categories: [],
    namespaced: false,
    nameRule: 'path-segment',
    schema: objectSchema(
      {
        spec: s.obj({ namespace: s.str() }),
        status: s.obj({
          resourceRules: s.listAtomic(rule),
          nonResourceRules: s.listAtomic(nonResourceRule),
          incomplete: s.bool(),
          evaluationError: s.str(),
        }),
      },
      ['spec'],
    ),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    virtual: {
      create: (object, request) => {
        const spec = record(object.spec) ?? {};
        const namespace = str(spec.namespace);
        if (namespace === '') throw errors.badRequest('no namespace on request');
        const rules = reviewer().rulesFor(request.user, namespace);
        return Promise.resolve({
          metadata: { ...object.metadata, creationTimestamp: null },
          spec,
          status: {
            resourceRules: rules.resourceRules,
            nonResourceRules: rules.nonResourceRules,
            incomplete: rules.incomplete,
            ...(rules.evaluationError === '' ? {} : { evaluationError: rules.evaluationError }),
          },
        });
      },
    },
  };
}

export function accessReviewKinds(ctx: DomainContext, reviewer: () => AccessReviewer): KindDeclaration[] {
  return [
    accessReviewKind(ctx, 'SelfSubjectAccessReview', reviewer),
    accessReviewKind(ctx, 'SubjectAccessReview', reviewer),
    accessReviewKind(ctx, 'LocalSubjectAccessReview', reviewer),
    rulesReviewKind(ctx, reviewer),
  ];
}
