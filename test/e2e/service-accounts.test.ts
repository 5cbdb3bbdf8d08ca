/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves service account tokens against a real server: TokenRequest (audiences, expirationSeconds, bound pod)
// signs JWTs that verify with the published JWKS (jose) and authenticate as the account; a wrong audience, a
// deleted account or bound pod (--service-account-lookup) and a too-short expiration are refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { startTestServer, type TestServer, whoami as whoamiOf } from './harness.js';

let server: TestServer;
let dir: string;
const issuer = 'https://stoa.test';

const whoami = (token: string): Promise<string | number> => whoamiOf(server, token);

async function tokenFor(account: string, spec: Record<string, unknown> = {}): Promise<any> {
  const r = await server.request('POST', `/api/v1/namespaces/default/serviceaccounts/${account}/token`, {
    body: { apiVersion: 'authentication.svc.io/v1', kind: 'TokenRequest', spec },
  });
  return r;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-sa-'));
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const signing = join(dir, 'sa.key');
  const publicKeys = join(dir, 'sa.pub');
  const other = join(dir, 'other.pub');
  await writeFile(signing, rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }));
  await writeFile(publicKeys, rsa.publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(other, ec.publicKey.export({ type: 'spki', format: 'pem' }));
  server = await startTestServer(
    [
      '--service-account-signing-key-file',
      signing,
      '--service-account-key-file',
      publicKeys,
      '--service-account-key-file',
      other,
      '--service-account-issuer',
      issuer,
    ],
    join(dir, 'data'),
  );
  for (const name of ['robot', 'other']) {
    const r = await server.request('POST', '/api/v1/namespaces/default/serviceaccounts', {
      body: { metadata: { name } },
    });
    assert.equal(r.status, 201, r.text);
  }
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('TokenRequest: 201 with a signed token that verifies with the published JWKS', async () => {
  const r = await tokenFor('robot', { expirationSeconds: 1200 });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.kind, 'TokenRequest');
  assert.equal(r.body.spec.expirationSeconds, 1200);
  assert.deepEqual(r.body.spec.audiences, [issuer]);
  const expires = Date.parse(r.body.status.expirationTimestamp);
  assert.ok(Math.abs(expires - Date.now() - 1200_000) < 60_000);
  const discovery = await server.request('GET', '/.well-known/openid-configuration');
  assert.equal(discovery.status, 200);
  assert.equal(discovery.body.issuer, issuer);
  assert.equal(discovery.body.jwks_uri, `${issuer}/openid/v1/jwks`);
  assert.deepEqual(discovery.body.id_token_signing_alg_values_supported, ['ES256', 'RS256']);
  const jwks = await server.request('GET', '/openid/v1/jwks');
  assert.equal(jwks.headers['content-type'], 'application/jwk-set+json');
  assert.equal(jwks.body.keys.length, 2);
  const { payload, protectedHeader } = await jwtVerify(r.body.status.token, createLocalJWKSet(jwks.body), {
    issuer,
    audience: issuer,
  });
  assert.equal(protectedHeader.alg, 'RS256');
  assert.equal(payload.sub, 'system:serviceaccount:default:robot');
  assert.equal((payload['svc.io'] as any).serviceaccount.name, 'robot');
  assert.equal(await whoami(r.body.status.token), 'system:serviceaccount:default:robot');
});

test('a token for another audience, or garbage, is 401', async () => {
  const r = await tokenFor('robot', { audiences: ['vault'] });
  assert.equal(r.status, 201);
  assert.deepEqual(decodeJwt(r.body.status.token).aud, ['vault']);
  assert.equal(await whoami(r.body.status.token), 401);
  const good = (await tokenFor('robot')).body.status.token as string;
  const [h, p, sig] = good.split('.');
  const tampered = `${h}.${p}.${sig?.startsWith('A') ? 'B' : 'A'}${sig?.slice(1)}`;
  assert.equal(await whoami(tampered), 401);
  assert.equal(await whoami('not.a.jwt'), 401);
});

test('validation: expirationSeconds under 10 minutes is 422; a missing account 404; an unknown bound kind 400', async () => {
  const short = await tokenFor('robot', { expirationSeconds: 599 });
  assert.equal(short.status, 422);
  assert.match(short.body.message, /may not specify a duration less than 10 minutes/);
  assert.equal((await tokenFor('ghost')).status, 404);
  const kind = await tokenFor('robot', {
    boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' },
  });
  assert.equal(kind.status, 400);
  assert.match(kind.body.message, /cannot bind token to object of type/);
  const get = await server.request('GET', '/api/v1/namespaces/default/serviceaccounts/robot/token');
  assert.equal(get.status, 405);
});

test('bound to a pod: refused once the pod is deleted; any token refused once the account is deleted', async () => {
  const pod = await server.request('POST', '/api/v1/namespaces/default/pods', {
    body: {
      metadata: { name: 'p1' },
      spec: { serviceAccountName: 'other', containers: [{ name: 'c', image: 'x' }] },
    },
  });
  assert.equal(pod.status, 201, pod.text);
  const wrongAccount = await tokenFor('robot', {
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p1' },
  });
  assert.equal(wrongAccount.status, 400);
  const bound = await tokenFor('other', {
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p1', uid: pod.body.metadata.uid },
  });
  assert.equal(bound.status, 201, bound.text);
  assert.equal(bound.body.spec.boundObjectRef.uid, pod.body.metadata.uid);
  const token = bound.body.status.token as string;
  assert.equal(await whoami(token), 'system:serviceaccount:default:other');
  const unbound = (await tokenFor('other')).body.status.token as string;
  const del = await server.request('DELETE', '/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=0');
  assert.equal(del.status, 200);
  assert.equal(await waitFor(() => whoami(token), 401), 401);
  assert.equal(await whoami(unbound), 'system:serviceaccount:default:other');
  await server.request('DELETE', '/api/v1/namespaces/default/serviceaccounts/other');
  assert.equal(await waitFor(() => whoami(unbound), 401), 401);
});

/** Polls (bounded) until the value is reached: the lookup reads the watch cache, which follows the store. */
async function waitFor<T>(read: () => Promise<T>, want: T): Promise<T> {
  let value = await read();
  for (let i = 0; i < 50 && value !== want; i++) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}
