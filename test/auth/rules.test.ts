// Table tests for authorization decisions without a server: RBAC rule matching (verbs, groups, resources with
// sub-resources, resourceNames, non-resource URLs), coverage for escalation checks, the subject index
// (users, groups, service accounts, namespaces, updates and deletes), the union, ABAC and the Node authorizer.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Attributes } from '../../src/auth/authorizer.js';
import type { UserInfo } from '../../src/auth/user.js';
import { policyRule, ruleAllows, uncovered, type PolicyRule } from '../../src/auth/rbac/rules.js';
import { RbacIndex } from '../../src/auth/rbac/index.js';
import { RbacAuthorizer } from '../../src/auth/rbac/authorizer.js';
import { UnionAuthorizer, withPrivilegedGroup } from '../../src/auth/authorizer-union.js';
import { alwaysAllow, alwaysDeny } from '../../src/auth/always.js';
import { AbacAuthorizer, parseAbacPolicies } from '../../src/auth/abac.js';
import { NodeAuthorizer } from '../../src/auth/node-authorizer.js';
import type { ApiObject } from '../../src/apimachinery/meta.js';

const alice: UserInfo = { name: 'alice', uid: '', groups: ['dev', 'system:authenticated'], extra: {} };

function res(verb: string, resource: string, extra: Partial<Attributes> = {}): Attributes {
  const [r = '', sub = ''] = resource.split('/');
  return {
    user: alice,
    verb,
    isResourceRequest: true,
    path: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: r,
    subresource: sub,
    namespace: 'ns',
    name: '',
    ...extra,
  };
}

function url(verb: string, path: string): Attributes {
  return { ...res(verb, ''), isResourceRequest: false, path, resource: '' };
}

const rule = (r: Partial<PolicyRule>): PolicyRule => policyRule(r);

describe('RBAC rule matching', () => {
  const cases: [string, PolicyRule, Attributes, boolean][] = [
    ['exact', rule({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }), res('get', 'pods'), true],
    [
      'other verb',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }),
      res('list', 'pods'),
      false,
    ],
    [
      'verb *',
      rule({ verbs: ['*'], apiGroups: [''], resources: ['pods'] }),
      res('deletecollection', 'pods'),
      true,
    ],
    [
      'other group',
      rule({ verbs: ['get'], apiGroups: ['apps'], resources: ['pods'] }),
      res('get', 'pods'),
      false,
    ],
    [
      'group *',
      rule({ verbs: ['get'], apiGroups: ['*'], resources: ['deployments'] }),
      res('get', 'deployments', { apiGroup: 'apps' }),
      true,
    ],
    ['resource *', rule({ verbs: ['get'], apiGroups: [''], resources: ['*'] }), res('get', 'pods/log'), true],
    [
      'main resource does not cover sub-resource',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }),
      res('get', 'pods/log'),
      false,
    ],
    [
      'sub-resource exact',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['pods/log'] }),
      res('get', 'pods/log'),
      true,
    ],
    [
      'sub-resource does not cover main',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['pods/log'] }),
      res('get', 'pods'),
      false,
    ],
    [
      '*/scale',
      rule({ verbs: ['update'], apiGroups: ['*'], resources: ['*/scale'] }),
      res('update', 'deployments/scale', { apiGroup: 'apps' }),
      true,
    ],
    [
      '*/scale not status',
      rule({ verbs: ['update'], apiGroups: ['*'], resources: ['*/scale'] }),
      res('update', 'deployments/status'),
      false,
    ],
    [
      'pods/* is no wildcard',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['pods/*'] }),
      res('get', 'pods/log'),
      false,
    ],
    [
      'name listed',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['cm'], resourceNames: ['a'] }),
      res('get', 'cm', { name: 'a' }),
      true,
    ],
    [
      'name not listed',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['cm'], resourceNames: ['a'] }),
      res('get', 'cm', { name: 'b' }),
      false,
    ],
    [
      'names never match create',
      rule({ verbs: ['create'], apiGroups: [''], resources: ['cm'], resourceNames: ['a'] }),
      res('create', 'cm'),
      false,
    ],
    [
      'names never match deletecollection',
      rule({ verbs: ['deletecollection'], apiGroups: [''], resources: ['cm'], resourceNames: ['a'] }),
      res('deletecollection', 'cm'),
      false,
    ],
    [
      'names match list with name',
      rule({ verbs: ['list'], apiGroups: [''], resources: ['cm'], resourceNames: ['a'] }),
      res('list', 'cm', { name: 'a' }),
      true,
    ],
    ['url exact', rule({ verbs: ['get'], nonResourceURLs: ['/healthz'] }), url('get', '/healthz'), true],
    [
      'url other',
      rule({ verbs: ['get'], nonResourceURLs: ['/healthz'] }),
      url('get', '/healthz/etcd'),
      false,
    ],
    [
      'url prefix *',
      rule({ verbs: ['get'], nonResourceURLs: ['/healthz/*'] }),
      url('get', '/healthz/etcd'),
      true,
    ],
    ['url *', rule({ verbs: ['get'], nonResourceURLs: ['*'] }), url('get', '/anything'), true],
    ['url verb', rule({ verbs: ['get'], nonResourceURLs: ['*'] }), url('post', '/anything'), false],
    ['url rule vs resource', rule({ verbs: ['get'], nonResourceURLs: ['*'] }), res('get', 'pods'), false],
    [
      'resource rule vs url',
      rule({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }),
      url('get', '/metrics'),
      false,
    ],
  ];
  for (const [name, r, a, want] of cases) test(name, () => assert.equal(ruleAllows(a, r), want));
});

describe('coverage (escalation)', () => {
  const owner = [
    rule({ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'configmaps/*'] }),
    rule({ verbs: ['get'], apiGroups: [''], resources: ['secrets'], resourceNames: ['s1'] }),
    rule({ verbs: ['get'], nonResourceURLs: ['/logs/*'] }),
  ];
  const cases: [string, PolicyRule, number][] = [
    ['subset', rule({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }), 0],
    ['extra verb', rule({ verbs: ['get', 'delete'], apiGroups: [''], resources: ['pods'] }), 1],
    [
      'sub-resource via resource/*',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['configmaps/status'] }),
      0,
    ],
    ['wildcard resource not covered', rule({ verbs: ['get'], apiGroups: [''], resources: ['*'] }), 1],
    [
      'named covered',
      rule({ verbs: ['get'], apiGroups: [''], resources: ['secrets'], resourceNames: ['s1'] }),
      0,
    ],
    ['unnamed not covered by named', rule({ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }), 1],
    ['url prefix', rule({ verbs: ['get'], nonResourceURLs: ['/logs/a'] }), 0],
    ['url outside', rule({ verbs: ['get'], nonResourceURLs: ['/metrics'] }), 1],
  ];
  for (const [name, servant, missing] of cases)
    test(name, () => assert.equal(uncovered(owner, [servant]).length, missing));
  test('cluster-admin covers everything', () => {
    const admin = [
      rule({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }),
      rule({ verbs: ['*'], nonResourceURLs: ['*'] }),
    ];
    assert.deepEqual(uncovered(admin, owner), []);
  });
});

function obj(kind: string, namespace: string, name: string, body: Record<string, unknown>): ApiObject {
  return { kind, metadata: { name, ...(namespace === '' ? {} : { namespace }) }, ...body };
}

describe('RBAC index and authorizer', () => {
  const index = new RbacIndex();
  const authorizer = new RbacAuthorizer(index);
  const reader = { rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }] };
  index.upsert('ClusterRole', obj('ClusterRole', '', 'pod-reader', reader));
  index.upsert(
    'Role',
    obj('Role', 'ns', 'cm', { rules: [{ verbs: ['list'], apiGroups: [''], resources: ['configmaps'] }] }),
  );
  const ref = (kind: string, name: string) => ({ roleRef: { apiGroup: 'rbac', kind, name } });
  test('no binding: no opinion', async () => {
    assert.equal((await authorizer.authorize(res('get', 'pods'))).decision, 'noOpinion');
  });
  test('ClusterRoleBinding to a group applies in every namespace', async () => {
    index.upsert(
      'ClusterRoleBinding',
      obj('ClusterRoleBinding', '', 'b1', {
        ...ref('ClusterRole', 'pod-reader'),
        subjects: [{ kind: 'Group', name: 'dev' }],
      }),
    );
    const r = await authorizer.authorize(res('get', 'pods', { namespace: 'other' }));
    assert.equal(r.decision, 'allow');
    assert.equal(
      r.reason,
      'RBAC: allowed by ClusterRoleBinding "b1" of ClusterRole "pod-reader" to Group "dev"',
    );
    index.remove('ClusterRoleBinding', obj('ClusterRoleBinding', '', 'b1', {}));
    assert.equal((await authorizer.authorize(res('get', 'pods'))).decision, 'noOpinion');
  });
  test('RoleBinding applies in its namespace only; to a Role or a ClusterRole', async () => {
    index.upsert(
      'RoleBinding',
      obj('RoleBinding', 'ns', 'b2', { ...ref('Role', 'cm'), subjects: [{ kind: 'User', name: 'alice' }] }),
    );
    index.upsert(
      'RoleBinding',
      obj('RoleBinding', 'ns', 'b3', {
        ...ref('ClusterRole', 'pod-reader'),
        subjects: [{ kind: 'User', name: 'alice' }],
      }),
    );
    assert.equal((await authorizer.authorize(res('list', 'configmaps'))).decision, 'allow');
    assert.equal((await authorizer.authorize(res('get', 'pods'))).decision, 'allow');
    assert.equal((await authorizer.authorize(res('get', 'pods', { namespace: 'x' }))).decision, 'noOpinion');
    assert.equal((await authorizer.authorize(res('get', 'pods', { namespace: '' }))).decision, 'noOpinion');
    // An update that drops the subject unfiles it.
    index.upsert(
      'RoleBinding',
      obj('RoleBinding', 'ns', 'b3', {
        ...ref('ClusterRole', 'pod-reader'),
        subjects: [{ kind: 'User', name: 'bob' }],
      }),
    );
    assert.equal((await authorizer.authorize(res('get', 'pods'))).decision, 'noOpinion');
  });
  test('service account subjects, namespace defaulted to the binding', async () => {
    const sa: UserInfo = {
      name: 'system:serviceaccount:ns:robot',
      uid: '',
      groups: ['system:serviceaccounts'],
      extra: {},
    };
    index.upsert(
      'RoleBinding',
      obj('RoleBinding', 'ns', 'b4', {
        ...ref('Role', 'cm'),
        subjects: [{ kind: 'ServiceAccount', name: 'robot' }],
      }),
    );
    assert.equal((await authorizer.authorize({ ...res('list', 'configmaps'), user: sa })).decision, 'allow');
    const other: UserInfo = { ...sa, name: 'system:serviceaccount:other:robot' };
    assert.equal(
      (await authorizer.authorize({ ...res('list', 'configmaps'), user: other })).decision,
      'noOpinion',
    );
  });
  test('a missing role grants nothing; rulesFor lists what applies', () => {
    index.upsert(
      'RoleBinding',
      obj('RoleBinding', 'ns', 'b5', { ...ref('Role', 'nope'), subjects: [{ kind: 'User', name: 'alice' }] }),
    );
    assert.equal(index.rulesFor(alice, 'ns').length, 1);
    assert.equal(index.rulesFor(alice, '').length, 0);
  });
});

describe('union and privileged group', () => {
  test('first allow or deny decides; no opinion from all is no opinion with reasons', async () => {
    const deny = { authorize: () => Promise.resolve({ decision: 'deny' as const, reason: 'nope' }) };
    assert.equal(
      (await new UnionAuthorizer(() => [alwaysDeny, alwaysAllow]).authorize(res('get', 'pods'))).decision,
      'allow',
    );
    assert.equal(
      (await new UnionAuthorizer(() => [deny, alwaysAllow]).authorize(res('get', 'pods'))).decision,
      'deny',
    );
    const none = await new UnionAuthorizer(() => [alwaysDeny]).authorize(res('get', 'pods'));
    assert.deepEqual(none, { decision: 'noOpinion', reason: 'Everything is forbidden.' });
    const masters = withPrivilegedGroup(new UnionAuthorizer(() => [deny]));
    const admin = { ...res('delete', 'nodes'), user: { ...alice, groups: ['system:masters'] } };
    assert.equal((await masters.authorize(admin)).decision, 'allow');
  });
});

describe('ABAC', () => {
  const policies = parseAbacPolicies(
    [
      '# comment',
      '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"ns","resource":"pods","apiGroup":"*","readonly":true}}',
      '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"group":"dev","nonResourcePath":"/logs/*"}}',
      '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"*","namespace":"*","resource":"namespaces","apiGroup":"","readonly":true}}',
      '',
    ].join('\n'),
    'svc.io',
  );
  const abac = new AbacAuthorizer(policies);
  const cases: [string, Attributes, string][] = [
    ['readonly get', res('get', 'pods'), 'allow'],
    ['readonly refuses create', res('create', 'pods'), 'noOpinion'],
    ['other namespace', res('get', 'pods', { namespace: 'x' }), 'noOpinion'],
    ['group path prefix', url('get', '/logs/a'), 'allow'],
    ['path outside', url('get', '/metrics'), 'noOpinion'],
    [
      'user * and apiGroup ""',
      { ...res('list', 'namespaces'), user: { ...alice, name: 'zed', groups: [] } },
      'allow',
    ],
  ];
  for (const [name, a, want] of cases)
    test(name, async () => assert.equal((await abac.authorize(a)).decision, want));
  test('errors name the line', () => {
    assert.throws(
      () =>
        parseAbacPolicies(
          '\n{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{}}',
          'svc.io',
        ),
      /line 2: a policy needs a user or a group/,
    );
    assert.throws(() => parseAbacPolicies('{not json', 'svc.io'), /line 1: not a JSON object/);
    assert.throws(
      () => parseAbacPolicies('{"apiVersion":"v2","kind":"Policy"}', 'svc.io'),
      /line 1: unknown apiVersion "v2"/,
    );
  });
  test('v0 lines: no subject = every authenticated user', async () => {
    const v0 = new AbacAuthorizer(parseAbacPolicies('{"readonly":true}', 'svc.io'));
    assert.equal((await v0.authorize(res('get', 'pods'))).decision, 'allow');
    assert.equal(
      (await v0.authorize({ ...res('get', 'pods'), user: { ...alice, groups: [] } })).decision,
      'noOpinion',
    );
  });
});

describe('Node authorizer', () => {
  const pods: ApiObject[] = [
    {
      metadata: { name: 'p1', namespace: 'ns' },
      spec: {
        nodeName: 'n1',
        serviceAccountName: 'robot',
        volumes: [
          { name: 'v', secret: { secretName: 's1' } },
          { name: 'c', configMap: { name: 'c1' } },
        ],
        containers: [
          { name: 'x', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 's2', key: 'k' } } }] },
        ],
      },
    },
    {
      metadata: { name: 'p2', namespace: 'ns' },
      spec: { nodeName: 'n2', volumes: [{ name: 'v', secret: { secretName: 's3' } }] },
    },
  ];
  const node = new NodeAuthorizer(
    {
      podsOnNode: (n, ns) =>
        pods.filter((p) => p.metadata.namespace === ns && (p.spec as { nodeName: string }).nodeName === n),
    },
    '',
    'coordination.svc.io',
  );
  const n1: UserInfo = {
    name: 'system:node:n1',
    uid: '',
    groups: ['system:nodes', 'system:authenticated'],
    extra: {},
  };
  const as = (a: Attributes): Attributes => ({ ...a, user: n1 });
  const cases: [string, Attributes, string][] = [
    ['own node', as(res('update', 'nodes/status', { namespace: '', name: 'n1' })), 'allow'],
    ['other node', as(res('update', 'nodes/status', { namespace: '', name: 'n2' })), 'noOpinion'],
    [
      'own lease',
      as(
        res('update', 'leases', {
          apiGroup: 'coordination.svc.io',
          namespace: 'kube-node-lease',
          name: 'n1',
        }),
      ),
      'allow',
    ],
    [
      'other lease',
      as(
        res('update', 'leases', {
          apiGroup: 'coordination.svc.io',
          namespace: 'kube-node-lease',
          name: 'n2',
        }),
      ),
      'noOpinion',
    ],
    ['bound pod', as(res('get', 'pods', { name: 'p1' })), 'allow'],
    ['pod of another node', as(res('get', 'pods', { name: 'p2' })), 'noOpinion'],
    [
      'pods listed by node',
      as(res('list', 'pods', { namespace: '', fieldSelector: 'spec.nodeName=n1' })),
      'allow',
    ],
    ['pods listed unfiltered', as(res('list', 'pods', { namespace: '' })), 'noOpinion'],
    ['referenced secret (volume)', as(res('get', 'secrets', { name: 's1' })), 'allow'],
    ['referenced secret (env)', as(res('get', 'secrets', { name: 's2' })), 'allow'],
    ['secret of another node', as(res('get', 'secrets', { name: 's3' })), 'noOpinion'],
    ['secret list', as(res('list', 'secrets')), 'noOpinion'],
    ['referenced config map', as(res('get', 'configmaps', { name: 'c1' })), 'allow'],
    ['referenced service account', as(res('get', 'serviceaccounts', { name: 'robot' })), 'allow'],
    ['anything else', as(res('list', 'services')), 'noOpinion'],
    ['not a node', res('get', 'secrets', { name: 's1' }), 'noOpinion'],
  ];
  for (const [name, a, want] of cases)
    test(name, async () => assert.equal((await node.authorize(a)).decision, want));
});
