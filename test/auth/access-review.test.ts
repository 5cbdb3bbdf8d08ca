/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Access reviews on a real server (gate AuthorizeWithSelectors on): SelfSubjectAccessReview for the caller,
// SubjectAccessReview for anyone, LocalSubjectAccessReview bound to its namespace, SelfSubjectRulesReview with
// `incomplete` when a mode cannot list rules; validation (exactly one attribute object, a subject, namespace
// rules, the selector rules of spec 2.6).

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type Response, type TestServer } from '../e2e/harness.js';

let server: TestServer;
let dir: string;
const authz = '/apis/authorization.svc.io/v1';

function alice(method: string, path: string, body?: unknown): Promise<Response> {
  return server.request(method, path, {
    anonymous: true,
    headers: { authorization: 'Bearer alice-token' },
    ...(body === undefined ? {} : { body }),
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-sar-'));
  await writeFile(join(dir, 'tokens.csv'), 'alice-token,alice,1000,dev\n');
  // ABAC after RBAC: it cannot list rules, so rules reviews are incomplete; it lets dev read pods.
  await writeFile(
    join(dir, 'abac.jsonl'),
    '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"group":"dev","namespace":"*","resource":"pods","apiGroup":"","readonly":true}}\n',
  );
  server = await startTestServer(
    [
      '--token-auth-file',
      join(dir, 'tokens.csv'),
      '--authorization-mode',
      'Node,RBAC,ABAC',
      '--authorization-policy-file',
      join(dir, 'abac.jsonl'),
      '--feature-gates',
      'AuthorizeWithSelectors=true',
    ],
    join(dir, 'data'),
  );
  const rbac = '/apis/rbac.authorization.svc.io/v1';
  await server.request('POST', `${rbac}/namespaces/default/roles`, {
    body: {
      metadata: { name: 'cm' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    },
  });
  await server.request('POST', `${rbac}/namespaces/default/rolebindings`, {
    body: {
      metadata: { name: 'alice-cm' },
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'cm' },
    },
  });
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const ssar = (attrs: Record<string, unknown>) => ({
  apiVersion: 'authorization.svc.io/v1',
  kind: 'SelfSubjectAccessReview',
  spec: attrs,
});

describe('access reviews', () => {
  test('SelfSubjectAccessReview answers for the caller from every mode', async () => {
    let r: Response | undefined;
    for (let i = 0; i < 100; i++) {
      r = await alice(
        'POST',
        `${authz}/selfsubjectaccessreviews`,
        ssar({ resourceAttributes: { namespace: 'default', verb: 'list', resource: 'configmaps' } }),
      );
      if (r.body?.status?.allowed === true) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(r?.status, 201, r?.text);
    assert.equal(r?.body.kind, 'SelfSubjectAccessReview');
    assert.deepEqual(r?.body.status, {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "alice-cm/default" of Role "cm" to User "alice"',
    });
    const no = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({ resourceAttributes: { namespace: 'other', verb: 'list', resource: 'configmaps' } }),
    );
    assert.equal(no.body.status.allowed, false);
    const abac = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({ resourceAttributes: { namespace: 'x', verb: 'get', resource: 'pods' } }),
    );
    assert.equal(abac.body.status.allowed, true, 'ABAC allows dev to read pods');
    const path = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({ nonResourceAttributes: { path: '/version', verb: 'get' } }),
    );
    assert.equal(path.body.status.allowed, true);
  });

  test('validation: exactly one attribute object; SubjectAccessReview needs a subject', async () => {
    const both = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({ resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/', verb: 'get' } }),
    );
    assert.equal(both.status, 422);
    assert.match(
      both.body.message,
      /spec.nonResourceAttributes: Invalid value: .*: cannot be specified in combination with resourceAttributes/,
    );
    const none = await alice('POST', `${authz}/selfsubjectaccessreviews`, ssar({}));
    assert.equal(none.status, 422);
    assert.match(
      none.body.message,
      /spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified/,
    );
    const noSubject = await server.request('POST', `${authz}/subjectaccessreviews`, {
      body: { spec: { resourceAttributes: { verb: 'get', resource: 'pods' } } },
    });
    assert.equal(noSubject.status, 422);
    assert.match(
      noSubject.body.message,
      /spec.user: Invalid value: "": at least one of user or group must be specified/,
    );
    assert.equal((await server.request('GET', `${authz}/selfsubjectaccessreviews`)).status, 405);
  });

  test('SubjectAccessReview: any user, groups in spec.groups; forbidden to those without the right', async () => {
    const body = {
      spec: {
        user: 'alice',
        groups: ['dev'],
        resourceAttributes: { namespace: 'default', verb: 'get', resource: 'configmaps' },
      },
    };
    const r = await server.request('POST', `${authz}/subjectaccessreviews`, { body });
    assert.equal(r.status, 201);
    assert.equal(r.body.status.allowed, true);
    const masters = await server.request('POST', `${authz}/subjectaccessreviews`, {
      body: {
        spec: {
          user: 'x',
          groups: ['system:masters'],
          nonResourceAttributes: { path: '/metrics', verb: 'get' },
        },
      },
    });
    assert.equal(masters.body.status.allowed, true);
    const denied = await alice('POST', `${authz}/subjectaccessreviews`, body);
    assert.equal(denied.status, 403);
    assert.equal(
      denied.body.message,
      'subjectaccessreviews.authorization.svc.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.svc.io" at the cluster scope',
    );
  });

  test('LocalSubjectAccessReview: the namespace must be the URL namespace; no non-resource attributes', async () => {
    const ok = await server.request('POST', `${authz}/namespaces/default/localsubjectaccessreviews`, {
      body: {
        spec: {
          user: 'alice',
          resourceAttributes: { namespace: 'default', verb: 'get', resource: 'configmaps' },
        },
      },
    });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.status.allowed, true);
    assert.equal(ok.body.metadata.namespace, 'default');
    const other = await server.request('POST', `${authz}/namespaces/default/localsubjectaccessreviews`, {
      body: {
        spec: { user: 'alice', resourceAttributes: { namespace: 'x', verb: 'get', resource: 'configmaps' } },
      },
    });
    assert.equal(other.status, 422);
    assert.match(
      other.body.message,
      /spec.resourceAttributes.namespace: Invalid value: "x": must match metadata.namespace/,
    );
    const nonResource = await server.request(
      'POST',
      `${authz}/namespaces/default/localsubjectaccessreviews`,
      {
        body: { spec: { user: 'alice', nonResourceAttributes: { path: '/', verb: 'get' } } },
      },
    );
    assert.equal(nonResource.status, 422);
  });

  test('selector attributes: kept with the gate, both raw and requirements is 400, bad requirements 422', async () => {
    const limited = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({
        resourceAttributes: {
          namespace: 'default',
          verb: 'list',
          resource: 'configmaps',
          labelSelector: { rawSelector: 'app=web' },
        },
      }),
    );
    assert.equal(limited.status, 201);
    assert.equal(limited.body.spec.resourceAttributes.labelSelector.rawSelector, 'app=web');
    assert.equal(limited.body.status.allowed, true, 'selectors only limit; RBAC ignores them');
    const both = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({
        resourceAttributes: {
          verb: 'list',
          resource: 'pods',
          fieldSelector: { rawSelector: 'a=b', requirements: [{ key: 'a', operator: 'In', values: ['b'] }] },
        },
      }),
    );
    assert.equal(both.status, 400);
    assert.equal(both.body.reason, 'BadRequest');
    const bad = await alice(
      'POST',
      `${authz}/selfsubjectaccessreviews`,
      ssar({
        resourceAttributes: {
          verb: 'list',
          resource: 'pods',
          labelSelector: { requirements: [{ key: 'a', operator: 'Exists', values: ['b'] }] },
        },
      }),
    );
    assert.equal(bad.status, 422);
    assert.match(
      bad.body.message,
      /values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'/,
    );
  });

  test('SelfSubjectRulesReview lists RBAC rules and is incomplete with ABAC in the chain', async () => {
    const r = await alice('POST', `${authz}/selfsubjectrulesreviews`, { spec: { namespace: 'default' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.status.incomplete, true);
    assert.ok(r.body.status.resourceRules.some((x: any) => x.resources.includes('configmaps')));
    assert.ok(
      r.body.status.resourceRules.some((x: any) => x.resources.includes('selfsubjectaccessreviews')),
      'system:basic-user',
    );
    assert.ok(r.body.status.nonResourceRules.some((x: any) => x.nonResourceURLs.includes('/version')));
    const noNs = await alice('POST', `${authz}/selfsubjectrulesreviews`, { spec: {} });
    assert.equal(noNs.status, 400);
  });
});
