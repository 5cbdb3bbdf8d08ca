// The default cluster roles and cluster role bindings of kube-apiserver 1.32 (its bootstrap policy), with
// group names that follow --group-domain. Reconciled at every start (src/controllers/rbac.ts).

import { domainGroup, domainPrefix, type DomainContext } from '../../apimachinery/kind.js';
import type { ApiObject } from '../../apimachinery/meta.js';

type Rule = Record<string, string[]>;

const read = ['get', 'list', 'watch'];
const write = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const readWrite = [...write, ...read];

function r(verbs: string[], groups: string[], resources: string[], names: string[] = []): Rule {
  return { verbs, apiGroups: groups, resources, ...(names.length > 0 ? { resourceNames: names } : {}) };
}

function urls(verbs: string[], paths: string[]): Rule {
  return { verbs, nonResourceURLs: paths };
}

export interface BootstrapPolicy {
  readonly clusterRoles: ApiObject[];
  readonly clusterRoleBindings: ApiObject[];
}

export function bootstrapLabels(ctx: DomainContext): Record<string, string> {
  return { [`${domainPrefix(ctx)}/bootstrapping`]: 'rbac-defaults' };
}

/** The reconciliation switch: `false` here keeps a default role or binding as the user changed it. */
export function autoupdateAnnotations(ctx: DomainContext): readonly string[] {
  return [
    ...new Set([
      `rbac.authorization.${domainPrefix(ctx)}/autoupdate`,
      'rbac.authorization.kubernetes.io/autoupdate',
    ]),
  ];
}

export function bootstrapPolicy(ctx: DomainContext): BootstrapPolicy {
  const g = (prefix: string): string => domainGroup(ctx, prefix);
  const rbac = g('rbac.authorization');
  const authn = g('authentication');
  const authz = g('authorization');
  const coordination = g('coordination');
  const events = g('events');
  const discovery = g('discovery');
  const networking = g('networking');
  const storage = g('storage');
  const certificates = g('certificates');
  const nodeGroup = g('node');
  const aggregate = (to: string): string => `${rbac}/aggregate-to-${to}`;
  const labels = bootstrapLabels(ctx);
  const annotation = autoupdateAnnotations(ctx)[0] ?? '';
  const meta = (name: string, extraLabels: Record<string, string> = {}): ApiObject['metadata'] => ({
    name,
    labels: { ...labels, ...extraLabels },
    annotations: { [annotation]: 'true' },
  });
  const role = (name: string, rules: Rule[], extraLabels: Record<string, string> = {}): ApiObject => ({
    apiVersion: `${rbac}/v1`,
    kind: 'ClusterRole',
    metadata: meta(name, extraLabels),
    rules,
  });
  const aggregated = (name: string, to: string, extraLabels: Record<string, string> = {}): ApiObject => ({
    apiVersion: `${rbac}/v1`,
    kind: 'ClusterRole',
    metadata: meta(name, extraLabels),
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregate(to)]: 'true' } }] },
    rules: [],
  });
  const eventWrites = [r(['create', 'patch', 'update'], ['', events], ['events'])];
  const clusterRoles: ApiObject[] = [
    role('cluster-admin', [r(['*'], ['*'], ['*']), urls(['*'], ['*'])]),
    role('system:discovery', [
      urls(
        ['get'],
        [
          '/api',
          '/api/*',
          '/apis',
          '/apis/*',
          '/healthz',
          '/livez',
          '/openapi',
          '/openapi/*',
          '/readyz',
          '/version',
          '/version/',
        ],
      ),
    ]),
    role('system:monitoring', [
      urls(
        ['get'],
        ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'],
      ),
    ]),
    role('system:basic-user', [
      r(['create'], [authz], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']),
      r(['create'], [authn], ['selfsubjectreviews']),
    ]),
    role('system:public-info-viewer', [
      urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/']),
    ]),
    aggregated('admin', 'admin'),
    aggregated('edit', 'edit', { [aggregate('admin')]: 'true' }),
    aggregated('view', 'view', { [aggregate('edit')]: 'true' }),
    role(
      'system:aggregate-to-admin',
      [
        r(['create'], [authz], ['localsubjectaccessreviews']),
        r(readWrite, [rbac], ['rolebindings', 'roles']),
      ],
      { [aggregate('admin')]: 'true' },
    ),
    role(
      'system:aggregate-to-edit',
      [
        r(['impersonate'], [''], ['serviceaccounts']),
        r(write, [''], ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy']),
        r(['create'], [''], ['pods/eviction']),
        r(
          write,
          [''],
          [
            'configmaps',
            'events',
            'persistentvolumeclaims',
            'replicationcontrollers',
            'replicationcontrollers/scale',
            'secrets',
            'serviceaccounts',
            'services',
            'services/proxy',
          ],
        ),
        r(['create'], [''], ['serviceaccounts/token']),
        r(
          write,
          ['apps'],
          [
            'daemonsets',
            'deployments',
            'deployments/rollback',
            'deployments/scale',
            'replicasets',
            'replicasets/scale',
            'statefulsets',
            'statefulsets/scale',
          ],
        ),
        r(write, ['autoscaling'], ['horizontalpodautoscalers']),
        r(write, ['batch'], ['cronjobs', 'jobs']),
        r(
          write,
          ['extensions'],
          [
            'daemonsets',
            'deployments',
            'deployments/rollback',
            'deployments/scale',
            'ingresses',
            'networkpolicies',
            'replicasets',
            'replicasets/scale',
            'replicationcontrollers/scale',
          ],
        ),
        r(write, ['policy'], ['poddisruptionbudgets']),
        r(write, [networking], ['ingresses', 'networkpolicies']),
        r(write, [coordination], ['leases']),
      ],
      { [aggregate('edit')]: 'true' },
    ),
    role(
      'system:aggregate-to-view',
      [
        r(
          read,
          [''],
          [
            'configmaps',
            'endpoints',
            'persistentvolumeclaims',
            'persistentvolumeclaims/status',
            'pods',
            'replicationcontrollers',
            'replicationcontrollers/scale',
            'serviceaccounts',
            'services',
            'services/status',
          ],
        ),
        r(
          read,
          [''],
          [
            'bindings',
            'events',
            'limitranges',
            'namespaces/status',
            'pods/log',
            'pods/status',
            'replicationcontrollers/status',
            'resourcequotas',
            'resourcequotas/status',
          ],
        ),
        r(read, [''], ['namespaces']),
        r(read, [discovery], ['endpointslices']),
        r(
          read,
          ['apps'],
          [
            'controllerrevisions',
            'daemonsets',
            'daemonsets/status',
            'deployments',
            'deployments/scale',
            'deployments/status',
            'replicasets',
            'replicasets/scale',
            'replicasets/status',
            'statefulsets',
            'statefulsets/scale',
            'statefulsets/status',
          ],
        ),
        r(read, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
        r(read, ['batch'], ['cronjobs', 'cronjobs/status', 'jobs', 'jobs/status']),
        r(
          read,
          ['extensions'],
          [
            'daemonsets',
            'daemonsets/status',
            'deployments',
            'deployments/scale',
            'deployments/status',
            'ingresses',
            'ingresses/status',
            'networkpolicies',
            'replicasets',
            'replicasets/scale',
            'replicasets/status',
            'replicationcontrollers/scale',
          ],
        ),
        r(read, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
        r(read, [networking], ['ingresses', 'ingresses/status', 'networkpolicies']),
        r(read, [coordination], ['leases']),
      ],
      { [aggregate('view')]: 'true' },
    ),
    role('system:heapster', [
      r(read, [''], ['events', 'namespaces', 'nodes', 'pods']),
      r(read, ['extensions'], ['deployments']),
    ]),
    role('system:node', [
      r(['create'], [authn], ['tokenreviews']),
      r(['create'], [authz], ['localsubjectaccessreviews', 'subjectaccessreviews']),
      r(read, [''], ['services']),
      r(['create', 'get', 'list', 'watch'], [''], ['nodes']),
      r(['patch', 'update'], [''], ['nodes/status']),
      r(['patch', 'update'], [''], ['nodes']),
      ...eventWrites,
      r(read, [''], ['pods']),
      r(['create', 'delete'], [''], ['pods']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(['create'], [''], ['pods/eviction']),
      r(['get'], [''], ['configmaps', 'secrets']),
      r(['get'], [''], ['persistentvolumeclaims', 'persistentvolumes']),
      r(['get'], [''], ['endpoints']),
      r(['create', 'get', 'list', 'watch'], [certificates], ['certificatesigningrequests']),
      r(['create', 'delete', 'get', 'patch', 'update'], [coordination], ['leases']),
      r(['get'], [storage], ['volumeattachments']),
      r(['create'], [''], ['serviceaccounts/token']),
      r(['patch', 'update'], [''], ['persistentvolumeclaims/status']),
      r(read, [storage], ['csidrivers']),
      r(['create', 'delete', 'get', 'patch', 'update'], [storage], ['csinodes']),
      r(read, [nodeGroup], ['runtimeclasses']),
    ]),
    role('system:node-problem-detector', [
      r(['get'], [''], ['nodes']),
      r(['patch'], [''], ['nodes/status']),
      ...eventWrites,
    ]),
    role('system:kubelet-api-admin', [
      r(['get', 'list', 'watch'], [''], ['nodes']),
      r(['proxy'], [''], ['nodes']),
      r(['*'], [''], ['nodes/log', 'nodes/metrics', 'nodes/proxy', 'nodes/stats']),
    ]),
    role('system:node-bootstrapper', [
      r(['create', 'get', 'list', 'watch'], [certificates], ['certificatesigningrequests']),
    ]),
    role('system:auth-delegator', [
      r(['create'], [authn], ['tokenreviews']),
      r(['create'], [authz], ['subjectaccessreviews']),
    ]),
    role('system:kube-aggregator', [r(read, [''], ['endpoints', 'services'])]),
    role('system:kube-controller-manager', [
      ...eventWrites,
      r(['create'], [coordination], ['leases']),
      r(['get', 'update'], [coordination], ['leases'], ['kube-controller-manager']),
      r(['create'], [''], ['secrets', 'serviceaccounts']),
      r(['delete'], [''], ['secrets']),
      r(['get'], [''], ['configmaps', 'namespaces', 'secrets', 'serviceaccounts']),
      r(['update'], [''], ['secrets', 'serviceaccounts']),
      r(['create'], [authn], ['tokenreviews']),
      r(['create'], [authz], ['subjectaccessreviews']),
      r(['list', 'watch'], ['*'], ['*']),
      r(['create'], [''], ['serviceaccounts/token']),
    ]),
    role('system:kube-dns', [
      r(['list', 'watch'], [''], ['endpoints', 'services']),
      r(['list', 'watch'], [discovery], ['endpointslices']),
    ]),
    role('system:persistent-volume-provisioner', [
      r(['create', 'delete', 'get', 'list', 'watch'], [''], ['persistentvolumes']),
      r(['get', 'list', 'update', 'watch'], [''], ['persistentvolumeclaims']),
      r(read, [storage], ['storageclasses']),
      r(['create', 'list', 'patch', 'update', 'watch'], ['', events], ['events']),
    ]),
    role('system:kube-scheduler', [
      ...eventWrites,
      r(['create'], [coordination], ['leases']),
      r(['get', 'update'], [coordination], ['leases'], ['kube-scheduler']),
      r(['delete', 'get', 'list', 'watch'], [''], ['nodes']),
      r(read, [''], ['pods']),
      r(['create'], [''], ['bindings', 'pods/binding']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(read, [''], ['replicationcontrollers', 'services']),
      r(read, ['apps', 'extensions'], ['replicasets']),
      r(read, ['apps'], ['statefulsets']),
      r(read, ['policy'], ['poddisruptionbudgets']),
      r(read, [''], ['persistentvolumeclaims', 'persistentvolumes']),
      r(['create'], [authn], ['tokenreviews']),
      r(['create'], [authz], ['subjectaccessreviews']),
      r(read, [storage], ['csinodes']),
      r(read, [''], ['namespaces']),
      r(read, [storage], ['csidrivers']),
      r(read, [storage], ['csistoragecapacities']),
    ]),
    role('system:volume-scheduler', [
      r(['get', 'list', 'patch', 'update', 'watch'], [''], ['persistentvolumes']),
      r(read, [storage], ['storageclasses']),
      r(['get', 'list', 'patch', 'update', 'watch'], [''], ['persistentvolumeclaims']),
    ]),
    role('system:node-proxier', [
      r(['list', 'watch'], [''], ['endpoints', 'services']),
      r(['get', 'list', 'watch'], [''], ['nodes']),
      ...eventWrites,
      r(['list', 'watch'], [discovery], ['endpointslices']),
    ]),
    role('system:service-account-issuer-discovery', [
      urls(
        ['get'],
        [
          '/.well-known/openid-configuration',
          '/.well-known/openid-configuration/',
          '/openid/v1/jwks',
          '/openid/v1/jwks/',
        ],
      ),
    ]),
  ];
  const subject = (kind: 'User' | 'Group', name: string): Record<string, string> => ({
    kind,
    apiGroup: rbac,
    name,
  });
  const binding = (name: string, subjects: Record<string, string>[], roleName = name): ApiObject => ({
    apiVersion: `${rbac}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: meta(name),
    roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: roleName },
    subjects,
  });
  const clusterRoleBindings: ApiObject[] = [
    binding('cluster-admin', [subject('Group', 'system:masters')]),
    binding('system:monitoring', [subject('Group', 'system:monitoring')]),
    binding('system:discovery', [subject('Group', 'system:authenticated')]),
    binding('system:basic-user', [subject('Group', 'system:authenticated')]),
    binding('system:public-info-viewer', [
      subject('Group', 'system:authenticated'),
      subject('Group', 'system:unauthenticated'),
    ]),
    binding('system:node-proxier', [subject('User', 'system:kube-proxy')]),
    binding('system:kube-controller-manager', [subject('User', 'system:kube-controller-manager')]),
    binding('system:kube-dns', [{ kind: 'ServiceAccount', name: 'kube-dns', namespace: 'kube-system' }]),
    binding('system:kube-scheduler', [subject('User', 'system:kube-scheduler')]),
    binding('system:volume-scheduler', [subject('User', 'system:kube-scheduler')]),
    binding('system:node', []),
    binding('system:service-account-issuer-discovery', [subject('Group', 'system:serviceaccounts')]),
  ];
  return { clusterRoles, clusterRoleBindings };
}
