/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// --authorization-config end to end: a real HTTPS webhook (mutual TLS, started here) asked with v1
// SubjectAccessReviews, its allow/deny/no-opinion answers and reasons, the decision cache, CEL match
// conditions, failurePolicy Deny when it is down, reloading the file on change and refusing a reload that
// removes RBAC; the configuration's validation, and start errors (both flags, bad files naming the line).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { parseAuthorizationConfig, reloadRefusal } from '../../src/auth/authorization-config.js';
import { startTestServer, type Response, type TestServer } from '../e2e/harness.js';
import { startWebhook, type TestWebhook } from '../support/webhook.js';

let dir: string;
let server: TestServer;
let webhook: TestWebhook;
let webhookPort = 0;
const calls: any[] = [];

function as(token: string, method: string, path: string): Promise<Response> {
  return server.request(method, path, { anonymous: true, headers: { authorization: `Bearer ${token}` } });
}

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`not within 10 s: ${what}`);
}

function config(authorizers: unknown[]): string {
  return stringify({
    apiVersion: 'apiserver.config.svc.io/v1',
    kind: 'AuthorizationConfiguration',
    authorizers,
  });
}

const webhookEntry = (extra: Record<string, unknown> = {}) => ({
  type: 'Webhook',
  name: 'policy.example.com',
  webhook: {
    timeout: '3s',
    authorizedTTL: '5m',
    unauthorizedTTL: '30s',
    subjectAccessReviewVersion: 'v1',
    matchConditionSubjectAccessReviewVersion: 'v1',
    failurePolicy: 'Deny',
    connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: join(dir, 'webhook.kubeconfig') },
    matchConditions: [{ expression: "request.user != 'skipped'" }],
    ...extra,
  },
});

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-webhook-'));
  webhook = await startWebhook('apiserver', (review) => {
    calls.push(review);
    const spec = review.spec;
    const resource = spec.resourceAttributes?.resource;
    const status =
      spec.user === 'alice' && resource === 'configmaps'
        ? { allowed: true, reason: 'alice may touch config maps' }
        : spec.user === 'bob'
          ? { allowed: false, denied: true, reason: 'bob is on leave' }
          : { allowed: false };
    return { ...review, status };
  });
  webhookPort = webhook.port;
  const { ca, client } = webhook;
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  await writeFile(
    join(dir, 'webhook.kubeconfig'),
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'w',
          cluster: {
            server: `https://127.0.0.1:${webhookPort}/authorize`,
            'certificate-authority-data': b64(ca.certPem),
          },
        },
      ],
      users: [
        {
          name: 'w',
          user: { 'client-certificate-data': b64(client.certPem), 'client-key-data': b64(client.keyPem) },
        },
      ],
      contexts: [{ name: 'w', context: { cluster: 'w', user: 'w' } }],
      'current-context': 'w',
    }),
  );
  await writeFile(join(dir, 'tokens.csv'), 'alice-token,alice,1\nbob-token,bob,2\nskipped-token,skipped,3\n');
  await writeFile(
    join(dir, 'authz.yaml'),
    config([{ type: 'Node', name: 'node' }, { type: 'RBAC', name: 'rbac' }, webhookEntry()]),
  );
  server = await startTestServer(
    [
      '--token-auth-file',
      join(dir, 'tokens.csv'),
      '--authorization-config',
      join(dir, 'authz.yaml'),
      '--feature-gates',
      'AuthorizeWithSelectors=true',
    ],
    join(dir, 'data'),
  );
});

after(async () => {
  await server?.stop();
  await webhook?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('webhook authorizer', () => {
  test('allow, deny with reason, no opinion; answers are cached', async () => {
    const allowed = await as('alice-token', 'GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(allowed.status, 200, allowed.text);
    const review = calls.at(-1);
    assert.equal(review.apiVersion, 'authorization.svc.io/v1');
    assert.equal(review.kind, 'SubjectAccessReview');
    assert.deepEqual(review.spec.resourceAttributes, {
      namespace: 'default',
      verb: 'list',
      group: '',
      version: 'v1',
      resource: 'configmaps',
      subresource: '',
      name: '',
    });
    assert.equal(review.spec.user, 'alice');
    assert.deepEqual(review.spec.groups, ['system:authenticated']);
    const before = calls.length;
    assert.equal((await as('alice-token', 'GET', '/api/v1/namespaces/default/configmaps')).status, 200);
    assert.equal(calls.length, before, 'the second identical request is answered from the cache');
    const denied = await as('bob-token', 'GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(denied.status, 403);
    assert.equal(
      denied.body.message,
      'configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default": bob is on leave',
    );
    assert.equal((await as('alice-token', 'GET', '/api/v1/namespaces/default/secrets')).status, 403);
  });

  test('with AuthorizeWithSelectors, the selectors of a list reach the webhook as requirements', async () => {
    const r = await as(
      'alice-token',
      'GET',
      '/api/v1/namespaces/default/configmaps?labelSelector=app%3Dweb,tier%21%3Ddb&fieldSelector=metadata.name%3Dx',
    );
    assert.equal(r.status, 200, r.text);
    const attributes = calls.at(-1).spec.resourceAttributes;
    assert.deepEqual(attributes.labelSelector, {
      requirements: [
        { key: 'app', operator: 'In', values: ['web'] },
        { key: 'tier', operator: 'NotIn', values: ['db'] },
      ],
    });
    assert.deepEqual(attributes.fieldSelector, {
      requirements: [{ key: 'metadata.name', operator: 'In', values: ['x'] }],
    });
    assert.equal(attributes.name, 'x');
  });

  test('a false match condition skips the webhook', async () => {
    const before = calls.length;
    assert.equal((await as('skipped-token', 'GET', '/api/v1/namespaces/default/configmaps')).status, 403);
    assert.equal(calls.length, before);
  });

  test('reload on change: a new webhook setting applies; removing RBAC is refused', async () => {
    // Adding a condition that excludes alice: she loses the webhook's allow once the file is read again.
    await writeFile(
      join(dir, 'authz.yaml'),
      config([
        { type: 'RBAC', name: 'rbac' },
        { type: 'Node', name: 'node' },
        webhookEntry({ matchConditions: [{ expression: "request.user != 'alice'" }] }),
      ]),
    );
    await eventually(
      async () =>
        (await as('alice-token', 'GET', '/api/v1/namespaces/kube-system/configmaps')).status === 403,
      'reloaded configuration skips the webhook for alice',
    );
    await writeFile(join(dir, 'authz.yaml'), config([{ type: 'Node', name: 'node' }, webhookEntry()]));
    await eventually(async () => server.stderr().includes('not allowed at run time'), 'reload refused');
    assert.match(server.stderr(), /removing a RBAC authorizer is not allowed at run time/);
  });

  test('failurePolicy Deny: an unreachable webhook denies with an error: 500, and evaluationError in a review', async () => {
    await webhook.close();
    // kube-apiserver answers a request that no authorizer allowed and whose authorizer failed with 500.
    const r = await as('bob-token', 'GET', '/api/v1/namespaces/default/pods');
    assert.equal(r.status, 500);
    assert.equal(r.body.reason, 'InternalError');
    assert.match(r.body.message, /^Internal error occurred: error contacting webhook "policy.example.com"/);
    const review = await server.request('POST', '/apis/authorization.svc.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.svc.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: 'bob', resourceAttributes: { verb: 'list', resource: 'pods', namespace: 'default' } },
      },
    });
    assert.equal(review.status, 201);
    assert.equal(review.body.status.allowed, false);
    assert.equal(review.body.status.denied, true);
    assert.match(review.body.status.evaluationError, /error contacting webhook "policy.example.com"/);
  });
});

describe('AuthorizationConfiguration validation', () => {
  const parse = (authorizers: unknown[]): unknown =>
    parseAuthorizationConfig(config(authorizers), 'apiserver.config.svc.io');
  test('webhook fields and limits', () => {
    assert.throws(
      () =>
        parse([webhookEntry({ timeout: '45s', failurePolicy: undefined, subjectAccessReviewVersion: 'v2' })]),
      (e: Error) =>
        e.message.includes('authorizers[0].webhook.timeout: Invalid value: "45s": must be > 0s and <= 30s') &&
        e.message.includes('authorizers[0].webhook.failurePolicy: Required value') &&
        e.message.includes('authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: "v2"'),
    );
    const many = Array.from({ length: 65 }, (_, i) => ({ expression: `request.user != 'u${i}'` }));
    assert.throws(
      () => parse([webhookEntry({ matchConditions: many })]),
      /matchConditions: Too many: 65: must have at most 64 items/,
    );
    assert.throws(
      () => parse([webhookEntry({ matchConditions: [{ expression: 'request.user ==' }] })]),
      /matchConditions\[0\]\.expression: Invalid value: .*compilation failed/,
    );
    assert.throws(
      () =>
        parse([
          { type: 'RBAC', name: 'a' },
          { type: 'RBAC', name: 'b' },
        ]),
      /authorizers\[1\]\.type: Duplicate value: "RBAC"/,
    );
    assert.throws(
      () => parse([{ type: 'RBAC', name: 'a', webhook: {} }]),
      /non-null webhook config is only allowed for Webhook type/,
    );
    assert.throws(
      () => parse([{ type: 'ABAC', name: 'a' }]),
      /authorizers\[0\]\.type: Unsupported value: "ABAC"/,
    );
    const ok = parse([webhookEntry({ authorizedTTL: undefined, unauthorizedTTL: undefined })]) as any[];
    assert.equal(ok[0].webhook.authorizedTtlMs, 300_000);
    assert.equal(ok[0].webhook.unauthorizedTtlMs, 30_000);
  });
  test('reloads may reorder but not add or remove Node or RBAC', () => {
    const a = [
      { type: 'Node', name: 'n' },
      { type: 'RBAC', name: 'r' },
    ] as const;
    assert.equal(reloadRefusal(a, [a[1], a[0]]), undefined);
    assert.match(reloadRefusal(a, [a[0]]) ?? '', /removing a RBAC authorizer/);
    assert.match(reloadRefusal([a[1]], a) ?? '', /adding a Node authorizer/);
  });
});

describe('start errors', () => {
  const serve = (...flags: string[]) =>
    spawnSync(
      process.execPath,
      [
        join('dist', 'src', 'server', 'main.js'),
        'serve',
        '--secure-port',
        '0',
        '--data-dir',
        join(dir, 'never'),
        ...flags,
      ],
      {
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
  test('--authorization-config with --authorization-mode', () => {
    const r = serve('--authorization-config', join(dir, 'authz.yaml'), '--authorization-mode', 'RBAC');
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /--authorization-mode can not be specified when --authorization-config is specified/,
    );
  });
  test('a bad ABAC line and a bad configuration name the problem', async () => {
    await writeFile(
      join(dir, 'bad.jsonl'),
      '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"a"}}\n{oops\n',
    );
    const abac = serve('--authorization-mode', 'ABAC', '--authorization-policy-file', join(dir, 'bad.jsonl'));
    assert.equal(abac.status, 1);
    assert.match(abac.stderr, /bad.jsonl: line 2: not a JSON object/);
    await writeFile(
      join(dir, 'bad.yaml'),
      config([{ type: 'Webhook', name: 'w', webhook: { timeout: '1s' } }]),
    );
    const cfg = serve('--authorization-config', join(dir, 'bad.yaml'));
    assert.equal(cfg.status, 1);
    assert.match(cfg.stderr, /authorizers\[0\]\.webhook\.failurePolicy: Required value/);
  });
});
