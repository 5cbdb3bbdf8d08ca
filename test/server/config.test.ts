// Proves the server's configuration parsing: serve flags (defaults, durations, unknown flags named), feature
// gates (stages, locked GA gates, deprecation warnings), the static token file, request info, and patches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlagError, parseDuration, parseServeFlags } from '../../src/server/flags.js';
import { parseFeatureGates } from '../../src/server/features.js';
import { parseTokenFile } from '../../src/auth/token-file.js';
import { requestInfo } from '../../src/endpoints/requestinfo.js';
import { mergePatch, strategicMergePatch } from '../../src/apimachinery/patch.js';
import { podKind } from '../../src/kinds/pod/index.js';

test('serve flags: defaults, both flag forms, unknown flags named', () => {
  const d = parseServeFlags([]);
  assert.ok(d !== 'help');
  assert.equal(d.bindAddress, '127.0.0.1');
  assert.equal(d.securePort, 6443);
  assert.equal(d.dataDir, './data');
  assert.equal(d.groupDomain, 'svc.io');
  const o = parseServeFlags([
    '--secure-port=0',
    '--group-domain',
    'k8s.io',
    '--shutdown-delay-duration=1m30s',
    '--etcd-servers=http://a:1,http://b:2',
  ]);
  assert.ok(o !== 'help');
  assert.equal(o.securePort, 0);
  assert.equal(o.groupDomain, 'k8s.io');
  assert.equal(o.shutdownDelayMs, 90_000);
  assert.deepEqual(o.etcdServers, ['http://a:1', 'http://b:2']);
  assert.throws(
    () => parseServeFlags(['--bogus=1']),
    (e: unknown) => e instanceof FlagError && e.message === 'unknown flag: --bogus',
  );
  assert.throws(() => parseServeFlags(['--secure-port', 'x']), FlagError);
  assert.throws(() => parseServeFlags(['--secure-port']), /flag needs an argument/);
  assert.equal(parseServeFlags(['--help']), 'help');
  assert.equal(parseDuration('500ms', 'x'), 500);
  assert.throws(() => parseDuration('5 days', 'x'), FlagError);
});

test('feature gates: defaults by stage, locked GA gates, warnings, unknown gates', () => {
  const d = parseFeatureGates('');
  assert.equal(d.gates.enabled('APIResponseCompression'), true);
  assert.equal(d.gates.enabled('AuthorizeWithSelectors'), false);
  const set = parseFeatureGates('APIResponseCompression=false,AuthorizeWithSelectors=true');
  assert.equal(set.gates.enabled('APIResponseCompression'), false);
  assert.equal(set.gates.enabled('AuthorizeWithSelectors'), true);
  assert.deepEqual(set.warnings, []);
  assert.throws(
    () => parseFeatureGates('ServerSideApply=false'),
    /cannot set feature gate ServerSideApply to false, feature is locked to true/,
  );
  assert.deepEqual(parseFeatureGates('ServerSideApply=true').warnings, [
    'Setting GA feature gate ServerSideApply=true. It will be removed in a future release.',
  ]);
  assert.match(
    parseFeatureGates('DefaultHostNetworkHostPortsInPodTemplates=true').warnings[0] ?? '',
    /deprecated feature gate/,
  );
  assert.throws(() => parseFeatureGates('Nope=true'), /unrecognized feature gate: Nope/);
  assert.throws(() => parseFeatureGates('WatchList=maybe'), /invalid value/);
});

test('token file: quoted group lists, comments, missing columns', () => {
  const t = parseTokenFile('# comment\nt1,alice,1\nt2,bob,2,"a,b"\n\nt3,carol,3,x,y\n');
  assert.deepEqual(t.get('t1'), { name: 'alice', uid: '1', groups: [], extra: {} });
  assert.deepEqual(t.get('t2'), { name: 'bob', uid: '2', groups: ['a', 'b'], extra: {} });
  assert.deepEqual(t.get('t3'), { name: 'carol', uid: '3', groups: ['x', 'y'], extra: {} });
  assert.throws(() => parseTokenFile('only,two\n'), /line 1/);
});

test('request info: verbs, namespaces, sub-resources, non-resource paths', () => {
  const q = new URLSearchParams();
  const info = (method: string, path: string, query = q): unknown => {
    const i = requestInfo(method, path, query);
    return i.isResourceRequest
      ? [i.verb, i.group, i.version, i.resource, i.namespace, i.name, i.subresource]
      : ['nonresource', i.verb];
  };
  assert.deepEqual(info('GET', '/api/v1/namespaces/default/pods'), [
    'list',
    '',
    'v1',
    'pods',
    'default',
    '',
    '',
  ]);
  assert.deepEqual(info('GET', '/api/v1/namespaces/default/pods', new URLSearchParams('watch=1')), [
    'watch',
    '',
    'v1',
    'pods',
    'default',
    '',
    '',
  ]);
  // `?watch` on a named object is a get (kube-apiserver ignores it there); the deprecated /watch/ prefix watches.
  assert.deepEqual(info('GET', '/api/v1/namespaces/default/pods/p', new URLSearchParams('watch=1')), [
    'get',
    '',
    'v1',
    'pods',
    'default',
    'p',
    '',
  ]);
  assert.deepEqual(info('GET', '/api/v1/watch/namespaces/default/pods/p'), [
    'watch',
    '',
    'v1',
    'pods',
    'default',
    'p',
    '',
  ]);
  assert.deepEqual(info('GET', '/apis/apps/v1/watch/deployments'), [
    'watch',
    'apps',
    'v1',
    'deployments',
    '',
    '',
    '',
  ]);
  assert.deepEqual(info('GET', '/api/v1/watch/namespaces/ns1'), [
    'watch',
    '',
    'v1',
    'namespaces',
    'ns1',
    'ns1',
    '',
  ]);
  assert.deepEqual(info('DELETE', '/api/v1/watch/namespaces/default/pods/p'), ['nonresource', 'delete']);
  assert.deepEqual(info('GET', '/api/v1/watch/namespaces/default/pods/p/status'), ['nonresource', 'get']);
  assert.deepEqual(info('PUT', '/api/v1/namespaces/default/pods/p/status'), [
    'update',
    '',
    'v1',
    'pods',
    'default',
    'p',
    'status',
  ]);
  assert.deepEqual(info('GET', '/api/v1/namespaces/ns1'), ['get', '', 'v1', 'namespaces', 'ns1', 'ns1', '']);
  assert.deepEqual(info('PUT', '/api/v1/namespaces/ns1/finalize'), [
    'update',
    '',
    'v1',
    'namespaces',
    'ns1',
    'ns1',
    'finalize',
  ]);
  assert.deepEqual(info('DELETE', '/apis/apps/v1/namespaces/x/deployments'), [
    'deletecollection',
    'apps',
    'v1',
    'deployments',
    'x',
    '',
    '',
  ]);
  assert.deepEqual(info('POST', '/apis/apps/v1/deployments'), [
    'create',
    'apps',
    'v1',
    'deployments',
    '',
    '',
    '',
  ]);
  assert.deepEqual(info('GET', '/healthz'), ['nonresource', 'get']);
  assert.deepEqual(info('GET', '/apis'), ['nonresource', 'get']);
});

test('merge patch and strategic merge patch', () => {
  assert.deepEqual(mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { b: { c: null, e: 4 }, l: [3] }), {
    a: 1,
    b: { d: 3, e: 4 },
    l: [3],
  });
  const schema = podKind({ groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' }).schema;
  const pod = {
    spec: {
      containers: [
        { name: 'a', image: 'x' },
        { name: 'b', image: 'y' },
      ],
    },
  };
  const merged = strategicMergePatch(
    pod,
    {
      spec: {
        containers: [
          { name: 'b', image: 'z' },
          { name: 'c', image: 'w' },
        ],
        '$setElementOrder/containers': [],
      },
    },
    schema,
  );
  assert.deepEqual(merged, {
    spec: {
      containers: [
        { name: 'a', image: 'x' },
        { name: 'b', image: 'z' },
        { name: 'c', image: 'w' },
      ],
    },
  });
  const deleted = strategicMergePatch(
    pod,
    { spec: { containers: [{ name: 'a', $patch: 'delete' }] } },
    schema,
  );
  assert.deepEqual(deleted, { spec: { containers: [{ name: 'b', image: 'y' }] } });
});
