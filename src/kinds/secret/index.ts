// Secret (core/v1): data (base64), stringData merged into data on write, type immutable.

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import type { ApiObject } from '../../apimachinery/meta.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import { ageColumn, fieldString, nameColumn, record } from '../common.js';

function mergeStringData(o: ApiObject): void {
  const stringData = record(o.stringData);
  if (Object.keys(stringData).length > 0) {
    const data = { ...record(o.data) };
    for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(String(v)).toString('base64');
    o.data = data;
  }
  delete o.stringData;
  if (o.type === undefined || o.type === '') o.type = 'Opaque';
}

export function secretKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'Secret',
    plural: 'secrets',
    singular: 'secret',
    shortNames: [],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      data: s.map(s.str({ format: 'byte' })),
      stringData: s.map(),
      type: s.str(),
      immutable: s.bool(),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    tableColumns: [
      nameColumn(),
      {
        name: 'Type',
        type: 'string',
        description: 'The type of the secret',
        priority: 0,
        cell: (o) => fieldString(o, 'type'),
      },
      {
        name: 'Data',
        type: 'integer',
        description: 'Number of keys',
        priority: 0,
        cell: (o) => Object.keys(record(o.data)).length,
      },
      ageColumn(),
    ],
    selectableFields: { type: (o) => fieldString(o, 'type') },
    strategy: {
      prepareForCreate: mergeStringData,
      prepareForUpdate: mergeStringData,
      validate: (o) => {
        const out: FieldError[] = [];
        for (const [k, v] of Object.entries(record(o.data))) {
          if (typeof v === 'string' && !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) {
            out.push({
              type: 'FieldValueInvalid',
              field: `data[${k}]`,
              value: '<secret contents redacted>',
              detail: 'illegal base64 data',
            });
          }
        }
        return out;
      },
      validateUpdate: (o, old) =>
        o.type !== old.type
          ? [{ type: 'FieldValueInvalid', field: 'type', value: o.type, detail: 'field is immutable' }]
          : [],
    },
  };
}
