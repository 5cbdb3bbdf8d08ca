/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves the API server end to end over HTTPS against a real server process: authentication, health, discovery,
// CRUD with Status errors, field validation, dry run, chunked lists and the resourceVersion rules, selectors,
// Table, negotiation, gzip, watches, finalizers, garbage collection, namespace lifecycle, cluster IPs, limits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request as httpsRequest } from 'node:https';
import { send, startTestServer, watch, type TestServer } from './harness.js';

let server: TestServer;
let tokenDir: string;

const cm = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(extra.metadata ?? {}) },
  data: { k: 'v' },
  ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'metadata')),
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 1000; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

before(async () => {
  tokenDir = await mkdtemp(join(tmpdir(), 'stoa-tokens-'));
  await writeFile(
    join(tokenDir, 'tokens.csv'),
    'bob-token,bob,1001,"dev,qa"\nroot-token,root,1,system:masters\n',
  );
  server = await startTestServer([
    '--token-auth-file',
    join(tokenDir, 'tokens.csv'),
    '--watch-cache-size',
    '50',
  ]);
});

after(async () => {
  await server?.stop();
  await rm(tokenDir, { recursive: true, force: true });
});

describe('authentication and authorization', () => {
  test('no credentials: system:anonymous is refused the API (403, as kube-apiserver), health is public', async () => {
    const r = await server.request('GET', '/api/v1/namespaces', { anonymous: true });
    assert.equal(r.status, 403);
    assert.equal(r.body.reason, 'Forbidden');
    assert.match(String(r.body.message), /User "system:anonymous" cannot list resource "namespaces"/);
    assert.equal((await server.request('GET', '/healthz', { anonymous: true })).status, 200);
  });
  test('tokens: unknown token 401, non-master 403, master allowed', async () => {
    const bad = await server.request('GET', '/api/v1/namespaces', {
      anonymous: true,
      headers: { authorization: 'Bearer nope' },
    });
    assert.equal(bad.status, 401);
    const bob = await server.request('GET', '/api/v1/namespaces/default/pods', {
      anonymous: true,
      headers: { authorization: 'Bearer bob-token' },
    });
    assert.equal(bob.status, 403);
    assert.equal(bob.body.reason, 'Forbidden');
    assert.equal(
      bob.body.message,
      'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"',
    );
    const root = await server.request('GET', '/api/v1/namespaces', {
      anonymous: true,
      headers: { authorization: 'Bearer root-token' },
    });
    assert.equal(root.status, 200);
  });
});

describe('client certificates', () => {
  test('a certificate from the cluster CA authenticates (CN user, O groups); one from another CA does not', async () => {
    const { createCertificateAuthority, issueCertificate } = await import('../../src/pki/index.js');
    const { readFile } = await import('node:fs/promises');
    const ca = {
      certPem: await readFile(join(server.dataDir, 'pki', 'ca.crt'), 'utf8'),
      keyPem: await readFile(join(server.dataDir, 'pki', 'ca.key'), 'utf8'),
    };
    const carol = await issueCertificate(ca, {
      commonName: 'carol',
      organizations: ['team'],
      usage: 'client',
    });
    const r = await send(
      server.url,
      { ca: server.admin.ca, cert: carol.certPem, key: carol.keyPem },
      'GET',
      '/api/v1/namespaces/default/configmaps',
    );
    assert.equal(r.status, 403);
    assert.match(r.body.message, /User "carol" cannot list resource "configmaps"/);
    const master = await issueCertificate(ca, {
      commonName: 'ops',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const ok = await send(
      server.url,
      { ca: server.admin.ca, cert: master.certPem, key: master.keyPem },
      'GET',
      '/api/v1/namespaces/default/configmaps',
    );
    assert.equal(ok.status, 200);
    const other = await createCertificateAuthority({ commonName: 'other' });
    const mallory = await issueCertificate(other, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const no = await send(
      server.url,
      { ca: server.admin.ca, cert: mallory.certPem, key: mallory.keyPem },
      'GET',
      '/api/v1/namespaces/default/configmaps',
    );
    assert.equal(no.status, 401);
  });
});

describe('health, version, metrics', () => {
  test('verbose, exclude and single checks', async () => {
    const v = await server.request('GET', '/readyz?verbose');
    assert.equal(v.status, 200);
    assert.match(v.text, /^\[\+\]ping ok$/m);
    assert.match(v.text, /^\[\+\]etcd ok$/m);
    assert.match(v.text, /^\[\+\]shutdown ok$/m);
    assert.match(v.text, /readyz check passed\n$/);
    const ex = await server.request('GET', '/livez?verbose&exclude=etcd');
    assert.match(ex.text, /^\[\+\]etcd excluded: ok$/m);
    assert.equal((await server.request('GET', '/livez')).text, 'ok');
    const one = await server.request('GET', '/livez/etcd');
    assert.equal(one.status, 200);
    assert.equal(one.text, 'ok');
    assert.equal((await server.request('GET', '/livez/nope')).status, 404);
  });
  test('version and metrics', async () => {
    const v = await server.request('GET', '/version');
    assert.equal(v.body.major, '1');
    assert.equal(v.body.minor, '32');
    await server.request('GET', '/api/v1/namespaces');
    const m = await server.request('GET', '/metrics');
    assert.match(
      m.text,
      /apiserver_request_total\{verb="LIST",group="",resource="namespaces",subresource="",code="200"\} \d+/,
    );
    assert.match(m.text, /apiserver_request_duration_seconds_bucket/);
    assert.match(m.text, /etcd_request_duration_seconds_bucket\{le="[^"]+",operation="range"\}/);
  });
});

describe('discovery and OpenAPI', () => {
  test('core, groups, resources', async () => {
    const api = await server.request('GET', '/api');
    assert.deepEqual(api.body.versions, ['v1']);
    const v1 = await server.request('GET', '/api/v1');
    const pods = v1.body.resources.find((r: any) => r.name === 'pods');
    assert.equal(pods.kind, 'Pod');
    assert.equal(pods.namespaced, true);
    assert.deepEqual(pods.shortNames, ['po']);
    assert.ok(v1.body.resources.some((r: any) => r.name === 'pods/status'));
    const apis = await server.request('GET', '/apis');
    const names = apis.body.groups.map((g: any) => g.name);
    assert.ok(
      names.includes('apps') && names.includes('coordination.svc.io') && names.includes('events.svc.io'),
    );
    const apps = await server.request('GET', '/apis/apps/v1');
    assert.equal(apps.body.resources[0].name, 'deployments');
    const agg = await server.request('GET', '/apis', {
      headers: {
        accept: 'application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList,application/json',
      },
    });
    assert.equal(agg.body.kind, 'APIGroupDiscoveryList');
    assert.equal((await server.request('GET', '/apis/nope.svc.io/v1')).status, 404);
  });
  test('OpenAPI v2 and v3 carry the kind schemas', async () => {
    const v2 = await server.request('GET', '/openapi/v2');
    assert.ok(v2.body.definitions['io.svc.api.apps.v1.Deployment'].properties.spec);
    const index = await server.request('GET', '/openapi/v3');
    const url = index.body.paths['apis/apps/v1'].serverRelativeURL;
    const doc = await server.request('GET', url);
    assert.deepEqual(
      doc.body.components.schemas['io.svc.api.apps.v1.Deployment']['x-kubernetes-group-version-kind'],
      [{ group: 'apps', kind: 'Deployment', version: 'v1' }],
    );
  });
});

describe('CRUD and errors', () => {
  test('create, get, conflict on stale update, merge patch, delete, not found', async () => {
    const created = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('crud'),
    });
    assert.equal(created.status, 201);
    assert.match(created.body.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(created.body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const rv1 = created.body.metadata.resourceVersion;
    const again = await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('crud') });
    assert.equal(again.status, 409);
    assert.equal(again.body.reason, 'AlreadyExists');
    assert.equal(again.body.message, 'configmaps "crud" already exists');
    // As kube-apiserver writes it: the core group's empty name is left out.
    assert.deepEqual(again.body.details, { name: 'crud', kind: 'configmaps' });
    const updated = await server.request('PUT', '/api/v1/namespaces/default/configmaps/crud', {
      body: { ...created.body, data: { k: 'v2' } },
    });
    assert.equal(updated.status, 200);
    assert.ok(Number(updated.body.metadata.resourceVersion) > Number(rv1));
    const stale = await server.request('PUT', '/api/v1/namespaces/default/configmaps/crud', {
      body: { ...created.body, data: { k: 'v3' } },
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, 'Conflict');
    assert.match(
      stale.body.message,
      /the object has been modified; please apply your changes to the latest version and try again/,
    );
    const patched = await server.request('PATCH', '/api/v1/namespaces/default/configmaps/crud', {
      body: { data: { extra: 'x', k: null } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body.data, { extra: 'x' });
    const got = await server.request('GET', '/api/v1/namespaces/default/configmaps/crud');
    assert.deepEqual(got.body.data, { extra: 'x' });
    const deleted = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/crud');
    assert.equal(deleted.status, 200);
    const gone = await server.request('GET', '/api/v1/namespaces/default/configmaps/crud');
    assert.equal(gone.status, 404);
    assert.deepEqual(
      {
        kind: gone.body.kind,
        status: gone.body.status,
        reason: gone.body.reason,
        code: gone.body.code,
        message: gone.body.message,
      },
      {
        kind: 'Status',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: 'configmaps "crud" not found',
      },
    );
  });
  test('generateName, validation (422 with causes), create in a missing namespace', async () => {
    const g = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { metadata: { generateName: 'gen-' } },
    });
    assert.equal(g.status, 201);
    assert.match(g.body.metadata.name, /^gen-[a-z0-9]{5}$/);
    const bad = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('Bad_Name'),
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.reason, 'Invalid');
    assert.equal(bad.body.details.causes[0].field, 'metadata.name');
    const dep = await server.request('POST', '/apis/apps/v1/namespaces/default/deployments', {
      body: { metadata: { name: 'd' }, spec: { replicas: 'x' } },
    });
    assert.equal(dep.status, 422);
    const fields = dep.body.details.causes.map((c: any) => c.field).sort();
    assert.deepEqual(fields, ['spec.replicas', 'spec.selector', 'spec.template']);
    assert.equal((await server.request('POST', '/api/v1/configmaps', { body: cm('x') })).status, 405);
    const missing = await server.request('POST', '/api/v1/namespaces/nowhere/configmaps', { body: cm('x') });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'namespaces "nowhere" not found');
  });
  test('field validation: Warn headers, Strict 400 listing all, Ignore silent; duplicate JSON keys', async () => {
    const body =
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv1","name":"fv1"},"data":{},"bogus":1,"other":2}';
    const warn = await server.request('POST', '/api/v1/namespaces/default/configmaps', { rawBody: body });
    assert.equal(warn.status, 201);
    const warnings = String(warn.headers.warning)
      .split(/,(?= ?299)/)
      .map((s) => s.trim());
    assert.deepEqual(warnings.sort(), [
      '299 - "duplicate field \\"metadata.name\\""',
      '299 - "unknown field \\"bogus\\""',
      '299 - "unknown field \\"other\\""',
    ]);
    assert.equal(warn.body.bogus, undefined);
    const strict = await server.request(
      'POST',
      '/api/v1/namespaces/default/configmaps?fieldValidation=Strict',
      { rawBody: body.replace(/fv1/g, 'fv2') },
    );
    assert.equal(strict.status, 400);
    assert.equal(
      strict.body.message,
      'strict decoding error: unknown field "bogus", unknown field "other", duplicate field "metadata.name"',
    );
    const ignore = await server.request(
      'POST',
      '/api/v1/namespaces/default/configmaps?fieldValidation=Ignore',
      { rawBody: body.replace(/fv1/g, 'fv3') },
    );
    assert.equal(ignore.status, 201);
    assert.equal(ignore.headers.warning, undefined);
  });
  test('dryRun=All runs everything but the write', async () => {
    const dry = await server.request('POST', '/api/v1/namespaces/default/configmaps?dryRun=All', {
      body: cm('dry'),
    });
    assert.equal(dry.status, 201);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/dry')).status, 404);
    await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('dry2') });
    assert.equal(
      (await server.request('DELETE', '/api/v1/namespaces/default/configmaps/dry2?dryRun=All')).status,
      200,
    );
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/dry2')).status, 200);
    const p = await server.request('PATCH', '/api/v1/namespaces/default/configmaps/dry2?dryRun=All', {
      body: { data: { k: 'changed' } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(p.body.data.k, 'changed');
    assert.equal(
      (await server.request('GET', '/api/v1/namespaces/default/configmaps/dry2')).body.data.k,
      'v',
    );
  });
  test('delete preconditions', async () => {
    const c = await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('pre') });
    const wrong = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/pre', {
      body: { preconditions: { uid: 'x' } },
    });
    assert.equal(wrong.status, 409);
    assert.match(wrong.body.message, /Precondition failed: UID in precondition: x/);
    const ok = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/pre', {
      body: { preconditions: { uid: c.body.metadata.uid, resourceVersion: c.body.metadata.resourceVersion } },
    });
    assert.equal(ok.status, 200);
  });
  test('413 for a body over 3 MiB, 415 for an unknown content type, 406 for an unacceptable Accept', async () => {
    const big = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      rawBody: 'x'.repeat(3 * 1024 * 1024 + 1),
    });
    assert.equal(big.status, 413);
    // Under the body limit but over the store's value limit (1.5 MiB): also 413.
    const stored = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('huge', { data: { k: 'x'.repeat(2 * 1024 * 1024) } }),
    });
    assert.equal(stored.status, 413);
    assert.equal(stored.body.reason, 'RequestEntityTooLarge');
    const bad = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      rawBody: 'a',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(bad.status, 415);
    const na = await server.request('GET', '/api/v1/namespaces', { headers: { accept: 'text/html' } });
    assert.equal(na.status, 406);
    assert.equal(na.body.reason, 'NotAcceptable');
  });
  test('YAML in and out', async () => {
    const r = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      rawBody: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: b\n',
      headers: { 'content-type': 'application/yaml', accept: 'application/yaml' },
    });
    assert.equal(r.status, 201);
    assert.equal(r.headers['content-type'], 'application/yaml');
    assert.match(r.text, /^ {2}name: yml$/m);
  });
});

describe('lists', () => {
  test('chunks: constant resourceVersion, remainingItemCount, continue, selectors omit the count', async () => {
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'chunks' } } });
    for (let i = 0; i < 5; i++) {
      await server.request('POST', '/api/v1/namespaces/chunks/configmaps', {
        body: cm(`c${i}`, { metadata: { labels: { parity: i % 2 === 0 ? 'even' : 'odd' } } }),
      });
    }
    const first = await server.request('GET', '/api/v1/namespaces/chunks/configmaps?limit=2');
    assert.equal(first.body.kind, 'ConfigMapList');
    assert.deepEqual(
      first.body.items.map((i: any) => i.metadata.name),
      ['c0', 'c1'],
    );
    assert.equal(first.body.metadata.remainingItemCount, 3);
    const rv = first.body.metadata.resourceVersion;
    await server.request('POST', '/api/v1/namespaces/chunks/configmaps', { body: cm('c5') });
    const second = await server.request(
      'GET',
      `/api/v1/namespaces/chunks/configmaps?limit=2&continue=${first.body.metadata.continue}`,
    );
    assert.equal(second.body.metadata.resourceVersion, rv);
    assert.deepEqual(
      second.body.items.map((i: any) => i.metadata.name),
      ['c2', 'c3'],
    );
    const third = await server.request(
      'GET',
      `/api/v1/namespaces/chunks/configmaps?limit=2&continue=${second.body.metadata.continue}`,
    );
    assert.deepEqual(
      third.body.items.map((i: any) => i.metadata.name),
      ['c4'],
    );
    assert.equal(third.body.metadata.continue, undefined);
    assert.equal(third.body.metadata.remainingItemCount, undefined);
    const sel = await server.request(
      'GET',
      '/api/v1/namespaces/chunks/configmaps?limit=1&labelSelector=parity%3Deven',
    );
    assert.deepEqual(
      sel.body.items.map((i: any) => i.metadata.name),
      ['c0'],
    );
    assert.equal(sel.body.metadata.remainingItemCount, undefined);
    assert.ok(sel.body.metadata.continue);
    const exact = await server.request(
      'GET',
      `/api/v1/namespaces/chunks/configmaps?resourceVersion=${rv}&resourceVersionMatch=Exact`,
    );
    assert.equal(exact.body.metadata.resourceVersion, rv);
    assert.equal(exact.body.items.length, 5);
  });
  test('the 400 cases of the resourceVersion table', async () => {
    const first = await server.request('GET', '/api/v1/namespaces/chunks/configmaps?limit=1');
    const withRv = await server.request(
      'GET',
      `/api/v1/namespaces/chunks/configmaps?limit=1&resourceVersion=5&continue=${first.body.metadata.continue}`,
    );
    assert.equal(withRv.status, 400);
    const zero = await server.request(
      'GET',
      `/api/v1/namespaces/chunks/configmaps?limit=1&resourceVersion=0&continue=${first.body.metadata.continue}`,
    );
    assert.equal(zero.status, 200);
    assert.equal(zero.body.metadata.resourceVersion, first.body.metadata.resourceVersion);
    assert.equal(
      (await server.request('GET', '/api/v1/configmaps?resourceVersionMatch=NotOlderThan')).status,
      400,
    );
    assert.equal(
      (await server.request('GET', '/api/v1/configmaps?resourceVersionMatch=Exact&resourceVersion=0')).status,
      400,
    );
    assert.equal((await server.request('GET', '/api/v1/configmaps?continue=garbage')).status, 400);
  });
  test('the other cells of the resourceVersion table: get and list with 0, N, NotOlderThan, Exact with a limit', async () => {
    const base = '/api/v1/namespaces/chunks/configmaps';
    const now = await server.request('GET', base);
    const rv = Number(now.body.metadata.resourceVersion);
    assert.equal((await server.request('GET', `${base}/c0?resourceVersion=0`)).status, 200);
    assert.equal((await server.request('GET', `${base}/c0?resourceVersion=${rv}`)).status, 200);
    const any = await server.request('GET', `${base}?resourceVersion=0`);
    assert.ok(Number(any.body.metadata.resourceVersion) >= rv);
    // rv=0 with a limit is served from the cache, which (as kube-apiserver's) ignores the limit.
    assert.equal((await server.request('GET', `${base}?resourceVersion=0&limit=2`)).body.items.length, 6);
    const notOlder = await server.request('GET', `${base}?resourceVersion=${rv}`);
    assert.ok(Number(notOlder.body.metadata.resourceVersion) >= rv);
    const notOlderMatch = await server.request(
      'GET',
      `${base}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan&limit=2`,
    );
    assert.equal(notOlderMatch.status, 200);
    assert.equal(
      (await server.request('GET', `${base}?resourceVersion=0&resourceVersionMatch=NotOlderThan`)).status,
      200,
    );
    // A non-zero version with a limit is exact: later writes are not in it.
    const older = rv - 1;
    const exactLimit = await server.request('GET', `${base}?resourceVersion=${older}&limit=2`);
    assert.equal(exactLimit.body.metadata.resourceVersion, String(older));
    const exactMatch = await server.request(
      'GET',
      `${base}?resourceVersion=${older}&resourceVersionMatch=Exact&limit=100`,
    );
    assert.equal(exactMatch.body.metadata.resourceVersion, String(older));
    assert.equal(exactMatch.body.items.length, 5);
    assert.equal((await server.request('GET', `${base}?resourceVersionMatch=Exact`)).status, 400);
    assert.equal((await server.request('GET', `${base}?resourceVersion=x`)).status, 400);
  });
  test('label selectors and field selectors, across namespaces', async () => {
    const odd = await server.request('GET', '/api/v1/configmaps?labelSelector=parity%20in%20(odd)');
    assert.deepEqual(odd.body.items.map((i: any) => i.metadata.name).sort(), ['c1', 'c3']);
    const notEven = await server.request(
      'GET',
      '/api/v1/namespaces/chunks/configmaps?labelSelector=parity!%3Deven',
    );
    assert.deepEqual(notEven.body.items.map((i: any) => i.metadata.name).sort(), ['c1', 'c3', 'c5']);
    const noLabel = await server.request('GET', '/api/v1/namespaces/chunks/configmaps?labelSelector=!parity');
    assert.deepEqual(
      noLabel.body.items.map((i: any) => i.metadata.name),
      ['c5'],
    );
    const byName = await server.request(
      'GET',
      '/api/v1/configmaps?fieldSelector=metadata.name%3Dc2,metadata.namespace%3Dchunks',
    );
    assert.deepEqual(
      byName.body.items.map((i: any) => i.metadata.name),
      ['c2'],
    );
    const badField = await server.request('GET', '/api/v1/configmaps?fieldSelector=spec.x%3D1');
    assert.equal(badField.status, 400);
    assert.equal(badField.body.message, 'field label not supported: spec.x');
  });
  test('a future resourceVersion waits, then 504 Too large resource version with Retry-After', async () => {
    const r = await server.request('GET', '/api/v1/configmaps?resourceVersion=99999999');
    assert.equal(r.status, 504);
    assert.equal(r.body.reason, 'Timeout');
    assert.match(r.body.message, /^Too large resource version: 99999999, current: \d+$/);
    assert.equal(r.headers['retry-after'], '1');
  });
  test('Table output with per-kind columns and the default table; gzip when asked', async () => {
    const t = await server.request('GET', '/api/v1/namespaces?includeObject=None', {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.svc.io, application/json' },
    });
    assert.equal(t.body.kind, 'Table');
    assert.equal(t.body.apiVersion, 'meta.svc.io/v1');
    assert.deepEqual(
      t.body.columnDefinitions.map((c: any) => c.name),
      ['Name', 'Status', 'Age'],
    );
    assert.ok(t.body.rows.some((r: any) => r.cells[0] === 'default' && r.cells[1] === 'Active'));
    const lease = await server.request('POST', '/apis/coordination.svc.io/v1/namespaces/default/leases', {
      body: { metadata: { name: 'l' }, spec: { holderIdentity: 'me' } },
    });
    assert.equal(lease.status, 201);
    const ev = await server.request('POST', '/apis/events.svc.io/v1/namespaces/default/events', {
      body: {
        metadata: { name: 'e' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'c',
        reportingInstance: 'i',
        action: 'a',
        reason: 'r',
        type: 'Normal',
        note: 'hello',
        regarding: { kind: 'Pod', name: 'p', namespace: 'default' },
      },
    });
    assert.equal(ev.status, 201);
    // One stored object, two views: the core/v1 view renames regarding → involvedObject, note → message.
    const core = await server.request('GET', '/api/v1/namespaces/default/events/e');
    assert.equal(core.status, 200);
    assert.equal(core.body.apiVersion, 'v1');
    assert.equal(core.body.message, 'hello');
    assert.equal(core.body.involvedObject.kind, 'Pod');
    assert.equal(core.body.note, undefined);
    assert.equal(core.body.reportingComponent, 'c');
    const d = await server.request('GET', '/apis/events.svc.io/v1/namespaces/default/events', {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.svc.io' },
    });
    assert.deepEqual(
      d.body.columnDefinitions.map((c: any) => [c.name, c.type]),
      [
        ['Name', 'string'],
        ['Created At', 'date'],
      ],
    );
    const meta = await server.request('GET', '/api/v1/namespaces', {
      headers: {
        accept: 'application/json;as=PartialObjectMetadataList;g=meta.svc.io;v=v1,application/json',
      },
    });
    assert.equal(meta.body.kind, 'PartialObjectMetadataList');
    assert.equal(meta.body.items[0].kind, 'PartialObjectMetadata');
    assert.equal(meta.body.items[0].spec, undefined);
    assert.ok(meta.body.items[0].metadata.uid);
    const gz = await new Promise<{ encoding: string | undefined; body: any }>((resolve, reject) => {
      const req = httpsRequest(
        `${server.url}/api/v1/namespaces`,
        {
          ca: server.admin.ca,
          cert: server.admin.cert,
          key: server.admin.key,
          headers: { 'accept-encoding': 'gzip' },
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              encoding: res.headers['content-encoding'],
              body: JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(gz.encoding, 'gzip');
    assert.equal(gz.body.kind, 'NamespaceList');
  });
});

describe('watches', () => {
  test('ADDED, MODIFIED, DELETED from a resourceVersion, with selector transitions', async () => {
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'w1' } } });
    const list = await server.request('GET', '/api/v1/namespaces/w1/configmaps');
    const w = watch(
      server,
      `/api/v1/namespaces/w1/configmaps?watch=1&resourceVersion=${list.body.metadata.resourceVersion}&labelSelector=a%3D1`,
    );
    try {
      assert.equal(await w.status, 200);
      await server.request('POST', '/api/v1/namespaces/w1/configmaps', {
        body: cm('x', { metadata: { labels: { a: '1' } } }),
      });
      await server.request('POST', '/api/v1/namespaces/w1/configmaps', { body: cm('other') });
      await server.request('PATCH', '/api/v1/namespaces/w1/configmaps/x', {
        body: { data: { k: '2' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      await server.request('PATCH', '/api/v1/namespaces/w1/configmaps/x', {
        body: { metadata: { labels: { a: '2' } } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      const events = [await w.next(), await w.next(), await w.next()];
      assert.deepEqual(
        events.map((e) => [e.type, e.object.metadata.name]),
        [
          ['ADDED', 'x'],
          ['MODIFIED', 'x'],
          ['DELETED', 'x'],
        ],
      );
      assert.equal(events[1].object.data.k, '2');
    } finally {
      w.close();
    }
  });
  test('watch start semantics: unset gives the state first, a non-zero version gives only later changes', async () => {
    const unset = watch(
      server,
      '/api/v1/namespaces/chunks/configmaps?watch=1&fieldSelector=metadata.name%3Dc1',
    );
    try {
      const first = await unset.next();
      assert.deepEqual([first.type, first.object.metadata.name], ['ADDED', 'c1']);
      const fromNow = watch(
        server,
        `/api/v1/namespaces/chunks/configmaps?watch=1&resourceVersion=${first.object.metadata.resourceVersion}&fieldSelector=metadata.name%3Dc1`,
      );
      try {
        await server.request('PATCH', '/api/v1/namespaces/chunks/configmaps/c1', {
          body: { data: { k: 'w' } },
          headers: { 'content-type': 'application/merge-patch+json' },
        });
        assert.equal((await fromNow.next()).type, 'MODIFIED');
        assert.equal((await unset.next()).type, 'MODIFIED');
      } finally {
        fromNow.close();
      }
    } finally {
      unset.close();
    }
  });
  test('a named object: ?watch=1 is a plain get (as kube-apiserver); the deprecated /watch/ prefix watches it', async () => {
    const got = await server.request('GET', '/api/v1/namespaces/chunks/configmaps/c1?watch=1');
    assert.equal(got.status, 200);
    assert.deepEqual([got.body.kind, got.body.metadata.name], ['ConfigMap', 'c1']);
    const legacy = watch(server, '/api/v1/watch/namespaces/chunks/configmaps/c1');
    try {
      const first = await legacy.next();
      assert.deepEqual([first.type, first.object.metadata.name], ['ADDED', 'c1']);
      await server.request('PATCH', '/api/v1/namespaces/chunks/configmaps/c2', {
        body: { data: { k: 'other' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      await server.request('PATCH', '/api/v1/namespaces/chunks/configmaps/c1', {
        body: { data: { k: 'legacy' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      const next = await legacy.next();
      assert.deepEqual(
        [next.type, next.object.metadata.name, next.object.data.k],
        ['MODIFIED', 'c1', 'legacy'],
      );
    } finally {
      legacy.close();
    }
    const sub = await server.request('GET', '/api/v1/watch/namespaces/chunks/configmaps/c1/status');
    assert.equal(sub.status, 404);
  });

  test('watch parameter errors: 400 for sendInitialEvents without NotOlderThan; 504 for a future version', async () => {
    const bad = await server.request('GET', '/api/v1/configmaps?watch=1&sendInitialEvents=true');
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /sendInitialEvents requires setting resourceVersionMatch to NotOlderThan/);
    const match = await server.request(
      'GET',
      '/api/v1/configmaps?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan',
    );
    assert.equal(match.status, 400);
    const future = await server.request('GET', '/api/v1/configmaps?watch=1&resourceVersion=99999999');
    assert.equal(future.status, 504);
    assert.match(future.body.message, /^Too large resource version/);
    assert.equal(future.headers['retry-after'], '1');
  });
  test('sendInitialEvents: ADDED for existing objects, then the annotated BOOKMARK', async () => {
    const w = watch(
      server,
      '/api/v1/namespaces/chunks/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
    );
    try {
      const names: string[] = [];
      for (let i = 0; i < 6; i++) {
        const e = await w.next();
        assert.equal(e.type, 'ADDED');
        names.push(e.object.metadata.name);
      }
      assert.deepEqual(names, ['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);
      const b = await w.next();
      assert.equal(b.type, 'BOOKMARK');
      assert.deepEqual(b.object.metadata.annotations, { 'svc.io/initial-events-end': 'true' });
      assert.ok(Number(b.object.metadata.resourceVersion) > 0);
      assert.deepEqual(Object.keys(b.object).sort(), ['apiVersion', 'kind', 'metadata']);
    } finally {
      w.close();
    }
  });
  test('below the watch window: an ERROR event with 410 Expired; timeoutSeconds ends the stream with a bookmark', async () => {
    // The window keeps 50 events (--watch-cache-size 50): write more than that, then ask for the beginning.
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'w2' } } });
    const start = await server.request('GET', '/api/v1/namespaces/w2/configmaps');
    for (let i = 0; i < 60; i++)
      await server.request('POST', '/api/v1/namespaces/w2/configmaps', { body: cm(`n${i}`) });
    const old = watch(
      server,
      `/api/v1/namespaces/w2/configmaps?watch=1&resourceVersion=${start.body.metadata.resourceVersion}`,
    );
    const e = await old.next();
    assert.equal(e.type, 'ERROR');
    assert.equal(e.object.code, 410);
    assert.equal(e.object.reason, 'Expired');
    assert.match(e.object.message, /^too old resource version: \d+ \(\d+\)$/);
    await old.ended;
    const timed = watch(
      server,
      '/api/v1/namespaces/w2/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dn0',
    );
    assert.equal((await timed.next()).type, 'ADDED');
    assert.equal((await timed.next()).type, 'BOOKMARK');
    await timed.ended;
  });
});

describe('deletion', () => {
  test('finalizers: 200 with deletionTimestamp (202 when orphanDependents=false), removed when the last finalizer goes', async () => {
    await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('fin', { metadata: { finalizers: ['example.com/hold'] } }),
    });
    const d = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/fin');
    assert.equal(d.status, 200);
    assert.ok(d.body.metadata.deletionTimestamp);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/fin')).status, 200);
    await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: cm('fin2', { metadata: { finalizers: ['example.com/hold'] } }),
    });
    const accepted = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/fin2', {
      body: { orphanDependents: false },
    });
    assert.equal(accepted.status, 202);
    await server.request('PATCH', '/api/v1/namespaces/default/configmaps/fin2', {
      body: { metadata: { finalizers: null } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    const p = await server.request('PATCH', '/api/v1/namespaces/default/configmaps/fin', {
      body: { metadata: { finalizers: null } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(p.status, 200);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/fin')).status, 404);
  });
  test('garbage collection: Background deletes dependents, Orphan keeps them without the reference, Foreground deletes them first', async () => {
    const owner = async (name: string): Promise<any> =>
      (await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm(name) })).body;
    const dependent = async (name: string, o: any): Promise<void> => {
      const r = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: cm(name, {
          metadata: {
            ownerReferences: [
              { apiVersion: 'v1', kind: 'ConfigMap', name: o.metadata.name, uid: o.metadata.uid },
            ],
          },
        }),
      });
      assert.equal(r.status, 201);
    };
    const bg = await owner('owner-bg');
    await dependent('dep-bg', bg);
    await server.request('DELETE', '/api/v1/namespaces/default/configmaps/owner-bg');
    await until('dep-bg deleted', async () =>
      (await server.request('GET', '/api/v1/namespaces/default/configmaps/dep-bg')).status === 404
        ? true
        : undefined,
    );
    const or = await owner('owner-or');
    await dependent('dep-or', or);
    await server.request('DELETE', '/api/v1/namespaces/default/configmaps/owner-or?propagationPolicy=Orphan');
    await until('owner-or deleted', async () =>
      (await server.request('GET', '/api/v1/namespaces/default/configmaps/owner-or')).status === 404
        ? true
        : undefined,
    );
    const kept = await server.request('GET', '/api/v1/namespaces/default/configmaps/dep-or');
    assert.equal(kept.status, 200);
    assert.equal(kept.body.metadata.ownerReferences, undefined);
    const fg = await owner('owner-fg');
    await dependent('dep-fg', fg);
    const d = await server.request('DELETE', '/api/v1/namespaces/default/configmaps/owner-fg', {
      body: { propagationPolicy: 'Foreground' },
    });
    assert.equal(d.status, 200);
    assert.deepEqual(d.body.metadata.finalizers, ['foregroundDeletion']);
    await until('owner-fg deleted', async () =>
      (await server.request('GET', '/api/v1/namespaces/default/configmaps/owner-fg')).status === 404
        ? true
        : undefined,
    );
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/configmaps/dep-fg')).status, 404);
  });
  test('namespace lifecycle: Terminating, creates refused, contents deleted, then removed', async () => {
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'doomed' } } });
    await server.request('POST', '/api/v1/namespaces/doomed/configmaps', {
      body: cm('a', { metadata: { finalizers: ['example.com/slow'] } }),
    });
    const d = await server.request('DELETE', '/api/v1/namespaces/doomed');
    assert.equal(d.status, 200);
    assert.equal(d.body.status.phase, 'Terminating');
    const refused = await server.request('POST', '/api/v1/namespaces/doomed/configmaps', { body: cm('b') });
    assert.equal(refused.status, 403);
    assert.equal(
      refused.body.message,
      'configmaps "b" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    assert.equal(refused.body.details.causes[0].reason, 'NamespaceTerminating');
    await until('cm a marked for deletion', async () =>
      (await server.request('GET', '/api/v1/namespaces/doomed/configmaps/a')).body.metadata?.deletionTimestamp
        ? true
        : undefined,
    );
    assert.equal((await server.request('GET', '/api/v1/namespaces/doomed')).status, 200);
    await server.request('PATCH', '/api/v1/namespaces/doomed/configmaps/a', {
      body: { metadata: { finalizers: null } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    await until('namespace removed', async () =>
      (await server.request('GET', '/api/v1/namespaces/doomed')).status === 404 ? true : undefined,
    );
  });
  test('deletecollection with a label selector deletes only what it selects', async () => {
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'dc' } } });
    for (const [name, tier] of [
      ['a', 'x'],
      ['b', 'x'],
      ['c', 'y'],
    ] as const) {
      await server.request('POST', '/api/v1/namespaces/dc/configmaps', {
        body: cm(name, { metadata: { labels: { tier } } }),
      });
    }
    const r = await server.request('DELETE', '/api/v1/namespaces/dc/configmaps?labelSelector=tier%3Dx');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'Success');
    const left = await server.request('GET', '/api/v1/namespaces/dc/configmaps');
    assert.deepEqual(
      left.body.items.map((i: any) => i.metadata.name),
      ['c'],
    );
  });
  test('default namespaces exist', async () => {
    const r = await server.request('GET', '/api/v1/namespaces');
    const names = r.body.items.map((i: any) => i.metadata.name);
    for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      assert.ok(names.includes(n), n);
    const ns = r.body.items.find((i: any) => i.metadata.name === 'kube-system');
    assert.equal(ns.metadata.labels['svc.io/metadata.name'], 'kube-system');
    const k = await server.request('GET', '/api/v1/namespaces/default/services/kubernetes');
    assert.equal(k.body.spec.clusterIP, '10.0.0.1');
    assert.equal(k.body.spec.ports[0].targetPort, server.port);
  });
});

describe('kinds', () => {
  test('services get distinct cluster IPs from the range; a taken IP is refused; delete releases it', async () => {
    const svc = (name: string, clusterIP?: string): unknown => ({
      metadata: { name },
      spec: { ports: [{ port: 80 }], ...(clusterIP === undefined ? {} : { clusterIP }) },
    });
    const a = await server.request('POST', '/api/v1/namespaces/default/services', { body: svc('a') });
    const b = await server.request('POST', '/api/v1/namespaces/default/services', { body: svc('b') });
    assert.equal(a.status, 201);
    assert.match(a.body.spec.clusterIP, /^10\.0\.0\.\d+$/);
    assert.notEqual(a.body.spec.clusterIP, b.body.spec.clusterIP);
    assert.equal(a.body.spec.ports[0].targetPort, 80);
    const taken = await server.request('POST', '/api/v1/namespaces/default/services', {
      body: svc('c', a.body.spec.clusterIP),
    });
    assert.equal(taken.status, 422);
    assert.match(taken.body.message, /provided IP is already allocated/);
    const outside = await server.request('POST', '/api/v1/namespaces/default/services', {
      body: svc('d', '192.168.0.1'),
    });
    assert.equal(outside.status, 422);
    await server.request('DELETE', '/api/v1/namespaces/default/services/a');
    const reuse = await server.request('POST', '/api/v1/namespaces/default/services', {
      body: svc('c', a.body.spec.clusterIP),
    });
    assert.equal(reuse.status, 201);
  });
  test('pods: status sub-resource, field selectors on status.phase and spec.nodeName', async () => {
    const pod = {
      metadata: { name: 'p' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] },
    };
    const created = await server.request('POST', '/api/v1/namespaces/default/pods', { body: pod });
    assert.equal(created.status, 201);
    assert.equal(created.body.status.phase, 'Pending');
    assert.equal(created.body.spec.containers[0].imagePullPolicy, 'Always');
    const st = await server.request('PUT', '/api/v1/namespaces/default/pods/p/status', {
      body: {
        ...created.body,
        status: { phase: 'Running' },
        spec: { ...created.body.spec, nodeName: 'ignored' },
      },
    });
    assert.equal(st.status, 200);
    assert.equal(st.body.status.phase, 'Running');
    assert.equal(st.body.spec.nodeName, 'n1');
    const main = await server.request('PATCH', '/api/v1/namespaces/default/pods/p', {
      body: { status: { phase: 'Failed' } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(main.body.status.phase, 'Running');
    const running = await server.request(
      'GET',
      '/api/v1/pods?fieldSelector=status.phase%3DRunning,spec.nodeName%3Dn1',
    );
    assert.deepEqual(
      running.body.items.map((i: any) => i.metadata.name),
      ['p'],
    );
  });
  test("status writes keep what kube's status strategies keep: the spec (and per kind some metadata) from before, the request's other metadata", async () => {
    const created = await server.request('POST', '/api/v1/namespaces/default/pods', {
      body: {
        metadata: { name: 'st', labels: { a: '1' } },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
    });
    assert.equal(created.status, 201);
    const owner = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'o',
      uid: '00000000-0000-0000-0000-000000000001',
    };
    const st = await server.request('PUT', '/api/v1/namespaces/default/pods/st/status?fieldManager=kubelet', {
      body: {
        ...created.body,
        metadata: {
          ...created.body.metadata,
          labels: { a: '2', b: 'new' },
          annotations: { note: 'from status' },
          ownerReferences: [owner],
        },
        spec: { ...created.body.spec, nodeName: 'ignored' },
        status: { phase: 'Running' },
      },
    });
    assert.equal(st.status, 200, JSON.stringify(st.body));
    assert.deepEqual(st.body.metadata.labels, { a: '2', b: 'new' });
    assert.deepEqual(st.body.metadata.annotations, { note: 'from status' });
    assert.equal(st.body.metadata.ownerReferences, undefined, 'owner references are reset');
    assert.equal(st.body.spec.nodeName, undefined, 'the spec is reset');
    assert.equal(st.body.status.phase, 'Running');
    assert.equal(st.body.status.qosClass, 'BestEffort', 'the QoS class is kept when left out');
    const entry = (st.body.metadata.managedFields as any[]).find((e) => e.manager === 'kubelet');
    assert.equal(entry.subresource, 'status');
    assert.deepEqual(Object.keys(entry.fieldsV1).sort(), ['f:metadata', 'f:status']);
    assert.ok('f:b' in entry.fieldsV1['f:metadata']['f:labels']);
    assert.ok('f:note' in entry.fieldsV1['f:metadata']['f:annotations']);

    const deployment = await server.request('POST', '/apis/apps/v1/namespaces/default/deployments', {
      body: {
        metadata: { name: 'st', labels: { app: 'st' } },
        spec: {
          selector: { matchLabels: { app: 'st' } },
          template: {
            metadata: { labels: { app: 'st' } },
            spec: { containers: [{ name: 'c', image: 'busybox' }] },
          },
        },
      },
    });
    assert.equal(deployment.status, 201);
    const dst = await server.request('PUT', '/apis/apps/v1/namespaces/default/deployments/st/status', {
      body: {
        ...deployment.body,
        metadata: { ...deployment.body.metadata, labels: { app: 'changed' }, annotations: { seen: 'yes' } },
        spec: { ...deployment.body.spec, replicas: 7 },
        status: { observedGeneration: 1, replicas: 0 },
      },
    });
    assert.equal(dst.status, 200, JSON.stringify(dst.body));
    assert.deepEqual(dst.body.metadata.labels, { app: 'st' }, "a Deployment's status write keeps its labels");
    assert.deepEqual(dst.body.metadata.annotations, { seen: 'yes' });
    assert.equal(dst.body.spec.replicas, 1);
    assert.equal(dst.body.metadata.generation, 1);
    assert.equal(dst.body.status.observedGeneration, 1);
  });
  test('pods: graceful deletion when bound to a node, immediate with gracePeriodSeconds=0; eviction', async () => {
    const pod = (name: string, nodeName?: string): unknown => ({
      metadata: { name },
      spec: {
        ...(nodeName === undefined ? {} : { nodeName }),
        terminationGracePeriodSeconds: 45,
        containers: [{ name: 'c', image: 'busybox:1' }],
      },
    });
    await server.request('POST', '/api/v1/namespaces/default/pods', { body: pod('bound', 'n1') });
    const first = await server.request('DELETE', '/api/v1/namespaces/default/pods/bound');
    assert.equal(first.status, 200);
    assert.equal(first.body.metadata.deletionGracePeriodSeconds, 45);
    assert.ok(Date.parse(first.body.metadata.deletionTimestamp) > Date.now() + 30_000);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/pods/bound')).status, 200);
    const now = await server.request('DELETE', '/api/v1/namespaces/default/pods/bound?gracePeriodSeconds=0');
    assert.equal(now.status, 200);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/pods/bound')).status, 404);
    await server.request('POST', '/api/v1/namespaces/default/pods', { body: pod('unbound') });
    assert.equal((await server.request('DELETE', '/api/v1/namespaces/default/pods/unbound')).status, 200);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/pods/unbound')).status, 404);
    await server.request('POST', '/api/v1/namespaces/default/pods', { body: pod('evicted') });
    const ev = await server.request('POST', '/api/v1/namespaces/default/pods/evicted/eviction', {
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'evicted', namespace: 'default' },
      },
    });
    assert.equal(ev.status, 201);
    assert.equal(ev.body.status, 'Success');
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/pods/evicted')).status, 404);
    const v1 = await server.request('GET', '/api/v1');
    assert.ok(
      v1.body.resources.some(
        (r: any) => r.name === 'pods/eviction' && r.kind === 'Eviction' && r.group === 'policy',
      ),
    );
  });
  test('metadata.generation: deployments count spec changes; kinds without spec tracking have none', async () => {
    const dep = {
      metadata: { name: 'gen' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    };
    const created = await server.request('POST', '/apis/apps/v1/namespaces/default/deployments', {
      body: dep,
    });
    assert.equal(created.body.metadata.generation, 1);
    const merge = { 'content-type': 'application/merge-patch+json' };
    const spec = await server.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/gen', {
      body: { spec: { replicas: 4 } },
      headers: merge,
    });
    assert.equal(spec.body.metadata.generation, 2);
    const label = await server.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/gen', {
      body: { metadata: { labels: { x: 'y' } } },
      headers: merge,
    });
    assert.equal(label.body.metadata.generation, 2);
    const c = await server.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('nogen') });
    assert.equal(c.body.metadata.generation, undefined);
  });
  test('create-on-PUT where the kind allows it (Lease), 404 where not (ConfigMap)', async () => {
    const lease = await server.request(
      'PUT',
      '/apis/coordination.svc.io/v1/namespaces/default/leases/put-made',
      { body: { metadata: { name: 'put-made' }, spec: {} } },
    );
    assert.equal(lease.status, 201);
    const c = await server.request('PUT', '/api/v1/namespaces/default/configmaps/put-made', {
      body: cm('put-made'),
    });
    assert.equal(c.status, 404);
  });
});

describe('HTTP/2', () => {
  test('many watches share one HTTP/2 connection', async () => {
    const { connect } = await import('node:http2');
    const session = connect(server.url, {
      ca: server.admin.ca,
      cert: server.admin.cert,
      key: server.admin.key,
    });
    try {
      const streams = Array.from({ length: 20 }, () =>
        session.request({
          ':path':
            '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dh2',
        }),
      );
      const seen = streams.map(
        (s) =>
          new Promise<string>((resolve, reject) => {
            let buf = '';
            s.on('data', (c: Buffer) => {
              buf += c.toString();
              if (buf.includes('\n')) resolve(JSON.parse(buf.slice(0, buf.indexOf('\n'))).type);
            });
            s.on('error', reject);
          }),
      );
      await new Promise((r) => setTimeout(r, 200));
      await send(server.url, server.admin, 'POST', '/api/v1/namespaces/default/configmaps', {
        body: cm('h2'),
      });
      assert.deepEqual(await Promise.all(seen), Array(20).fill('ADDED'));
      for (const s of streams) s.close();
    } finally {
      session.close();
    }
  });
});

describe('slow watchers', () => {
  test('a watcher that does not read is cut off; the others get every event', async () => {
    await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'slow' } } });
    const path = '/api/v1/namespaces/slow/configmaps?watch=1&resourceVersion=0';
    const fast = watch(server, path);
    // The slow client reads nothing: its socket buffers fill, then the server's bounded backlog.
    let slowEnded = false;
    let slowBytes = 0;
    const slowRes = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = httpsRequest(
        `${server.url}${path}`,
        { ca: server.admin.ca, cert: server.admin.cert, key: server.admin.key, agent: false },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    slowRes.pause();
    slowRes.on('close', () => (slowEnded = true));
    slowRes.on('error', () => (slowEnded = true));
    const big = 'x'.repeat(500 * 1024);
    const count = 30;
    for (let i = 0; i < count; i++) {
      const r = await server.request('POST', '/api/v1/namespaces/slow/configmaps', {
        body: cm(`big${i}`, { data: { k: big } }),
      });
      assert.equal(r.status, 201);
    }
    for (let i = 0; i < count; i++) assert.equal((await fast.next(20_000)).object.metadata.name, `big${i}`);
    fast.close();
    // Now drain the slow one: it ends before it has all 30 events (about 15 MB).
    slowRes.on('data', (c: Buffer) => (slowBytes += c.length));
    slowRes.resume();
    await until('the slow watcher ended', async () => (slowEnded ? true : undefined), 20_000);
    assert.ok(slowBytes < count * big.length, `slow watcher got ${slowBytes} bytes`);
    await server.request('DELETE', '/api/v1/namespaces/slow');
  });
});
