// Proves strategic merge patch over the built-in kinds' schemas: Kubernetes' merge keys and strategies (containers
// by name, ports by containerPort, finalizers as a set, ownerReferences by uid, Service ports by port, volumes
// with retainKeys), and the directives $patch (replace, delete, merge), $retainKeys, $setElementOrder and
// $deleteFromPrimitiveList.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PatchFormatError, strategicMergePatch } from '../../src/apimachinery/patch.js';
import type { Schema } from '../../src/apimachinery/schema.js';
import { negotiateBody } from '../../src/apimachinery/negotiation.js';
import { ApiError } from '../../src/apimachinery/status.js';
import { patchTypesOf } from '../../src/endpoints/patch.js';
import { deploymentKind } from '../../src/kinds/deployment/index.js';
import { podKind } from '../../src/kinds/pod/index.js';
import { serviceKind } from '../../src/kinds/service/index.js';

const ctx = { groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' };
const pod = podKind(ctx).schema;
const deployment = deploymentKind(ctx).schema;
const service = serviceKind(ctx).schema;

function at(schema: Schema, path: string): Schema {
  let s: Schema | undefined = schema;
  for (const part of path.split('.')) s = part === '[]' ? s?.items : s?.properties?.[part];
  assert.ok(s !== undefined, path);
  return s;
}

test('built-in schemas carry Kubernetes patch strategies and merge keys', () => {
  const cases: [Schema, string, string | undefined, string | undefined][] = [
    [pod, 'spec.containers', 'merge', 'name'],
    [pod, 'spec.initContainers', 'merge', 'name'],
    [pod, 'spec.volumes', 'merge,retainKeys', 'name'],
    [pod, 'spec.imagePullSecrets', 'merge', 'name'],
    [pod, 'spec.tolerations', undefined, undefined],
    [pod, 'spec.containers.[].ports', 'merge', 'containerPort'],
    [pod, 'spec.containers.[].env', 'merge', 'name'],
    [pod, 'spec.containers.[].volumeMounts', 'merge', 'mountPath'],
    [pod, 'spec.containers.[].command', undefined, undefined],
    [pod, 'metadata.finalizers', 'merge', undefined],
    [pod, 'metadata.ownerReferences', 'merge', 'uid'],
    [pod, 'status.conditions', 'merge', 'type'],
    [service, 'spec.ports', 'merge', 'port'],
    [deployment, 'spec.strategy', 'retainKeys', undefined],
  ];
  for (const [schema, path, strategy, key] of cases) {
    const s = at(schema, path);
    assert.equal(s['x-kubernetes-patch-strategy'], strategy, path);
    assert.equal(s['x-kubernetes-patch-merge-key'], key, path);
  }
  assert.deepEqual(at(pod, 'spec.containers.[].ports')['x-kubernetes-list-map-keys'], [
    'containerPort',
    'protocol',
  ]);
  assert.deepEqual(at(service, 'spec.ports')['x-kubernetes-list-map-keys'], ['port', 'protocol']);
  assert.equal(at(pod, 'metadata.finalizers')['x-kubernetes-list-type'], 'set');
  assert.equal(at(pod, 'spec.tolerations')['x-kubernetes-list-type'], 'atomic');
});

const base = {
  metadata: { finalizers: ['a', 'b'], labels: { x: '1', y: '2' } },
  spec: {
    containers: [
      { name: 'app', image: 'app:1', ports: [{ containerPort: 80, protocol: 'TCP' }], args: ['-v'] },
      { name: 'side', image: 'side:1' },
    ],
    volumes: [{ name: 'data', emptyDir: {} }],
    tolerations: [{ key: 'k', operator: 'Exists' }],
  },
};

test('lists merge by key, scalars and atomic lists are replaced, null deletes', () => {
  const out = strategicMergePatch(
    base,
    {
      metadata: { finalizers: ['c', 'a'], labels: { x: null, z: '3' } },
      spec: {
        containers: [
          { name: 'side', image: 'side:2', ports: [{ containerPort: 90 }] },
          { name: 'new', image: 'new:1' },
        ],
        tolerations: [{ key: 'other', operator: 'Exists' }],
      },
    },
    pod,
  );
  assert.deepEqual(out, {
    metadata: { finalizers: ['a', 'b', 'c'], labels: { y: '2', z: '3' } },
    spec: {
      containers: [
        { name: 'app', image: 'app:1', ports: [{ containerPort: 80, protocol: 'TCP' }], args: ['-v'] },
        { name: 'side', image: 'side:2', ports: [{ containerPort: 90 }] },
        { name: 'new', image: 'new:1' },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
      tolerations: [{ key: 'other', operator: 'Exists' }],
    },
  });
});

test('directives: $patch replace, delete and merge', () => {
  const replaced = strategicMergePatch(
    base,
    { spec: { containers: [{ name: 'only', image: 'o' }, { $patch: 'replace' }] } },
    pod,
  ) as typeof base;
  assert.deepEqual(replaced.spec.containers, [{ name: 'only', image: 'o' }]);
  const deleted = strategicMergePatch(
    base,
    { spec: { containers: [{ name: 'app', $patch: 'delete' }] } },
    pod,
  ) as typeof base;
  assert.deepEqual(deleted.spec.containers, [{ name: 'side', image: 'side:1' }]);
  const mapReplaced = strategicMergePatch(
    base,
    { metadata: { labels: { $patch: 'replace', only: 'v' } } },
    pod,
  ) as typeof base;
  assert.deepEqual(mapReplaced.metadata.labels, { only: 'v' });
  const mapDeleted = strategicMergePatch(base, { metadata: { labels: { $patch: 'delete' } } }, pod) as {
    metadata: Record<string, unknown>;
  };
  assert.equal(mapDeleted.metadata.labels, undefined);
  const merged = strategicMergePatch(
    base,
    { metadata: { labels: { $patch: 'merge', w: '4' } } },
    pod,
  ) as typeof base;
  assert.deepEqual(merged.metadata.labels, { x: '1', y: '2', w: '4' });
  assert.throws(
    () => strategicMergePatch(base, { metadata: { $patch: 'explode' } }, pod),
    (e: unknown) => e instanceof PatchFormatError && e.message === 'Unknown patch type: explode',
  );
});

test('directives: $retainKeys, $setElementOrder, $deleteFromPrimitiveList', () => {
  const rolling = {
    spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } },
  };
  assert.deepEqual(
    strategicMergePatch(
      rolling,
      { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: null } } },
      deployment,
    ),
    { spec: { strategy: { type: 'Recreate' } } },
  );
  const volume = strategicMergePatch(
    base,
    { spec: { volumes: [{ name: 'data', $retainKeys: ['name', 'hostPath'], hostPath: { path: '/d' } }] } },
    pod,
  ) as typeof base;
  assert.deepEqual(volume.spec.volumes, [{ name: 'data', hostPath: { path: '/d' } }]);
  const ordered = strategicMergePatch(
    base,
    {
      spec: {
        '$setElementOrder/containers': [{ name: 'side' }, { name: 'app' }],
        containers: [{ name: 'side', image: 'side:3' }],
      },
    },
    pod,
  ) as typeof base;
  assert.deepEqual(
    ordered.spec.containers.map((c) => [c.name, c.image]),
    [
      ['side', 'side:3'],
      ['app', 'app:1'],
    ],
  );
  const removed = strategicMergePatch(
    base,
    { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } },
    pod,
  ) as typeof base;
  assert.deepEqual(removed.metadata.finalizers, ['b']);
});

test('a kind without declared strategies refuses strategic merge patch with 415', () => {
  const decl = { ...podKind(ctx), strategicMergePatch: false };
  assert.throws(
    () => negotiateBody('application/strategic-merge-patch+json', patchTypesOf(decl)),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 415 &&
      e.message ===
        'the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/json-patch+json, application/apply-patch+yaml',
  );
  assert.equal(
    negotiateBody('application/strategic-merge-patch+json', patchTypesOf(podKind(ctx))),
    'strategic-merge-patch',
  );
});
