/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// RBAC end to end on a real server: the four kinds (validation, roleRef immutable, Table), decisions from roles
// bound to users and groups (403 worded as kube-apiserver), resourceNames with field selectors, the default
// roles (labels, aggregation, public paths) and their reconciliation at restart.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type Response, type TestServer } from '../e2e/harness.js';

let server: TestServer;
let dir: string;
const rbac = '/apis/rbac.authorization.svc.io/v1';

function as(token: string) {
  return (method: string, path: string, body?: unknown): Promise<Response> =>
    server.request(method, path, {
      anonymous: true,
      headers: { authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body }),
    });
}
const alice = as('alice-token');
const bob = as('bob-token');

/** Decisions follow the watch cache: poll until `check` holds (bounded). */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`not within 5 s: ${what}`);
}

async function create(path: string, body: unknown): Promise<any> {
  const r = await server.request('POST', path, { body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-rbac-'));
  await writeFile(join(dir, 'tokens.csv'), 'alice-token,alice,1000\nbob-token,bob,1001,"dev,qa"\n');
  server = await startTestServer(['--token-auth-file', join(dir, 'tokens.csv')], join(dir, 'data'));
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('RBAC', () => {
  test('no binding: 403 worded as kube-apiserver; public and discovery paths for the authenticated', async () => {
    const r = await alice('GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(r.status, 403);
    assert.equal(
      r.body.message,
      'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"',
    );
    const named = await alice('GET', '/api/v1/namespaces/default/pods/p1/log');
    assert.equal(
      named.body.message,
      'pods "p1" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default"',
    );
    const cluster = await alice('GET', '/api/v1/nodes');
    assert.equal(
      cluster.body.message,
      'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    const path = await alice('GET', '/metrics');
    assert.equal(path.status, 403);
    assert.equal(path.body.message, 'forbidden: User "alice" cannot get path "/metrics"');
    for (const p of ['/version', '/healthz', '/livez', '/readyz', '/api', '/apis', '/api/v1'])
      assert.equal((await alice('GET', p)).status, 200, p);
    assert.equal((await server.request('GET', '/version', { anonymous: true })).status, 200);
    assert.equal((await server.request('GET', '/readyz', { anonymous: true })).status, 200);
    // Discovery is for authenticated users only (system:discovery is bound to system:authenticated since 1.14).
    const anonymousApi = await server.request('GET', '/api', { anonymous: true });
    assert.equal(anonymousApi.status, 403);
    assert.equal(anonymousApi.body.message, 'forbidden: User "system:anonymous" cannot get path "/api"');
  });

  test('a Role bound to a user allows exactly its rules; a ClusterRole bound to a group', async () => {
    await create('/api/v1/namespaces', { metadata: { name: 'team' } });
    await create(`${rbac}/namespaces/team/roles`, {
      metadata: { name: 'cm-reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    await create(`${rbac}/namespaces/team/rolebindings`, {
      metadata: { name: 'alice-reads' },
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'cm-reader' },
    });
    await eventually(
      async () => (await alice('GET', '/api/v1/namespaces/team/configmaps')).status === 200,
      'alice lists config maps in team',
    );
    assert.equal((await alice('GET', '/api/v1/namespaces/default/configmaps')).status, 403);
    assert.equal((await alice('GET', '/api/v1/namespaces/team/configmaps?watch=1')).status, 403);
    assert.equal(
      (await alice('POST', '/api/v1/namespaces/team/configmaps', { metadata: { name: 'x' } })).status,
      403,
    );
    assert.equal((await alice('GET', '/api/v1/configmaps')).status, 403);
    // A group binding (bob is in dev) to a ClusterRole, cluster-wide.
    await create(`${rbac}/clusterroles`, {
      metadata: { name: 'ns-reader' },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
    });
    await create(`${rbac}/clusterrolebindings`, {
      metadata: { name: 'dev-ns-reader' },
      subjects: [{ kind: 'Group', name: 'dev' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'ns-reader' },
    });
    await eventually(
      async () => (await bob('GET', '/api/v1/namespaces')).status === 200,
      'bob lists namespaces',
    );
    assert.equal((await alice('GET', '/api/v1/namespaces')).status, 403);
    // Deleting the binding takes the permission away.
    assert.equal((await server.request('DELETE', `${rbac}/clusterrolebindings/dev-ns-reader`)).status, 200);
    await eventually(
      async () => (await bob('GET', '/api/v1/namespaces')).status === 403,
      'bob loses namespaces',
    );
  });

  test('an update or server-side apply that creates the object needs create too (as kube-apiserver)', async () => {
    await create('/api/v1/namespaces', { metadata: { name: 'leases' } });
    const rule = (verbs: string[]) => [{ apiGroups: ['coordination.svc.io'], resources: ['leases'], verbs }];
    await create(`${rbac}/namespaces/leases/roles`, {
      metadata: { name: 'writer' },
      rules: rule(['get', 'update', 'patch']),
    });
    await create(`${rbac}/namespaces/leases/rolebindings`, {
      metadata: { name: 'alice-writes' },
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'writer' },
    });
    const leases = '/apis/coordination.svc.io/v1/namespaces/leases/leases';
    const lease = (name: string) => ({
      apiVersion: 'coordination.svc.io/v1',
      kind: 'Lease',
      metadata: { name },
      spec: { holderIdentity: 'alice' },
    });
    const apply = (name: string) =>
      server.request('PATCH', `${leases}/${name}?fieldManager=alice`, {
        anonymous: true,
        headers: { authorization: 'Bearer alice-token', 'content-type': 'application/apply-patch+yaml' },
        body: lease(name),
      });
    await eventually(async () => (await alice('GET', `${leases}/none`)).status === 404, 'alice gets leases');
    // Updating an object that exists needs update only.
    await create(leases, lease('existing'));
    assert.equal((await alice('PUT', `${leases}/existing`, lease('existing'))).status, 200);
    // Creating through PUT or apply without create is refused, naming the create verb.
    const put = await alice('PUT', `${leases}/new-by-put`, lease('new-by-put'));
    assert.equal(put.status, 403);
    assert.match(String(put.body.message), /User "alice" cannot create resource "leases"/);
    const applied = await apply('new-by-apply');
    assert.equal(applied.status, 403, applied.text);
    assert.match(String(applied.body.message), /User "alice" cannot create resource "leases"/);
    assert.equal((await server.request('GET', `${leases}/new-by-apply`)).status, 404);
    // With create granted, both create the object.
    const role = await server.request('GET', `${rbac}/namespaces/leases/roles/writer`);
    const granted = { ...role.body, rules: rule(['get', 'update', 'patch', 'create']) };
    assert.equal(
      (await server.request('PUT', `${rbac}/namespaces/leases/roles/writer`, { body: granted })).status,
      200,
    );
    await eventually(
      async () => (await alice('PUT', `${leases}/new-by-put`, lease('new-by-put'))).status === 201,
      'alice creates by PUT',
    );
    assert.equal((await apply('new-by-apply')).status, 201);
  });

  test('resourceNames: get by name, list and watch only with a metadata.name field selector', async () => {
    await create('/api/v1/namespaces/team/configmaps', { metadata: { name: 'one' } });
    await create('/api/v1/namespaces/team/configmaps', { metadata: { name: 'two' } });
    await create(`${rbac}/namespaces/team/roles`, {
      metadata: { name: 'one-only' },
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          resourceNames: ['one'],
          verbs: ['get', 'list', 'watch', 'create', 'update'],
        },
      ],
    });
    await create(`${rbac}/namespaces/team/rolebindings`, {
      metadata: { name: 'bob-one' },
      subjects: [{ kind: 'User', name: 'bob' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'one-only' },
    });
    await eventually(
      async () => (await bob('GET', '/api/v1/namespaces/team/configmaps/one')).status === 200,
      'bob gets one',
    );
    assert.equal((await bob('GET', '/api/v1/namespaces/team/configmaps/two')).status, 403);
    assert.equal((await bob('GET', '/api/v1/namespaces/team/configmaps')).status, 403);
    const listed = await bob('GET', '/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Done');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.items.map((i: any) => i.metadata.name),
      ['one'],
    );
    assert.equal(
      (await bob('GET', '/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dtwo')).status,
      403,
    );
    // create cannot be limited by name
    assert.equal(
      (await bob('POST', '/api/v1/namespaces/team/configmaps', { metadata: { name: 'one' } })).status,
      403,
    );
  });

  test('validation: rule shapes, binding references, roleRef immutable; Table columns', async () => {
    const bad = await server.request('POST', `${rbac}/namespaces/team/roles`, {
      body: {
        metadata: { name: 'bad' },
        rules: [{ nonResourceURLs: ['/x'], verbs: ['get'] }, { resources: ['pods'] }],
      },
    });
    assert.equal(bad.status, 422);
    assert.match(
      bad.body.message,
      /rules\[0\]\.nonResourceURLs: Invalid value: \["\/x"\]: namespaced rules cannot apply to non-resource URLs/,
    );
    assert.match(bad.body.message, /rules\[1\]\.verbs: Required value/);
    assert.match(bad.body.message, /rules\[1\]\.apiGroups: Required value/);
    const crb = await server.request('POST', `${rbac}/clusterrolebindings`, {
      body: {
        metadata: { name: 'bad' },
        roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'x' },
      },
    });
    assert.equal(crb.status, 422);
    assert.match(
      crb.body.message,
      /roleRef\.kind: Unsupported value: "Role": supported values: "ClusterRole"/,
    );
    const b = await server.request('GET', `${rbac}/namespaces/team/rolebindings/alice-reads`);
    assert.equal(b.body.subjects[0].apiGroup, 'rbac.authorization.svc.io', 'subject apiGroup defaulted');
    const changed = await server.request('PUT', `${rbac}/namespaces/team/rolebindings/alice-reads`, {
      body: { ...b.body, roleRef: { ...b.body.roleRef, name: 'one-only' } },
    });
    assert.equal(changed.status, 422);
    assert.match(changed.body.message, /roleRef: Invalid value: .*cannot change roleRef/);
    const table = await server.request('GET', `${rbac}/namespaces/team/rolebindings`, {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.svc.io' },
    });
    assert.deepEqual(
      table.body.columnDefinitions.map((c: any) => c.name),
      ['Name', 'Role', 'Age', 'Users', 'Groups', 'ServiceAccounts'],
    );
    const row = table.body.rows.find((r: any) => r.cells[0] === 'alice-reads');
    assert.equal(row.cells[1], 'Role/cm-reader');
    assert.equal(row.cells[3], 'alice');
    const roles = await server.request('GET', `${rbac}/clusterroles`, {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.svc.io' },
    });
    assert.deepEqual(
      roles.body.columnDefinitions.map((c: any) => c.name),
      ['Name', 'Created At'],
    );
  });

  test('escalation: roles need the permissions they grant or escalate; bindings need them or bind', async () => {
    await create('/api/v1/namespaces', { metadata: { name: 'esc' } });
    await create(`${rbac}/namespaces/esc/roles`, {
      metadata: { name: 'rbac-writer' },
      rules: [
        {
          apiGroups: ['rbac.authorization.svc.io'],
          resources: ['roles', 'rolebindings'],
          verbs: ['create', 'update'],
        },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
      ],
    });
    await create(`${rbac}/namespaces/esc/rolebindings`, {
      metadata: { name: 'alice-rbac' },
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'rbac-writer' },
    });
    const role = (name: string, resource: string) => ({
      metadata: { name },
      rules: [{ apiGroups: [''], resources: [resource], verbs: ['get'] }],
    });
    await eventually(
      async () =>
        (await alice('POST', `${rbac}/namespaces/esc/roles?dryRun=All`, role('held', 'configmaps')))
          .status === 201,
      'alice may create a role she holds',
    );
    assert.equal(
      (await alice('POST', `${rbac}/namespaces/esc/roles`, role('held', 'configmaps'))).status,
      201,
    );
    const esc = await alice('POST', `${rbac}/namespaces/esc/roles?dryRun=All`, role('more', 'secrets'));
    assert.equal(esc.status, 403);
    assert.equal(
      esc.body.message,
      'roles.rbac.authorization.svc.io "more" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}',
    );
    // A role she may not read from: the secrets reader exists (made by the admin); binding it needs bind.
    await create(`${rbac}/namespaces/esc/roles`, role('secrets-reader', 'secrets'));
    const binding = (name: string, roleName: string) => ({
      metadata: { name },
      subjects: [{ kind: 'User', name: 'bob' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: roleName },
    });
    assert.equal(
      (await alice('POST', `${rbac}/namespaces/esc/rolebindings`, binding('ok', 'held'))).status,
      201,
    );
    const bind = await alice('POST', `${rbac}/namespaces/esc/rolebindings`, binding('no', 'secrets-reader'));
    assert.equal(bind.status, 403);
    assert.match(
      bind.body.message,
      /^rolebindings.rbac.authorization.svc.io "no" is forbidden: user "alice" .* not currently held:\n\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\["get"\]\}$/,
    );
    // With the escalate and bind verbs, both go through.
    await create(`${rbac}/namespaces/esc/roles`, {
      metadata: { name: 'escalator' },
      rules: [
        { apiGroups: ['rbac.authorization.svc.io'], resources: ['roles'], verbs: ['escalate', 'bind'] },
      ],
    });
    await create(`${rbac}/namespaces/esc/rolebindings`, {
      metadata: { name: 'alice-escalator' },
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'escalator' },
    });
    await eventually(
      async () =>
        (await alice('POST', `${rbac}/namespaces/esc/roles`, role('more', 'secrets'))).status === 201,
      'escalate allows',
    );
    assert.equal(
      (await alice('POST', `${rbac}/namespaces/esc/rolebindings`, binding('no', 'secrets-reader'))).status,
      201,
    );
  });

  test('without the AuthorizeWithSelectors gate, access reviews drop selector attributes', async () => {
    const r = await alice('POST', '/apis/authorization.svc.io/v1/selfsubjectaccessreviews', {
      spec: {
        resourceAttributes: {
          verb: 'list',
          resource: 'pods',
          labelSelector: { rawSelector: 'a=b', requirements: [{ key: 'a', operator: 'In', values: ['b'] }] },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.resourceAttributes.labelSelector, undefined);
    assert.equal(r.body.status.allowed, false);
  });

  test('default roles: labelled, aggregated, and reconciled at restart unless autoupdate is false', async () => {
    const list = await server.request(
      'GET',
      `${rbac}/clusterroles?labelSelector=svc.io%2Fbootstrapping%3Drbac-defaults`,
    );
    const names = list.body.items.map((i: any) => i.metadata.name);
    for (const n of [
      'cluster-admin',
      'admin',
      'edit',
      'view',
      'system:basic-user',
      'system:discovery',
      'system:public-info-viewer',
      'system:node',
      'system:kube-scheduler',
    ])
      assert.ok(names.includes(n), n);
    // Aggregation: view has the rules of system:aggregate-to-view; a new labelled role joins edit and admin.
    await eventually(async () => {
      const view = await server.request('GET', `${rbac}/clusterroles/view`);
      return (view.body.rules ?? []).some((r: any) => (r.resources ?? []).includes('configmaps'));
    }, 'view aggregated');
    await create(`${rbac}/clusterroles`, {
      metadata: { name: 'widgets-edit', labels: { 'rbac.authorization.svc.io/aggregate-to-edit': 'true' } },
      rules: [{ apiGroups: ['example.com'], resources: ['widgets'], verbs: ['*'] }],
    });
    await eventually(async () => {
      const admin = await server.request('GET', `${rbac}/clusterroles/admin`);
      return (admin.body.rules ?? []).some((r: any) => (r.resources ?? []).includes('widgets'));
    }, 'admin aggregates edit-labelled role');
    // Manual rules on an aggregated role are overwritten.
    const edit = await server.request('GET', `${rbac}/clusterroles/edit`);
    await server.request('PUT', `${rbac}/clusterroles/edit`, { body: { ...edit.body, rules: [] } });
    await eventually(async () => {
      const again = await server.request('GET', `${rbac}/clusterroles/edit`);
      return (again.body.rules ?? []).length > 0;
    }, 'edit rules restored');
    // Strip two defaults; keep one with autoupdate=false; restart.
    for (const [name, keep] of [
      ['system:basic-user', false],
      ['system:monitoring', true],
    ] as const) {
      const role = await server.request('GET', `${rbac}/clusterroles/${name}`);
      const annotations = keep
        ? { 'rbac.authorization.svc.io/autoupdate': 'false' }
        : role.body.metadata.annotations;
      const put = await server.request('PUT', `${rbac}/clusterroles/${name}`, {
        body: { ...role.body, metadata: { ...role.body.metadata, annotations }, rules: [] },
      });
      assert.equal(put.status, 200, put.text);
    }
    await server.stop(false);
    server = await startTestServer(['--token-auth-file', join(dir, 'tokens.csv')], join(dir, 'data'));
    const basic = await server.request('GET', `${rbac}/clusterroles/system:basic-user`);
    assert.ok(basic.body.rules.length > 0, 'system:basic-user reconciled');
    const monitoring = await server.request('GET', `${rbac}/clusterroles/system:monitoring`);
    assert.deepEqual(monitoring.body.rules ?? [], [], 'autoupdate=false kept as is');
  });
});
