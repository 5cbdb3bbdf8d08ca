// Endpoints (core/v1).

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import { ageColumn, list, nameColumn, record } from '../common.js';

function endpointsCell(o: Record<string, unknown>): string {
  const out: string[] = [];
  for (const subset of list(o.subsets).map(record)) {
    for (const a of list(subset.addresses).map(record)) {
      const ports = list(subset.ports).map(record);
      if (ports.length === 0) out.push(String(a.ip));
      for (const p of ports) out.push(`${String(a.ip)}:${String(p.port)}`);
    }
  }
  return out.length === 0
    ? '<none>'
    : out.slice(0, 3).join(',') + (out.length > 3 ? ` + ${out.length - 3} more...` : '');
}

export function endpointsKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'Endpoints',
    plural: 'endpoints',
    singular: 'endpoints',
    shortNames: ['ep'],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      subsets: s.listAtomic(
        s.obj({
          addresses: s.listAtomic(s.free()),
          notReadyAddresses: s.listAtomic(s.free()),
          ports: s.listAtomic(
            s.obj({
              name: s.str(),
              port: s.int(),
              protocol: s.str({ default: 'TCP' }),
              appProtocol: s.str(),
            }),
          ),
        }),
      ),
    }),
    allowCreateOnUpdate: true,
    statusSubresource: false,
    tableColumns: [
      nameColumn(),
      { name: 'Endpoints', type: 'string', description: 'Endpoints', priority: 0, cell: endpointsCell },
      ageColumn(),
    ],
  };
}
