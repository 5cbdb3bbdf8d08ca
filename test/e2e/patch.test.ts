/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves PATCH over HTTPS against one real server: JSON patch (a failed test is 422 with a Status), merge and
// strategic merge patch, dryRun, fieldValidation, resourceVersion preconditions, the PatchOptions checks, and
// server-side apply with field ownership (managedFields, conflicts, force, sharing, giving up, reset).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FieldSet, pathString } from '../../src/fieldmanager/fieldset.js';
import { startTestServer, type Response, type TestServer } from './harness.js';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});

after(async () => {
  await server?.stop();
});

const cmPath = '/api/v1/namespaces/default/configmaps';

function patch(path: string, type: string, body: unknown, query = ''): Promise<Response> {
  return server.request('PATCH', `${path}${query === '' ? '' : `?${query}`}`, {
    rawBody: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': type },
  });
}

async function createConfigMap(name: string, data: Record<string, string>): Promise<any> {
  const r = await server.request('POST', cmPath, {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data },
  });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

test('JSON patch: operations apply in order; a failed test is 422 and changes nothing', async () => {
  const created = await createConfigMap('jp', { a: '1', 'x/y': '2' });
  const ok = await patch(`${cmPath}/jp`, 'application/json-patch+json', [
    { op: 'test', path: '/data/a', value: '1' },
    { op: 'replace', path: '/data/a', value: 'one' },
    { op: 'remove', path: '/data/x~1y' },
    { op: 'add', path: '/metadata/labels', value: { k: 'v' } },
  ]);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body.data, { a: 'one' });
  assert.deepEqual(ok.body.metadata.labels, { k: 'v' });
  assert.notEqual(ok.body.metadata.resourceVersion, created.metadata.resourceVersion);

  const failed = await patch(`${cmPath}/jp`, 'application/json-patch+json', [
    { op: 'replace', path: '/data/a', value: 'two' },
    { op: 'test', path: '/data/a', value: 'one' },
  ]);
  assert.equal(failed.status, 422);
  assert.equal(failed.body.kind, 'Status');
  assert.equal(failed.body.reason, 'Invalid');
  assert.equal(failed.body.message, 'the server rejected our request due to an error in our request');
  assert.deepEqual(failed.body.details.causes, [
    { reason: 'UnexpectedServerResponse', message: 'testing value /data/a failed: test failed' },
  ]);
  const after = await server.request('GET', `${cmPath}/jp`);
  assert.equal(after.body.data.a, 'one');

  const notList = await patch(`${cmPath}/jp`, 'application/json-patch+json', { op: 'add' });
  assert.equal(notList.status, 400);
  const missing = await patch(`${cmPath}/nope`, 'application/json-patch+json', []);
  assert.equal(missing.status, 404);
});

test('patches honour dryRun, fieldValidation and a resourceVersion precondition', async () => {
  const created = await createConfigMap('opts', { a: '1' });
  const dry = await patch(
    `${cmPath}/opts`,
    'application/merge-patch+json',
    { data: { a: '2' } },
    'dryRun=All',
  );
  assert.equal(dry.status, 200);
  assert.equal(dry.body.data.a, '2');
  assert.equal((await server.request('GET', `${cmPath}/opts`)).body.data.a, '1');

  const strict = await patch(
    `${cmPath}/opts`,
    'application/merge-patch+json',
    { data: { a: '3' }, spec: { x: 1 } },
    'fieldValidation=Strict',
  );
  assert.equal(strict.status, 400);
  assert.match(strict.body.message, /strict decoding error: unknown field "spec"/);
  const warn = await patch(`${cmPath}/opts`, 'application/merge-patch+json', { data: { a: '3' }, spec: {} });
  assert.equal(warn.status, 200);
  assert.match(String(warn.headers.warning), /unknown field \\"spec\\"/);

  const stale = await patch(`${cmPath}/opts`, 'application/merge-patch+json', {
    metadata: { resourceVersion: created.metadata.resourceVersion },
    data: { a: '4' },
  });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.reason, 'Conflict');
  const staleJson = await patch(`${cmPath}/opts`, 'application/json-patch+json', [
    { op: 'replace', path: '/metadata/resourceVersion', value: created.metadata.resourceVersion },
  ]);
  assert.equal(staleJson.status, 409);

  const force = await patch(`${cmPath}/opts`, 'application/merge-patch+json', {}, 'force=true');
  assert.equal(force.status, 422);
  assert.equal(
    force.body.message,
    'PatchOptions.meta.svc.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
  );
  const long = await patch(
    `${cmPath}/opts`,
    'application/merge-patch+json',
    {},
    `fieldManager=${'m'.repeat(129)}`,
  );
  assert.equal(long.status, 422);
  assert.equal(
    long.body.message,
    'PatchOptions.meta.svc.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
  );
  const unsupported = await patch(`${cmPath}/opts`, 'application/x-nope', {});
  assert.equal(unsupported.status, 415);
});

const deployPath = '/apis/apps/v1/namespaces/default/deployments';

function deployment(name: string, containers: unknown[], extra: Record<string, unknown> = {}): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...extra },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers } },
    },
  };
}

test('strategic merge patch merges containers by name and ports by containerPort', async () => {
  const created = await server.request('POST', deployPath, {
    body: deployment(
      'smp',
      [
        { name: 'app', image: 'app:1', ports: [{ containerPort: 80 }] },
        { name: 'side', image: 'side:1' },
      ],
      { finalizers: ['a.io/x'] },
    ),
  });
  assert.equal(created.status, 201, created.text);
  const r = await patch(`${deployPath}/smp`, 'application/strategic-merge-patch+json', {
    metadata: { finalizers: ['b.io/y'] },
    spec: {
      template: { spec: { containers: [{ name: 'app', image: 'app:2', ports: [{ containerPort: 8080 }] }] } },
    },
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.metadata.finalizers, ['a.io/x', 'b.io/y']);
  assert.deepEqual(
    r.body.spec.template.spec.containers.map((c: any) => [
      c.name,
      c.image,
      c.ports?.map((p: any) => p.containerPort),
    ]),
    [
      ['app', 'app:2', [80, 8080]],
      ['side', 'side:1', undefined],
    ],
  );
  const bad = await patch(`${deployPath}/smp`, 'application/strategic-merge-patch+json', {
    spec: { $patch: 'explode' },
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.message, 'Unknown patch type: explode');
  const cleared = await patch(`${deployPath}/smp`, 'application/json-patch+json', [
    { op: 'remove', path: '/metadata/finalizers' },
  ]);
  assert.equal(cleared.status, 200, cleared.text);
});

// ---- server-side apply

function apply(path: string, body: unknown, query: string): Promise<Response> {
  return patch(path, 'application/apply-patch+yaml', body, query);
}

function cm(name: string, data?: Record<string, string>): unknown {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, ...(data === undefined ? {} : { data }) };
}

/** `manager/operation[/subresource]` owners of each field path, from managedFields. */
function owners(object: any): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const entry of object.metadata.managedFields ?? []) {
    const set = FieldSet.fromFieldsV1(entry.fieldsV1);
    assert.ok(set !== undefined);
    const who = [entry.manager, entry.operation, ...(entry.subresource ? [entry.subresource] : [])].join('/');
    for (const p of set.paths()) (out[pathString(p)] ??= []).push(who);
  }
  for (const list of Object.values(out)) list.sort();
  return out;
}

async function get(path: string): Promise<any> {
  const r = await server.request('GET', path);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

test('3.3: apply by B of a field A owns with another value conflicts; ownership is unchanged', async () => {
  const p = `${cmPath}/own1`;
  assert.equal((await apply(p, cm('own1', { x: '1' }), 'fieldManager=a')).status, 201);
  const r = await apply(p, cm('own1', { x: '2' }), 'fieldManager=b');
  assert.equal(r.status, 409);
  assert.equal(r.body.reason, 'Conflict');
  assert.equal(r.body.message, 'Apply failed with 1 conflict: conflict with "a": .data.x');
  assert.deepEqual(r.body.details.causes, [
    { reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.data.x' },
  ]);
  const after = await get(p);
  assert.equal(after.data.x, '1');
  assert.deepEqual(owners(after), { '.data.x': ['a/Apply'] });
});

test('3.3: apply by B with force takes the field from A', async () => {
  const p = `${cmPath}/own2`;
  await apply(p, cm('own2', { x: '1', y: '1' }), 'fieldManager=a');
  const r = await apply(p, cm('own2', { x: '2' }), 'fieldManager=b&force=true');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.data, { x: '2', y: '1' });
  assert.deepEqual(owners(r.body), { '.data.x': ['b/Apply'], '.data.y': ['a/Apply'] });
});

test('3.3: the same value is shared; a sharer changing it conflicts; a sharer omitting it gives it up', async () => {
  const p = `${cmPath}/own3`;
  await apply(p, cm('own3', { x: '1' }), 'fieldManager=a');
  const shared = await apply(p, cm('own3', { x: '1' }), 'fieldManager=b');
  assert.equal(shared.status, 200, shared.text);
  assert.deepEqual(owners(shared.body), { '.data.x': ['a/Apply', 'b/Apply'] });

  const conflict = await apply(p, cm('own3', { x: '2' }), 'fieldManager=a');
  assert.equal(conflict.status, 409);
  assert.equal(conflict.body.message, 'Apply failed with 1 conflict: conflict with "b": .data.x');

  const givenUp = await apply(p, cm('own3'), 'fieldManager=b');
  assert.equal(givenUp.status, 200, givenUp.text);
  assert.equal(givenUp.body.data.x, '1', 'A still owns it: the value stays');
  assert.deepEqual(owners(givenUp.body), { '.data.x': ['a/Apply'] });
});

test('3.3: an update changing an applied field never conflicts and moves it to the updater', async () => {
  const p = `${cmPath}/own4`;
  await apply(p, cm('own4', { x: '1', y: '1' }), 'fieldManager=a');
  const r = await server.request('PATCH', p, {
    rawBody: JSON.stringify({ data: { x: '2' } }),
    headers: {
      'content-type': 'application/merge-patch+json',
      'user-agent': 'kubectl/v1.32.0 (linux/amd64)',
    },
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(owners(r.body), { '.data.x': ['kubectl/Update'], '.data.y': ['a/Apply'] });
  const entry = r.body.metadata.managedFields.find((e: any) => e.manager === 'kubectl');
  assert.equal(entry.operation, 'Update');
  assert.equal(entry.apiVersion, 'v1');
  assert.equal(entry.fieldsType, 'FieldsV1');
  assert.match(entry.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  // PUT with an explicit fieldManager.
  const put = await server.request('PUT', `${p}?fieldManager=editor`, {
    body: { ...r.body, data: { x: '2', y: '3' } },
  });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(owners(put.body), { '.data.x': ['kubectl/Update'], '.data.y': ['editor/Update'] });
  // Now A's apply of y conflicts with the updater, named with its apiVersion.
  const conflict = await apply(p, cm('own4', { x: '2', y: '1' }), 'fieldManager=a');
  assert.equal(conflict.status, 409);
  assert.equal(
    conflict.body.message,
    'Apply failed with 1 conflict: conflict with "editor" using v1: .data.y',
  );
});

test('3.3: a field only its applier owned is removed (or reset to its default) when the applier omits it', async () => {
  const p = `${cmPath}/own5`;
  await apply(
    p,
    { ...(cm('own5', { x: '1', y: '2' }) as object), metadata: { name: 'own5', labels: { l: 'v' } } },
    'fieldManager=a',
  );
  const r = await apply(p, cm('own5', { y: '2' }), 'fieldManager=a');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.data, { y: '2' });
  assert.equal(r.body.metadata.labels, undefined);
  assert.deepEqual(owners(r.body), { '.data.y': ['a/Apply'] });

  const dp = `${deployPath}/reset`;
  const created = await apply(
    dp,
    {
      ...(deployment('reset', [{ name: 'c', image: 'c:1' }]) as any),
      spec: { ...(deployment('reset', [{ name: 'c', image: 'c:1' }]) as any).spec, replicas: 3 },
    },
    'fieldManager=a',
  );
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.spec.replicas, 3);
  const reset = await apply(dp, deployment('reset', [{ name: 'c', image: 'c:1' }]), 'fieldManager=a');
  assert.equal(reset.status, 200, reset.text);
  assert.equal(reset.body.spec.replicas, 1, 'reset to its default');
});

test('apply: fieldManager required (422), managedFields in the body 400, version checked, dryRun, twice = no change', async () => {
  const p = `${cmPath}/ap`;
  const noManager = await apply(p, cm('ap', {}), '');
  assert.equal(noManager.status, 422);
  assert.equal(
    noManager.body.message,
    'PatchOptions.meta.svc.io "" is invalid: fieldManager: Required value: is required for apply patch',
  );
  const withManaged = await apply(
    p,
    { ...(cm('ap', {}) as object), metadata: { name: 'ap', managedFields: [] } },
    'fieldManager=a',
  );
  assert.equal(withManaged.status, 400);
  assert.equal(withManaged.body.message, 'metadata.managedFields must be nil');
  const wrongVersion = await apply(p, { ...(cm('ap', {}) as object), apiVersion: 'v2' }, 'fieldManager=a');
  assert.equal(wrongVersion.status, 400);
  assert.equal(
    wrongVersion.body.message,
    'Incorrect version specified in apply patch. Specified patch version: v2, expected: v1',
  );
  const dry = await apply(p, cm('ap', { a: '1' }), 'fieldManager=a&dryRun=All');
  assert.equal(dry.status, 201);
  assert.equal((await server.request('GET', p)).status, 404);

  const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: "1"\n';
  const first = await apply(p, yaml, 'fieldManager=a');
  assert.equal(first.status, 201, first.text);
  const second = await apply(p, yaml, 'fieldManager=a');
  assert.equal(second.status, 200);
  assert.equal(second.body.metadata.resourceVersion, first.body.metadata.resourceVersion);
  assert.deepEqual(second.body.metadata.managedFields, first.body.metadata.managedFields);
  const stale = await apply(
    p,
    { ...(cm('ap', { a: '2' }) as any), metadata: { name: 'ap', resourceVersion: '1' } },
    'fieldManager=a',
  );
  assert.equal(stale.status, 409);
  assert.equal(stale.body.reason, 'Conflict');
});

test('managedFields: golden FieldsV1 for a Deployment (containers by name, ports by containerPort+protocol, finalizers as a set)', async () => {
  const body = {
    ...(deployment('golden', [
      { name: 'app', image: 'app:1', ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] },
    ]) as any),
  };
  body.metadata = { name: 'golden', labels: { app: 'golden' }, finalizers: ['a.io/f'] };
  const r = await apply(`${deployPath}/golden`, body, 'fieldManager=mgr');
  assert.equal(r.status, 201, r.text);
  const [entry, ...rest] = r.body.metadata.managedFields;
  assert.equal(rest.length, 0);
  assert.deepEqual(
    { ...entry, time: 'T' },
    {
      manager: 'mgr',
      operation: 'Apply',
      apiVersion: 'apps/v1',
      time: 'T',
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': {
          'f:finalizers': { 'v:"a.io/f"': {} },
          'f:labels': { 'f:app': {} },
        },
        'f:spec': {
          'f:selector': {},
          'f:template': {
            'f:metadata': { 'f:labels': { 'f:app': {} } },
            'f:spec': {
              'f:containers': {
                'k:{"name":"app"}': {
                  '.': {},
                  'f:image': {},
                  'f:name': {},
                  'f:ports': {
                    'k:{"containerPort":53,"protocol":"UDP"}': {
                      '.': {},
                      'f:containerPort': {},
                      'f:protocol': {},
                    },
                    'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} },
                  },
                },
              },
            },
          },
        },
      },
    },
  );
  // The creator of a POST owns what it sent and the defaults the server filled in, with "." on new maps.
  const created = await server.request('POST', `${cmPath}?fieldManager=poster`, {
    body: cm('golden', { k: 'v' }),
  });
  assert.equal(created.status, 201);
  assert.deepEqual(created.body.metadata.managedFields[0].fieldsV1, { 'f:data': { '.': {}, 'f:k': {} } });
});

test('4.4: [{}] resets managedFields (merge or JSON patch); an empty list does not; the reset comes first', async () => {
  const p = `${cmPath}/reset`;
  await apply(p, cm('reset', { x: '1' }), 'fieldManager=a');
  const empty = await patch(p, 'application/merge-patch+json', { metadata: { managedFields: [] } });
  assert.equal(empty.status, 200);
  assert.deepEqual(owners(empty.body), { '.data.x': ['a/Apply'] });

  const reset = await patch(p, 'application/merge-patch+json', { metadata: { managedFields: [{}] } });
  assert.equal(reset.status, 200, reset.text);
  assert.equal(reset.body.metadata.managedFields, undefined);

  await apply(p, cm('reset', { x: '1' }), 'fieldManager=a');
  const combined = await patch(
    p,
    'application/json-patch+json',
    [
      { op: 'replace', path: '/metadata/managedFields', value: [{}] },
      { op: 'add', path: '/data/y', value: '2' },
    ],
    'fieldManager=resetter',
  );
  assert.equal(combined.status, 200, combined.text);
  assert.deepEqual(owners(combined.body), { '.data.y': ['resetter/Update'] });
  // With nobody owning x any more, an apply of another value no longer conflicts.
  const free = await apply(p, cm('reset', { x: '9' }), 'fieldManager=b');
  assert.equal(free.status, 200, free.text);
});

test('status applies are tracked separately, with subresource status', async () => {
  const dp = `${deployPath}/st`;
  assert.equal(
    (await apply(dp, deployment('st', [{ name: 'c', image: 'c:1' }]), 'fieldManager=spec-owner')).status,
    201,
  );
  const status = await apply(
    `${dp}/status`,
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'st' },
      status: { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] },
    },
    'fieldManager=controller',
  );
  assert.equal(status.status, 200, status.text);
  assert.equal(status.body.status.replicas, 2);
  const entry = status.body.metadata.managedFields.find((e: any) => e.manager === 'controller');
  assert.equal(entry.subresource, 'status');
  assert.equal(entry.operation, 'Apply');
  assert.deepEqual(entry.fieldsV1, {
    'f:status': {
      'f:conditions': { 'k:{"type":"Available"}': { '.': {}, 'f:status': {}, 'f:type': {} } },
      'f:replicas': {},
    },
  });
  // The spec owner's entry does not claim status, and a conflict names the sub-resource.
  assert.ok(
    !JSON.stringify(status.body.metadata.managedFields.find((e: any) => e.manager === 'spec-owner')).includes(
      'f:status',
    ),
  );
  const conflict = await apply(
    `${dp}/status`,
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'st' }, status: { replicas: 3 } },
    'fieldManager=other',
  );
  assert.equal(conflict.status, 409);
  assert.equal(
    conflict.body.message,
    'Apply failed with 1 conflict: conflict with "controller" with subresource "status": .status.replicas',
  );
  const missing = await apply(
    `${deployPath}/nope/status`,
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nope' } },
    'fieldManager=x',
  );
  assert.equal(missing.status, 404);
});

test('apply conflicts with several managers list every field, managers sorted', async () => {
  const p = `${cmPath}/multi`;
  await apply(p, cm('multi', { a: '1', b: '1' }), 'fieldManager=m1');
  await server.request('PATCH', `${p}?fieldManager=m0`, {
    rawBody: JSON.stringify({ data: { c: '1' } }),
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  const r = await apply(p, cm('multi', { a: '2', b: '2', c: '2' }), 'fieldManager=me');
  assert.equal(r.status, 409);
  assert.equal(
    r.body.message,
    'Apply failed with 3 conflicts: conflicts with "m0" using v1:\n- .data.c\nconflicts with "m1":\n- .data.a\n- .data.b',
  );
  assert.equal(r.body.details.causes.length, 3);
});
