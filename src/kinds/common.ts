// Schema pieces and helpers several kinds share (pod template, label selector, table cells).

import type { TableColumn } from '../apimachinery/kind.js';
import type { ApiObject } from '../apimachinery/meta.js';
import { objectMetaSchema } from '../apimachinery/meta.js';
import { s, type Schema } from '../apimachinery/schema.js';
import { age } from '../apimachinery/table.js';

export const labelSelectorSchema: Schema = s.obj(
  {
    matchLabels: s.map(),
    matchExpressions: s.listAtomic(
      s.obj({ key: s.str(), operator: s.str(), values: s.listAtomic(s.str()) }, ['key', 'operator']),
    ),
  },
  [],
  { 'x-kubernetes-map-type': 'atomic' },
);

/** `status.conditions` of most kinds: merged by `type` (patchStrategy merge, listType map). */
export const conditionsSchema: Schema = s.listMap(s.free(), ['type']);

/** A status modelled only where its lists need merge keys; other fields are kept as sent. */
export function statusSchema(description: string, lists: Record<string, Schema>): Schema {
  return s.obj(lists, [], { description, 'x-kubernetes-preserve-unknown-fields': true });
}

const envVarSchema = s.obj({ name: s.str(), value: s.str(), valueFrom: s.free() }, ['name']);

export const containerSchema: Schema = s.obj(
  {
    name: s.str(),
    image: s.str(),
    command: s.listAtomic(s.str()),
    args: s.listAtomic(s.str()),
    workingDir: s.str(),
    ports: s.listMap(
      s.obj(
        {
          name: s.str(),
          containerPort: s.int(),
          hostPort: s.int(),
          hostIP: s.str(),
          protocol: s.str({ default: 'TCP' }),
        },
        ['containerPort'],
      ),
      ['containerPort', 'protocol'],
    ),
    env: s.listMap(envVarSchema, ['name']),
    envFrom: s.listAtomic(s.free()),
    resources: s.free(),
    resizePolicy: s.listAtomic(s.free()),
    restartPolicy: s.str(),
    volumeMounts: s.listMap(s.free(), ['mountPath']),
    volumeDevices: s.listMap(s.free(), ['devicePath']),
    livenessProbe: s.free(),
    readinessProbe: s.free(),
    startupProbe: s.free(),
    lifecycle: s.free(),
    terminationMessagePath: s.str({ default: '/dev/termination-log' }),
    terminationMessagePolicy: s.str({ default: 'File', enum: ['File', 'FallbackToLogsOnError'] }),
    imagePullPolicy: s.str({ enum: ['Always', 'Never', 'IfNotPresent'] }),
    securityContext: s.free(),
    stdin: s.bool(),
    stdinOnce: s.bool(),
    tty: s.bool(),
  },
  ['name'],
);

export const podSpecSchema: Schema = s.obj(
  {
    volumes: s.listMap(s.free(), ['name'], { 'x-kubernetes-patch-strategy': 'merge,retainKeys' }),
    initContainers: s.listMap(containerSchema, ['name']),
    containers: s.listMap(containerSchema, ['name']),
    ephemeralContainers: s.listMap(s.free(), ['name']),
    restartPolicy: s.str({ default: 'Always', enum: ['Always', 'OnFailure', 'Never'] }),
    terminationGracePeriodSeconds: s.int({ default: 30 }),
    activeDeadlineSeconds: s.int(),
    dnsPolicy: s.str({
      default: 'ClusterFirst',
      enum: ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'],
    }),
    nodeSelector: s.map(s.str(), { 'x-kubernetes-map-type': 'atomic' }),
    serviceAccountName: s.str(),
    serviceAccount: s.str(),
    automountServiceAccountToken: s.bool(),
    nodeName: s.str(),
    hostNetwork: s.bool(),
    hostPID: s.bool(),
    hostIPC: s.bool(),
    shareProcessNamespace: s.bool(),
    securityContext: s.free(),
    imagePullSecrets: s.listMap(s.obj({ name: s.str() }), ['name']),
    hostname: s.str(),
    subdomain: s.str(),
    affinity: s.free(),
    schedulerName: s.str({ default: 'default-scheduler' }),
    tolerations: s.listAtomic(s.free()),
    hostAliases: s.listMap(s.free(), ['ip']),
    priorityClassName: s.str(),
    priority: s.int(),
    dnsConfig: s.free(),
    readinessGates: s.listAtomic(s.free()),
    runtimeClassName: s.str(),
    enableServiceLinks: s.bool(),
    preemptionPolicy: s.str(),
    overhead: s.free(),
    topologySpreadConstraints: s.listMap(s.free(), ['topologyKey', 'whenUnsatisfiable']),
    setHostnameAsFQDN: s.bool(),
    os: s.free(),
    hostUsers: s.bool(),
    schedulingGates: s.listMap(s.free(), ['name']),
    resourceClaims: s.listMap(s.free(), ['name'], { 'x-kubernetes-patch-strategy': 'merge,retainKeys' }),
  },
  ['containers'],
);

export const podTemplateSpecSchema: Schema = s.obj({ metadata: objectMetaSchema, spec: podSpecSchema });

export function ageColumn(): TableColumn {
  return {
    name: 'Age',
    type: 'string',
    description:
      'CreationTimestamp is a timestamp representing the server time when this object was created.',
    priority: 0,
    cell: (o) => age(o.metadata.creationTimestamp),
  };
}

export function nameColumn(): TableColumn {
  return {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'Name must be unique within a namespace.',
    priority: 0,
    cell: (o) => o.metadata.name ?? '',
  };
}

/** Reads a nested field (`spec.nodeName`) as a string for field selectors; absent = ''. */
export function fieldString(object: ApiObject, path: string): string {
  let value: unknown = object;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return '';
    value = (value as Record<string, unknown>)[part];
  }
  return text(value);
}

/** A scalar as text; objects, arrays and absent values as `fallback`. */
export function text(value: unknown, fallback = ''): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : fallback;
}

export function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The defaults Kubernetes gives every PodSpec, a Pod's or a template's: each container's imagePullPolicy (Always
 * for an untagged or `latest` image, else IfNotPresent) and an empty securityContext.
 */
export function defaultPodSpec(spec: Record<string, unknown>): void {
  for (const c of [...list(spec.containers), ...list(spec.initContainers)].map(record)) {
    if (c.imagePullPolicy === undefined && typeof c.image === 'string') {
      const tag = c.image.includes('@') ? 'digest' : (/:([^/:]+)$/.exec(c.image)?.[1] ?? 'latest');
      c.imagePullPolicy = tag === 'latest' ? 'Always' : 'IfNotPresent';
    }
  }
  spec.securityContext ??= {};
}
