// The Node authorizer: a node (user `system:node:<name>` in group `system:nodes`) may read and write its own
// Node and its Lease in kube-node-lease, the pods bound to it (spec.nodeName), and read the secrets, config maps,
// persistent volume claims and service accounts its pods reference. Nothing else: every other request of a
// node, and every request of anyone else, gets no opinion (so RBAC can still decide).

import type { ApiObject } from '../apimachinery/meta.js';
import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';

export const nodesGroup = 'system:nodes';
const nodeUserPrefix = 'system:node:';
export const nodeLeaseNamespace = 'kube-node-lease';

/** Where the authorizer finds pods: those bound to a node, in one namespace or all. */
export interface PodSource {
  podsOnNode(nodeName: string, namespace: string): readonly ApiObject[];
}

type Reference = 'secrets' | 'configmaps' | 'persistentvolumeclaims' | 'serviceaccounts';

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function list(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(record) : [];
}

function name(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The names of objects of `kind` a pod references (volumes, projections, env, envFrom, pull secrets). */
export function podReferences(pod: ApiObject, kind: Reference): Set<string> {
  const spec = record(pod.spec);
  const out = new Set<string>();
  if (kind === 'serviceaccounts') {
    out.add(name(spec.serviceAccountName) || name(spec.serviceAccount) || 'default');
    return out;
  }
  if (kind === 'secrets') for (const s of list(spec.imagePullSecrets)) out.add(name(s.name));
  for (const volume of list(spec.volumes)) {
    if (kind === 'secrets') out.add(name(record(volume.secret).secretName));
    if (kind === 'configmaps') out.add(name(record(volume.configMap).name));
    if (kind === 'persistentvolumeclaims') out.add(name(record(volume.persistentVolumeClaim).claimName));
    for (const source of list(record(volume.projected).sources)) {
      if (kind === 'secrets') out.add(name(record(source.secret).name));
      if (kind === 'configmaps') out.add(name(record(source.configMap).name));
    }
  }
  const containers = [
    ...list(spec.initContainers),
    ...list(spec.containers),
    ...list(spec.ephemeralContainers),
  ];
  for (const c of containers) {
    for (const env of list(c.env)) {
      const from = record(env.valueFrom);
      if (kind === 'secrets') out.add(name(record(from.secretKeyRef).name));
      if (kind === 'configmaps') out.add(name(record(from.configMapKeyRef).name));
    }
    for (const env of list(c.envFrom)) {
      if (kind === 'secrets') out.add(name(record(env.secretRef).name));
      if (kind === 'configmaps') out.add(name(record(env.configMapRef).name));
    }
  }
  out.delete('');
  return out;
}

const readVerbs = new Set(['get', 'list', 'watch']);
const writeVerbs = new Set(['create', 'update', 'patch', 'delete']);

export function nodeNameOf(attributes: Attributes): string | undefined {
  const { user } = attributes;
  if (!user.groups.includes(nodesGroup) || !user.name.startsWith(nodeUserPrefix)) return undefined;
  const node = user.name.slice(nodeUserPrefix.length);
  return node === '' ? undefined : node;
}

export class NodeAuthorizer implements Authorizer {
  constructor(
    private readonly pods: PodSource,
    private readonly coreGroup: string,
    private readonly coordinationGroup: string,
  ) {}

  authorize(attributes: Attributes): Promise<AuthorizationResult> {
    const node = nodeNameOf(attributes);
    if (node === undefined || !attributes.isResourceRequest) return Promise.resolve(noOpinion(''));
    return Promise.resolve(this.decide(node, attributes));
  }

  private decide(node: string, a: Attributes): AuthorizationResult {
    const allowed = { decision: 'allow', reason: '' } as const;
    if (a.apiGroup === this.coreGroup) {
      switch (a.resource) {
        case 'nodes':
          if (a.subresource !== '' && a.subresource !== 'status') break;
          if (a.verb === 'create' && a.subresource === '') return allowed;
          if ((readVerbs.has(a.verb) || writeVerbs.has(a.verb)) && a.name === node) return allowed;
          return noOpinion(`node '${node}' cannot ${a.verb} node '${a.name}'`);
        case 'pods':
          return this.pod(node, a);
        case 'secrets':
        case 'configmaps':
        case 'persistentvolumeclaims':
        case 'serviceaccounts':
          return this.referenced(node, a, a.resource);
        default:
          break;
      }
    }
    if (
      a.apiGroup === this.coordinationGroup &&
      a.resource === 'leases' &&
      a.namespace === nodeLeaseNamespace
    ) {
      if (a.verb === 'create' || ((readVerbs.has(a.verb) || writeVerbs.has(a.verb)) && a.name === node))
        return allowed;
    }
    return noOpinion(`node '${node}' cannot ${a.verb} ${a.resource}`);
  }

  private pod(node: string, a: Attributes): AuthorizationResult {
    if (a.subresource !== '' && a.subresource !== 'status') return noOpinion('');
    const mine = this.pods.podsOnNode(node, a.namespace).some((p) => p.metadata.name === a.name);
    if (a.name !== '' && mine && (readVerbs.has(a.verb) || writeVerbs.has(a.verb)))
      return { decision: 'allow', reason: '' };
    // Lists and watches only of its own pods: the selector must name the node.
    if ((a.verb === 'list' || a.verb === 'watch') && a.name === '' && selectsNode(a.fieldSelector, node))
      return { decision: 'allow', reason: '' };
    return noOpinion(`node '${node}' can only access pods bound to it`);
  }

  private referenced(node: string, a: Attributes, kind: Reference): AuthorizationResult {
    const tokenRequest = kind === 'serviceaccounts' && a.subresource === 'token' && a.verb === 'create';
    if ((a.subresource !== '' && !tokenRequest) || (a.verb !== 'get' && !tokenRequest) || a.name === '')
      return noOpinion(`node '${node}' can only get individual ${kind}`);
    const referenced = this.pods
      .podsOnNode(node, a.namespace)
      .some((pod) => podReferences(pod, kind).has(a.name));
    return referenced
      ? { decision: 'allow', reason: '' }
      : noOpinion(`no relationship found between node '${node}' and this object`);
  }
}

function selectsNode(fieldSelector: string | undefined, node: string): boolean {
  if (fieldSelector === undefined) return false;
  return fieldSelector
    .split(',')
    .map((t) => t.trim().replace('==', '='))
    .includes(`spec.nodeName=${node}`);
}

function noOpinion(reason: string): AuthorizationResult {
  return { decision: 'noOpinion', reason };
}
