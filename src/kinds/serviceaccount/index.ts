// ServiceAccount (core/v1).

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import { ageColumn, list, nameColumn } from '../common.js';

export function serviceAccountKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'ServiceAccount',
    plural: 'serviceaccounts',
    singular: 'serviceaccount',
    shortNames: ['sa'],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      secrets: s.listMap(s.free(), ['name']),
      imagePullSecrets: s.listAtomic(s.obj({ name: s.str() })),
      automountServiceAccountToken: s.bool(),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    tableColumns: [
      nameColumn(),
      {
        name: 'Secrets',
        type: 'string',
        description: 'Secrets',
        priority: 0,
        cell: (o) => list(o.secrets).length,
      },
      ageColumn(),
    ],
  };
}
