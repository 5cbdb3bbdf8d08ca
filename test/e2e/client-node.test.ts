// Proves the unmodified @kubernetes/client-node (1.x) works against a real server process with
// --group-domain=k8s.io: typed create/get/list/patch/replace/delete, errors, the Watch helper and an informer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { startTestServer, type TestServer } from './harness.js';

// Plain JavaScript, run as a child process: the library brings its own @types/node, kept out of our build.
const scriptPath = resolve('scripts/client-node-e2e.mjs');
let server: TestServer;

before(async () => {
  server = await startTestServer(['--group-domain', 'k8s.io']);
});

after(async () => {
  await server?.stop();
});

test('@kubernetes/client-node: CRUD, Watch helper, informer', async () => {
  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [scriptPath, server.kubeconfig],
      { timeout: 90_000 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      },
    );
  });
  assert.equal(result.code, 0, `client-node script failed:\n${result.stdout}\n${result.stderr}`);
  const steps = result.stdout
    .split('\n')
    .filter((l) => l.startsWith('ok '))
    .map((l) => l.slice(3));
  assert.deepEqual(steps, [
    'create namespace',
    'create',
    'get',
    'list (selectors, chunks, all namespaces)',
    'merge patch',
    'replace',
    'errors (404, 409) as ApiException with a Status body',
    'delete',
    'Watch helper',
    'informer (list, then watch from its resourceVersion)',
    'apps/v1 Deployment with defaults and scale',
    'delete namespace',
  ]);
});
