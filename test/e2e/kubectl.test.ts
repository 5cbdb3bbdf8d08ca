// Proves the real kubectl 1.32 works unmodified against the server with --group-domain=k8s.io: create, get -o
// yaml/json, Table output, apply (create, then patch), label selectors, chunked get, get -w, delete.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startTestServer, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk, kubectlPath, runKubectl, type KubectlResult } from '../support/kubectl.js';

let server: TestServer;
const kubectl = (...args: string[]): Promise<KubectlResult> => runKubectl(server.kubeconfig, args);
const ok = (...args: string[]): Promise<string> => kubectlOk(server.kubeconfig, args);
let workDir: string;

before(async () => {
  ensureKubectl();
  workDir = await mkdtemp(join(tmpdir(), 'stoa-kubectl-'));
  server = await startTestServer(['--group-domain', 'k8s.io']);
});

after(async () => {
  await server?.stop();
  await rm(workDir, { recursive: true, force: true });
});

const manifest = (value: string): string => `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  labels: {app: web, tier: front}
data:
  key: ${value}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
`;

test('create -f, get (Table, -o yaml, -o json), version', async () => {
  const file = join(workDir, 'app.yaml');
  await writeFile(file, manifest('one'));
  const created = await ok('create', '-f', file);
  assert.match(created, /configmap\/app-config created/);
  assert.match(created, /deployment.apps\/web created/);
  assert.match(created, /service\/web created/);
  const table = await ok('get', 'configmaps');
  assert.match(table, /^NAME\s+DATA\s+AGE$/m);
  assert.match(table, /^app-config\s+1\s+\d+s$/m);
  const yaml = parse(await ok('get', 'deployment', 'web', '-o', 'yaml'));
  assert.equal(yaml.spec.replicas, 1);
  assert.equal(yaml.spec.strategy.rollingUpdate.maxSurge, '25%');
  assert.equal(yaml.spec.progressDeadlineSeconds, 600);
  const svc = JSON.parse(await ok('get', 'svc', 'web', '-o', 'json'));
  assert.match(svc.spec.clusterIP, /^10\.0\.0\.\d+$/);
  assert.match(await ok('scale', 'deployment', 'web', '--replicas=3'), /deployment.apps\/web scaled/);
  assert.equal(await ok('get', 'deployment', 'web', '-o', 'jsonpath={.spec.replicas}'), '3');
  const all = await ok('get', 'all');
  assert.match(all, /deployment.apps\/web/);
  assert.match(all, /service\/web/);
  const ns = await ok('get', 'ns');
  for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
    assert.match(ns, new RegExp(`^${n}\\s+Active`, 'm'));
});

test('apply creates, then patches; strict field validation rejects unknown fields', async () => {
  const file = join(workDir, 'apply.yaml');
  await writeFile(
    file,
    manifest('two')
      .replace(/app-config/g, 'applied')
      .replace(/name: web/g, 'name: web2'),
  );
  assert.match(await ok('apply', '-f', file), /configmap\/applied created/);
  await writeFile(
    file,
    manifest('three')
      .replace(/app-config/g, 'applied')
      .replace(/name: web/g, 'name: web2'),
  );
  assert.match(await ok('apply', '-f', file), /configmap\/applied configured/);
  assert.equal(await ok('get', 'cm', 'applied', '-o', 'jsonpath={.data.key}'), 'three');
  const bad = join(workDir, 'bad.yaml');
  await writeFile(bad, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\nbogus: 1\n');
  const r = await kubectl('create', '-f', bad);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /unknown field "bogus"/);
});

test('label selectors and chunked get', async () => {
  for (let i = 0; i < 7; i++) {
    await writeFile(
      join(workDir, `c${i}.yaml`),
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: chunk-${i}, labels: {batch: "b", num: "${i}"}}\n`,
    );
    await ok('create', '-f', join(workDir, `c${i}.yaml`));
  }
  const names = (await ok('get', 'cm', '-l', 'batch=b', '--chunk-size=2', '-o', 'name')).trim().split('\n');
  assert.deepEqual(
    names,
    Array.from({ length: 7 }, (_, i) => `configmap/chunk-${i}`),
  );
  const sel = (await ok('get', 'cm', '-l', 'batch=b,num in (1,3)', '-o', 'name')).trim().split('\n');
  assert.deepEqual(sel, ['configmap/chunk-1', 'configmap/chunk-3']);
  const front = (await ok('get', 'cm', '-l', 'tier', '-o', 'name')).trim();
  assert.equal(front, 'configmap/app-config\nconfigmap/applied');
  const table = await ok('get', 'cm', '--chunk-size=3', '-l', 'batch');
  assert.equal(table.trim().split('\n').length, 8);
});

test('get -w sees changes, delete removes', async () => {
  const file = join(workDir, 'watched.yaml');
  await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\ndata: {a: "1"}\n');
  // kubectl get NAME -w fails while the object does not exist, so create it first, then watch its changes.
  await ok('create', '-f', file);
  const child = spawn(
    kubectlPath,
    ['--kubeconfig', server.kubeconfig, 'get', 'cm', 'watched', '-w', '--output-watch-events'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const seen = (pattern: RegExp): Promise<void> =>
      new Promise((resolvePromise, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`kubectl get -w did not print ${pattern}: ${out}`)),
          15_000,
        );
        const check = (): void => {
          if (pattern.test(out)) {
            clearTimeout(timer);
            child.stdout.off('data', onData);
            resolvePromise();
          }
        };
        const onData = (): void => check();
        child.stdout.on('data', onData);
        check();
      });
    await seen(/^ADDED\s+watched\s/m);
    await ok('label', 'cm', 'watched', 'x=y');
    await seen(/^MODIFIED\s+watched\s/m);
    assert.match(await ok('delete', '-f', file), /configmap "watched" deleted/);
    await seen(/^DELETED\s+watched\s/m);
  } finally {
    child.kill('SIGTERM');
  }
  assert.match(await ok('delete', '-f', join(workDir, 'app.yaml')), /deployment.apps "web" deleted/);
  const left = await kubectl('get', 'deploy', 'web');
  assert.notEqual(left.code, 0);
  assert.match(left.stderr, /deployments.apps "web" not found/);
});
