// Service (core/v1). Cluster IPs come from --service-cluster-ip-range; each allocated IP is a store key
// (/registry/ipallocations/<ip>) created in the same transaction as the Service, so allocation has no
// collisions across the servers of a cluster, and the key is deleted with the Service.

import type { DomainContext, KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import {
  ageColumn,
  conditionsSchema,
  fieldString,
  list,
  nameColumn,
  record,
  statusSchema,
  text,
} from '../common.js';

export interface Ipv4Range {
  readonly base: number;
  readonly size: number;
}

export function parseCidr(cidr: string): Ipv4Range {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (m === null) throw new Error(`invalid CIDR ${JSON.stringify(cidr)}: only IPv4 ranges are supported`);
  const [a, b, c, d, bits] = m.slice(1).map(Number) as [number, number, number, number, number];
  if ([a, b, c, d].some((x) => x > 255) || bits < 8 || bits > 30) throw new Error(`invalid CIDR ${cidr}`);
  const size = 2 ** (32 - bits);
  const ip = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  return { base: ip - (ip % size), size };
}

export function ipString(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function ipNumber(ip: string): number | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (m === null) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((x) => x > 255)) return undefined;
  return parts.reduce((acc, x) => acc * 256 + x, 0);
}

export const ipAllocationPrefix = '/registry/ipallocations/';

const clusterIpTypes = new Set(['ClusterIP', 'NodePort', 'LoadBalancer']);

export function serviceKind(ctx: DomainContext): KindDeclaration {
  const range = parseCidr(ctx.serviceClusterIpRange);
  const inRange = (ip: string): boolean => {
    const n = ipNumber(ip);
    return n !== undefined && n > range.base && n < range.base + range.size - 1;
  };
  return {
    group: '',
    versions: ['v1'],
    kind: 'Service',
    plural: 'services',
    singular: 'service',
    shortNames: ['svc'],
    categories: ['all'],
    namespaced: true,
    nameRule: 'dns-label',
    schema: objectSchema({
      spec: s.obj({
        ports: s.listMap(
          s.obj(
            {
              name: s.str(),
              protocol: s.str({ default: 'TCP', enum: ['TCP', 'UDP', 'SCTP'] }),
              appProtocol: s.str(),
              port: s.int(),
              targetPort: s.intOrString(),
              nodePort: s.int(),
            },
            ['port'],
          ),
          ['port', 'protocol'],
        ),
        selector: s.map(s.str(), { 'x-kubernetes-map-type': 'atomic' }),
        clusterIP: s.str(),
        clusterIPs: s.listAtomic(s.str()),
        type: s.str({
          default: 'ClusterIP',
          enum: ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'],
        }),
        externalIPs: s.listAtomic(s.str()),
        sessionAffinity: s.str({ default: 'None', enum: ['ClientIP', 'None'] }),
        loadBalancerIP: s.str(),
        loadBalancerSourceRanges: s.listAtomic(s.str()),
        externalName: s.str(),
        externalTrafficPolicy: s.str(),
        healthCheckNodePort: s.int(),
        publishNotReadyAddresses: s.bool(),
        sessionAffinityConfig: s.free(),
        ipFamilies: s.listAtomic(s.str()),
        ipFamilyPolicy: s.str(),
        allocateLoadBalancerNodePorts: s.bool(),
        loadBalancerClass: s.str(),
        internalTrafficPolicy: s.str(),
        trafficDistribution: s.str(),
      }),
      status: statusSchema('ServiceStatus', { conditions: conditionsSchema }),
    }),
    allowCreateOnUpdate: true,
    statusSubresource: true,
    tableColumns: [
      nameColumn(),
      {
        name: 'Type',
        type: 'string',
        description: 'The type of the service',
        priority: 0,
        cell: (o) => fieldString(o, 'spec.type'),
      },
      {
        name: 'Cluster-IP',
        type: 'string',
        description: 'The IP address of the service',
        priority: 0,
        cell: (o) => fieldString(o, 'spec.clusterIP') || '<none>',
      },
      {
        name: 'External-IP',
        type: 'string',
        description: 'External IPs',
        priority: 0,
        cell: (o) => list(record(o.spec).externalIPs).join(',') || '<none>',
      },
      {
        name: 'Port(s)',
        type: 'string',
        description: 'The ports of the service',
        priority: 0,
        cell: (o) =>
          list(record(o.spec).ports)
            .map(record)
            .map(
              (p) =>
                `${String(p.port)}${p.nodePort === undefined ? '' : `:${text(p.nodePort)}`}/${text(p.protocol, 'TCP')}`,
            )
            .join(',') || '<none>',
      },
      ageColumn(),
      {
        name: 'Selector',
        type: 'string',
        description: 'The selector',
        priority: 1,
        cell: (o) =>
          Object.entries(record(record(o.spec).selector))
            .map(([k, v]) => `${k}=${String(v)}`)
            .join(',') || '<none>',
      },
    ],
    selectableFields: {
      'spec.clusterIP': (o) => fieldString(o, 'spec.clusterIP'),
      'spec.type': (o) => fieldString(o, 'spec.type'),
    },
    strategy: {
      prepareForCreate: (o) => {
        o.status = { loadBalancer: {} };
        const spec = record(o.spec);
        for (const port of list(spec.ports).map(record))
          if (port.targetPort === undefined) port.targetPort = port.port;
        if (clusterIpTypes.has(text(spec.type, 'ClusterIP'))) spec.internalTrafficPolicy ??= 'Cluster';
        o.spec = spec;
      },
      // The IP families are the REST storage's choice in kube-apiserver, made after field management.
      prepareForCreateUntracked: (o) => {
        const spec = record(o.spec);
        if (clusterIpTypes.has(text(spec.type, 'ClusterIP'))) {
          spec.ipFamilies ??= ['IPv4'];
          spec.ipFamilyPolicy ??= 'SingleStack';
        }
        o.spec = spec;
      },
      prepareForUpdate: (o, old) => {
        const spec = record(o.spec);
        const oldSpec = record(old.spec);
        if (spec.clusterIP === undefined || spec.clusterIP === '') {
          spec.clusterIP = oldSpec.clusterIP;
          spec.clusterIPs = oldSpec.clusterIPs;
        }
        for (const port of list(spec.ports).map(record))
          if (port.targetPort === undefined) port.targetPort = port.port;
        o.spec = spec;
      },
      statusResetFields: [['spec']],
      validate: (o) => {
        const out: FieldError[] = [];
        const spec = record(o.spec);
        const ip = spec.clusterIP;
        if (typeof ip === 'string' && ip !== '' && ip !== 'None' && !inRange(ip)) {
          out.push({
            type: 'FieldValueInvalid',
            field: 'spec.clusterIPs',
            value: [ip],
            detail: `failed to allocate IP ${ip}: provided IP is not in the valid range. The range of valid IPs is ${ctx.serviceClusterIpRange}`,
          });
        }
        if (spec.type !== 'ExternalName' && list(spec.ports).length === 0 && spec.clusterIP !== 'None') {
          out.push({ type: 'FieldValueRequired', field: 'spec.ports' });
        }
        return out;
      },
      validateUpdate: (o, old) =>
        record(o.spec).clusterIP !== record(old.spec).clusterIP
          ? [
              {
                type: 'FieldValueInvalid',
                field: 'spec.clusterIPs[0]',
                value: record(o.spec).clusterIP,
                detail: 'may not change once set',
              },
            ]
          : [],
      reservations: {
        allocate: (o) => {
          const spec = record(o.spec);
          if (!clusterIpTypes.has(text(spec.type, 'ClusterIP')) || spec.clusterIP === 'None')
            return { keys: [] };
          if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '') {
            spec.clusterIPs = [spec.clusterIP];
            return {
              keys: [`${ipAllocationPrefix}${spec.clusterIP}`],
              collision: {
                type: 'FieldValueInvalid',
                field: 'spec.clusterIPs',
                value: [spec.clusterIP],
                detail: `failed to allocate IP ${spec.clusterIP}: provided IP is already allocated`,
              },
            };
          }
          // .0 is the network, the last is broadcast, .1 is kept for the API server's own Service.
          const ip = ipString(range.base + 2 + Math.floor(Math.random() * (range.size - 3)));
          spec.clusterIP = ip;
          spec.clusterIPs = [ip];
          return { keys: [`${ipAllocationPrefix}${ip}`] };
        },
        held: (o) => {
          const ip = record(o.spec).clusterIP;
          return typeof ip === 'string' && ip !== '' && ip !== 'None' ? [`${ipAllocationPrefix}${ip}`] : [];
        },
      },
    },
  };
}
