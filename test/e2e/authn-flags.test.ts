/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves the authentication flags wired into a real server: a --client-ca-file bundle of two CAs, the
// authenticating proxy (--requestheader-client-ca-file, --requestheader-allowed-names) whose headers reach
// SelfSubjectReview, --anonymous-auth=false, and impersonation of user, groups, extra and uid as system:masters.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';
import { send, startTestServer, type TestServer } from './harness.js';

let server: TestServer;
let dir: string;
let bob: CertificateAndKey;
let proxy: CertificateAndKey;
let otherProxy: CertificateAndKey;
const path = '/apis/authentication.svc.io/v1/selfsubjectreviews';
const review = { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' };

function as(creds: CertificateAndKey, headers: Record<string, string> = {}): Promise<any> {
  return send(server.url, { ca: server.admin.ca, cert: creds.certPem, key: creds.keyPem }, 'POST', path, {
    body: review,
    headers,
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-authn-flags-'));
  const [caA, caB, proxyCa] = await Promise.all(
    ['ca-a', 'ca-b', 'proxy-ca'].map((commonName) => createCertificateAuthority({ commonName })),
  );
  bob = await issueCertificate(caB!, { commonName: 'bob', organizations: ['team'], usage: 'client' });
  proxy = await issueCertificate(proxyCa!, { commonName: 'front-proxy', usage: 'client' });
  otherProxy = await issueCertificate(proxyCa!, { commonName: 'intruder', usage: 'client' });
  await writeFile(join(dir, 'clients.pem'), `${caA!.certPem}\n${caB!.certPem}`);
  await writeFile(join(dir, 'proxy.pem'), proxyCa!.certPem);
  server = await startTestServer(
    [
      '--client-ca-file',
      join(dir, 'clients.pem'),
      '--requestheader-client-ca-file',
      join(dir, 'proxy.pem'),
      '--requestheader-allowed-names',
      'front-proxy',
      '--anonymous-auth=false',
    ],
    join(dir, 'data'),
  );
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('a certificate of the second CA in the bundle authenticates', async () => {
  // Every authenticated user may review itself (the default system:basic-user binding).
  const r = await as(bob);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body.status.userInfo, { username: 'bob', groups: ['team', 'system:authenticated'] });
  const admin = await server.request('POST', path, { body: review });
  assert.equal(admin.status, 201, 'the generated CA stays trusted');
});

test('the proxy passes a user, groups and extras; another CN or a user certificate cannot', async () => {
  const r = await as(proxy, {
    'X-Remote-User': 'erin',
    'X-Remote-Group': 'system:masters',
    'X-Remote-Extra-Example.com%2Fteam': 'blue',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body.status.userInfo, {
    username: 'erin',
    groups: ['system:masters', 'system:authenticated'],
    extra: { 'example.com/team': ['blue'] },
  });
  const intruder = await as(otherProxy, { 'X-Remote-User': 'erin', 'X-Remote-Group': 'system:masters' });
  assert.equal(intruder.status, 401);
  // From a certificate that is not the proxy's, the headers are ignored: the request is bob's own.
  const user = await as(bob, { 'X-Remote-User': 'erin', 'X-Remote-Group': 'system:masters' });
  assert.equal(user.status, 201);
  assert.equal(user.body.status.userInfo.username, 'bob');
});

test('--anonymous-auth=false: no credential is 401 everywhere', async () => {
  const r = await server.request('GET', '/healthz', { anonymous: true });
  assert.equal(r.status, 401);
  assert.equal(r.body.reason, 'Unauthorized');
});

test('system:masters impersonates user, groups, extra and uid; SelfSubjectReview shows the result', async () => {
  const r = await server.request('POST', path, {
    body: review,
    headers: {
      'Impersonate-User': 'jane',
      'Impersonate-Group': 'devs',
      'Impersonate-Extra-Scopes': 'read',
      'Impersonate-Uid': 'uid-7',
    },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body.status.userInfo, {
    username: 'jane',
    uid: 'uid-7',
    groups: ['devs', 'system:authenticated'],
    extra: { scopes: ['read'] },
  });
  const ok = await server.request('POST', path, {
    body: review,
    headers: {
      'Impersonate-User': 'jane',
      'Impersonate-Group': 'system:masters',
      'Impersonate-Extra-Scopes': 'read',
      'Impersonate-Uid': 'uid-7',
    },
  });
  assert.equal(ok.status, 201);
  assert.deepEqual(ok.body.status.userInfo, {
    username: 'jane',
    uid: 'uid-7',
    groups: ['system:masters', 'system:authenticated'],
    extra: { scopes: ['read'] },
  });
  const noUser = await server.request('POST', path, { body: review, headers: { 'Impersonate-Group': 'x' } });
  assert.equal(noUser.status, 500);
  assert.match(noUser.body.message, /without impersonating a user/);
});
