/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves spec 3.2 over a real etcd (garbage written under an object's key with the etcd3 client): GET, LIST and
// WATCH of a corrupt object with gate AllowUnsafeMalformedObjectDeletion off and on, as kube-apiserver 1.32
// answers them, and DELETE with ignoreStoreReadErrorWithClusterBreakingPotential: the companion options, the
// `unsafe-delete-ignore-read-errors` permission, readable objects, deletecollection, success, and kubectl 1.32.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { startTestServer, watch, writeTemp, type TestServer } from './harness.js';
import { startEtcd, type EtcdCluster } from '../support/etcd.js';
import { encodeObject } from '../../src/apimachinery/protobuf.js';
import { ensureKubectl, runKubectl } from '../support/kubectl.js';

const option = 'ignoreStoreReadErrorWithClusterBreakingPotential';
const userToken = 'croc-token';
let etcd: EtcdCluster;
let client: Etcd3;
let off: TestServer;
let on: TestServer;
let workDir: string;

before(async () => {
  ensureKubectl();
  workDir = await mkdtemp(join(tmpdir(), 'stoa-unsafe-delete-'));
  const tokens = await writeTemp(workDir, 'tokens.csv', `${userToken},croc,u-1\n`);
  etcd = await startEtcd({ progressNotifyIntervalMs: 1000 });
  client = new Etcd3({ hosts: etcd.endpoints });
  const common = ['--etcd-servers', etcd.endpoints.join(','), '--group-domain', 'k8s.io'];
  off = await startTestServer(common);
  on = await startTestServer([
    ...common,
    '--token-auth-file',
    tokens,
    '--feature-gates',
    'AllowUnsafeMalformedObjectDeletion=true',
  ]);
});

after(async () => {
  await on?.stop();
  await off?.stop();
  client?.close();
  await etcd?.stop();
  await rm(workDir, { recursive: true, force: true });
});

const cmPath = (ns: string, name = ''): string =>
  `/api/v1/namespaces/${ns}/configmaps${name === '' ? '' : `/${name}`}`;
const cmKey = (ns: string, name: string): string => `/registry/core/configmaps/${ns}/${name}`;

async function namespace(server: TestServer, name: string): Promise<void> {
  const r = await server.request('POST', '/api/v1/namespaces', { body: { metadata: { name } } });
  assert.ok(r.status === 201 || r.status === 409, `namespace ${name}: ${r.status}`);
}

async function configMap(server: TestServer, ns: string, name: string, extra: object = {}): Promise<any> {
  const r = await server.request('POST', cmPath(ns), {
    body: { metadata: { name, ...extra }, data: { k: 'v' } },
  });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** Writes garbage under the object's key and waits until `server` reads it as corrupt. */
async function corrupt(server: TestServer, ns: string, name: string): Promise<void> {
  await client.put(cmKey(ns, name)).value(Buffer.from('\x00garbage, not JSON'));
  for (let i = 0; i < 100; i++) {
    const r = await server.request('GET', `${cmPath(ns)}?resourceVersion=0`);
    if (r.status === 500) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`${ns}/${name} never read as corrupt`);
}

/** The decoder's words for the garbage (JSON.parse of the bytes), as the gate-off answers carry them. */
function parseError(): string {
  try {
    JSON.parse('\x00garbage, not JSON');
  } catch (error) {
    return (error as Error).message;
  }
  return '';
}

test('gate off: reads of a corrupt object are 500 with the decoder error and no reason; the option is ignored', async () => {
  await namespace(off, 'gate-off');
  await configMap(off, 'gate-off', 'good');
  await configMap(off, 'gate-off', 'bad');
  await corrupt(off, 'gate-off', 'bad');
  try {
    const get = await off.request('GET', cmPath('gate-off', 'bad'));
    assert.equal(get.status, 500);
    assert.equal(get.body.reason, undefined);
    assert.equal(get.body.message, parseError());
    for (const query of ['', '?resourceVersion=0', '?limit=1']) {
      const list = await off.request('GET', `${cmPath('gate-off')}${query}`);
      assert.equal(list.status, 500, `list${query}`);
      assert.equal(list.body.reason, undefined);
      assert.equal(list.body.message, parseError());
    }
    // The readable object is still served.
    assert.equal((await off.request('GET', cmPath('gate-off', 'good'))).status, 200);
    const put = await off.request('PUT', cmPath('gate-off', 'bad'), {
      body: { metadata: { name: 'bad' }, data: { k: 'w' } },
    });
    assert.equal(put.status, 500);
    assert.equal(put.body.reason, undefined);
    assert.equal(put.body.message, parseError());
    // With the gate off the option is dropped: the normal delete runs and fails on the read, and the companion
    // options are not checked against it.
    for (const query of [`?${option}=true`, `?${option}=true&dryRun=All`, '']) {
      const del = await off.request('DELETE', `${cmPath('gate-off', 'bad')}${query}`);
      assert.equal(del.status, 500, `delete${query}`);
      assert.equal(del.body.message, parseError());
    }
    // A watch cannot start while the resource holds a corrupt object (kube's cacher is re-initializing).
    const w = await off.request('GET', `${cmPath('gate-off')}?watch=true`);
    assert.equal(w.status, 429);
    assert.equal(w.body.message, 'storage is (re)initializing');
    assert.equal(w.headers['retry-after'], '1');
  } finally {
    await client.delete().key(cmKey('gate-off', 'bad'));
  }
});

test('gate on: GET is the corrupt-object internal error, LIST is StorageReadError naming every corrupt key', async () => {
  await namespace(on, 'reads');
  await configMap(on, 'reads', 'a');
  await configMap(on, 'reads', 'b');
  await configMap(on, 'reads', 'c');
  await corrupt(on, 'reads', 'a');
  await corrupt(on, 'reads', 'c');
  try {
    const rev = (await client.get(cmKey('reads', 'a')).exec()).kvs[0]?.mod_revision;
    const get = await on.request('GET', cmPath('reads', 'a'));
    assert.equal(get.status, 500);
    assert.equal(get.body.reason, 'InternalError');
    assert.equal(
      get.body.message,
      `Internal error occurred: StorageError: corrupt object, Code: 7, Key: ${cmKey('reads', 'a')}, ` +
        `ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=${rev}: ${parseError()}`,
    );
    // A chunk stops once it is full: with limit=1 the read ends at b, before c (as kube-apiserver's does).
    const all = [cmKey('reads', 'a'), cmKey('reads', 'c')];
    const cases: [string, string[]][] = [
      ['', all],
      ['?resourceVersion=0', all],
      ['?labelSelector=x%3Dy', all],
      ['?limit=1', [cmKey('reads', 'a')]],
    ];
    for (const [query, keys] of cases) {
      const list = await on.request('GET', `${cmPath('reads')}${query}`);
      assert.equal(list.status, 500, `list${query}`);
      assert.equal(list.body.reason, 'StorageReadError');
      assert.equal(list.body.message, 'failed to read one or more configmaps from the storage');
      assert.equal(list.body.details.name, 'list');
      assert.equal(list.body.details.kind, 'configmaps');
      assert.deepEqual(
        list.body.details.causes.map((c: any) => [c.reason, c.field]),
        keys.map((k) => ['UnexpectedServerResponse', k]),
        `list${query}`,
      );
      assert.match(list.body.details.causes[0].message, /^StorageError: corrupt object, Code: 7, Key: /);
    }
    // Another namespace's list does not see them; the readable object is still served.
    assert.equal((await on.request('GET', cmPath('default'))).status, 200);
    assert.equal((await on.request('GET', cmPath('reads', 'b'))).status, 200);
    // An update reads through the storage layer, where kube never makes the error a Status.
    const patch = await on.request('PATCH', cmPath('reads', 'a'), {
      rawBody: '{"data":{"k":"w"}}',
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(patch.status, 500);
    assert.equal(patch.body.reason, undefined);
    assert.equal(patch.body.message, `object not decodable revision=${rev}: ${parseError()}`);
    const del = await on.request('DELETE', cmPath('reads', 'a'));
    assert.equal(del.status, 500);
    assert.match(del.body.message, /^Internal error occurred: StorageError: corrupt object/);
  } finally {
    await client.delete().key(cmKey('reads', 'a'));
    await client.delete().key(cmKey('reads', 'c'));
  }
});

test('gate on: a LIST names at most 100 corrupt objects, then says the list is truncated', async () => {
  await namespace(on, 'many');
  const keys = Array.from({ length: 102 }, (_, i) => cmKey('many', `k${String(i).padStart(3, '0')}`));
  try {
    for (const key of keys) await client.put(key).value('garbage');
    const list = await on.request(
      'GET',
      `${cmPath('many')}?resourceVersion=${await latestRevision()}&resourceVersionMatch=Exact`,
    );
    assert.equal(list.status, 500);
    assert.equal(list.body.reason, 'StorageReadError');
    const causes = list.body.details.causes as any[];
    assert.equal(causes.length, 101);
    assert.deepEqual(
      causes.slice(0, 100).map((c) => c.field),
      keys.slice(0, 100),
    );
    assert.deepEqual(causes[100], {
      reason: 'FieldValueTooMany',
      message: 'too many errors, the list is truncated',
    });
  } finally {
    await client.delete().prefix(cmKey('many', ''));
  }
});

/** The store's current revision, as a list of the namespaces reports it. */
async function latestRevision(): Promise<string> {
  const r = await on.request('GET', '/api/v1/namespaces');
  return r.body.metadata.resourceVersion as string;
}

test('gate on: the option stands alone: each companion option is 422 naming it', async () => {
  await namespace(on, 'companions');
  await configMap(on, 'companions', 'x');
  const cases: [string, object | undefined, string][] = [
    ['dryRun=All', undefined, 'dryRun'],
    ['', { propagationPolicy: 'Background' }, 'propagationPolicy'],
    ['orphanDependents=false', undefined, 'orphanDependents'],
    ['gracePeriodSeconds=0', undefined, 'gracePeriodSeconds'],
    ['', { preconditions: { uid: 'u' } }, 'preconditions'],
  ];
  for (const [query, body, name] of cases) {
    const r = await on.request('DELETE', `${cmPath('companions', 'x')}?${option}=true&${query}`, {
      ...(body === undefined ? {} : { body: { kind: 'DeleteOptions', apiVersion: 'v1', ...body } }),
    });
    assert.equal(r.status, 422, name);
    assert.equal(r.body.reason, 'Invalid');
    assert.equal(
      r.body.message,
      `DeleteOptions.meta.k8s.io "" is invalid: ${option}: Invalid value: true: cannot be set together with .${name}`,
    );
  }
  // In the body too, several at once.
  const r = await on.request('DELETE', cmPath('companions', 'x'), {
    body: { kind: 'DeleteOptions', apiVersion: 'v1', [option]: true, dryRun: ['All'], gracePeriodSeconds: 1 },
  });
  assert.equal(r.status, 422);
  assert.deepEqual(
    r.body.details.causes.map((c: any) => c.message),
    [
      'Invalid value: true: cannot be set together with .dryRun',
      'Invalid value: true: cannot be set together with .gracePeriodSeconds',
    ],
  );
  // A protobuf DeleteOptions carries the option as field 6.
  const proto = await on.request('DELETE', cmPath('companions', 'x'), {
    rawBody: encodeObject('k8s.io', {
      apiVersion: 'meta.k8s.io/v1',
      kind: 'DeleteOptions',
      [option]: true,
      gracePeriodSeconds: 0,
    }),
    headers: { 'content-type': 'application/vnd.kubernetes.protobuf' },
  });
  assert.equal(proto.status, 422, proto.text);
  assert.match(proto.text, /cannot be set together with \.gracePeriodSeconds/);
  assert.equal((await on.request('DELETE', `${cmPath('companions', 'x')}?${option}=maybe`)).status, 400);
  assert.equal((await on.request('GET', cmPath('companions', 'x'))).status, 200);
});

test('gate on: a readable or missing object with the option is 422; deletecollection with it is 422', async () => {
  await namespace(on, 'readable');
  await configMap(on, 'readable', 'fine');
  for (const name of ['fine', 'missing']) {
    const r = await on.request('DELETE', `${cmPath('readable', name)}?${option}=true`);
    assert.equal(r.status, 422, name);
    assert.equal(
      r.body.message,
      `configmaps "${name}" is invalid: ${option}: Invalid value: true: is exclusively used to delete corrupt object(s), try again by removing this option`,
    );
  }
  assert.equal((await on.request('GET', cmPath('readable', 'fine'))).status, 200);
  const all = await on.request('DELETE', `${cmPath('readable')}?${option}=true`);
  assert.equal(all.status, 422);
  assert.equal(
    all.body.message,
    `DeleteOptions.meta.k8s.io "" is invalid: ${option}: Invalid value: true: is not allowed with DELETECOLLECTION, try again after removing the option`,
  );
  assert.equal((await on.request('GET', cmPath('readable', 'fine'))).status, 200);
});

test('gate on: unsafe delete needs unsafe-delete-ignore-read-errors; then the key is gone and watches resume', async () => {
  await namespace(on, 'unsafe');
  await configMap(on, 'unsafe', 'keep');
  const created = await configMap(on, 'unsafe', 'broken', { finalizers: ['example.com/hold'] });
  const asUser = { headers: { authorization: `Bearer ${userToken}` }, anonymous: true };
  const grant = async (verbs: string[]): Promise<void> => {
    const name = `croc-${verbs.join('-')}`;
    const role = await on.request('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/unsafe/roles', {
      body: { metadata: { name }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs }] },
    });
    assert.equal(role.status, 201, role.text);
    const binding = await on.request(
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/unsafe/rolebindings',
      {
        body: {
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: [{ kind: 'User', name: 'croc' }],
        },
      },
    );
    assert.equal(binding.status, 201, binding.text);
  };
  await grant(['get', 'list', 'delete']);
  // A watch open when the object turns corrupt is ended (kube's cacher terminates its watchers).
  const w = watch(on, `${cmPath('unsafe')}?watch=true&resourceVersion=${created.metadata.resourceVersion}`);
  assert.equal(await w.status, 200);
  await corrupt(on, 'unsafe', 'broken');
  await w.ended;

  const unsafePath = `${cmPath('unsafe', 'broken')}?${option}=true`;
  let denied: any;
  for (let i = 0; i < 50; i++) {
    denied = await on.request('DELETE', unsafePath, asUser);
    if (denied.status === 403 && String(denied.body.message).includes('not permitted')) break;
    await new Promise((resolve) => setTimeout(resolve, 100)); // the role binding reaches the RBAC cache
  }
  assert.equal(denied.status, 403, denied.text);
  assert.equal(denied.body.reason, 'Forbidden');
  // RBAC gives no reason when no rule matches, so kube's message ends with an empty reason.
  assert.equal(
    denied.body.message,
    'configmaps "broken" is forbidden: not permitted to do "unsafe-delete-ignore-read-errors", reason: ',
  );
  await grant(['unsafe-delete-ignore-read-errors']);
  let done: any;
  for (let i = 0; i < 50; i++) {
    done = await on.request('DELETE', unsafePath, asUser);
    if (done.status !== 403) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.kind, 'Status');
  assert.equal(done.body.status, 'Success');
  assert.deepEqual(done.body.details, { name: 'broken', kind: 'ConfigMap' });
  // Gone from the store despite its finalizer; reads and watches work again.
  assert.equal((await client.get(cmKey('unsafe', 'broken')).exec()).kvs.length, 0);
  assert.equal((await on.request('GET', cmPath('unsafe', 'broken'))).status, 404);
  const list = await on.request('GET', cmPath('unsafe'));
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.items.map((o: any) => o.metadata.name),
    ['keep'],
  );
  // Resuming from before the reset is 410 (the client lists again); a new watch sees the current state.
  const old = watch(on, `${cmPath('unsafe')}?watch=true&resourceVersion=${created.metadata.resourceVersion}`);
  const expired = await old.next();
  assert.equal(expired.type, 'ERROR');
  assert.equal(expired.object.code, 410);
  old.close();
  const fresh = watch(on, `${cmPath('unsafe')}?watch=true`);
  assert.equal(await fresh.status, 200);
  const added = await fresh.next();
  assert.deepEqual([added.type, added.object.metadata.name], ['ADDED', 'keep']);
  fresh.close();
});

test('kubectl 1.32: get reports the corrupt object, list the StorageReadError; delete --raw removes it', async () => {
  await namespace(on, 'kubectl');
  await configMap(on, 'kubectl', 'bad');
  await corrupt(on, 'kubectl', 'bad');
  const get = await runKubectl(on.kubeconfig, ['get', 'configmap', 'bad', '-n', 'kubectl']);
  assert.notEqual(get.code, 0);
  assert.match(
    get.stderr,
    /Error from server \(InternalError\): Internal error occurred: StorageError: corrupt object/,
  );
  const list = await runKubectl(on.kubeconfig, ['get', 'configmaps', '-n', 'kubectl']);
  assert.notEqual(list.code, 0);
  assert.match(list.stderr, /failed to read one or more configmaps from the storage/);
  // kubectl 1.32's delete has no flag for the option: the raw DELETE carries it.
  const del = await runKubectl(on.kubeconfig, [
    'delete',
    '--raw',
    `${cmPath('kubectl', 'bad')}?${option}=true`,
  ]);
  assert.equal(del.code, 0, del.stderr);
  assert.match(del.stdout, /"status":"Success"/);
  const after = await runKubectl(on.kubeconfig, ['get', 'configmaps', '-n', 'kubectl', '-o', 'name']);
  assert.equal(after.code, 0, after.stderr);
  assert.equal(after.stdout, '');
});
