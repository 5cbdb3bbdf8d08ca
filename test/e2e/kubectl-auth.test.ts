// Proves the real kubectl 1.32 with --group-domain=k8s.io: `auth whoami` (SelfSubjectReview, as the admin and
// impersonating), `create token` (TokenRequest) whose token then authenticates, and `stoa credential` as an exec
// credential plugin (v1 and v1beta1, token and client certificate) in a kubeconfig.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { send, startTestServer, writeTemp, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk } from '../support/kubectl.js';

let server: TestServer;
const ok = (args: string[], kubeconfig = server.kubeconfig): Promise<string> => kubectlOk(kubeconfig, args);
let workDir: string;

before(async () => {
  ensureKubectl();
  workDir = await mkdtemp(join(tmpdir(), 'stoa-kubectl-auth-'));
  const tokens = await writeTemp(workDir, 'tokens.csv', 'plugin-token,plugin-user,p-1,"system:masters"\n');
  server = await startTestServer(['--group-domain', 'k8s.io', '--token-auth-file', tokens]);
});

after(async () => {
  await server?.stop();
  await rm(workDir, { recursive: true, force: true });
});

test('kubectl auth whoami shows the admin, and the impersonated user with --as/--as-group', async () => {
  const out = await ok(['auth', 'whoami', '-o', 'json']);
  const review = JSON.parse(out) as Review;
  assert.equal(review.kind, 'SelfSubjectReview');
  assert.equal(review.status.userInfo.username, 'admin');
  assert.deepEqual(review.status.userInfo.groups, ['system:masters', 'system:authenticated']);
  const table = await ok(['auth', 'whoami']);
  assert.match(table, /Username\s+admin/);
  const as = JSON.parse(
    await ok([
      'auth',
      'whoami',
      '--as',
      'jane',
      '--as-group',
      'devs',
      '--as-group',
      'system:masters',
      '-o',
      'json',
    ]),
  ) as Review;
  assert.equal(as.status.userInfo.username, 'jane');
  assert.deepEqual(as.status.userInfo.groups, ['devs', 'system:masters', 'system:authenticated']);
});

interface Review {
  kind: string;
  status: { userInfo: { username: string; groups: string[] } };
}

test('kubectl create token: a TokenRequest whose token authenticates as the service account', async () => {
  await ok(['create', 'serviceaccount', 'builder']);
  const token = (await ok(['create', 'token', 'builder', '--duration', '20m'])).trim();
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  // Until RBAC lets every user create a SelfSubjectReview, a 403 naming the user proves authentication.
  const r = await send(
    server.url,
    server.admin,
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      anonymous: true,
      headers: { authorization: `Bearer ${token}` },
    },
  );
  const body = r.body as Review & { message?: string };
  const name =
    r.status === 201 ? body.status.userInfo.username : /User "([^"]+)"/.exec(String(body.message))?.[1];
  assert.equal(name, 'system:serviceaccount:default:builder');
});

/** A kubeconfig whose user runs `stoa credential` with these arguments. */
function execKubeconfig(apiVersion: string, args: string[]): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'stoa',
        cluster: {
          server: server.url,
          'certificate-authority-data': Buffer.from(server.admin.ca).toString('base64'),
        },
      },
    ],
    users: [
      {
        name: 'plugin',
        user: {
          exec: {
            apiVersion,
            command: process.execPath,
            args: [resolve('dist/src/server/main.js'), 'credential', ...args],
            interactiveMode: 'Never',
            provideClusterInfo: true,
          },
        },
      },
    ],
    contexts: [{ name: 'c', context: { cluster: 'stoa', user: 'plugin' } }],
    'current-context': 'c',
  });
}

for (const version of ['v1', 'v1beta1']) {
  test(`stoa credential as a ${version} exec plugin: a token with an expiration, then a client certificate`, async () => {
    const apiVersion = `client.authentication.k8s.io/${version}`;
    const withToken = await writeTemp(
      workDir,
      `token-${version}.kubeconfig`,
      execKubeconfig(apiVersion, ['--token', 'plugin-token', '--expiration-seconds', '600']),
    );
    const who = JSON.parse(await ok(['auth', 'whoami', '-o', 'json'], withToken)) as Review;
    assert.equal(who.status.userInfo.username, 'plugin-user');
    const cert = await writeTemp(workDir, 'admin.crt', server.admin.cert);
    const key = await writeTemp(workDir, 'admin.key', server.admin.key);
    const withCert = await writeTemp(
      workDir,
      `cert-${version}.kubeconfig`,
      execKubeconfig(apiVersion, ['--client-certificate', cert, '--client-key', key]),
    );
    assert.match(await ok(['get', 'namespaces', '-o', 'name'], withCert), /namespace\/default/);
  });
}

test('stoa credential reads KUBERNETES_EXEC_INFO and refuses what it cannot answer', async () => {
  const run = (
    args: string[],
    execInfo?: string,
  ): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) => {
      execFile(
        process.execPath,
        [resolve('dist/src/server/main.js'), 'credential', ...args],
        { env: { ...process.env, ...(execInfo === undefined ? {} : { KUBERNETES_EXEC_INFO: execInfo }) } },
        (error, stdout, stderr) =>
          done({
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1,
            stdout,
            stderr,
          }),
      );
    });
  const info = JSON.stringify({
    apiVersion: 'client.authentication.svc.io/v1beta1',
    kind: 'ExecCredential',
    spec: { interactive: false },
  });
  const r = await run(['--token', 't', '--expiration-seconds', '60'], info);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    apiVersion: string;
    kind: string;
    status: { token: string; expirationTimestamp: string };
  };
  assert.equal(out.apiVersion, 'client.authentication.svc.io/v1beta1');
  assert.equal(out.kind, 'ExecCredential');
  assert.equal(out.status.token, 't');
  assert.ok(Math.abs(Date.parse(out.status.expirationTimestamp) - Date.now() - 60_000) < 5_000);
  const bad = await run(['--token', 't'], JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }));
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /unsupported ExecCredential apiVersion/);
  const nothing = await run([]);
  assert.equal(nothing.code, 1);
  assert.match(nothing.stderr, /nothing to hand out/);
  const half = await run(['--client-certificate', 'x']);
  assert.match(half.stderr, /must be given together/);
});
