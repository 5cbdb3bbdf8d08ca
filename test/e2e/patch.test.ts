/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves PATCH over HTTPS against one real server: JSON patch (a failed test is 422 with a Status), merge and
// strategic merge patch, dryRun, fieldValidation, resourceVersion preconditions, the PatchOptions checks, and
// server-side apply with field ownership (managedFields, conflicts, force, sharing, giving up, reset).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
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
