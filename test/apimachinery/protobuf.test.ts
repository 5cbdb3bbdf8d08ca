// Proves the protobuf codec: every message family round-trips JSON → wire → JSON, Go's zero/pointer rules on
// decode, Kubernetes' wire facts (field numbers, unpacked repeated scalars, the k8s\0 envelope, watch frames), the
// errors for a bad prefix or bad bytes, and negotiation of the media type per --group-domain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { negotiateBody, negotiateResponse } from '../../src/apimachinery/negotiation.js';
import {
  decodeEnvelope,
  decodeMessage,
  decodeObject,
  encodeEnvelope,
  encodeMessage,
  encodeObject,
  encodeWatchFrame,
  protobufMediaType,
  protobufMessageOf,
  protobufPrefix,
  protobufRoot,
  ProtobufDecodeError,
} from '../../src/apimachinery/protobuf.js';
import { ApiError } from '../../src/apimachinery/status.js';

type Json = Record<string, unknown>;

function roundTrip(domain: string, object: Json): Json {
  const apiVersion = String(object.apiVersion);
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  const bytes = encodeObject(domain, object);
  assert.deepEqual([...bytes.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
  return decodeObject(domain, bytes, { group, version, kind: String(object.kind) });
}

function assertRoundTrip(domain: string, object: Json): void {
  assert.deepEqual(roundTrip(domain, object), object, `${String(object.kind)} changed on the way`);
}

const meta = (name: string, namespace?: string): Json => ({
  name,
  ...(namespace === undefined ? {} : { namespace }),
  uid: '6f1c1b3e-0000-4000-8000-000000000001',
  resourceVersion: '42',
  generation: 3,
  creationTimestamp: '2024-05-06T07:08:09Z',
  labels: { app: 'web' },
  annotations: { note: 'x' },
  ownerReferences: [
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'rs',
      uid: 'u1',
      controller: true,
      blockOwnerDeletion: false,
    },
  ],
  finalizers: ['example.com/f'],
  managedFields: [
    {
      manager: 'kubectl',
      operation: 'Update',
      apiVersion: 'v1',
      time: '2024-05-06T07:08:09Z',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } },
    },
  ],
});

test('core kinds round-trip: Namespace, ConfigMap, Secret (bytes), ServiceAccount, Service, Endpoints, Node, Event, Binding', () => {
  const d = 'k8s.io';
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { ...meta('ns'), deletionTimestamp: '2024-05-06T07:09:00Z', deletionGracePeriodSeconds: 0 },
    spec: { finalizers: ['kubernetes'] },
    status: {
      phase: 'Terminating',
      conditions: [{ type: 'NamespaceDeletionContentFailure', status: 'False', reason: 'R', message: 'm' }],
    },
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta('cm', 'default'),
    immutable: false,
    data: { a: '1', empty: '' },
    binaryData: { bin: Buffer.from([0, 1, 2, 255]).toString('base64') },
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta('s', 'default'),
    data: { password: Buffer.from('hunter2').toString('base64') },
    type: 'Opaque',
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta('sa', 'default'),
    secrets: [{ name: 'tok' }],
    imagePullSecrets: [{ name: 'pull' }],
    automountServiceAccountToken: false,
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta('svc', 'default'),
    spec: {
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 },
        { name: 'named', protocol: 'TCP', port: 81, targetPort: 'web', appProtocol: 'http' },
      ],
      selector: { app: 'web' },
      clusterIP: '10.0.0.7',
      clusterIPs: ['10.0.0.7'],
      type: 'ClusterIP',
      sessionAffinity: 'None',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      internalTrafficPolicy: 'Cluster',
    },
    status: { loadBalancer: { ingress: [{ ip: '1.2.3.4', ports: [{ port: 80, protocol: 'TCP' }] }] } },
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: meta('svc', 'default'),
    subsets: [
      {
        addresses: [
          { ip: '10.1.0.5', nodeName: 'n1', targetRef: { kind: 'Pod', name: 'p', namespace: 'default' } },
        ],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    ],
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: meta('n1'),
    spec: { podCIDR: '10.1.0.0/24', unschedulable: true, taints: [{ key: 'k', effect: 'NoSchedule' }] },
    status: {
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
      allocatable: { cpu: '3800m' },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          lastHeartbeatTime: '2024-05-06T07:08:09Z',
          lastTransitionTime: '2024-05-06T07:08:09Z',
        },
      ],
      addresses: [{ type: 'InternalIP', address: '192.168.0.2' }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: { kubeletVersion: 'v1.32.0', architecture: 'amd64', operatingSystem: 'linux' },
    },
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: meta('e', 'default'),
    involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
    reason: 'Started',
    message: 'started',
    source: { component: 'kubelet', host: 'n1' },
    firstTimestamp: '2024-05-06T07:08:09Z',
    count: 2,
    type: 'Normal',
    eventTime: '2024-05-06T07:08:09.123456Z',
    series: { count: 2, lastObservedTime: '2024-05-06T07:08:10.000001Z' },
    reportingComponent: 'kubelet',
  });
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'Binding',
    metadata: { name: 'p', namespace: 'default' },
    target: { kind: 'Node', name: 'n1', apiVersion: 'v1' },
  });
  // Lists.
  assertRoundTrip(d, {
    apiVersion: 'v1',
    kind: 'ConfigMapList',
    metadata: { resourceVersion: '9', continue: 'tok', remainingItemCount: 0 },
    items: [{ metadata: { name: 'a' }, data: { k: 'v' } }, { metadata: { name: 'b' } }],
  });
});

test('Pod round-trips with the whole spec: volumes, probes, env, security, affinity; pointer zeros survive', () => {
  assertRoundTrip('k8s.io', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta('p', 'default'),
    spec: {
      volumes: [
        { name: 'scratch', emptyDir: {} },
        {
          name: 'cfg',
          configMap: { name: 'cm', items: [{ key: 'a', path: 'a.txt', mode: 420 }], defaultMode: 0 },
        },
        { name: 'sec', secret: { secretName: 's', optional: false } },
        {
          name: 'proj',
          projected: {
            sources: [
              { serviceAccountToken: { audience: 'api', expirationSeconds: 3600, path: 'token' } },
              {
                downwardAPI: {
                  items: [{ path: 'labels', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.labels' } }],
                },
              },
            ],
          },
        },
        { name: 'host', hostPath: { path: '/var/log', type: '' } },
      ],
      initContainers: [
        { name: 'init', image: 'busybox', command: ['sh', '-c', 'true'], restartPolicy: 'Always' },
      ],
      containers: [
        {
          name: 'c',
          image: 'nginx:1.27',
          args: ['-g', 'daemon off;'],
          workingDir: '/w',
          ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
          envFrom: [{ prefix: 'CM_', configMapRef: { name: 'cm', optional: true } }],
          env: [
            { name: 'A', value: 'a' },
            { name: 'B', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
            { name: 'C', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
          ],
          resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m' } },
          volumeMounts: [{ name: 'scratch', mountPath: '/tmp', readOnly: true }],
          livenessProbe: {
            httpGet: {
              path: '/healthz',
              port: 'http',
              scheme: 'HTTP',
              httpHeaders: [{ name: 'X', value: 'y' }],
            },
            initialDelaySeconds: 5,
            periodSeconds: 10,
            terminationGracePeriodSeconds: 0,
          },
          readinessProbe: { tcpSocket: { port: 80 }, failureThreshold: 3 },
          startupProbe: { exec: { command: ['cat', '/ready'] } },
          lifecycle: { preStop: { sleep: { seconds: 5 } } },
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
          securityContext: {
            capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
            privileged: false,
            runAsUser: 0,
            runAsNonRoot: false,
            allowPrivilegeEscalation: false,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          stdin: true,
          tty: true,
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      activeDeadlineSeconds: 60,
      dnsPolicy: 'ClusterFirst',
      nodeSelector: { disk: 'ssd' },
      serviceAccountName: 'sa',
      automountServiceAccountToken: false,
      nodeName: 'n1',
      hostNetwork: true,
      securityContext: {
        runAsUser: 1000,
        fsGroup: 0,
        supplementalGroups: [1, 2],
        sysctls: [{ name: 'a', value: 'b' }],
      },
      imagePullSecrets: [{ name: 'pull' }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
          },
        },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 10,
              podAffinityTerm: { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'host' },
            },
          ],
        },
      },
      schedulerName: 'default-scheduler',
      tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }],
    },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09Z' }],
      hostIP: '192.168.0.2',
      podIP: '10.1.0.5',
      podIPs: [{ ip: '10.1.0.5' }],
      startTime: '2024-05-06T07:08:09Z',
      containerStatuses: [
        {
          name: 'c',
          state: { running: { startedAt: '2024-05-06T07:08:10Z' } },
          lastState: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2024-05-06T07:08:09Z' } },
          ready: true,
          restartCount: 1,
          image: 'nginx:1.27',
          imageID: 'sha256:abc',
          started: false,
        },
      ],
      qosClass: 'Burstable',
    },
  });
});

test('apps, policy, autoscaling, coordination and events kinds round-trip', () => {
  const d = 'svc.io';
  assertRoundTrip(d, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta('web', 'default'),
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: '25%' } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
    },
    status: {
      observedGeneration: 3,
      replicas: 2,
      conditions: [{ type: 'Available', status: 'True', lastUpdateTime: '2024-05-06T07:08:09Z' }],
      collisionCount: 0,
    },
  });
  assertRoundTrip(d, {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name: 'p', namespace: 'default' },
    deleteOptions: {
      gracePeriodSeconds: 0,
      preconditions: { uid: 'u' },
      propagationPolicy: 'Background',
      dryRun: ['All'],
    },
  });
  assertRoundTrip(d, {
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: { name: 'web', namespace: 'default', resourceVersion: '7' },
    spec: { replicas: 0 },
    status: { replicas: 2, selector: 'app=web' },
  });
  assertRoundTrip(d, {
    apiVersion: 'coordination.svc.io/v1',
    kind: 'Lease',
    metadata: meta('l', 'kube-node-lease'),
    spec: {
      holderIdentity: 'n1',
      leaseDurationSeconds: 40,
      renewTime: '2024-05-06T07:08:09.500000Z',
      leaseTransitions: 0,
    },
  });
  assertRoundTrip(d, {
    apiVersion: 'events.svc.io/v1',
    kind: 'Event',
    metadata: meta('e', 'default'),
    eventTime: '2024-05-06T07:08:09.000001Z',
    reportingController: 'ctrl',
    reportingInstance: 'ctrl-1',
    action: 'Scale',
    reason: 'Scaled',
    regarding: { kind: 'Deployment', name: 'web', namespace: 'default', apiVersion: 'apps/v1' },
    note: 'scaled',
    type: 'Normal',
    deprecatedCount: 1,
  });
});

test('rbac, authorization and authentication kinds round-trip under both group domains', () => {
  for (const d of ['svc.io', 'k8s.io']) {
    const rbac = `rbac.authorization.${d}/v1`;
    const rules = [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: ['p'] },
      { verbs: ['get'], nonResourceURLs: ['/healthz'] },
    ];
    assertRoundTrip(d, { apiVersion: rbac, kind: 'Role', metadata: meta('r', 'default'), rules });
    assertRoundTrip(d, {
      apiVersion: rbac,
      kind: 'ClusterRole',
      metadata: meta('cr'),
      rules,
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { agg: 'true' } }] },
    });
    const subjects = [
      { kind: 'User', apiGroup: `rbac.authorization.${d}`, name: 'alice' },
      { kind: 'ServiceAccount', name: 'sa', namespace: 'default' },
    ];
    assertRoundTrip(d, {
      apiVersion: rbac,
      kind: 'RoleBinding',
      metadata: meta('rb', 'default'),
      subjects,
      roleRef: { apiGroup: `rbac.authorization.${d}`, kind: 'Role', name: 'r' },
    });
    assertRoundTrip(d, {
      apiVersion: rbac,
      kind: 'ClusterRoleBinding',
      metadata: meta('crb'),
      subjects,
      roleRef: { apiGroup: `rbac.authorization.${d}`, kind: 'ClusterRole', name: 'cr' },
    });
    for (const kind of ['RoleList', 'ClusterRoleList', 'RoleBindingList', 'ClusterRoleBindingList'])
      assertRoundTrip(d, {
        apiVersion: rbac,
        kind,
        metadata: { resourceVersion: '5' },
        items: [{ metadata: { name: 'x' } }],
      });

    const authz = `authorization.${d}/v1`;
    const resourceAttributes = {
      namespace: 'default',
      verb: 'get',
      group: 'apps',
      version: 'v1',
      resource: 'deployments',
      subresource: 'scale',
      name: 'web',
      fieldSelector: { rawSelector: 'a=b', requirements: [{ key: 'a', operator: 'In', values: ['b'] }] },
      labelSelector: { requirements: [{ key: 'app', operator: 'Exists' }] },
    };
    const status = { allowed: true, reason: 'RBAC: allowed' };
    assertRoundTrip(d, {
      apiVersion: authz,
      kind: 'SelfSubjectAccessReview',
      metadata: { creationTimestamp: '2024-05-06T07:08:09Z' },
      spec: { resourceAttributes },
      status,
    });
    assertRoundTrip(d, {
      apiVersion: authz,
      kind: 'SubjectAccessReview',
      metadata: { name: 'review' },
      spec: {
        nonResourceAttributes: { path: '/healthz', verb: 'get' },
        user: 'alice',
        groups: ['devs'],
        extra: { scopes: ['a', 'b'], empty: [] },
        uid: 'u1',
      },
      status: { denied: true, evaluationError: 'e' },
    });
    assertRoundTrip(d, {
      apiVersion: authz,
      kind: 'LocalSubjectAccessReview',
      metadata: { namespace: 'default' },
      spec: { resourceAttributes: { namespace: 'default', verb: 'list', resource: 'pods' }, user: 'bob' },
      status,
    });
    assertRoundTrip(d, {
      apiVersion: authz,
      kind: 'SelfSubjectRulesReview',
      metadata: { name: 'review' },
      spec: { namespace: 'default' },
      status: {
        resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
        nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/api'] }],
        incomplete: true,
      },
    });

    const authn = `authentication.${d}/v1`;
    const userInfo = {
      username: 'alice',
      uid: 'u1',
      groups: ['devs', 'system:authenticated'],
      extra: { k: ['v'] },
    };
    assertRoundTrip(d, {
      apiVersion: authn,
      kind: 'SelfSubjectReview',
      metadata: { name: 'review' },
      status: { userInfo },
    });
    assertRoundTrip(d, {
      apiVersion: authn,
      kind: 'TokenReview',
      metadata: { name: 'review' },
      spec: { token: 'abc', audiences: ['api'] },
      status: { authenticated: true, user: userInfo, audiences: ['api'] },
    });
    assertRoundTrip(d, {
      apiVersion: authn,
      kind: 'TokenRequest',
      metadata: { name: 'sa', namespace: 'default' },
      spec: {
        audiences: ['api'],
        expirationSeconds: 3600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p', uid: 'u' },
      },
      status: { token: 'jwt', expirationTimestamp: '2024-05-06T08:08:09Z' },
    });
  }
});

test('meta kinds: Status with details and causes, DeleteOptions with zero grace, PartialObjectMetadataList', () => {
  assertRoundTrip('k8s.io', {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: { resourceVersion: '1' },
    status: 'Failure',
    message: 'pods "p" not found',
    reason: 'NotFound',
    details: {
      name: 'p',
      kind: 'pods',
      causes: [{ reason: 'FieldValueInvalid', message: 'm', field: 'spec' }],
    },
    code: 404,
  });
  assertRoundTrip('k8s.io', {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'DeleteOptions',
    gracePeriodSeconds: 0,
    orphanDependents: false,
    preconditions: { resourceVersion: '' },
  });
  assertRoundTrip('k8s.io', {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadataList',
    metadata: { resourceVersion: '1' },
    items: [{ metadata: { name: 'a' } }],
  });
});

test("zero values: Go's non-pointer zeros are dropped on decode, pointer zeros and empty pointer structs are kept", () => {
  const root = protobuf.Root.fromJSON({
    nested: {
      // What Go writes for a PodSpec with every non-pointer field at its zero value (fields always written).
      Spec: {
        edition: 'proto2',
        fields: {
          restartPolicy: { type: 'string', id: 3 },
          terminationGracePeriodSeconds: { type: 'int64', id: 4 },
          dnsPolicy: { type: 'string', id: 6 },
          hostNetwork: { type: 'bool', id: 11 },
          automountServiceAccountToken: { type: 'bool', id: 21 },
          priority: { type: 'int32', id: 25 },
        },
      },
    },
  });
  const Spec = root.lookupType('Spec');
  const bytes = Spec.encode(
    Spec.fromObject({
      restartPolicy: '',
      terminationGracePeriodSeconds: 0,
      dnsPolicy: '',
      hostNetwork: false,
      automountServiceAccountToken: false,
      priority: 0,
    }),
  ).finish();
  assert.deepEqual(decodeMessage('core.v1.PodSpec', bytes), {
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    priority: 0,
  });
  // A Volume with an empty emptyDir (a pointer): presence is the meaning.
  const volume = decodeMessage(
    'core.v1.Volume',
    encodeMessage('core.v1.Volume', { name: 'v', emptyDir: {} }),
  );
  assert.deepEqual(volume, { name: 'v', emptyDir: {} });
  // An empty non-pointer struct (status) is dropped, as an unset one.
  const ns = decodeMessage(
    'core.v1.Namespace',
    encodeMessage('core.v1.Namespace', { metadata: { name: 'a' }, status: {} }),
  );
  assert.deepEqual(ns, { metadata: { name: 'a' } });
  // Go's zero Time is an empty message: no creationTimestamp.
  const om = decodeMessage('meta.v1.ObjectMeta', Buffer.from([0x0a, 0x01, 0x61, 0x42, 0x00]));
  assert.deepEqual(om, { name: 'a' });
});

test("wire facts: Kubernetes' field numbers, unpacked repeated scalars, envelope layout", () => {
  // Deployment{spec: DeploymentSpec{replicas: 0}}: field 2 (length 2), then field 1 varint 0.
  assert.equal(encodeMessage('apps.v1.Deployment', { spec: { replicas: 0 } }).toString('hex'), '12020800');
  // ObjectMeta.labels is field 11, a map entry {1: key, 2: value}.
  assert.equal(
    encodeMessage('meta.v1.ObjectMeta', { labels: { a: 'b' } }).toString('hex'),
    '5a060a0161120162',
  );
  // PodSecurityContext.supplementalGroups (4): proto2, one tag per element.
  assert.equal(
    encodeMessage('core.v1.PodSecurityContext', { supplementalGroups: [1, 2] }).toString('hex'),
    '20012002',
  );
  // Time: seconds (1) and nanos (2).
  assert.equal(
    encodeMessage('meta.v1.ObjectMeta', { creationTimestamp: '1970-01-01T00:00:01Z' }).toString('hex'),
    '4204080110' + '00',
  );
  // IntOrString: type 1 = string, strVal (3).
  assert.equal(
    encodeMessage('core.v1.ServicePort', { targetPort: 'web' }).toString('hex'),
    '2207' + '0801' + '1a03776562',
  );
  const envelope = encodeEnvelope('v1', 'Namespace', Buffer.from([0x0a, 0x00]));
  assert.equal(
    envelope.toString('hex'),
    '6b387300' + '0a0f' + '0a027631' + '12094e616d657370616365' + '12020a00' + '1a00' + '2200',
  );
  assert.deepEqual(decodeEnvelope(envelope), {
    apiVersion: 'v1',
    kind: 'Namespace',
    raw: Buffer.from([0x0a, 0x00]),
    contentType: '',
    contentEncoding: '',
  });
});

test('watch frames: a 4-byte big-endian length, then WatchEvent{type, object: RawExtension{raw: envelope}}', () => {
  const object = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'a', resourceVersion: '3' },
    data: { k: 'v' },
  };
  const frame = encodeWatchFrame('k8s.io', 'v1', 'MODIFIED', object);
  assert.equal(frame.readUInt32BE(0), frame.length - 4);
  const outer = decodeEnvelope(frame.subarray(4));
  assert.equal(outer.kind, 'WatchEvent');
  const event = decodeMessage('meta.v1.WatchEvent', outer.raw);
  assert.deepEqual(event, { type: 'MODIFIED', object });
});

test('bad bodies: a wrong prefix and undecodable bytes are refused with the stage that failed', () => {
  const expected = { group: '', version: 'v1', kind: 'Namespace' };
  assert.throws(
    () => decodeObject('k8s.io', Buffer.from('{"kind":"Namespace"}'), expected),
    (e: unknown) =>
      e instanceof ProtobufDecodeError &&
      e.stage === 'envelope' &&
      e.message === 'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]',
  );
  assert.throws(
    () => decodeObject('k8s.io', Buffer.concat([protobufPrefix, Buffer.from([0x0a, 0x7f, 0x01])]), expected),
    (e: unknown) => e instanceof ProtobufDecodeError && e.stage === 'envelope',
  );
  const badRaw = encodeEnvelope('v1', 'Namespace', Buffer.from([0x0a, 0x05, 0x0a]));
  assert.throws(
    () => decodeObject('k8s.io', badRaw, expected),
    (e: unknown) =>
      e instanceof ProtobufDecodeError && e.stage === 'object' && e.typeMeta?.kind === 'Namespace',
  );
});

test('the media type follows --group-domain; negotiation prefers the client order and falls back', () => {
  assert.equal(protobufMediaType('k8s.io'), 'application/vnd.kubernetes.protobuf');
  assert.equal(protobufMediaType('svc.io'), 'application/vnd.service.protobuf');
  const pb = { mediaType: 'application/vnd.service.protobuf', available: true };
  const base = { metaGroup: 'meta.svc.io', tableAllowed: true };
  assert.equal(
    negotiateResponse('application/vnd.service.protobuf, application/json', { ...base, protobuf: pb })
      .serialization,
    'protobuf',
  );
  assert.equal(
    negotiateResponse('application/json, application/vnd.service.protobuf', { ...base, protobuf: pb })
      .serialization,
    'json',
  );
  // The other domain's protobuf type is not ours.
  assert.equal(
    negotiateResponse('application/vnd.kubernetes.protobuf, application/json', { ...base, protobuf: pb })
      .serialization,
    'json',
  );
  // A kind without a message: the next acceptable type, else 406.
  const none = { ...pb, available: false };
  assert.equal(
    negotiateResponse('application/vnd.service.protobuf, application/yaml', { ...base, protobuf: none })
      .serialization,
    'yaml',
  );
  assert.throws(
    () => negotiateResponse('application/vnd.service.protobuf', { ...base, protobuf: none }),
    (e: unknown) => e instanceof ApiError && e.code === 406,
  );
  // Table stays JSON.
  assert.throws(
    () =>
      negotiateResponse('application/vnd.service.protobuf;as=Table;v=v1;g=meta.svc.io', {
        ...base,
        protobuf: pb,
      }),
    (e: unknown) => e instanceof ApiError && e.code === 406,
  );
  assert.equal(
    negotiateBody('application/vnd.service.protobuf', ['json', 'protobuf'], {
      protobufMediaType: pb.mediaType,
    }),
    'protobuf',
  );
  assert.throws(
    () => negotiateBody('application/vnd.service.protobuf', ['json']),
    (e: unknown) => e instanceof ApiError && e.code === 415,
  );
  // Messages are keyed without the domain; unknown kinds (custom resources) have none.
  assert.equal(protobufMessageOf('svc.io', 'rbac.authorization.svc.io', 'v1', 'Role'), 'rbac.v1.Role');
  assert.equal(protobufMessageOf('k8s.io', 'rbac.authorization.k8s.io', 'v1', 'Role'), 'rbac.v1.Role');
  assert.equal(protobufMessageOf('svc.io', 'example.com', 'v1', 'Widget'), undefined);
});

test("the codec agrees with protobufjs's own reflection of the same schema, both ways", () => {
  const root = protobufRoot();
  const Pod = root.lookupType('core.v1.Pod');
  const pod = {
    metadata: { name: 'p', creationTimestamp: '2024-05-06T07:08:09Z', labels: { a: 'b' } },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [
        { name: 'c', livenessProbe: { httpGet: { port: 'http' } }, ports: [{ containerPort: 80 }] },
      ],
      volumes: [{ name: 'v', configMap: { name: 'cm', defaultMode: 420 } }],
      securityContext: { supplementalGroups: [1, 2] },
    },
  };
  const viaReflection = Pod.toObject(Pod.decode(encodeMessage('core.v1.Pod', pod)), {
    longs: Number,
    defaults: false,
  });
  assert.deepEqual(viaReflection, {
    metadata: { name: 'p', creationTimestamp: { seconds: 1714979289, nanos: 0 }, labels: { a: 'b' } },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'c',
          livenessProbe: { handler: { httpGet: { port: { type: 1, strVal: 'http' } } } },
          ports: [{ containerPort: 80 }],
        },
      ],
      volumes: [
        {
          name: 'v',
          volumeSource: { configMap: { localObjectReference: { name: 'cm' }, defaultMode: 420 } },
        },
      ],
      securityContext: { supplementalGroups: [1, 2] },
    },
  });
  // And back: what reflection writes, the codec reads; a packed run (other writers) is read too.
  const written = Pod.encode(Pod.fromObject(viaReflection)).finish();
  assert.deepEqual(decodeMessage('core.v1.Pod', written), pod);
  const packed = root.lookupType('core.v1.PodSecurityContext');
  const packedBytes = Buffer.from([0x22, 0x02, 0x01, 0x02]); // field 4, packed [1, 2]
  assert.deepEqual(packed.toObject(packed.decode(packedBytes), { longs: Number }).supplementalGroups, [1, 2]);
  assert.deepEqual(decodeMessage('core.v1.PodSecurityContext', packedBytes), { supplementalGroups: [1, 2] });
});
