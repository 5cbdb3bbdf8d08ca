// Request info: what a request is about (resource or not, group, version, resource, namespace, name,
// sub-resource) and its API verb, from the method, path and query, as kube-apiserver's RequestInfoFactory.

import type { Verb } from '../apimachinery/kind.js';

export type ApiVerb = Verb | 'deletecollection';

export type RequestInfo =
  | { readonly isResourceRequest: false; readonly path: string; readonly verb: string }
  | {
      readonly isResourceRequest: true;
      readonly path: string;
      readonly verb: ApiVerb;
      readonly apiPrefix: 'api' | 'apis';
      readonly group: string;
      readonly version: string;
      /** '' for a group-version discovery request (/apis/G/V). */
      readonly resource: string;
      readonly subresource: string;
      readonly namespace: string;
      readonly name: string;
    };

/** Sub-resources of a namespace that are not a namespaced resource type (`/namespaces/x/status`). */
const namespaceSubresources = new Set(['status', 'finalize']);

function isTrue(value: string | null): boolean {
  return value !== null && value !== '' && value !== 'false' && value !== '0';
}

export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const parts = path.split('/').filter((p) => p !== '');
  const lower = method.toLowerCase();
  const nonResource: RequestInfo = { isResourceRequest: false, path, verb: lower };
  let rest: string[];
  let group = '';
  let version: string;
  let apiPrefix: 'api' | 'apis';
  if (parts[0] === 'api' && parts.length >= 2) {
    apiPrefix = 'api';
    version = parts[1] ?? '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    apiPrefix = 'apis';
    group = parts[1] ?? '';
    version = parts[2] ?? '';
    rest = parts.slice(3);
  } else {
    return nonResource;
  }
  // The deprecated `/watch/` prefix (`/api/v1/watch/namespaces/x/pods/p`): a watch, also of one named object.
  const legacyWatch = rest[0] === 'watch' && rest.length > 1;
  if (legacyWatch) {
    if (method !== 'GET' && method !== 'HEAD') return nonResource;
    rest = rest.slice(1);
  }
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1] ?? '';
    if (rest.length > 2 && !namespaceSubresources.has(rest[2] ?? '')) rest = rest.slice(2);
  }
  const resource = rest[0] ?? '';
  const name = rest[1] ?? '';
  const subresource = rest[2] ?? '';
  // Only the proxy sub-resource takes a path after it (`services/NAME/proxy/PATH`).
  const proxy = subresource === 'proxy';
  if (rest.length > 3 && !proxy) return nonResource;
  if (legacyWatch && subresource !== '') return nonResource; // sub-resources are not watched
  let verb: ApiVerb;
  switch (method) {
    case 'GET':
    case 'HEAD':
      // `?watch` turns a collection GET into a watch; on a named object it is a get (the handler ignores it),
      // as kube-apiserver's RequestInfoFactory decides.
      if (legacyWatch) verb = 'watch';
      else if (name !== '') verb = 'get';
      else verb = isTrue(query.get('watch')) ? 'watch' : 'list';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name === '' ? 'deletecollection' : 'delete';
      break;
    default:
      return nonResource;
  }
  return {
    isResourceRequest: true,
    path,
    verb,
    apiPrefix,
    group,
    version,
    resource,
    subresource,
    namespace,
    name,
  };
}
