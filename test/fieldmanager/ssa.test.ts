// Proves field ownership without a server: field sets of sets, keyed lists and atomic parts, the comparison of
// two objects, and fast-check properties of server-side apply — applying the same configuration twice changes
// nothing; after a forced take-over the first manager's re-apply conflicts; a field owned by an applier always
// holds the value that applier last applied (so no field is owned by two managers with different values).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ApiObject } from '../../src/apimachinery/meta.js';
import { ApiError } from '../../src/apimachinery/status.js';
import { FieldSet, pathString } from '../../src/fieldmanager/fieldset.js';
import { decodeManagedFields, FieldManager } from '../../src/fieldmanager/manager.js';
import { compare, toFieldSet, valueAt } from '../../src/fieldmanager/typed.js';
import { configMapKind } from '../../src/kinds/configmap/index.js';
import { podKind } from '../../src/kinds/pod/index.js';

const ctx = { groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' };
const podSchema = podKind(ctx).schema;
const cmSchema = configMapKind(ctx).schema;

test('field sets: FieldsV1 round trip, "." for a member with children, path strings', () => {
  const set = FieldSet.of(
    ['f:spec', 'f:replicas'],
    ['f:spec', 'f:list', 'k:{"name":"a"}'],
    ['f:spec', 'f:list', 'k:{"name":"a"}', 'f:image'],
  );
  const v1 = set.toFieldsV1();
  assert.deepEqual(v1, {
    'f:spec': { 'f:list': { 'k:{"name":"a"}': { '.': {}, 'f:image': {} } }, 'f:replicas': {} },
  });
  assert.deepEqual(FieldSet.fromFieldsV1(v1)?.toFieldsV1(), v1);
  assert.equal(FieldSet.fromFieldsV1({ 'x:bad': {} }), undefined);
  assert.deepEqual(set.paths().map(pathString), [
    '.spec.replicas',
    '.spec.list[name="a"]',
    '.spec.list[name="a"].image',
  ]);
  assert.equal(pathString(['f:metadata', 'f:finalizers', 'v:"x"']), '.metadata.finalizers[="x"]');
  assert.equal(
    pathString(['f:ports', 'k:{"containerPort":80,"protocol":"TCP"}']),
    '.ports[containerPort=80,protocol="TCP"]',
  );
});

test('typed: pod containers keyed by name, ports by containerPort+protocol (defaulted), atomic lists are leaves', () => {
  const pod = {
    spec: {
      containers: [{ name: 'a', image: 'x', ports: [{ containerPort: 80 }], command: ['sh', '-c'] }],
      tolerations: [{ key: 'k' }],
      nodeSelector: { zone: 'z' },
    },
  };
  assert.deepEqual(toFieldSet(pod, podSchema).toFieldsV1(), {
    'f:spec': {
      'f:containers': {
        'k:{"name":"a"}': {
          '.': {},
          'f:command': {},
          'f:image': {},
          'f:name': {},
          'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
        },
      },
      'f:nodeSelector': {},
      'f:tolerations': {},
    },
  });
  const changed = structuredClone(pod);
  changed.spec.containers[0]!.image = 'y';
  changed.spec.containers.push({ name: 'b', image: 'z', ports: [], command: [] });
  const cmp = compare(pod, changed, podSchema);
  assert.deepEqual(cmp.modified.paths().map(pathString), ['.spec.containers[name="a"].image']);
  assert.deepEqual(cmp.added.paths().map(pathString), [
    '.spec.containers[name="b"]',
    '.spec.containers[name="b"].command',
    '.spec.containers[name="b"].image',
    '.spec.containers[name="b"].name',
    '.spec.containers[name="b"].ports',
  ]);
  assert.ok(cmp.removed.isEmpty());
});

// ---- properties over ConfigMaps (a granular data map, labels, finalizers as a set)

const keyArb = fc.constantFrom('a', 'b', 'c', 'd');
const valueArb = fc.constantFrom('1', '2', '3');
const configArb = fc.record({
  data: fc.dictionary(keyArb, valueArb, { maxKeys: 4 }),
  labels: fc.dictionary(keyArb, valueArb, { maxKeys: 2 }),
  finalizers: fc.uniqueArray(fc.constantFrom('x.io/f', 'y.io/g'), { maxLength: 2 }),
});
type Config = { data: Record<string, string>; labels: Record<string, string>; finalizers: string[] };

function configMap(c: Config): ApiObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cm',
      ...(Object.keys(c.labels).length > 0 ? { labels: c.labels } : {}),
      ...(c.finalizers.length > 0 ? { finalizers: c.finalizers } : {}),
    },
    ...(Object.keys(c.data).length > 0 ? { data: c.data } : {}),
  };
}

const manager = new FieldManager({ schema: cmSchema, apiVersion: 'v1', statusSubresource: false });

function isConflict(error: unknown): boolean {
  return error instanceof ApiError && error.code === 409 && error.reason === 'Conflict';
}

test('property: applying the same configuration twice changes nothing', () => {
  fc.assert(
    fc.property(fc.array(configArb, { minLength: 1, maxLength: 3 }), (configs) => {
      let live: ApiObject | undefined;
      for (const c of configs) live = manager.apply(live, configMap(c), 'a', '', false, 1000);
      const again = manager.apply(live, configMap(configs[configs.length - 1]!), 'a', '', false, 2000);
      assert.deepEqual(again, live);
    }),
    { numRuns: 200 },
  );
});

test('property: after B forces a field of A, A re-applying its configuration conflicts', () => {
  fc.assert(
    fc.property(configArb, keyArb, (c, key) => {
      const mine = { ...c, data: { ...c.data, [key]: '1' } };
      const live = manager.apply(undefined, configMap(mine), 'a', '', false, 1000);
      const theirs = { data: { [key]: '2' }, labels: {}, finalizers: [] };
      assert.throws(() => manager.apply(live, configMap(theirs), 'b', '', false, 2000), isConflict);
      const forced = manager.apply(live, configMap(theirs), 'b', '', true, 2000);
      assert.equal(forced.data !== undefined && (forced.data as Record<string, string>)[key], '2');
      assert.throws(() => manager.apply(forced, configMap(mine), 'a', '', false, 3000), isConflict);
    }),
    { numRuns: 200 },
  );
});

test('property: every field an applier owns holds the value it last applied', () => {
  const stepArb = fc.record({
    who: fc.constantFrom('a', 'b', 'c'),
    kind: fc.constantFrom('apply', 'apply', 'update'),
    force: fc.boolean(),
    config: configArb,
  });
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 1, maxLength: 8 }), (steps) => {
      let live: ApiObject | undefined;
      const lastApplied = new Map<string, ApiObject>();
      for (const step of steps) {
        if (step.kind === 'update') {
          if (live === undefined) continue;
          const next = structuredClone(live);
          next.data = { ...(live.data as object), ...step.config.data };
          manager.update(live, next, step.who, '', 1000);
          live = next;
          continue;
        }
        const config = configMap(step.config);
        try {
          live = manager.apply(live, config, step.who, '', step.force, 1000);
          lastApplied.set(step.who, config);
        } catch (error) {
          if (!isConflict(error)) throw error;
        }
        const entries = decodeManagedFields(live?.metadata.managedFields) ?? [];
        for (const entry of entries) {
          if (entry.operation !== 'Apply') continue;
          const config = lastApplied.get(entry.manager);
          assert.ok(config !== undefined);
          for (const path of entry.set.paths()) {
            assert.deepEqual(
              valueAt(live, cmSchema, path),
              valueAt(config, cmSchema, path),
              `${entry.manager} owns ${pathString(path)}`,
            );
          }
        }
      }
    }),
    { numRuns: 300 },
  );
});
