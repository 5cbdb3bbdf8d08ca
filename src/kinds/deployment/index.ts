// Deployment (apps/v1), with the defaults of spec 9.4: replicas 1, RollingUpdate with maxSurge and
// maxUnavailable 25%, revisionHistoryLimit 10, progressDeadlineSeconds 600. spec.selector is required and
// immutable, and must select the template's labels.

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import type { ApiObject } from '../../apimachinery/meta.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import {
  ageColumn,
  conditionsSchema,
  defaultPodSpec,
  labelSelectorSchema,
  list,
  nameColumn,
  podTemplateSpecSchema,
  record,
  statusSchema,
} from '../common.js';

function defaultStrategy(o: ApiObject): void {
  const spec = record(o.spec);
  const strategy = record(spec.strategy);
  if (strategy.type === undefined) strategy.type = 'RollingUpdate';
  if (strategy.type === 'RollingUpdate') {
    const rolling = record(strategy.rollingUpdate);
    if (rolling.maxSurge === undefined) rolling.maxSurge = '25%';
    if (rolling.maxUnavailable === undefined) rolling.maxUnavailable = '25%';
    strategy.rollingUpdate = rolling;
  }
  spec.strategy = strategy;
  const podSpec = record(spec.template).spec;
  if (podSpec !== null && typeof podSpec === 'object' && !Array.isArray(podSpec))
    defaultPodSpec(podSpec as Record<string, unknown>);
}

function validateSelector(o: ApiObject): FieldError[] {
  const spec = record(o.spec);
  const matchLabels = record(record(spec.selector).matchLabels);
  const templateLabels = record(record(record(spec.template).metadata).labels);
  const out: FieldError[] = [];
  // A missing selector is the schema's "Required value"; an empty one is invalid here.
  if (
    spec.selector !== undefined &&
    Object.keys(matchLabels).length === 0 &&
    list(record(spec.selector).matchExpressions).length === 0
  ) {
    out.push({
      type: 'FieldValueInvalid',
      field: 'spec.selector',
      value: spec.selector ?? null,
      detail: 'empty selector is invalid for deployment',
    });
  }
  if (Object.entries(matchLabels).some(([k, v]) => templateLabels[k] !== v)) {
    out.push({
      type: 'FieldValueInvalid',
      field: 'spec.template.metadata.labels',
      value: templateLabels,
      detail: '`selector` does not match template `labels`',
    });
  }
  return out;
}

export function deploymentKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: 'apps',
    versions: ['v1'],
    kind: 'Deployment',
    plural: 'deployments',
    singular: 'deployment',
    shortNames: ['deploy'],
    categories: ['all'],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      spec: s.obj(
        {
          replicas: s.int({ default: 1 }),
          selector: labelSelectorSchema,
          template: podTemplateSpecSchema,
          strategy: s.obj(
            {
              type: s.str({ enum: ['Recreate', 'RollingUpdate'] }),
              rollingUpdate: s.obj({ maxUnavailable: s.intOrString(), maxSurge: s.intOrString() }),
            },
            [],
            { 'x-kubernetes-patch-strategy': 'retainKeys' },
          ),
          minReadySeconds: s.int(),
          revisionHistoryLimit: s.int({ default: 10 }),
          paused: s.bool(),
          progressDeadlineSeconds: s.int({ default: 600 }),
        },
        ['selector', 'template'],
      ),
      status: statusSchema('DeploymentStatus', { conditions: conditionsSchema }),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: true,
    scaleSubresource: true,
    tableColumns: [
      nameColumn(),
      {
        name: 'Ready',
        type: 'string',
        description: 'Number of the pod with ready state',
        priority: 0,
        cell: (o) => `${Number(record(o.status).readyReplicas ?? 0)}/${Number(record(o.spec).replicas ?? 0)}`,
      },
      {
        name: 'Up-to-date',
        type: 'integer',
        description:
          'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
        priority: 0,
        cell: (o) => Number(record(o.status).updatedReplicas ?? 0),
      },
      {
        name: 'Available',
        type: 'integer',
        description:
          'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
        priority: 0,
        cell: (o) => Number(record(o.status).availableReplicas ?? 0),
      },
      ageColumn(),
    ],
    strategy: {
      specFields: ['spec'],
      prepareForCreate: (o) => {
        o.status = {};
        defaultStrategy(o);
      },
      prepareForUpdate: defaultStrategy,
      statusResetFields: [['spec'], ['metadata', 'labels']],
      validate: validateSelector,
      validateUpdate: (o, old) =>
        JSON.stringify(record(o.spec).selector) !== JSON.stringify(record(old.spec).selector)
          ? [
              {
                type: 'FieldValueInvalid',
                field: 'spec.selector',
                value: record(o.spec).selector,
                detail: 'field is immutable',
              },
            ]
          : [],
    },
  };
}
