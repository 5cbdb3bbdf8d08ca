/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves virtual create-only kinds: SelfSubjectReview answers 201 with the caller's user info (certificate and
// token users), goes through body decoding and field validation, is never stored (other verbs 405/404), and
// discovery and OpenAPI show only `create`.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, writeTemp, type TestServer } from './harness.js';

let server: TestServer;
const path = '/apis/authentication.svc.io/v1/selfsubjectreviews';
const review = { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' };

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-ssr-'));
  const tokens = await writeTemp(dir, 'tokens.csv', 'secret-token,alice,alice-uid,"dev,ops"\n');
  server = await startTestServer(['--token-auth-file', tokens], dir);
});

after(async () => {
  await server?.stop();
  if (server !== undefined) await rm(server.dataDir, { recursive: true, force: true });
});

test('a certificate user creates a SelfSubjectReview: 201 with its name and groups', async () => {
  const r = await server.request('POST', path, { body: review });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.kind, 'SelfSubjectReview');
  assert.equal(r.body.apiVersion, 'authentication.svc.io/v1');
  assert.deepEqual(r.body.status.userInfo, {
    username: 'admin',
    groups: ['system:masters', 'system:authenticated'],
  });
  assert.equal(typeof r.body.metadata.creationTimestamp, 'string');
});

test('a token user gets its uid and groups; an unknown token is 401', async () => {
  const r = await server.request('POST', path, {
    body: review,
    anonymous: true,
    headers: { authorization: 'Bearer secret-token' },
  });
  // Every authenticated user may review itself (the default system:basic-user binding).
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.status.userInfo, {
    username: 'alice',
    uid: 'alice-uid',
    groups: ['dev', 'ops', 'system:authenticated'],
  });
  const bad = await server.request('POST', path, {
    body: review,
    anonymous: true,
    headers: { authorization: 'Bearer wrong' },
  });
  assert.equal(bad.status, 401);
  assert.equal(bad.body.reason, 'Unauthorized');
});

test('the body is decoded and validated like any create', async () => {
  const strict = await server.request('POST', `${path}?fieldValidation=Strict`, {
    body: { ...review, spec: { x: 1 } },
  });
  assert.equal(strict.status, 400);
  assert.match(strict.body.message, /unknown field "spec"/);
  const warn = await server.request('POST', path, { body: { ...review, spec: { x: 1 } } });
  assert.equal(warn.status, 201);
  assert.match(String(warn.headers.warning), /unknown field \\"spec\\"/);
  const wrongKind = await server.request('POST', path, { body: { ...review, kind: 'ConfigMap' } });
  assert.equal(wrongKind.status, 400);
  const notJson = await server.request('POST', path, {
    rawBody: '{',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(notJson.status, 400);
  const typed = await server.request('POST', path, {
    body: { ...review, status: { userInfo: { groups: 'x' } } },
  });
  assert.equal(typed.status, 422);
});

test('nothing is stored: other verbs are 405 on the collection and 404 by name', async () => {
  assert.equal((await server.request('GET', path)).status, 405);
  assert.equal((await server.request('GET', `${path}?watch=true`)).status, 405);
  assert.equal((await server.request('DELETE', path)).status, 405);
  assert.equal((await server.request('GET', `${path}/x`)).status, 404);
  assert.equal((await server.request('PUT', `${path}/x`, { body: review })).status, 404);
});

test('discovery and OpenAPI show only create', async () => {
  const list = await server.request('GET', '/apis/authentication.svc.io/v1');
  assert.equal(list.status, 200);
  const entry = list.body.resources.find((r: { name: string }) => r.name === 'selfsubjectreviews');
  assert.deepEqual(entry.verbs, ['create']);
  assert.equal(entry.kind, 'SelfSubjectReview');
  const aggregated = await server.request('GET', '/apis', {
    headers: { accept: 'application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList' },
  });
  const group = aggregated.body.items.find((g: any) => g.metadata.name === 'authentication.svc.io');
  assert.deepEqual(group.versions[0].resources[0].verbs, ['create']);
  const openapi = await server.request('GET', '/openapi/v3/apis/authentication.svc.io/v1');
  assert.deepEqual(Object.keys(JSON.parse(openapi.text).paths[path]), ['post']);
});
