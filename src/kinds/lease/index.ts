// Lease (coordination.<domain>/v1): leader election and node heartbeats.

import { domainGroup, type DomainContext, type KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import { ageColumn, fieldString, nameColumn } from '../common.js';

export function leaseKind(ctx: DomainContext): KindDeclaration {
  return {
    group: domainGroup(ctx, 'coordination'),
    versions: ['v1'],
    kind: 'Lease',
    plural: 'leases',
    singular: 'lease',
    shortNames: [],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      spec: s.obj({
        holderIdentity: s.str(),
        leaseDurationSeconds: s.int(),
        acquireTime: s.str({ format: 'date-time' }),
        renewTime: s.str({ format: 'date-time' }),
        leaseTransitions: s.int(),
        strategy: s.str(),
        preferredHolder: s.str(),
      }),
    }),
    allowCreateOnUpdate: true,
    statusSubresource: false,
    tableColumns: [
      nameColumn(),
      {
        name: 'Holder',
        type: 'string',
        description: 'The holder of the lease',
        priority: 0,
        cell: (o) => fieldString(o, 'spec.holderIdentity'),
      },
      ageColumn(),
    ],
  };
}
