/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves bootstrap tokens against a real server: a valid token authenticates as system:bootstrap:<id>; a wrong
// secret, an expired token, a token without the authentication usage or with a bad extra group is 401; the
// token cleaner deletes expired token secrets; the bootstrap signer keeps cluster-info in kube-public with a
// detached HS256 JWS per signing token, verified here with jose.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { BootstrapTokenAuthenticator } from '../../src/auth/bootstrap-token.js';
import { startTestServer, type TestServer, whoami as whoamiOf } from './harness.js';

let server: TestServer;

function tokenSecret(id: string, secret: string, extra: Record<string, string> = {}): unknown {
  return {
    metadata: { name: `bootstrap-token-${id}` },
    type: 'bootstrap.svc.io/token',
    stringData: {
      'token-id': id,
      'token-secret': secret,
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
      ...extra,
    },
  };
}

async function create(body: unknown): Promise<void> {
  const r = await server.request('POST', '/api/v1/namespaces/kube-system/secrets', { body });
  assert.equal(r.status, 201, r.text);
}

const whoami = (token: string): Promise<string | number> => whoamiOf(server, token);

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

before(async () => {
  server = await startTestServer([
    '--enable-bootstrap-token-auth',
    '--controllers=*,tokencleaner,bootstrapsigner',
  ]);
  const future = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  await create(
    tokenSecret('abcdef', '0123456789abcdef', {
      expiration: future,
      'auth-extra-groups': 'system:bootstrappers:workers',
    }),
  );
  await create(tokenSecret('noauth', '0123456789abcdef', { 'usage-bootstrap-authentication': 'false' }));
  await create(tokenSecret('badgrp', '0123456789abcdef', { 'auth-extra-groups': 'system:masters' }));
});

after(async () => {
  await server?.stop();
});

test('a valid bootstrap token authenticates as system:bootstrap:<id>', async () => {
  assert.equal(
    await until(
      () => whoami('abcdef.0123456789abcdef'),
      (v) => v !== 401,
    ),
    'system:bootstrap:abcdef',
  );
});

test('wrong secret, no authentication usage, a bad extra group, an unknown id: 401', async () => {
  assert.equal(await whoami('abcdef.0123456789abcdee'), 401);
  assert.equal(await whoami('noauth.0123456789abcdef'), 401);
  assert.equal(await whoami('badgrp.0123456789abcdef'), 401);
  assert.equal(await whoami('zzzzzz.0123456789abcdef'), 401);
});

test('the token cleaner deletes an expired token secret, which no longer authenticates', async () => {
  await create(tokenSecret('old123', '0123456789abcdef', { expiration: '2020-01-01T00:00:00Z' }));
  assert.equal(await whoami('old123.0123456789abcdef'), 401);
  const status = await until(
    async () =>
      (await server.request('GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-old123')).status,
    (s) => s === 404,
  );
  assert.equal(status, 404);
});

test('the bootstrap signer keeps cluster-info signed per signing token (detached HS256 JWS)', async () => {
  // Read anonymously, as a joining node does (the default kube-public role and binding allow it).
  const read = async (): Promise<any> => {
    const r = await server.request('GET', '/api/v1/namespaces/kube-public/configmaps/cluster-info', {
      anonymous: true,
    });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const info = await until(read, (b) => b?.data?.['jws-kubeconfig-abcdef'] !== undefined);
  const kubeconfig = info.data.kubeconfig as string;
  assert.match(kubeconfig, new RegExp(`server: ${server.url.replace(/\./g, '\\.')}`));
  const detached = info.data['jws-kubeconfig-abcdef'] as string;
  const [header, payload, signature] = detached.split('.');
  assert.equal(payload, '');
  assert.deepEqual(decodeProtectedHeader(detached), { alg: 'HS256', kid: 'abcdef' });
  const attached = `${header}.${Buffer.from(kubeconfig).toString('base64url')}.${signature}`;
  const verified = await compactVerify(attached, new TextEncoder().encode('abcdef.0123456789abcdef'), {
    algorithms: ['HS256'],
  });
  assert.equal(new TextDecoder().decode(verified.payload), kubeconfig);
  await assert.rejects(compactVerify(attached, new TextEncoder().encode('abcdef.0000000000000000')));
  // noauth and badgrp sign too (usage-bootstrap-signing); deleting a token removes its signature.
  await server.request('DELETE', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-noauth');
  const after = await until(read, (b) => b?.data?.['jws-kubeconfig-noauth'] === undefined);
  assert.equal(after.data['jws-kubeconfig-noauth'], undefined);
  assert.notEqual(after.data['jws-kubeconfig-abcdef'], undefined);
});

test('bootstrap secret keys are validated one by one (in process)', async () => {
  const secret = (data: Record<string, string>): any => ({
    metadata: { name: `bootstrap-token-${data['token-id'] ?? 'x'}` },
    type: 'bootstrap.svc.io/token',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });
  const base = {
    'token-id': 'abc123',
    'token-secret': 'abcdefabcdefabcd',
    'usage-bootstrap-authentication': 'true',
  };
  const cases: [Record<string, string>, string][] = [
    [{ ...base, 'auth-extra-groups': 'system:bootstrappers:a,system:bootstrappers:b' }, 'user'],
    [{ ...base, 'token-secret': 'short' }, 'invalid'],
    [{ ...base, expiration: 'tomorrow' }, 'invalid'],
    [{ ...base, expiration: '2999-01-01T00:00:00Z' }, 'user'],
    [{ ...base, 'usage-bootstrap-authentication': 'yes' }, 'invalid'],
  ];
  for (const [data, kind] of cases) {
    const auth = new BootstrapTokenAuthenticator(
      { get: () => Promise.resolve(secret(data)) },
      'svc.io',
      Date.now,
    );
    const result = await auth.authenticateToken('abc123.abcdefabcdefabcd');
    assert.equal(result.kind, kind, JSON.stringify(data));
    if (result.kind === 'user' && data['auth-extra-groups'] !== undefined) {
      assert.deepEqual(result.user.groups, [
        'system:bootstrappers',
        'system:bootstrappers:a',
        'system:bootstrappers:b',
      ]);
    }
  }
  const other = new BootstrapTokenAuthenticator(
    { get: () => Promise.resolve(undefined) },
    'svc.io',
    Date.now,
  );
  assert.deepEqual(await other.authenticateToken('not-a-bootstrap-token'), { kind: 'none' });
});
