// Proves the authenticator chain end to end over real TLS: client certificates from several CAs, the token file,
// the authenticating proxy's headers (only from its CA and allowed names), anonymous access and its conditions,
// invalid credentials as 401 (never anonymous), and every impersonation rule against a table-driven Authorizer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { anonymousConfig } from '../../src/auth/anonymous.js';
import { ClientCertificateAuthenticator, parseCertificateBundle } from '../../src/auth/client-cert.js';
import { RequestHeaderAuthenticator } from '../../src/auth/request-header.js';
import { parseTokenFile, TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { BearerTokenAuthenticator, UnionAuthenticator } from '../../src/auth/union.js';
import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';
import {
  call,
  servingPki,
  startChain,
  TableAuthorizer,
  type ChainServer,
  type Pki,
} from './chain-support.js';

let pki: Pki;
let caA: CertificateAndKey;
let caB: CertificateAndKey;
let proxyCa: CertificateAndKey;
let strangerCa: CertificateAndKey;
let alice: CertificateAndKey;
let bob: CertificateAndKey;
let stranger: CertificateAndKey;
let proxy: CertificateAndKey;
let otherProxy: CertificateAndKey;
const servers: ChainServer[] = [];

const tokens = parseTokenFile('t-carol,carol,carol-uid,"dev,ops"\nt-dave,dave,4\n');

function union(options: { anonymous?: boolean; paths?: string[] } = {}): UnionAuthenticator {
  return new UnionAuthenticator(
    [
      new RequestHeaderAuthenticator({
        clientCas: parseCertificateBundle(proxyCa.certPem, 'proxy'),
        allowedNames: ['front-proxy'],
        usernameHeaders: ['X-Remote-User'],
        groupHeaders: ['X-Remote-Group'],
        extraHeaderPrefixes: ['X-Remote-Extra-'],
      }),
      new ClientCertificateAuthenticator(
        parseCertificateBundle(`${caA.certPem}\n${caB.certPem}`, 'client-ca'),
      ),
      new BearerTokenAuthenticator([new TokenFileAuthenticator(tokens)]),
    ],
    anonymousConfig(options.anonymous ?? true, options.paths),
  );
}

async function start(authorizer = new TableAuthorizer([]), options = {}): Promise<ChainServer> {
  const tlsCas = [caA, caB, proxyCa].map((c) => c.certPem).join('\n');
  const server = await startChain(union(options), authorizer, tlsCas, pki);
  servers.push(server);
  return server;
}

before(async () => {
  pki = await servingPki();
  [caA, caB, proxyCa, strangerCa] = (await Promise.all(
    ['ca-a', 'ca-b', 'proxy-ca', 'stranger-ca'].map((commonName) =>
      createCertificateAuthority({ commonName }),
    ),
  )) as [CertificateAndKey, CertificateAndKey, CertificateAndKey, CertificateAndKey];
  alice = await issueCertificate(caA, { commonName: 'alice', organizations: ['dev', 'qa'], usage: 'client' });
  bob = await issueCertificate(caB, { commonName: 'bob', usage: 'client' });
  stranger = await issueCertificate(strangerCa, { commonName: 'mallory', usage: 'client' });
  proxy = await issueCertificate(proxyCa, { commonName: 'front-proxy', usage: 'client' });
  otherProxy = await issueCertificate(proxyCa, { commonName: 'other-proxy', usage: 'client' });
});

after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('methods', () => {
  let server: ChainServer;
  before(async () => {
    server = await start();
  });

  test('certificates from either CA of the bundle: CN is the user, each O a group', async () => {
    const a = await call(server, '/x', { cert: alice });
    assert.equal(a.status, 200);
    assert.deepEqual(a.body.user, {
      name: 'alice',
      uid: '',
      groups: ['dev', 'qa', 'system:authenticated'],
      extra: {},
    });
    const b = await call(server, '/x', { cert: bob });
    assert.equal(b.body.user.name, 'bob');
    assert.deepEqual(b.body.user.groups, ['system:authenticated']);
  });

  test('a certificate of an unknown CA is 401 with a Status, unless another method succeeds', async () => {
    const r = await call(server, '/x', { cert: stranger });
    assert.equal(r.status, 401);
    assert.equal(r.body.kind, 'Status');
    assert.equal(r.body.reason, 'Unauthorized');
    assert.equal(r.body.message, 'Unauthorized');
    const withToken = await call(server, '/x', {
      cert: stranger,
      headers: { authorization: 'Bearer t-dave' },
    });
    assert.equal(withToken.status, 200);
    assert.equal(withToken.body.user.name, 'dave');
  });

  test('token file: quoted multi-group column, uid; an unknown token is 401, never anonymous', async () => {
    const r = await call(server, '/x', { headers: { authorization: 'Bearer t-carol' } });
    assert.deepEqual(r.body.user, {
      name: 'carol',
      uid: 'carol-uid',
      groups: ['dev', 'ops', 'system:authenticated'],
      extra: {},
    });
    const bad = await call(server, '/x', { headers: { authorization: 'Bearer nope' } });
    assert.equal(bad.status, 401);
    const lower = await call(server, '/x', { headers: { authorization: 'bearer t-dave' } });
    assert.equal(lower.body.user.name, 'dave');
    const huge = await call(server, '/x', { headers: { authorization: `Bearer ${'a'.repeat(14_000)}` } });
    assert.equal(huge.status, 401);
  });

  test('no credential (or another scheme) is anonymous', async () => {
    const r = await call(server, '/x');
    assert.deepEqual(r.body.user, {
      name: 'system:anonymous',
      uid: '',
      groups: ['system:unauthenticated'],
      extra: {},
    });
    const basic = await call(server, '/x', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    assert.equal(basic.body.user.name, 'system:anonymous');
  });

  test('proxy headers from the proxy CA and an allowed name: user, groups, extras (lower-case, decoded)', async () => {
    const r = await call(server, '/x', {
      cert: proxy,
      headers: {
        'X-Remote-User': 'erin',
        'X-Remote-Group': ['g1', 'g2'],
        'X-Remote-Extra-Scopes': ['read', 'write'],
        'X-Remote-Extra-Example.com%2fteam': 'blue',
      },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.user, {
      name: 'erin',
      uid: '',
      groups: ['g1', 'g2', 'system:authenticated'],
      extra: { scopes: ['read', 'write'], 'example.com/team': ['blue'] },
    });
  });

  test('proxy headers are refused from a CN outside the allowed names or from a user certificate', async () => {
    const other = await call(server, '/x', { cert: otherProxy, headers: { 'X-Remote-User': 'erin' } });
    assert.equal(other.status, 401);
    const user = await call(server, '/x', { cert: alice, headers: { 'X-Remote-User': 'erin' } });
    assert.equal(user.body.user.name, 'alice');
    const noUser = await call(server, '/x', { cert: proxy });
    assert.equal(noUser.status, 401);
  });
});

describe('anonymous', () => {
  test('--anonymous-auth=false: no credential is 401', async () => {
    const server = await start(new TableAuthorizer([]), { anonymous: false });
    assert.equal((await call(server, '/healthz')).status, 401);
    assert.equal((await call(server, '/x', { cert: alice })).status, 200);
  });

  test('conditions: only the listed paths are anonymous', async () => {
    const server = await start(new TableAuthorizer([]), { anonymous: true, paths: ['/healthz', '/livez'] });
    assert.equal((await call(server, '/healthz')).status, 200);
    assert.equal((await call(server, '/livez')).status, 200);
    assert.equal((await call(server, '/api/v1/namespaces')).status, 401);
  });
});

describe('impersonation', () => {
  let server: ChainServer;
  let authorizer: TableAuthorizer;
  const svc = 'authentication.svc.io';
  before(async () => {
    authorizer = new TableAuthorizer([
      { user: 'alice', verb: 'impersonate', group: '', resource: 'users', names: ['bob'] },
      { user: 'alice', verb: 'impersonate', group: '', resource: 'groups', names: ['team'] },
      { user: 'alice', verb: 'impersonate', group: svc, resource: 'userextras', subresource: 'scopes' },
      { user: 'alice', verb: 'impersonate', group: svc, resource: 'uids', names: ['u-1'] },
      { user: 'alice', verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'ns1' },
      { user: 'alice', verb: 'impersonate', group: '', resource: 'users', names: ['system:anonymous'] },
    ]);
    server = await start(authorizer);
  });

  const cases: {
    name: string;
    headers: Record<string, string | string[]>;
    status: number;
    user?: unknown;
    message?: RegExp;
  }[] = [
    {
      name: 'a permitted user gets system:authenticated',
      headers: { 'Impersonate-User': 'bob' },
      status: 200,
      user: { name: 'bob', uid: '', groups: ['system:authenticated'], extra: {} },
    },
    {
      name: 'a user outside resourceNames is 403 naming the resource',
      headers: { 'Impersonate-User': 'carol' },
      status: 403,
      message:
        /^users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope$/,
    },
    {
      name: 'groups, extras (lower-case, percent-decoded) and uid together',
      headers: {
        'Impersonate-User': 'bob',
        'Impersonate-Group': 'team',
        'Impersonate-Extra-Scopes': ['a', 'b'],
        'Impersonate-Uid': 'u-1',
      },
      status: 200,
      user: {
        name: 'bob',
        uid: 'u-1',
        groups: ['team', 'system:authenticated'],
        extra: { scopes: ['a', 'b'] },
      },
    },
    {
      name: 'a group not granted is 403',
      headers: { 'Impersonate-User': 'bob', 'Impersonate-Group': 'admins' },
      status: 403,
      message: /^groups "admins" is forbidden/,
    },
    {
      name: 'an extra key not granted is 403 naming userextras/<key>',
      headers: { 'Impersonate-User': 'bob', 'Impersonate-Extra-Other%2Dkey': 'x' },
      status: 403,
      message: /cannot impersonate resource "userextras\/other-key" in API group "authentication.svc.io"/,
    },
    {
      name: 'a uid outside resourceNames is 403',
      headers: { 'Impersonate-User': 'bob', 'Impersonate-Uid': 'u-2' },
      status: 403,
      message: /^uids.authentication.svc.io "u-2" is forbidden/,
    },
    {
      name: 'a group without a user is refused',
      headers: { 'Impersonate-Group': 'team' },
      status: 500,
      message: /without impersonating a user/,
    },
    {
      name: 'a uid without a user is refused',
      headers: { 'Impersonate-Uid': 'u-1' },
      status: 500,
      message: /without impersonating a user/,
    },
    {
      name: 'a service account in a granted namespace gets its groups',
      headers: { 'Impersonate-User': 'system:serviceaccount:ns1:robot' },
      status: 200,
      user: {
        name: 'system:serviceaccount:ns1:robot',
        uid: '',
        groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'],
        extra: {},
      },
    },
    {
      name: 'a service account elsewhere is 403 in its namespace',
      headers: { 'Impersonate-User': 'system:serviceaccount:ns2:robot' },
      status: 403,
      message: /^serviceaccounts "robot" is forbidden: .* in the namespace "ns2"$/,
    },
    {
      name: 'the anonymous user gets system:unauthenticated',
      headers: { 'Impersonate-User': 'system:anonymous' },
      status: 200,
      user: { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'], extra: {} },
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const r = await call(server, '/x', { cert: alice, headers: c.headers });
      assert.equal(r.status, c.status, JSON.stringify(r.body));
      if (c.user !== undefined) assert.deepEqual(r.body.user, c.user);
      if (c.message !== undefined) assert.match(r.body.message, c.message);
    });
  }

  test('each value is authorized with verb impersonate and its resource name; then the new user is authorized', async () => {
    authorizer.asked.length = 0;
    await call(server, '/api/v1/namespaces/default/pods', {
      cert: alice,
      headers: { 'Impersonate-User': 'bob', 'Impersonate-Group': 'team' },
    });
    const impersonations = authorizer.asked.filter((a) => a.verb === 'impersonate');
    assert.deepEqual(
      impersonations.map((a) => [a.user.name, a.resource, a.name]),
      [
        ['alice', 'users', 'bob'],
        ['alice', 'groups', 'team'],
      ],
    );
    const final = authorizer.asked.find((a) => a.verb === 'list');
    assert.equal(final?.user.name, 'bob');
    assert.equal(final?.resource, 'pods');
  });
});
