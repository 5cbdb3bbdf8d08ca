/* eslint-disable @typescript-eslint/no-explicit-any -- audit events and JSON bodies are read loosely in tests */
// Proves audit logging as kube-apiserver 1.32 does it, on a real server with --group-domain=k8s.io: the policy's
// levels (what each logs), stages (RequestReceived, ResponseComplete, ResponseStarted for a watch, omitStages),
// the Audit-ID header (given or generated), authorization and deprecation annotations, impersonation, a failed
// authentication's one event, a bad policy file refused at start, and real kubectl requests in the log.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { startTestServer, writeTemp, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk } from '../support/kubectl.js';

let server: TestServer;
let dir: string;
let logPath: string;

const policy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
  - level: RequestResponse
    resources: [{ group: "", resources: ["configmaps"] }]
    omitManagedFields: true
  - level: Request
    resources: [{ group: "", resources: ["serviceaccounts"] }]
    omitStages: ["RequestReceived"]
  - level: Metadata
`;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-audit-'));
  const policyFile = await writeTemp(dir, 'policy.yaml', policy);
  const tokens = await writeTemp(dir, 'tokens.csv', 'bob-token,bob,bob-uid,"dev"\n');
  logPath = join(dir, 'logs', 'audit.log');
  server = await startTestServer(
    [
      '--group-domain',
      'k8s.io',
      '--token-auth-file',
      tokens,
      '--runtime-config',
      'authentication.k8s.io/v1beta1=true',
      '--audit-policy-file',
      policyFile,
      '--audit-log-path',
      logPath,
    ],
    join(dir, 'data'),
  );
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function readEvents(): Promise<any[]> {
  const text = await readFile(logPath, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

/** The events of one request, once `count` are written (at most 3 s). */
async function eventsOf(auditId: string, count: number): Promise<any[]> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const events = (await readEvents()).filter((e) => e.auditID === auditId);
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const microTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

test('Audit-ID: the request header is answered and logged; without it a UUID is made', async () => {
  const r = await server.request('GET', '/api/v1/namespaces/default/configmaps?limit=5', {
    headers: { 'audit-id': 'my-audit-id' },
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['audit-id'], 'my-audit-id');
  const events = await eventsOf('my-audit-id', 2);
  assert.deepEqual(
    events.map((e) => e.stage),
    ['RequestReceived', 'ResponseComplete'],
  );
  const done = events[1];
  assert.equal(done.kind, 'Event');
  assert.equal(done.apiVersion, 'audit.k8s.io/v1');
  assert.equal(done.level, 'RequestResponse');
  assert.equal(done.verb, 'list');
  assert.equal(done.requestURI, '/api/v1/namespaces/default/configmaps?limit=5');
  assert.deepEqual(done.objectRef, { resource: 'configmaps', namespace: 'default', apiVersion: 'v1' });
  assert.deepEqual(done.responseStatus, { metadata: {}, code: 200 });
  assert.equal(done.responseObject.kind, 'ConfigMapList');
  assert.equal(done.user.username, 'admin');
  assert.deepEqual(done.user.groups, ['system:masters', 'system:authenticated']);
  assert.deepEqual(done.sourceIPs, ['127.0.0.1']);
  assert.match(done.requestReceivedTimestamp, microTime);
  assert.match(done.stageTimestamp, microTime);
  assert.equal(events[0].stageTimestamp, events[0].requestReceivedTimestamp);
  assert.equal(events[0].responseStatus, undefined);
  assert.equal(events[0].annotations, undefined, 'authorization runs after RequestReceived');
  assert.equal(done.annotations['authorization.k8s.io/decision'], 'allow');
  assert.equal(typeof done.annotations['authorization.k8s.io/reason'], 'string');

  const other = await server.request('GET', '/api/v1/namespaces/default/configmaps');
  const id = other.headers['audit-id'];
  assert.match(String(id), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal((await eventsOf(String(id), 2)).length, 2);
});

test('RequestResponse: the request and response objects, managed fields omitted, objectRef from the body', async () => {
  const r = await server.request('POST', '/api/v1/namespaces/default/configmaps?fieldManager=audit-test', {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'audited' }, data: { a: '1' } },
    headers: { 'audit-id': 'create-cm' },
  });
  assert.equal(r.status, 201, r.text);
  assert.ok(r.body.metadata.managedFields !== undefined, 'the response itself has managed fields');
  const [received, done] = await eventsOf('create-cm', 2);
  assert.equal(received.stage, 'RequestReceived');
  assert.deepEqual(received.requestObject, undefined, 'the body is not read yet at RequestReceived');
  assert.equal(done.verb, 'create');
  assert.equal(done.objectRef.name, 'audited');
  assert.deepEqual(done.requestObject.data, { a: '1' });
  assert.equal(done.responseObject.metadata.name, 'audited');
  assert.equal(done.responseObject.metadata.managedFields, undefined);
  assert.deepEqual(done.responseStatus, { metadata: {}, code: 201 });
});

test('Request level logs the request object only; omitStages leaves out RequestReceived', async () => {
  const r = await server.request('POST', '/api/v1/namespaces/default/serviceaccounts', {
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'audited-sa' } },
    headers: { 'audit-id': 'create-sa' },
  });
  assert.equal(r.status, 201, r.text);
  const events = await eventsOf('create-sa', 1);
  assert.deepEqual(
    events.map((e) => e.stage),
    ['ResponseComplete'],
  );
  assert.equal(events[0].level, 'Request');
  assert.equal(events[0].requestObject.metadata.name, 'audited-sa');
  assert.equal(events[0].responseObject, undefined);
});

test('Metadata level: an error is logged with its Status, without objects; None logs nothing', async () => {
  const r = await server.request('GET', '/api/v1/namespaces/missing-ns', {
    headers: { 'audit-id': 'get-ns' },
  });
  assert.equal(r.status, 404);
  const [, done] = await eventsOf('get-ns', 2);
  assert.equal(done.level, 'Metadata');
  // As kube's request info, a namespace's own path names it as the namespace too.
  assert.deepEqual(done.objectRef, {
    resource: 'namespaces',
    namespace: 'missing-ns',
    name: 'missing-ns',
    apiVersion: 'v1',
  });
  assert.deepEqual(done.responseStatus, {
    metadata: {},
    status: 'Failure',
    message: 'namespaces "missing-ns" not found',
    reason: 'NotFound',
    details: { name: 'missing-ns', kind: 'namespaces' },
    code: 404,
  });
  assert.equal(done.responseObject, undefined);
  assert.equal(done.requestObject, undefined);

  await server.request('GET', '/healthz', { headers: { 'audit-id': 'healthz' } });
  await server.request('GET', '/version', { headers: { 'audit-id': 'version' } });
  const version = await eventsOf('version', 2);
  assert.equal(version[1].verb, 'get');
  assert.equal(version[1].objectRef, undefined);
  assert.deepEqual(await eventsOf('healthz', 1), []);
});

test('a watch: RequestReceived, ResponseStarted, then ResponseComplete, no response object', async () => {
  const r = await server.request('GET', '/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1', {
    headers: { 'audit-id': 'watch-cm' },
  });
  assert.equal(r.status, 200);
  const events = await eventsOf('watch-cm', 3);
  assert.deepEqual(
    events.map((e) => e.stage),
    ['RequestReceived', 'ResponseStarted', 'ResponseComplete'],
  );
  assert.equal(events[1].verb, 'watch');
  assert.deepEqual(events[1].responseStatus, { metadata: {}, code: 200 });
  assert.equal(events[2].responseObject, undefined);
});

test('an authorization denial is annotated forbid; impersonation logs both users', async () => {
  const r = await server.request('GET', '/api/v1/namespaces/default/secrets', {
    anonymous: true,
    headers: { authorization: 'Bearer bob-token', 'audit-id': 'denied' },
  });
  assert.equal(r.status, 403);
  const [, done] = await eventsOf('denied', 2);
  assert.equal(done.user.username, 'bob');
  assert.equal(done.user.uid, 'bob-uid');
  assert.equal(done.annotations['authorization.k8s.io/decision'], 'forbid');
  assert.equal(done.annotations['authorization.k8s.io/reason'], '');
  assert.equal(done.responseStatus.code, 403);
  assert.equal(done.responseStatus.reason, 'Forbidden');

  const as = await server.request('GET', '/api/v1/namespaces/default/pods', {
    headers: { 'impersonate-user': 'carol', 'impersonate-group': 'team', 'audit-id': 'impersonated' },
  });
  assert.equal(as.status, 403);
  const [, asDone] = await eventsOf('impersonated', 2);
  assert.equal(asDone.user.username, 'admin');
  assert.deepEqual(asDone.impersonatedUser, { username: 'carol', groups: ['team', 'system:authenticated'] });
  assert.equal(asDone.annotations['authorization.k8s.io/decision'], 'forbid');
});

test('a failed authentication: one ResponseStarted event with the 401 Status and no user', async () => {
  const r = await server.request('GET', '/api/v1/namespaces/default/pods', {
    anonymous: true,
    headers: { authorization: 'Bearer wrong', 'audit-id': 'unauthenticated' },
  });
  assert.equal(r.status, 401);
  assert.equal(r.headers['audit-id'], 'unauthenticated');
  await eventsOf('unauthenticated', 2);
  const events = await eventsOf('unauthenticated', 1);
  assert.equal(events.length, 1);
  assert.equal(events[0].stage, 'ResponseStarted');
  assert.deepEqual(events[0].user, {});
  assert.equal(events[0].verb, 'list');
  // kube 1.32 starts from "Authentication failed, attempted: bearer" and logs the 401's Status over it.
  assert.deepEqual(events[0].responseStatus, {
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
  assert.equal(events[0].responseObject, undefined, 'Metadata level');
});

test('a deprecated version: k8s.io/deprecated and k8s.io/removed-release annotations', async () => {
  const r = await server.request('POST', '/apis/authentication.k8s.io/v1beta1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1beta1', kind: 'SelfSubjectReview' },
    headers: { 'audit-id': 'deprecated' },
  });
  assert.equal(r.status, 201, r.text);
  const [, done] = await eventsOf('deprecated', 2);
  assert.equal(done.annotations['k8s.io/deprecated'], 'true');
  assert.equal(done.annotations['k8s.io/removed-release'], '1.33');
  assert.equal(done.objectRef.apiGroup, 'authentication.k8s.io');
  assert.equal(done.objectRef.apiVersion, 'v1beta1');
});

test('kubectl 1.32: its requests are in the log with its user agent', async () => {
  ensureKubectl();
  await kubectlOk(server.kubeconfig, [
    'create',
    'configmap',
    'from-kubectl',
    '-n',
    'default',
    '--from-literal=k=v',
  ]);
  await kubectlOk(server.kubeconfig, ['get', 'configmap', 'from-kubectl', '-n', 'default', '-o', 'name']);
  await kubectlOk(server.kubeconfig, ['delete', 'configmap', 'from-kubectl', '-n', 'default']);
  const deadline = Date.now() + 3000;
  let mine: any[] = [];
  while (Date.now() < deadline) {
    mine = (await readEvents()).filter(
      (e) =>
        e.stage === 'ResponseComplete' &&
        String(e.userAgent).startsWith('kubectl/') &&
        e.objectRef?.name === 'from-kubectl',
    );
    if (mine.length >= 4) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  // kubectl delete waits for the object to be gone: its last get is a 404.
  assert.deepEqual(
    mine.map((e) => [e.verb, e.responseStatus.code]),
    [
      ['create', 201],
      ['get', 200],
      ['delete', 200],
      ['get', 404],
    ],
  );
  assert.deepEqual(mine[0].requestObject.data, { k: 'v' });
});

test('metrics: apiserver_audit_event_total and apiserver_audit_level_total count events and levels', async () => {
  const r = await server.request('GET', '/metrics');
  assert.equal(r.status, 200);
  const value = (pattern: RegExp): number => Number(pattern.exec(r.text)?.[1] ?? 'NaN');
  assert.ok(value(/^apiserver_audit_event_total (\d+)$/m) > 10, r.text);
  assert.ok(value(/^apiserver_audit_level_total\{level="None"\} (\d+)$/m) >= 1);
  assert.ok(value(/^apiserver_audit_level_total\{level="RequestResponse"\} (\d+)$/m) >= 3);
  assert.match(
    r.text,
    /^# HELP apiserver_audit_event_total \[ALPHA\] Counter of audit events generated and sent to the audit backend\.$/m,
  );
});

test('blocking-strict: a request whose RequestReceived event cannot be written is refused with 500', async (t) => {
  if (!existsSync('/dev/full')) {
    t.skip('no /dev/full (every write to it fails) on this system');
    return;
  }
  const policyFile = await writeTemp(
    dir,
    'strict-policy.yaml',
    'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n  - level: None\n    nonResourceURLs: [/metrics]\n  - level: Metadata\n',
  );
  const strict = await startTestServer(
    [
      '--audit-policy-file',
      policyFile,
      '--audit-log-path',
      '/dev/full',
      '--audit-log-mode',
      'blocking-strict',
    ],
    join(dir, 'strict-data'),
  );
  try {
    const r = await strict.request('GET', '/api/v1/namespaces');
    assert.equal(r.status, 500);
    assert.equal(
      r.text,
      'Internal Server Error: &#34;/api/v1/namespaces&#34;: failed to store audit event\n',
    );
    const metrics = await strict.request('GET', '/metrics');
    assert.match(metrics.text, /^apiserver_audit_requests_rejected_total 1$/m);
    assert.match(metrics.text, /^apiserver_audit_error_total\{plugin="log"\} 1$/m);
  } finally {
    await strict.stop();
  }
});

test('a bad policy file is refused at start, naming the file and the problem', async () => {
  const bad = await writeTemp(
    dir,
    'bad-policy.yaml',
    'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Loud\n',
  );
  const main = join(process.cwd(), 'dist', 'src', 'server', 'main.js');
  const r = spawnSync(
    process.execPath,
    [
      main,
      'serve',
      '--secure-port',
      '0',
      '--data-dir',
      join(dir, 'bad'),
      '--group-domain',
      'k8s.io',
      '--audit-policy-file',
      bad,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 1);
  assert.equal(
    r.stderr,
    `stoa serve: loading audit policy file: rules[0].level: Unsupported value: "Loud": supported values: "None", "Metadata", "Request", "RequestResponse": from file ${bad}\n`,
  );
});
