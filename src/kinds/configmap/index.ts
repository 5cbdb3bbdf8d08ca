// ConfigMap (core/v1): data and binaryData, optionally immutable.

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import { ageColumn, nameColumn, record } from '../common.js';

export function configMapKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'ConfigMap',
    plural: 'configmaps',
    singular: 'configmap',
    shortNames: ['cm'],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema({
      data: s.map(),
      binaryData: s.map(s.str({ format: 'byte' })),
      immutable: s.bool(),
    }),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    tableColumns: [
      nameColumn(),
      {
        name: 'Data',
        type: 'integer',
        description: 'Number of keys',
        priority: 0,
        cell: (o) => Object.keys(record(o.data)).length + Object.keys(record(o.binaryData)).length,
      },
      ageColumn(),
    ],
    strategy: {
      validateUpdate: (o, old) => {
        const out: FieldError[] = [];
        if (
          old.immutable === true &&
          JSON.stringify([o.data, o.binaryData, o.immutable]) !==
            JSON.stringify([old.data, old.binaryData, old.immutable])
        ) {
          out.push({
            type: 'FieldValueForbidden',
            field: 'data',
            detail: 'field is immutable when `immutable` is set',
          });
        }
        return out;
      },
    },
  };
}
