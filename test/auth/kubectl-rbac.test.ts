// Proves the real kubectl 1.32 (--group-domain=k8s.io, protobuf bodies) works with RBAC and access reviews:
// `create role`, `create rolebinding`, `create clusterrole`, `auth can-i` (yes/no and `--list`) for the admin
// and for a token user, the Table of `get rolebindings -o wide`, and `auth can-i --as` for the admin.

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { startTestServer, type TestServer } from '../e2e/harness.js';
import { ensureKubectl, kubectlOk, runKubectl, type KubectlResult } from '../support/kubectl.js';

let server: TestServer;
let dir: string;
let aliceConfig: string;

const kubectl = (config: string, ...args: string[]): Promise<KubectlResult> => runKubectl(config, args);

const admin = (...args: string[]): Promise<string> => kubectlOk(server.kubeconfig, args);

/** `auth can-i` answers yes (exit 0) or no (exit 1); decisions follow the watch cache, so poll for a change. */
async function canI(config: string, expected: 'yes' | 'no', ...args: string[]): Promise<void> {
  let last = '';
  for (let i = 0; i < 60; i++) {
    const r = await kubectl(config, 'auth', 'can-i', ...args);
    last = `${r.stdout}${r.stderr}`;
    if (r.stdout.trim().split('\n')[0]?.startsWith(expected)) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.fail(`auth can-i ${args.join(' ')}: want ${expected}, got ${last}`);
}

before(async () => {
  ensureKubectl();
  dir = await mkdtemp(join(tmpdir(), 'stoa-kubectl-rbac-'));
  await writeFile(join(dir, 'tokens.csv'), 'alice-token,alice,1000,dev\n');
  server = await startTestServer(
    ['--group-domain', 'k8s.io', '--token-auth-file', join(dir, 'tokens.csv')],
    join(dir, 'data'),
  );
  const config = parse(await readFile(server.kubeconfig, 'utf8')) as {
    clusters: { name: string }[];
    contexts: { name: string; context: Record<string, string> }[];
    users: { name: string; user: Record<string, string> }[];
  };
  config.users = [{ name: 'alice', user: { token: 'alice-token' } }];
  for (const c of config.contexts) c.context.user = 'alice';
  aliceConfig = join(dir, 'alice.kubeconfig');
  await writeFile(aliceConfig, stringify(config));
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('kubectl with RBAC', () => {
  test('auth can-i for the admin and a user without bindings', async () => {
    await canI(server.kubeconfig, 'yes', 'delete', 'nodes');
    await canI(aliceConfig, 'no', 'get', 'pods', '-n', 'default');
    await canI(aliceConfig, 'yes', 'create', 'selfsubjectaccessreviews.authorization.k8s.io');
    const forbidden = await kubectl(aliceConfig, 'get', 'pods', '-n', 'default');
    assert.notEqual(forbidden.code, 0);
    assert.match(
      forbidden.stderr,
      /pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"/,
    );
  });

  test('create role and rolebinding; can-i follows; --list; get -o wide', async () => {
    await admin('create', 'role', 'pod-reader', '--verb=get,list,watch', '--resource=pods', '-n', 'default');
    await admin('create', 'rolebinding', 'alice-pods', '--role=pod-reader', '--user=alice', '-n', 'default');
    await admin('create', 'clusterrole', 'ns-viewer', '--verb=get,list', '--resource=namespaces');
    await admin('create', 'clusterrolebinding', 'dev-ns', '--clusterrole=ns-viewer', '--group=dev');
    await canI(aliceConfig, 'yes', 'list', 'pods', '-n', 'default');
    await canI(aliceConfig, 'no', 'list', 'pods', '-n', 'kube-system');
    await canI(aliceConfig, 'no', 'delete', 'pods', '-n', 'default');
    await canI(aliceConfig, 'yes', 'get', 'namespaces');
    assert.equal((await kubectl(aliceConfig, 'get', 'pods', '-n', 'default')).code, 0);
    const list = await kubectl(aliceConfig, 'auth', 'can-i', '--list', '-n', 'default');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs/);
    assert.match(list.stdout, /pods\s+\[\]\s+\[\]\s+\[get list watch\]/);
    assert.match(list.stdout, /selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]/);
    assert.match(list.stdout, /\[\/version\]\s+\[\]\s+\[get\]/);
    const wide = await admin('get', 'rolebindings', '-n', 'default', '-o', 'wide');
    assert.match(wide, /NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS/);
    assert.match(wide, /alice-pods\s+Role\/pod-reader\s+\S+\s+alice/);
    const role = JSON.parse(await admin('get', 'role', 'pod-reader', '-n', 'default', '-o', 'json')) as {
      rules: unknown[];
    };
    assert.deepEqual(role.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);
  });

  test('the escalation check refuses a user creating a role beyond her permissions', async () => {
    await admin(
      'create',
      'role',
      'role-maker',
      '--verb=create',
      '--resource=roles.rbac.authorization.k8s.io',
      '-n',
      'default',
    );
    await admin(
      'create',
      'rolebinding',
      'alice-role-maker',
      '--role=role-maker',
      '--user=alice',
      '-n',
      'default',
    );
    await canI(aliceConfig, 'yes', 'create', 'roles', '-n', 'default');
    const ok = await kubectl(
      aliceConfig,
      'create',
      'role',
      'mine',
      '--verb=get',
      '--resource=pods',
      '-n',
      'default',
    );
    assert.equal(ok.code, 0, ok.stderr);
    const refused = await kubectl(
      aliceConfig,
      'create',
      'role',
      'more',
      '--verb=get',
      '--resource=secrets',
      '-n',
      'default',
    );
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /is attempting to grant RBAC permissions not currently held/);
  });

  test("auth can-i --as impersonates: the answers are alice's, not the admin's", async () => {
    await canI(server.kubeconfig, 'no', 'delete', 'nodes', '--as', 'alice');
    await canI(server.kubeconfig, 'yes', 'list', 'pods', '-n', 'default', '--as', 'alice');
    await canI(server.kubeconfig, 'no', 'list', 'secrets', '-n', 'default', '--as', 'alice');
  });
});
