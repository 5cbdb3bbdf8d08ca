// Proves --runtime-config (spec 9.2) as kube-apiserver applies it: a disabled group version and a disabled
// resource are gone from discovery and OpenAPI and answer 404 (also to the real kubectl), the rest is served,
// and bad keys or values stop the server with kube-apiserver's messages.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './harness.js';
import { ensureKubectl, runKubectl } from '../support/kubectl.js';
import { ApiEnablement, parseRuntimeConfig } from '../../src/server/runtime-config.js';
import { builtinKinds } from '../../src/kinds/index.js';
import { FlagError } from '../../src/server/flags.js';

const kinds = builtinKinds({ groupDomain: 'k8s.io', serviceClusterIpRange: '10.0.0.0/24' });
const resolve = (...values: string[]): ApiEnablement =>
  ApiEnablement.resolve(parseRuntimeConfig(values), () => kinds);

describe('resolving --runtime-config', () => {
  test('the most specific key wins: levels, then versions, then resources', () => {
    const none = resolve();
    assert.equal(none.served('apps', 'v1', 'deployments'), true);
    const off = resolve('api/all=false,apps/v1,/v1/pods=true');
    assert.equal(off.served('apps', 'v1', 'deployments'), true); // `apps/v1` alone means true
    assert.equal(off.served('', 'v1', 'pods'), true);
    assert.equal(off.served('', 'v1', 'configmaps'), false);
    assert.equal(off.served('rbac.authorization.k8s.io', 'v1', 'roles'), false);
    const mixed = resolve('api/ga=false', 'apps/v1=true', 'apps/v1/deployments=0');
    assert.equal(mixed.served('apps', 'v1', 'deployments'), false);
    assert.equal(mixed.served('', 'v1', 'pods'), false);
    const kept = mixed.servedKinds(kinds);
    assert.deepEqual(kept, []);
    assert.deepEqual(
      resolve('apps/v1=false')
        .servedKinds(kinds)
        .filter((k) => k.group === 'apps'),
      [],
    );
  });

  test("bad keys and values are refused with kube-apiserver's messages", () => {
    const refused = (message: string, ...values: string[]): void =>
      assert.throws(
        () => resolve(...values),
        (error: unknown) => error instanceof FlagError && error.message === message,
      );
    refused('invalid key with only api/all=false', 'api/all=false');
    refused('runtime-config invalid key v1', 'v1=false');
    refused('runtime-config invalid key a/b/c/d', 'a/b/c/d=true');
    refused('unknown api groups batch', 'batch/v1=false');
    refused('group version apps/v1beta1 that has not been registered', 'apps/v1beta1=true');
    refused('invalid value api/ga=yes', 'api/ga=yes');
    refused(
      'invalid value of apps/v1: maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
      'apps/v1=maybe',
    );
    refused(
      'invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not "Deployments"',
      'apps/v1/Deployments=false',
    );
  });

  test('stoa serve refuses a bad --runtime-config before it starts', () => {
    const main = join(process.cwd(), 'dist', 'src', 'server', 'main.js');
    const r = spawnSync(process.execPath, [main, 'serve', '--runtime-config=batch/v1=false'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /stoa serve: unknown api groups batch/);
  });
});

/** A server with Kubernetes' group names and this --runtime-config (kubectl ready too). */
async function startWithRuntimeConfig(runtimeConfig: string): Promise<TestServer> {
  ensureKubectl();
  return startTestServer(['--group-domain', 'k8s.io', '--runtime-config', runtimeConfig]);
}

describe('a server with apps/v1 and configmaps disabled', () => {
  let server: TestServer;
  before(async () => {
    server = await startWithRuntimeConfig('apps/v1=false,/v1/configmaps=false');
  });
  after(async () => server?.stop());

  test('discovery and OpenAPI leave them out; their paths answer 404', async () => {
    const groups = await server.request('GET', '/apis');
    const names = (groups.body.groups as { name: string }[]).map((g) => g.name);
    assert.ok(!names.includes('apps'), names.join(','));
    assert.ok(names.includes('rbac.authorization.k8s.io'));
    assert.equal((await server.request('GET', '/apis/apps')).status, 404);
    assert.equal((await server.request('GET', '/apis/apps/v1')).status, 404);
    const core = await server.request('GET', '/api/v1');
    const resources = (core.body.resources as { name: string }[]).map((r) => r.name);
    assert.ok(!resources.includes('configmaps'));
    assert.ok(resources.includes('pods') && resources.includes('secrets'));
    assert.equal((await server.request('GET', '/apis/apps/v1/namespaces/default/deployments')).status, 404);
    const cm = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
    });
    assert.equal(cm.status, 404);
    assert.equal((await server.request('GET', '/api/v1/namespaces/default/secrets')).status, 200);
    const openapi = await server.request('GET', '/openapi/v2');
    const paths = Object.keys(openapi.body.paths as Record<string, unknown>);
    assert.ok(!paths.some((p) => p.startsWith('/apis/apps/')));
    assert.ok(!paths.some((p) => p.includes('/configmaps')));
    assert.ok(paths.some((p) => p.includes('/secrets')));
  });

  test('kubectl sees the same', async () => {
    const r = await runKubectl(server.kubeconfig, ['api-resources', '--no-headers']);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /^deployments\s/m);
    assert.doesNotMatch(r.stdout, /^configmaps\s/m);
    assert.match(r.stdout, /^secrets\s/m);
    const get = await runKubectl(server.kubeconfig, ['get', 'deployments']);
    assert.notEqual(get.code, 0);
    assert.match(get.stderr, /the server doesn't have a resource type "deployments"/);
  });
});

describe('a deprecated beta version turned on (authentication.k8s.io/v1beta1 SelfSubjectReview)', () => {
  let server: TestServer;
  before(async () => {
    server = await startWithRuntimeConfig(
      'authentication.k8s.io/v1=false,authentication.k8s.io/v1beta1=true',
    );
  });
  after(async () => server?.stop());

  test('served in its version, with the deprecation warning and the deprecated-API gauge', async () => {
    const group = await server.request('GET', '/apis/authentication.k8s.io');
    assert.deepEqual(
      (group.body.versions as { version: string }[]).map((v) => v.version),
      ['v1beta1'],
    );
    const review = await server.request('POST', '/apis/authentication.k8s.io/v1beta1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1beta1', kind: 'SelfSubjectReview' },
    });
    assert.equal(review.status, 201, JSON.stringify(review.body));
    assert.equal(review.body.apiVersion, 'authentication.k8s.io/v1beta1');
    assert.equal(review.body.status.userInfo.username, 'admin');
    assert.equal(
      review.headers.warning,
      '299 - "authentication.k8s.io/v1beta1 SelfSubjectReview is deprecated in v1.30+, unavailable in v1.33+"',
    );
    const v1 = await server.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    assert.equal(v1.status, 404);
    const metrics = await server.request('GET', '/metrics');
    assert.match(
      metrics.text,
      /apiserver_requested_deprecated_apis\{group="authentication\.k8s\.io",version="v1beta1",resource="selfsubjectreviews",subresource="",removed_release="1\.33"\} 1/,
    );
  });

  test('kubectl auth whoami falls back to it and shows the warning', async () => {
    const r = await runKubectl(server.kubeconfig, [
      'auth',
      'whoami',
      '-o',
      'jsonpath={.status.userInfo.username}',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'admin');
    assert.match(
      r.stderr,
      /Warning: authentication\.k8s\.io\/v1beta1 SelfSubjectReview is deprecated in v1\.30\+/,
    );
  });

  test('off by default, as every beta version of kube-apiserver 1.32 introduced after 1.22', () => {
    const defaults = resolve();
    assert.equal(defaults.served('authentication.k8s.io', 'v1beta1', 'selfsubjectreviews'), false);
    assert.equal(defaults.served('authentication.k8s.io', 'v1', 'selfsubjectreviews'), true);
    assert.equal(
      resolve('api/beta=true').served('authentication.k8s.io', 'v1beta1', 'selfsubjectreviews'),
      true,
    );
  });
});
