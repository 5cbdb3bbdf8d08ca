/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves the Update entries of metadata.managedFields are exactly kube-apiserver's (golden FieldsV1): what Go
// always writes (non-pointer structs, `containers`) is never "added" and gets no ".", what a request adds does.
//
// Where the golden shapes come from (real kube-apiserver output, `kubectl get -o yaml`, found in public sources):
// - Deployment from `kubectl create deployment nginx --image=nginx`: the kubectl-create entry printed in many
//   tutorials (e.g. in a 2023 CKA notes repository and a 2021 one, both with `f:strategy` and `f:template` without
//   ".", `f:rollingUpdate` with "." and `f:resources: {}` / `f:securityContext: {}` as leaves).
// - Pod from `kubectl run kubia --image=... --port=8080`: the kubectl-run entry (`f:ports` with ".", keyed
//   `k:{"containerPort":8080,"protocol":"TCP"}`, `f:enableServiceLinks`, no `f:priority`).
// - Service from `kubectl expose` / `oc create` (1.25+): `f:internalTrafficPolicy`, `f:ports` with ".",
//   `f:selector: {}` (an atomic map), no `f:clusterIP` / `f:ipFamilies` (chosen after field management).
// - ConfigMap from `kubectl create configmap`: `f:data` with ".".
// - Deployment status from kube-controller-manager: `f:conditions` with "." and keyed by type.
// The real kubectl 1.32's `create deployment` and `run` are checked against the same goldens.
// - The PUT: structured-merge-diff's Compare (typed/compare.go): a path is "added" only when the old object
//   has nothing there, so the new container item gets "." and `f:containers` does not.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk } from '../support/kubectl.js';

let server: TestServer;

before(async () => {
  ensureKubectl();
  server = await startTestServer(['--group-domain', 'k8s.io']);
});

after(async () => {
  await server?.stop();
});

const deployments = '/apis/apps/v1/namespaces/default/deployments';

function entry(object: any, manager: string, subresource?: string): any {
  const found = (object.metadata.managedFields as any[]).filter(
    (e) => e.manager === manager && e.subresource === subresource,
  );
  assert.equal(found.length, 1, JSON.stringify(object.metadata.managedFields));
  const [e] = found;
  assert.equal(e.operation, 'Update');
  assert.equal(e.fieldsType, 'FieldsV1');
  return e;
}

// The container fields kube-apiserver's defaults add to `name` and `image` (and `resources: {}`, which Go writes).
const defaultedContainer = {
  '.': {},
  'f:image': {},
  'f:imagePullPolicy': {},
  'f:name': {},
  'f:resources': {},
  'f:terminationMessagePath': {},
  'f:terminationMessagePolicy': {},
};

// `kubectl create deployment nginx --image=nginx` as kube-apiserver records it.
const createDeploymentFields = {
  'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  'f:spec': {
    'f:progressDeadlineSeconds': {},
    'f:replicas': {},
    'f:revisionHistoryLimit': {},
    'f:selector': {},
    'f:strategy': {
      'f:rollingUpdate': { '.': {}, 'f:maxSurge': {}, 'f:maxUnavailable': {} },
      'f:type': {},
    },
    'f:template': {
      'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
      'f:spec': {
        'f:containers': { 'k:{"name":"nginx"}': defaultedContainer },
        'f:dnsPolicy': {},
        'f:restartPolicy': {},
        'f:schedulerName': {},
        'f:securityContext': {},
        'f:terminationGracePeriodSeconds': {},
      },
    },
  },
};

test('Deployment: POST as `kubectl create deployment`, then a PUT that scales and adds a container', async () => {
  // The body kubectl create deployment sends.
  const created = await server.request('POST', `${deployments}?fieldManager=kubectl-create`, {
    body: {
      kind: 'Deployment',
      apiVersion: 'apps/v1',
      metadata: { name: 'nginx', creationTimestamp: null, labels: { app: 'nginx' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'nginx' } },
        template: {
          metadata: { creationTimestamp: null, labels: { app: 'nginx' } },
          spec: { containers: [{ name: 'nginx', image: 'nginx', resources: {} }] },
        },
        strategy: {},
      },
      status: {},
    },
  });
  assert.equal(created.status, 201, created.text);
  const create = entry(created.body, 'kubectl-create');
  assert.equal(create.apiVersion, 'apps/v1');
  assert.deepEqual(create.fieldsV1, createDeploymentFields);

  // A PUT of the object read back: 3 replicas and a second container, without `resources` (Go writes it).
  const body = structuredClone(created.body);
  body.spec.replicas = 3;
  body.spec.template.spec.containers.push({ name: 'sidecar', image: 'busybox:1.36' });
  const replaced = await server.request('PUT', `${deployments}/nginx?fieldManager=editor`, { body });
  assert.equal(replaced.status, 200, replaced.text);
  assert.deepEqual(entry(replaced.body, 'editor').fieldsV1, {
    'f:spec': {
      'f:replicas': {},
      'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"sidecar"}': defaultedContainer } } },
    },
  });
  // The creator gave up replicas and nothing else.
  const after = entry(replaced.body, 'kubectl-create').fieldsV1;
  assert.equal(after['f:spec']['f:replicas'], undefined);
  assert.deepEqual(after['f:spec']['f:template'], create.fieldsV1['f:spec']['f:template']);
});

test('Deployment status: PUT /status by kube-controller-manager records a status entry', async () => {
  const created = await server.request('POST', `${deployments}?fieldManager=kubectl-create`, {
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
        },
      },
    },
  });
  assert.equal(created.status, 201, created.text);
  const condition = (type: string, reason: string) => ({
    type,
    status: 'True',
    lastUpdateTime: '2026-01-01T00:00:00Z',
    lastTransitionTime: '2026-01-01T00:00:00Z',
    reason,
    message: `${type} for the test`,
  });
  const body = structuredClone(created.body);
  body.status = {
    observedGeneration: 1,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    conditions: [
      condition('Available', 'MinimumReplicasAvailable'),
      condition('Progressing', 'NewReplicaSetAvailable'),
    ],
  };
  const updated = await server.request(
    'PUT',
    `${deployments}/web/status?fieldManager=kube-controller-manager`,
    {
      body,
    },
  );
  assert.equal(updated.status, 200, updated.text);
  const conditionFields = {
    '.': {},
    'f:lastTransitionTime': {},
    'f:lastUpdateTime': {},
    'f:message': {},
    'f:reason': {},
    'f:status': {},
    'f:type': {},
  };
  const status = entry(updated.body, 'kube-controller-manager', 'status');
  assert.deepEqual(status.fieldsV1, {
    'f:status': {
      'f:availableReplicas': {},
      'f:conditions': {
        '.': {},
        'k:{"type":"Available"}': conditionFields,
        'k:{"type":"Progressing"}': conditionFields,
      },
      'f:observedGeneration': {},
      'f:readyReplicas': {},
      'f:replicas': {},
      'f:updatedReplicas': {},
    },
  });
  // The main resource's entry is untouched by a status write.
  assert.deepEqual(
    entry(updated.body, 'kubectl-create').fieldsV1,
    entry(created.body, 'kubectl-create').fieldsV1,
  );
});

// `kubectl run kubia --image=luksa/kubia --port=8080` as kube-apiserver records it.
const runPodFields = {
  'f:metadata': { 'f:labels': { '.': {}, 'f:run': {} } },
  'f:spec': {
    'f:containers': {
      'k:{"name":"kubia"}': {
        ...defaultedContainer,
        'f:ports': {
          '.': {},
          'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} },
        },
      },
    },
    'f:dnsPolicy': {},
    'f:enableServiceLinks': {},
    'f:restartPolicy': {},
    'f:schedulerName': {},
    'f:securityContext': {},
    'f:terminationGracePeriodSeconds': {},
  },
};

test('Pod: POST as `kubectl run --port`: containers without ".", ports keyed with "."; no priority', async () => {
  const r = await server.request('POST', '/api/v1/namespaces/default/pods?fieldManager=kubectl-run', {
    body: {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { name: 'kubia', creationTimestamp: null, labels: { run: 'kubia' } },
      spec: {
        containers: [
          { name: 'kubia', image: 'luksa/kubia', ports: [{ containerPort: 8080 }], resources: {} },
        ],
        dnsPolicy: 'ClusterFirst',
        restartPolicy: 'Always',
      },
      status: {},
    },
  });
  assert.equal(r.status, 201, r.text);
  // The Priority admission plugin sets these after field management: in the object, in no entry.
  assert.equal(r.body.spec.priority, 0);
  assert.equal(r.body.spec.preemptionPolicy, 'PreemptLowerPriority');
  assert.deepEqual(entry(r.body, 'kubectl-run').fieldsV1, runPodFields);
});

test('Service: POST as `kubectl expose`: ports with ".", an atomic selector, no allocated fields', async () => {
  const r = await server.request('POST', '/api/v1/namespaces/default/services?fieldManager=kubectl-expose', {
    body: {
      kind: 'Service',
      apiVersion: 'v1',
      metadata: { name: 'web', creationTimestamp: null, labels: { run: 'nginx' } },
      spec: { ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], selector: { run: 'nginx' } },
      status: { loadBalancer: {} },
    },
  });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.spec.ipFamilies, ['IPv4']);
  assert.deepEqual(entry(r.body, 'kubectl-expose').fieldsV1, {
    'f:metadata': { 'f:labels': { '.': {}, 'f:run': {} } },
    'f:spec': {
      'f:internalTrafficPolicy': {},
      'f:ports': {
        '.': {},
        'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} },
      },
      'f:selector': {},
      'f:sessionAffinity': {},
      'f:type': {},
    },
  });
});

test('ConfigMap: POST as `kubectl create configmap`: data with "."', async () => {
  const r = await server.request(
    'POST',
    '/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create',
    {
      body: {
        kind: 'ConfigMap',
        apiVersion: 'v1',
        metadata: { name: 'game-config', creationTimestamp: null },
        data: { 'game.properties': 'lives=3\n', 'ui.properties': 'color=purple\n' },
      },
    },
  );
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(entry(r.body, 'kubectl-create').fieldsV1, {
    'f:data': { '.': {}, 'f:game.properties': {}, 'f:ui.properties': {} },
  });
});

test('the real kubectl: `kubectl create deployment` and `kubectl run` record the same entries', async () => {
  const kubectl = (...args: string[]): Promise<string> => kubectlOk(server.kubeconfig, args);
  // The container is named after the image (nginx) and the label after the deployment: the same paths.
  await kubectl('create', 'deployment', 'real', '--image=nginx');
  const live = JSON.parse(await kubectl('get', 'deployment', 'real', '-o', 'json', '--show-managed-fields'));
  assert.deepEqual(entry(live, 'kubectl-create').fieldsV1, createDeploymentFields);
  // Another namespace: the pod (and so its container) must be named kubia like the golden's.
  await kubectl('create', 'namespace', 'real');
  await kubectl('run', 'kubia', '-n', 'real', '--image=luksa/kubia', '--port=8080');
  const pod = JSON.parse(
    await kubectl('get', 'pod', 'kubia', '-n', 'real', '-o', 'json', '--show-managed-fields'),
  );
  assert.deepEqual(entry(pod, 'kubectl-run').fieldsV1, runPodFields);
});
