// OpenAPI v2 and v3 documents built from the kind schemas (kubectl explain, client-side validation and the
// fieldValidation capability check read them).

import { createHash } from 'node:crypto';
import { apiVersionOf, type KindDeclaration } from '../apimachinery/kind.js';
import type { Schema } from '../apimachinery/schema.js';

/** `io.k8s.api.apps.v1.Deployment` for k8s.io; `io.svc.api.apps.v1.Deployment` for svc.io. */
export function definitionName(decl: KindDeclaration, version: string, groupDomain: string): string {
  const domain = groupDomain.split('.').reverse().join('.');
  const group = decl.group === '' ? 'core' : (decl.group.split('.')[0] ?? decl.group);
  return `${domain}.api.${group}.${version}.${decl.kind}`;
}

function gvk(decl: KindDeclaration, version: string): unknown[] {
  return [{ group: decl.group, kind: decl.kind, version }];
}

const queryParams = ['dryRun', 'fieldManager', 'fieldValidation', 'pretty'].map((name) => ({
  name,
  in: 'query',
  schema: { type: 'string', uniqueItems: true },
  description: name,
}));

const listParams = [
  'allowWatchBookmarks',
  'continue',
  'fieldSelector',
  'labelSelector',
  'limit',
  'resourceVersion',
  'resourceVersionMatch',
  'sendInitialEvents',
  'timeoutSeconds',
  'watch',
].map((name) => ({ name, in: 'query', schema: { type: 'string' }, description: name }));

function pathsFor(
  decl: KindDeclaration,
  version: string,
  groupDomain: string,
  v3: boolean,
): Record<string, unknown> {
  const base = decl.group === '' ? `/api/${version}` : `/apis/${decl.group}/${version}`;
  const ns = decl.namespaced ? '/namespaces/{namespace}' : '';
  const ref = v3
    ? `#/components/schemas/${definitionName(decl, version, groupDomain)}`
    : `#/definitions/${definitionName(decl, version, groupDomain)}`;
  const body = v3
    ? { requestBody: { content: { '*/*': { schema: { $ref: ref } } }, required: true } }
    : { parameters: [...queryParams, { name: 'body', in: 'body', required: true, schema: { $ref: ref } }] };
  const response = v3
    ? { content: { 'application/json': { schema: { $ref: ref } } }, description: 'OK' }
    : { description: 'OK', schema: { $ref: ref } };
  const action = (verb: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    operationId: `${verb}${decl.kind}`,
    'x-kubernetes-action': verb,
    'x-kubernetes-group-version-kind': { group: decl.group, kind: decl.kind, version },
    responses: { '200': response },
    ...extra,
  });
  const writeParams = v3 ? { parameters: queryParams } : {};
  if (decl.virtual !== undefined) {
    return { [`${base}${ns}/${decl.plural}`]: { post: action('post', { ...body, ...writeParams }) } };
  }
  return {
    [`${base}${ns}/${decl.plural}`]: {
      get: action('list', v3 ? { parameters: listParams } : {}),
      post: action('post', { ...body, ...writeParams }),
      delete: action('deletecollection'),
    },
    [`${base}${ns}/${decl.plural}/{name}`]: {
      get: action('get'),
      put: action('put', { ...body, ...writeParams }),
      patch: action('patch', writeParams),
      delete: action('delete'),
    },
  };
}

export class OpenApi {
  private v3Cache = new Map<string, string>();

  constructor(
    private readonly kinds: readonly KindDeclaration[],
    private readonly groupDomain: string,
    private readonly serverVersion: string,
  ) {}

  private withGvk(decl: KindDeclaration, version: string, schema: Schema): Record<string, unknown> {
    return { ...schema, 'x-kubernetes-group-version-kind': gvk(decl, version) };
  }

  v2(): unknown {
    const definitions: Record<string, unknown> = {};
    let paths: Record<string, unknown> = {};
    for (const decl of this.kinds) {
      for (const version of decl.versions) {
        definitions[definitionName(decl, version, this.groupDomain)] = this.withGvk(
          decl,
          version,
          decl.schema,
        );
        paths = { ...paths, ...pathsFor(decl, version, this.groupDomain, false) };
      }
    }
    return { swagger: '2.0', info: { title: 'Stoa', version: this.serverVersion }, paths, definitions };
  }

  private groupVersions(): Map<string, KindDeclaration[]> {
    const out = new Map<string, KindDeclaration[]>();
    for (const decl of this.kinds) {
      for (const version of decl.versions) {
        const path = decl.group === '' ? `api/${version}` : `apis/${decl.group}/${version}`;
        out.set(path, [...(out.get(path) ?? []), decl]);
      }
    }
    return out;
  }

  v3Document(path: string): string | undefined {
    const cached = this.v3Cache.get(path);
    if (cached !== undefined) return cached;
    const kinds = this.groupVersions().get(path);
    if (kinds === undefined) return undefined;
    const version = path.split('/').pop() ?? 'v1';
    const schemas: Record<string, unknown> = {};
    let paths: Record<string, unknown> = {};
    for (const decl of kinds) {
      schemas[definitionName(decl, version, this.groupDomain)] = this.withGvk(decl, version, decl.schema);
      paths = { ...paths, ...pathsFor(decl, version, this.groupDomain, true) };
    }
    const text = JSON.stringify({
      openapi: '3.0.0',
      info: { title: 'Stoa', version: this.serverVersion },
      paths,
      components: { schemas },
    });
    this.v3Cache.set(path, text);
    return text;
  }

  v3Index(): unknown {
    const paths: Record<string, unknown> = {};
    for (const path of this.groupVersions().keys()) {
      const hash = createHash('sha512')
        .update(this.v3Document(path) ?? '')
        .digest('hex')
        .slice(0, 64)
        .toUpperCase();
      paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
    }
    return { paths };
  }

  apiVersionOf(decl: KindDeclaration): string {
    return apiVersionOf(decl.group, decl.versions[0] ?? 'v1');
  }
}
