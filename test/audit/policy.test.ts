// Proves the audit policy as kube-apiserver 1.32 reads and evaluates it: the first matching rule wins (users,
// userGroups, verbs, resources with sub-resources, `*/status`, `pods/*`, resourceNames, namespaces, non-resource
// URLs with a `*` suffix), omitStages merge with the policy's, omitManagedFields falls back to the policy's, and
// a bad file's problems are named with kube's field paths and messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AuditPolicyError,
  parseAuditPolicy,
  PolicyChecker,
  type PolicyAttributes,
} from '../../src/audit/policy.js';
import type { UserInfo } from '../../src/auth/user.js';
import { nonResourceAttributes } from '../../src/auth/authorizer.js';

const alice: UserInfo = { name: 'alice', uid: '', groups: ['dev', 'system:authenticated'], extra: {} };
const bob: UserInfo = { name: 'bob', uid: '', groups: ['ops', 'system:authenticated'], extra: {} };

function resource(
  user: UserInfo | undefined,
  verb: string,
  apiGroup: string,
  res: string,
  options: { subresource?: string; namespace?: string; name?: string } = {},
): PolicyAttributes {
  return {
    user,
    verb,
    isResourceRequest: true,
    path: '',
    apiGroup,
    apiVersion: 'v1',
    resource: res,
    subresource: options.subresource ?? '',
    namespace: options.namespace ?? '',
    name: options.name ?? '',
  };
}

const nonResource = (user: UserInfo, path: string): PolicyAttributes =>
  nonResourceAttributes(user, 'get', path);

const policy = parseAuditPolicy(
  `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
  - level: None
    users: [bob]
    verbs: [get]
  - level: RequestResponse
    userGroups: [dev]
    resources: [{ group: "", resources: [pods/status] }]
    omitStages: [ResponseStarted]
    omitManagedFields: false
  - level: Request
    resources: [{ group: "", resources: ["*/status"] }]
  - level: Request
    resources: [{ group: apps, resources: ["deployments/*"] }]
  - level: Metadata
    resources: [{ group: "", resources: [configmaps], resourceNames: [special] }]
  - level: RequestResponse
    namespaces: [kube-system]
  - level: None
    nonResourceURLs: ["/healthz*", /version]
  - level: Metadata
    resources: [{ group: rbac.authorization.k8s.io }]
  - level: Request
    verbs: [create]
`,
  'audit.k8s.io',
);
const checker = new PolicyChecker(policy);
const levelOf = (attributes: PolicyAttributes): string => checker.evaluate(attributes).level;

test('the first matching rule decides; no match is None', () => {
  assert.equal(levelOf(resource(bob, 'get', '', 'pods', { subresource: 'status' })), 'None');
  assert.equal(levelOf(resource(alice, 'get', '', 'pods', { subresource: 'status' })), 'RequestResponse');
  assert.equal(
    levelOf(resource(bob, 'update', '', 'pods', { subresource: 'status' })),
    'Request',
    '*/status',
  );
  assert.equal(levelOf(resource(bob, 'update', '', 'services', { subresource: 'status' })), 'Request');
  assert.equal(levelOf(resource(bob, 'update', '', 'pods')), 'None', 'pods alone is not pods/status');
  assert.equal(levelOf(resource(bob, 'patch', 'apps', 'deployments', { subresource: 'scale' })), 'Request');
  // As kube's checker: `deployments/*` matches the resource itself too.
  assert.equal(levelOf(resource(bob, 'patch', 'apps', 'deployments')), 'Request');
  assert.equal(levelOf(resource(bob, 'patch', 'apps', 'replicasets')), 'None');
  assert.equal(levelOf(resource(bob, 'update', '', 'configmaps', { name: 'special' })), 'Metadata');
  assert.equal(levelOf(resource(bob, 'update', '', 'configmaps', { name: 'other' })), 'None');
  assert.equal(
    levelOf(resource(bob, 'update', '', 'secrets', { namespace: 'kube-system' })),
    'RequestResponse',
  );
  assert.equal(levelOf(nonResource(alice, '/healthz/etcd')), 'None');
  assert.equal(levelOf(nonResource(alice, '/version')), 'None');
  assert.equal(levelOf(nonResource(alice, '/versions')), 'None', 'no rule matches: None');
  assert.equal(levelOf(resource(alice, 'list', 'rbac.authorization.k8s.io', 'roles')), 'Metadata');
  assert.equal(levelOf(resource(undefined, 'create', '', 'pods')), 'Request', 'no user: user rules skip');
  assert.equal(levelOf(resource(alice, 'create', 'apps', 'deployments')), 'Request');
});

test('stages omitted are the rule and the policy ones; omitManagedFields from the rule, else the policy', () => {
  const status = checker.evaluate(resource(alice, 'get', '', 'pods', { subresource: 'status' }));
  assert.deepEqual([...status.omitStages].sort(), ['RequestReceived', 'ResponseStarted']);
  assert.equal(status.omitManagedFields, false);
  const other = checker.evaluate(resource(bob, 'update', '', 'services', { subresource: 'status' }));
  assert.deepEqual(other.omitStages, ['RequestReceived']);
  assert.equal(other.omitManagedFields, true);
  const none = checker.evaluate(nonResource(alice, '/nothing'));
  assert.equal(none.level, 'None');
});

test('a wildcard non-resource URL and `*` resources match everything under them', () => {
  const p = new PolicyChecker(
    parseAuditPolicy(
      JSON.stringify({
        apiVersion: 'audit.svc.io/v1',
        kind: 'Policy',
        rules: [
          { level: 'Metadata', nonResourceURLs: ['/apis/*'] },
          { level: 'Request', resources: [{ group: '', resources: ['*'] }] },
          { level: 'RequestResponse', nonResourceURLs: ['*'] },
        ],
      }),
      'audit.svc.io',
    ),
  );
  assert.equal(p.evaluate(nonResource(alice, '/apis/apps/v1')).level, 'Metadata');
  assert.equal(p.evaluate(nonResource(alice, '/metrics')).level, 'RequestResponse');
  assert.equal(p.evaluate(resource(alice, 'get', '', 'pods', { subresource: 'log' })).level, 'Request');
  assert.equal(p.evaluate(resource(alice, 'get', 'apps', 'deployments')).level, 'None');
});

function refusal(source: string): string {
  try {
    parseAuditPolicy(source, 'audit.k8s.io');
  } catch (error) {
    assert.ok(error instanceof AuditPolicyError);
    return error.message;
  }
  assert.fail('the policy was accepted');
}

test('a bad policy is refused with kube-apiserver field errors', () => {
  const head = 'apiVersion: audit.k8s.io/v1\nkind: Policy\n';
  assert.equal(refusal(`${head}rules: []\n`), 'loaded illegal policy with 0 rules');
  assert.equal(refusal(`${head}rules:\n  - verbs: [get]\n`), 'rules[0].level: Required value');
  assert.equal(
    refusal(`${head}rules:\n  - level: Metadata\n    omitStages: [Sometimes]\n`),
    'rules[0].omitStages[0]: Invalid value: "Sometimes": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic',
  );
  assert.equal(
    refusal(`${head}rules:\n  - level: Metadata\n    nonResourceURLs: [healthz, "/a*b"]\n`),
    `[rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character, rules[0].nonResourceURLs[1]: Invalid value: "/a*b": non-resource URL wildcards '*' must be the final character of the rule]`,
  );
  assert.equal(
    refusal(`${head}rules:\n  - level: Metadata\n    nonResourceURLs: [/x]\n    namespaces: [a]\n`),
    'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs',
  );
  assert.equal(
    refusal(`${head}rules:\n  - level: Metadata\n    resources: [{ group: "", resourceNames: [a] }]\n`),
    'rules[0].resources.resourceNames: Invalid value: ["a"]: using resourceNames requires at least one resource',
  );
  assert.match(
    refusal('apiVersion: audit.k8s.io/v2\nkind: Policy\nrules: []\n'),
    /^failed decoding: no kind "Policy"/,
  );
  assert.match(refusal('rules: [\n'), /^failed decoding: /);
});
