// Pod (core/v1), with the `status` sub-resource (and `eviction` routed as a sub-resource by the endpoints).

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import type { ApiObject } from '../../apimachinery/meta.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import { validateName } from '../../apimachinery/meta.js';
import {
  ageColumn,
  conditionsSchema,
  defaultPodSpec,
  fieldString,
  list,
  nameColumn,
  podSpecSchema,
  record,
  statusSchema,
  text,
} from '../common.js';

function defaultContainers(o: ApiObject): void {
  const spec = record(o.spec);
  defaultPodSpec(spec);
  spec.enableServiceLinks ??= true;
  o.spec = spec;
}

/** What the Priority admission plugin sets (after field management, so no manager owns it). */
function defaultPriority(o: ApiObject): void {
  const spec = record(o.spec);
  spec.priority ??= 0;
  spec.preemptionPolicy ??= 'PreemptLowerPriority';
  o.spec = spec;
}

function readyCell(o: ApiObject): string {
  const statuses = list(record(o.status).containerStatuses).map(record);
  const total = list(record(o.spec).containers).length;
  return `${statuses.filter((c) => c.ready === true).length}/${total}`;
}

function restartsCell(o: ApiObject): number {
  return list(record(o.status).containerStatuses)
    .map(record)
    .reduce((n, c) => n + Number(c.restartCount ?? 0), 0);
}

function statusCell(o: ApiObject): string {
  if (o.metadata.deletionTimestamp !== undefined) return 'Terminating';
  const status = record(o.status);
  return text(status.reason, text(status.phase, 'Pending'));
}

function validatePod(o: ApiObject): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  list(record(o.spec).containers)
    .map(record)
    .forEach((c, i) => {
      const name = text(c.name);
      for (const msg of validateName('dns-label', name)) {
        out.push({
          type: 'FieldValueInvalid',
          field: `spec.containers[${i}].name`,
          value: name,
          detail: msg,
        });
      }
      if (seen.has(name))
        out.push({ type: 'FieldValueDuplicate', field: `spec.containers[${i}].name`, value: name });
      seen.add(name);
      if (typeof c.image !== 'string' || c.image.trim() === '') {
        out.push({ type: 'FieldValueRequired', field: `spec.containers[${i}].image` });
      }
    });
  if (list(record(o.spec).containers).length === 0 && record(o.spec).containers !== undefined) {
    out.push({ type: 'FieldValueRequired', field: 'spec.containers' });
  }
  return out;
}

export function podKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'Pod',
    plural: 'pods',
    singular: 'pod',
    shortNames: ['po'],
    categories: ['all'],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema(
      {
        spec: podSpecSchema,
        status: statusSchema('PodStatus', {
          conditions: conditionsSchema,
          podIPs: s.listMap(s.free(), ['ip']),
          hostIPs: s.listMap(s.free(), ['ip']),
          containerStatuses: s.listAtomic(s.free()),
          initContainerStatuses: s.listAtomic(s.free()),
          ephemeralContainerStatuses: s.listAtomic(s.free()),
        }),
      },
      ['spec'],
    ),
    allowCreateOnUpdate: false,
    statusSubresource: true,
    evictionSubresource: true,
    tableColumns: [
      nameColumn(),
      {
        name: 'Ready',
        type: 'string',
        description: 'The aggregate readiness state of this pod for accepting traffic.',
        priority: 0,
        cell: readyCell,
      },
      {
        name: 'Status',
        type: 'string',
        description: 'The aggregate status of the containers in this pod.',
        priority: 0,
        cell: statusCell,
      },
      {
        name: 'Restarts',
        type: 'string',
        description: 'The number of times the containers in this pod have been restarted.',
        priority: 0,
        cell: (o) => String(restartsCell(o)),
      },
      ageColumn(),
      {
        name: 'IP',
        type: 'string',
        description: 'IP address allocated to the pod.',
        priority: 1,
        cell: (o) => fieldString(o, 'status.podIP') || '<none>',
      },
      {
        name: 'Node',
        type: 'string',
        description: 'Name of the Node this pod is assigned to.',
        priority: 1,
        cell: (o) => fieldString(o, 'spec.nodeName') || '<none>',
      },
    ],
    selectableFields: Object.fromEntries(
      [
        'spec.nodeName',
        'spec.restartPolicy',
        'spec.schedulerName',
        'spec.serviceAccountName',
        'spec.hostNetwork',
        'status.phase',
        'status.podIP',
        'status.nominatedNodeName',
      ].map((f) => [f, (o: ApiObject) => fieldString(o, f) || (f === 'spec.hostNetwork' ? 'false' : '')]),
    ),
    strategy: {
      prepareForCreate: (o) => {
        o.status = { phase: 'Pending', qosClass: 'BestEffort' };
        defaultContainers(o);
      },
      prepareForCreateUntracked: defaultPriority,
      prepareForUpdate: (o) => {
        defaultContainers(o);
        defaultPriority(o);
      },
      statusResetFields: [['spec'], ['metadata', 'deletionTimestamp'], ['metadata', 'ownerReferences']],
      // The QoS class is set at creation: a status update that leaves it out keeps it.
      prepareForStatusUpdate: (o, old) => {
        const status = record(o.status);
        const oldQos = record(old.status).qosClass;
        if ((status.qosClass === undefined || status.qosClass === '') && oldQos !== undefined) {
          o.status = { ...status, qosClass: oldQos };
        }
      },
      validate: validatePod,
      // Pods bound to a node end gracefully (their node confirms); unbound or finished pods go at once.
      gracePeriodSeconds: (o) => {
        const phase = fieldString(o, 'status.phase');
        if (fieldString(o, 'spec.nodeName') === '' || phase === 'Succeeded' || phase === 'Failed') return 0;
        const grace = record(o.spec).terminationGracePeriodSeconds;
        return typeof grace === 'number' ? grace : 30;
      },
      validateUpdate: (o, old) => {
        // Pod updates may not change fields other than images, activeDeadlineSeconds and tolerations.
        const strip = (x: ApiObject): string => {
          const spec = { ...record(x.spec) };
          spec.containers = list(spec.containers).map((c) => ({ ...record(c), image: undefined }));
          delete spec.activeDeadlineSeconds;
          delete spec.tolerations;
          return JSON.stringify(spec);
        };
        return strip(o) === strip(old)
          ? []
          : [
              {
                type: 'FieldValueForbidden',
                field: 'spec',
                detail:
                  'pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
              },
            ];
      },
    },
  };
}
