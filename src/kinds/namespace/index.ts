// Namespace (core/v1, cluster-scoped): the lifecycle (Active → Terminating → removed) is the registry's and the
// namespace controller's; the kind itself only declares its shape and its Status column.

import { domainPrefix, type DomainContext, type KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import { ageColumn, fieldString, nameColumn, record } from '../common.js';

export function namespaceKind(ctx: DomainContext): KindDeclaration {
  // The label every namespace carries with its own name (kubernetes.io/metadata.name with k8s.io).
  const nameLabel = `${domainPrefix(ctx)}/metadata.name`;
  return {
    group: '',
    versions: ['v1'],
    kind: 'Namespace',
    plural: 'namespaces',
    singular: 'namespace',
    shortNames: ['ns'],
    categories: [],
    namespaced: false,
    nameRule: 'dns-label',
    schema: objectSchema({
      spec: s.obj({ finalizers: s.listAtomic(s.str()) }),
      status: s.obj({
        phase: s.str({ enum: ['Active', 'Terminating'] }),
        conditions: s.listMap(s.free(), ['type']),
      }),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: true,
    tableColumns: [
      nameColumn(),
      {
        name: 'Status',
        type: 'string',
        description: 'The status of the namespace',
        priority: 0,
        cell: (o) => fieldString(o, 'status.phase'),
      },
      ageColumn(),
    ],
    selectableFields: { 'status.phase': (o) => fieldString(o, 'status.phase') },
    strategy: {
      prepareForCreate: (o) => {
        o.status = { phase: 'Active' };
        const spec = record(o.spec);
        o.spec = { ...spec, finalizers: ['kubernetes'] };
        // The name label kube-apiserver adds to every namespace.
        o.metadata.labels = {
          ...(o.metadata.labels ?? {}),
          [nameLabel]: o.metadata.name ?? '',
        };
      },
      prepareForUpdate: (o, old) => {
        o.spec = old.spec;
        o.metadata.labels = {
          ...(o.metadata.labels ?? {}),
          [nameLabel]: o.metadata.name ?? '',
        };
      },
      statusResetFields: [['spec']],
      // The name label is kept on every write, status ones included.
      prepareForStatusUpdate: (o, old) => {
        o.metadata.labels = {
          ...(o.metadata.labels ?? {}),
          [nameLabel]: old.metadata.name ?? '',
        };
      },
    },
  };
}
