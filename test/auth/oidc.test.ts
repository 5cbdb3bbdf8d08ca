// Proves the JWT (OpenID Connect) authenticator against a real HTTPS issuer: discovery and JWKS over TLS with
// the issuer's CA, prefixes and claims of the --oidc-* flags, expiry, audience, signature, required claims,
// email_verified, key rotation picked up on an unknown key id; and the AuthenticationConfiguration file: CEL
// claim mappings and validation rules, and every validation error naming its field.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { issuerFromFlags, parseAuthenticationConfiguration } from '../../src/auth/authentication-config.js';
import { JwtAuthenticator } from '../../src/auth/oidc.js';
import { startIssuer, type TestIssuer } from './issuer-support.js';

let issuer: TestIssuer | undefined;

before(async () => {
  issuer = await startIssuer();
});

after(async () => {
  await issuer?.close();
});

function fromFlags(extra: Record<string, unknown> = {}): JwtAuthenticator {
  return new JwtAuthenticator(
    issuerFromFlags(
      {
        issuerUrl: issuer!.url,
        clientId: 'stoa',
        usernameClaim: 'sub',
        requiredClaims: new Map(),
        signingAlgs: ['RS256'],
        groupsClaim: 'groups',
        groupsPrefix: 'oidc:',
        ...extra,
      },
      issuer!.caPem,
    ),
  );
}

describe('--oidc-* flags', () => {
  test('a valid ID token: username prefixed with the issuer URL and #, groups prefixed', async () => {
    const a = fromFlags();
    const token = await issuer!.sign({ sub: 'jane', groups: ['dev', 'ops'] });
    const result = await a.authenticateToken(token);
    assert.deepEqual(result, {
      kind: 'user',
      user: { name: `${issuer!.url}#jane`, uid: '', groups: ['oidc:dev', 'oidc:ops'], extra: {} },
    });
  });

  test('username prefix "-" disables it; the email claim has no default prefix and needs email_verified', async () => {
    const none = fromFlags({ usernamePrefix: '-' });
    const r = await none.authenticateToken(await issuer!.sign({ sub: 'jane' }));
    assert.equal(r.kind === 'user' && r.user.name, 'jane');
    const email = fromFlags({ usernameClaim: 'email' });
    const ok = await email.authenticateToken(await issuer!.sign({ email: 'j@x.io', email_verified: true }));
    assert.equal(ok.kind === 'user' && ok.user.name, 'j@x.io');
    const unverified = await email.authenticateToken(
      await issuer!.sign({ email: 'j@x.io', email_verified: false }),
    );
    assert.equal(unverified.kind, 'invalid');
  });

  test('expired, wrong audience, foreign issuer, bad signature, missing required claim', async () => {
    const a = fromFlags({ requiredClaims: new Map([['hd', 'example.com']]) });
    const valid = await issuer!.sign({ sub: 'x', hd: 'example.com' });
    assert.equal((await a.authenticateToken(valid)).kind, 'user');
    const expired = await issuer!.sign({ sub: 'x', hd: 'example.com' }, { expiresInSeconds: -120 });
    assert.deepEqual(await a.authenticateToken(expired), {
      kind: 'invalid',
      reason: 'oidc: token is expired',
    });
    const audience = await issuer!.sign({ sub: 'x', hd: 'example.com' }, { audience: 'other' });
    assert.equal((await a.authenticateToken(audience)).kind, 'invalid');
    const foreign = await issuer!.sign({ sub: 'x' }, { issuer: 'https://elsewhere' });
    assert.deepEqual(await a.authenticateToken(foreign), { kind: 'none' });
    const [h, p] = valid.split('.');
    const forged = `${h}.${p}.${Buffer.from('forged').toString('base64url')}`;
    assert.equal((await a.authenticateToken(forged)).kind, 'invalid');
    const missing = await issuer!.sign({ sub: 'x' });
    assert.equal((await a.authenticateToken(missing)).kind, 'invalid');
  });

  test('a rotated key is fetched again when a token names an unknown key id', async () => {
    const a = fromFlags();
    assert.equal((await a.authenticateToken(await issuer!.sign({ sub: 'x' }))).kind, 'user');
    const before = issuer!.hits.get('/keys') ?? 0;
    issuer!.rotate();
    // The cooldown between fetches is 10 s: a fresh authenticator fetched just now, so wait it out by a new one.
    const b = fromFlags();
    assert.equal((await b.authenticateToken(await issuer!.sign({ sub: 'y' }))).kind, 'user');
    assert.ok((issuer!.hits.get('/keys') ?? 0) > before);
    assert.equal((await a.authenticateToken(await issuer!.sign({ sub: 'x' }))).kind, 'invalid');
  });
});

describe('AuthenticationConfiguration', () => {
  const file = (jwt: unknown[], extra = ''): string =>
    JSON.stringify({
      apiVersion: 'apiserver.config.svc.io/v1beta1',
      kind: 'AuthenticationConfiguration',
      jwt,
    }) + extra;
  const issuerEntry = (more: Record<string, unknown> = {}): Record<string, unknown> => ({
    issuer:
      issuer === undefined
        ? { url: 'https://issuer.test', audiences: ['stoa'] }
        : { url: issuer.url, audiences: ['stoa'], certificateAuthority: issuer.caPem },
    claimMappings: { username: { claim: 'sub', prefix: 'oidc:' } },
    ...more,
  });

  test('CEL claim mappings, extra, claim and user validation rules', async () => {
    const config = parseAuthenticationConfiguration(
      file([
        issuerEntry({
          claimMappings: {
            username: { expression: '"u:" + claims.sub' },
            groups: { expression: 'claims.roles.map(r, "role:" + r)' },
            uid: { claim: 'oid' },
            extra: [{ key: 'example.com/tenant', valueExpression: 'claims.tenant' }],
          },
          claimValidationRules: [{ expression: 'claims.tenant == "acme"', message: 'wrong tenant' }],
          userValidationRules: [
            { expression: '!user.username.startsWith("u:system")', message: 'no system users' },
          ],
        }),
      ]),
      'svc.io',
    );
    const a = new JwtAuthenticator(config.jwt[0]!);
    const ok = await a.authenticateToken(
      await issuer!.sign({ sub: 'jane', roles: ['a', 'b'], oid: 'o-1', tenant: 'acme' }),
    );
    assert.deepEqual(ok, {
      kind: 'user',
      user: {
        name: 'u:jane',
        uid: 'o-1',
        groups: ['role:a', 'role:b'],
        extra: { 'example.com/tenant': ['acme'] },
      },
    });
    const tenant = await a.authenticateToken(await issuer!.sign({ sub: 'jane', roles: [], tenant: 'other' }));
    assert.deepEqual(tenant, { kind: 'invalid', reason: 'wrong tenant' });
    const system = await a.authenticateToken(
      await issuer!.sign({ sub: 'system:x', roles: [], tenant: 'acme' }),
    );
    assert.deepEqual(system, { kind: 'invalid', reason: 'no system users' });
  });

  test('anonymous with conditions', () => {
    const text = JSON.stringify({
      apiVersion: 'apiserver.config.svc.io/v1beta1',
      kind: 'AuthenticationConfiguration',
      anonymous: { enabled: true, conditions: [{ path: '/livez' }, { path: '/readyz' }] },
    });
    assert.deepEqual(parseAuthenticationConfiguration(text, 'svc.io').anonymous, {
      enabled: true,
      paths: ['/livez', '/readyz'],
    });
  });

  const errorCases: [string, string, RegExp][] = [
    [
      'more than 64 issuers',
      file(
        Array.from({ length: 65 }, (_, i) =>
          issuerEntry({ issuer: { url: `https://i${i}`, audiences: ['a'] } }),
        ),
      ),
      /jwt: Too many: 65: must have at most 64 items$/,
    ],
    [
      'a missing issuer url',
      file([issuerEntry({ issuer: { audiences: ['a'] } })]),
      /jwt\[0\]\.issuer\.url: Required value$/,
    ],
    [
      'an http issuer',
      file([issuerEntry({ issuer: { url: 'http://x', audiences: ['a'] } })]),
      /jwt\[0\]\.issuer\.url: Invalid value: "http:\/\/x": must use https scheme/,
    ],
    [
      'no audiences',
      file([issuerEntry({ issuer: { url: 'https://x' } })]),
      /jwt\[0\]\.issuer\.audiences: Required value/,
    ],
    [
      'claim and expression',
      file([
        issuerEntry({ claimMappings: { username: { claim: 'sub', prefix: '', expression: 'claims.sub' } } }),
      ]),
      /jwt\[0\]\.claimMappings\.username: Invalid value: claim and expression can't both be set/,
    ],
    [
      'a claim without prefix',
      file([issuerEntry({ claimMappings: { username: { claim: 'sub' } } })]),
      /jwt\[0\]\.claimMappings\.username\.prefix: Required value/,
    ],
    [
      'a CEL syntax error',
      file([issuerEntry({ claimValidationRules: [{ expression: 'claims.(' }] })]),
      /jwt\[0\]\.claimValidationRules\[0\]\.expression: Invalid value: .*compilation failed/,
    ],
    ['a duplicate issuer', file([issuerEntry(), issuerEntry()]), /jwt\[1\]\.issuer\.url: Duplicate value/],
    [
      'a wrong kind',
      JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1beta1', kind: 'Nope' }),
      /kind: Unsupported value: "Nope"/,
    ],
    [
      'a wrong apiVersion',
      JSON.stringify({ apiVersion: 'v1', kind: 'AuthenticationConfiguration' }),
      /apiVersion: Unsupported value: "v1"/,
    ],
  ];
  for (const [name, text, message] of errorCases) {
    test(`refused: ${name}`, () => {
      assert.throws(() => parseAuthenticationConfiguration(text, 'svc.io'), message);
    });
  }
});
