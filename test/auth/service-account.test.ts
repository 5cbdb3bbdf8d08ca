// Proves the service account token verifier with RSA and ECDSA keys: issue then verify, a key rotated out is a
// bad signature, expiry, issuers it does not own are left to other methods, audiences, lookup of account uid,
// and the fallback to the TLS key when no key flag is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import type { ApiObject } from '../../src/apimachinery/meta.js';
import {
  loadServiceAccountKeys,
  ServiceAccountTokens,
  signingKeyFromPem,
  verifyingKeysFromPem,
  type ObjectLookup,
} from '../../src/auth/service-account.js';

const accounts = new Map<string, ApiObject>([
  ['default/robot', { metadata: { name: 'robot', namespace: 'default', uid: 'uid-1' } }],
]);
const lookup: ObjectLookup = {
  get: (_resource, namespace, name) => Promise.resolve(accounts.get(`${namespace}/${name}`)),
};

function tokens(privatePem: string, publicPem: string, nowMs = Date.now): ServiceAccountTokens {
  return new ServiceAccountTokens(
    signingKeyFromPem(privatePem, 'signing'),
    verifyingKeysFromPem(publicPem, 'verifying'),
    { issuers: ['https://issuer'], apiAudiences: [], lookup: true, domainPrefix: 'svc.io', nowMs },
    lookup,
  );
}

const keyPairs = {
  RS256: generateKeyPairSync('rsa', { modulusLength: 2048 }),
  ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  ES384: generateKeyPairSync('ec', { namedCurve: 'P-384' }),
};
const pem = (k: (typeof keyPairs)['RS256']): [string, string] => [
  k.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  k.publicKey.export({ type: 'spki', format: 'pem' }) as string,
];
const robot = { namespace: 'default', name: 'robot', uid: 'uid-1' };

for (const [alg, pair] of Object.entries(keyPairs)) {
  test(`${alg}: an issued token authenticates as the account with its groups`, async () => {
    const t = tokens(...pem(pair));
    const { token } = await t.issue(robot, ['https://issuer'], 3600);
    assert.equal(decodeProtectedHeader(token).alg, alg);
    const result = await t.authenticateToken(token);
    assert.equal(result.kind, 'user');
    if (result.kind !== 'user') return;
    assert.equal(result.user.name, 'system:serviceaccount:default:robot');
    assert.equal(result.user.uid, 'uid-1');
    assert.deepEqual(result.user.groups, ['system:serviceaccounts', 'system:serviceaccounts:default']);
    assert.match(result.user.extra['authentication.svc.io/credential-id']?.[0] ?? '', /^JTI=/);
  });
}

test('a token signed by a key that is not a verifying key is invalid', async () => {
  const [rsaPrivate] = pem(keyPairs.RS256);
  const [, ecPublic] = pem(keyPairs.ES256);
  const t = new ServiceAccountTokens(
    signingKeyFromPem(rsaPrivate, 's'),
    verifyingKeysFromPem(ecPublic, 'v'),
    { issuers: ['https://issuer'], apiAudiences: [], lookup: false, domainPrefix: 'svc.io', nowMs: Date.now },
    lookup,
  );
  const { token } = await t.issue(robot, ['https://issuer'], 3600);
  assert.equal((await t.authenticateToken(token)).kind, 'invalid');
});

test('expired, wrong audience, unknown issuer, recreated account', async () => {
  let now = Date.now();
  const t = tokens(...pem(keyPairs.ES256), () => now);
  const { token } = await t.issue(robot, ['https://issuer'], 600);
  now += 601_000;
  const expired = await t.authenticateToken(token);
  assert.deepEqual(expired, { kind: 'invalid', reason: 'token has expired' });
  now = Date.now();
  const other = await t.issue(robot, ['elsewhere'], 600);
  assert.equal((await t.authenticateToken(other.token)).kind, 'invalid');
  const foreign = tokens(...pem(keyPairs.ES256));
  const foreignToken = await new ServiceAccountTokens(
    signingKeyFromPem(pem(keyPairs.ES256)[0], 's'),
    [],
    { issuers: ['https://other'], apiAudiences: [], lookup: false, domainPrefix: 'svc.io', nowMs: Date.now },
    lookup,
  ).issue(robot, ['https://other'], 600);
  assert.deepEqual(await foreign.authenticateToken(foreignToken.token), { kind: 'none' });
  const recreated = await t.issue({ ...robot, uid: 'uid-old' }, ['https://issuer'], 600);
  assert.equal((await t.authenticateToken(recreated.token)).kind, 'invalid');
  assert.deepEqual(await t.authenticateToken('plainly-not-a-jwt'), { kind: 'none' });
});

test('no key flags: the TLS private key signs and verifies', async () => {
  const [tlsKey] = pem(keyPairs.ES256);
  const keys = await loadServiceAccountKeys(undefined, [], tlsKey);
  assert.equal(keys.signing.alg, 'ES256');
  assert.equal(keys.verifying.length, 1);
  assert.equal(keys.verifying[0]?.kid, keys.signing.kid);
  await assert.rejects(
    loadServiceAccountKeys('/nonexistent/key.pem', [], tlsKey),
    /--service-account-signing-key-file/,
  );
  assert.throws(() => verifyingKeysFromPem('nothing here', 'f'), /no PEM public key/);
});
