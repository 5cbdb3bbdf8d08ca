// Proves patches and server-side apply with the real kubectl 1.32 (--group-domain=k8s.io): apply --server-side,
// a second --field-manager that conflicts, --force-conflicts, kubectl patch --type json|merge|strategic, and
// client-side apply (strategic merge with the last-applied annotation) applied twice with a change.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk, runKubectl, type KubectlResult } from '../support/kubectl.js';

let server: TestServer;
const kubectl = (...args: string[]): Promise<KubectlResult> => runKubectl(server.kubeconfig, args);
const ok = (...args: string[]): Promise<string> => kubectlOk(server.kubeconfig, args);
let workDir: string;

async function file(name: string, text: string): Promise<string> {
  const path = join(workDir, name);
  await writeFile(path, text);
  return path;
}

before(async () => {
  ensureKubectl();
  workDir = await mkdtemp(join(tmpdir(), 'stoa-kubectl-apply-'));
  server = await startTestServer(['--group-domain', 'k8s.io']);
});

after(async () => {
  await server?.stop();
  await rm(workDir, { recursive: true, force: true });
});

const configMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  key: "${value}"\n  other: "x"\n`;

test('apply --server-side, a conflicting second manager, --force-conflicts', async () => {
  const first = await file('ssa.yaml', configMap('one'));
  assert.match(await ok('apply', '--server-side', '-f', first), /configmap\/ssa serverside-applied/);
  const live = JSON.parse(await ok('get', 'cm', 'ssa', '-o', 'json', '--show-managed-fields'));
  assert.deepEqual(
    live.metadata.managedFields.map((e: { manager: string; operation: string }) => [e.manager, e.operation]),
    [['kubectl', 'Apply']],
  );
  assert.deepEqual(live.metadata.managedFields[0].fieldsV1, { 'f:data': { 'f:key': {}, 'f:other': {} } });
  // Applying the same file again changes nothing.
  assert.match(await ok('apply', '--server-side', '-f', first), /configmap\/ssa serverside-applied/);
  const again = JSON.parse(await ok('get', 'cm', 'ssa', '-o', 'json'));
  assert.equal(again.metadata.resourceVersion, live.metadata.resourceVersion);

  const second = await file('ssa2.yaml', configMap('two'));
  const conflict = await kubectl('apply', '--server-side', '--field-manager=other', '-f', second);
  assert.notEqual(conflict.code, 0);
  assert.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.data\.key/);
  assert.equal(await ok('get', 'cm', 'ssa', '-o', 'jsonpath={.data.key}'), 'one');

  assert.match(
    await ok('apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', second),
    /serverside-applied/,
  );
  assert.equal(await ok('get', 'cm', 'ssa', '-o', 'jsonpath={.data.key}'), 'two');
  const taken = JSON.parse(await ok('get', 'cm', 'ssa', '-o', 'json', '--show-managed-fields'));
  const owned = Object.fromEntries(
    taken.metadata.managedFields.map((e: { manager: string; fieldsV1: unknown }) => [e.manager, e.fieldsV1]),
  );
  assert.deepEqual(owned, {
    kubectl: { 'f:data': { 'f:other': {} } },
    other: { 'f:data': { 'f:key': {}, 'f:other': {} } },
  });
});

const deployment = (image: string, labels: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: csa
  labels: {${labels}}
spec:
  selector: {matchLabels: {app: csa}}
  template:
    metadata: {labels: {app: csa}}
    spec:
      containers:
      - name: app
        image: ${image}
        ports: [{containerPort: 80}]
      - name: side
        image: side:1
`;

test('client-side apply twice with a change (strategic merge, last-applied annotation)', async () => {
  const path = await file('csa.yaml', deployment('app:1', 'app: csa, tier: web'));
  assert.match(await ok('apply', '-f', path), /deployment.apps\/csa created/);
  await writeFile(path, deployment('app:2', 'app: csa'));
  assert.match(await ok('apply', '-f', path), /deployment.apps\/csa configured/);
  const live = JSON.parse(await ok('get', 'deployment', 'csa', '-o', 'json', '--show-managed-fields'));
  assert.deepEqual(live.metadata.labels, { app: 'csa' }, 'the label dropped from the file is removed');
  assert.deepEqual(
    live.spec.template.spec.containers.map((c: { name: string; image: string }) => [c.name, c.image]),
    [
      ['app', 'app:2'],
      ['side', 'side:1'],
    ],
  );
  const lastApplied = JSON.parse(
    live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] as string,
  );
  assert.equal(lastApplied.spec.template.spec.containers[0].image, 'app:2');
  const managers = live.metadata.managedFields.map((e: { manager: string }) => e.manager);
  assert.ok(managers.includes('kubectl-client-side-apply'), managers.join(','));
});

test('kubectl patch --type json, merge and strategic', async () => {
  await ok(
    'apply',
    '-f',
    await file('p.yaml', deployment('p:1', 'app: csa').replace(/name: csa$/m, 'name: p')),
  );
  await ok('patch', 'deployment', 'p', '--type', 'merge', '-p', '{"spec":{"replicas":2}}');
  assert.equal(await ok('get', 'deployment', 'p', '-o', 'jsonpath={.spec.replicas}'), '2');
  await ok(
    'patch',
    'deployment',
    'p',
    '--type',
    'json',
    '-p',
    '[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":4}]',
  );
  assert.equal(await ok('get', 'deployment', 'p', '-o', 'jsonpath={.spec.replicas}'), '4');
  const failed = await kubectl(
    'patch',
    'deployment',
    'p',
    '--type',
    'json',
    '-p',
    '[{"op":"test","path":"/spec/replicas","value":9}]',
  );
  assert.notEqual(failed.code, 0);
  assert.match(failed.stderr, /The request is invalid: : testing value \/spec\/replicas failed: test failed/);
  await ok(
    'patch',
    'deployment',
    'p',
    '--type',
    'strategic',
    '-p',
    '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"side:2"}]}}}}',
  );
  const images = await ok(
    'get',
    'deployment',
    'p',
    '-o',
    'jsonpath={.spec.template.spec.containers[*].image}',
  );
  assert.equal(images, 'p:1 side:2');
});
