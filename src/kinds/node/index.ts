// Node (core/v1, cluster-scoped).

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import {
  ageColumn,
  conditionsSchema,
  fieldString,
  list,
  nameColumn,
  record,
  statusSchema,
} from '../common.js';

function readyStatus(o: Record<string, unknown>): string {
  const ready = list(record(o.status).conditions)
    .map(record)
    .find((c) => c.type === 'Ready');
  const base = ready === undefined ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady';
  return record(o.spec).unschedulable === true ? `${base},SchedulingDisabled` : base;
}

export function nodeKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'Node',
    plural: 'nodes',
    singular: 'node',
    shortNames: ['no'],
    categories: [],
    namespaced: false,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      spec: s.obj({
        podCIDR: s.str(),
        podCIDRs: s.listSet(s.str(), { 'x-kubernetes-patch-strategy': 'merge' }),
        providerID: s.str(),
        unschedulable: s.bool(),
        taints: s.listAtomic(s.free()),
        configSource: s.free(),
        externalID: s.str(),
      }),
      status: statusSchema('NodeStatus', {
        addresses: s.listMap(s.free(), ['type']),
        conditions: conditionsSchema,
        images: s.listAtomic(s.free()),
        volumesInUse: s.listAtomic(s.str()),
        volumesAttached: s.listAtomic(s.free()),
      }),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: true,
    tableColumns: [
      nameColumn(),
      {
        name: 'Status',
        type: 'string',
        description: 'The status of the node',
        priority: 0,
        cell: readyStatus,
      },
      {
        name: 'Roles',
        type: 'string',
        description: 'The roles of the node',
        priority: 0,
        cell: () => '<none>',
      },
      ageColumn(),
      {
        name: 'Version',
        type: 'string',
        description: 'Kubelet Version reported by the node.',
        priority: 0,
        cell: (o) => fieldString(o, 'status.nodeInfo.kubeletVersion'),
      },
    ],
    selectableFields: { 'spec.unschedulable': (o) => fieldString(o, 'spec.unschedulable') || 'false' },
    // A status update keeps the spec; metadata may change (a kubelet updates its labels this way).
    strategy: { statusResetFields: [['spec']] },
  };
}
