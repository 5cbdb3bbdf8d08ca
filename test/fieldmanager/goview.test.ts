// Proves the Go view of an object that Update entries compare: non-pointer structs and lists without omitempty
// are always there (so never "added"), omitempty zeros and nulls never are, pointers only when set, and a null
// list compared with a filled one is not added while a list absent before is; without a Go type, spec is added.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiObject } from '../../src/apimachinery/meta.js';
import { goTypeOf } from '../../src/apimachinery/protobuf.js';
import { s } from '../../src/apimachinery/schema.js';
import { goView } from '../../src/fieldmanager/goview.js';
import { FieldManager } from '../../src/fieldmanager/manager.js';
import { compare } from '../../src/fieldmanager/typed.js';
import { podKind } from '../../src/kinds/pod/index.js';

const ctx = { groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' };
const podType = goTypeOf('', 'v1', 'Pod');
const deploymentType = goTypeOf('apps', 'v1', 'Deployment');

test('Go types are found for built-in kinds whatever the group domain, not for others', () => {
  assert.ok(podType);
  assert.ok(deploymentType);
  assert.equal(goTypeOf('rbac.authorization.svc.io', 'v1', 'Role')?.def.fullName, 'rbac.v1.Role');
  assert.equal(goTypeOf('rbac.authorization.k8s.io', 'v1', 'Role')?.def.fullName, 'rbac.v1.Role');
  assert.equal(goTypeOf('example.com', 'v1', 'Widget'), undefined);
  assert.equal(goTypeOf('apps', 'v1', 'Widget'), undefined);
});

test("the empty object is the kind's Go zero value", () => {
  assert.ok(podType && deploymentType);
  assert.deepEqual(goView({}, podType), {
    metadata: { creationTimestamp: null },
    spec: { containers: null },
    status: {},
  });
  assert.deepEqual(goView({ apiVersion: 'apps/v1', kind: 'Deployment' }, deploymentType), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { creationTimestamp: null },
    spec: {
      template: { metadata: { creationTimestamp: null }, spec: { containers: null } },
      strategy: {},
    },
    status: {},
  });
});

test('omitempty zeros and nulls go, pointer zeros stay, nested structs are filled, unknown keys are kept', () => {
  assert.ok(podType);
  const view = goView(
    {
      metadata: { name: 'p', labels: {}, annotations: null },
      spec: {
        hostNetwork: false,
        nodeName: '',
        enableServiceLinks: false,
        containers: [
          { name: 'a', image: 'x', ports: [{ containerPort: 0, hostPort: 0 }], env: [], futureField: 1 },
        ],
        volumes: [{ name: 'v', emptyDir: {} }],
      },
    },
    podType,
  );
  assert.deepEqual(view, {
    metadata: { name: 'p', creationTimestamp: null },
    spec: {
      containers: [{ futureField: 1, name: 'a', image: 'x', ports: [{ containerPort: 0 }], resources: {} }],
      enableServiceLinks: false,
      volumes: [{ name: 'v', emptyDir: {} }],
    },
    status: {},
  });
});

test('compare: a null list that gets items is not added, an absent one is', () => {
  const schema = podKind(ctx).schema;
  const next = { spec: { containers: [{ name: 'a', image: 'x' }] } };
  const fromNull = compare({ spec: { containers: null } }, next, schema);
  assert.equal(fromNull.added.has(['f:spec', 'f:containers']), false);
  assert.ok(fromNull.added.has(['f:spec', 'f:containers', 'k:{"name":"a"}']));
  const fromAbsent = compare({ spec: {} }, next, schema);
  assert.ok(fromAbsent.added.has(['f:spec', 'f:containers']));
  // Empty or null on both sides is a leaf: null to [] is a change of the list itself.
  assert.ok(
    compare({ spec: { containers: null } }, { spec: { containers: [] } }, schema).modified.has([
      'f:spec',
      'f:containers',
    ]),
  );
});

test('without a Go type (custom resources) a create adds spec itself: f:spec gets "."', () => {
  const schema = s.obj({
    apiVersion: s.str(),
    kind: s.str(),
    metadata: s.free(),
    spec: s.obj({ size: s.int(), config: s.map() }),
  });
  const manager = new FieldManager({ schema, apiVersion: 'cache.example.com/v1', statusSubresource: true });
  const object: ApiObject = {
    apiVersion: 'cache.example.com/v1',
    kind: 'Memcached',
    metadata: { name: 'm' },
    spec: { size: 3, config: { a: 'b' } },
  };
  manager.update(undefined, object, 'kubectl-create', '', Date.parse('2026-01-01T00:00:00Z'));
  // As kube-apiserver records a custom resource created by kubectl (operator-sdk's Memcached sample).
  assert.deepEqual((object.metadata.managedFields as { fieldsV1: unknown }[])[0]?.fieldsV1, {
    'f:spec': { '.': {}, 'f:config': { '.': {}, 'f:a': {} }, 'f:size': {} },
  });
});
