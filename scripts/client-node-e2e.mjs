// Drives a running Stoa server (started with --group-domain=k8s.io) with the unmodified @kubernetes/client-node:
// typed create/get/list/patch/delete, the Watch helper and an informer (list, then watch from the list's
// resourceVersion). Plain JavaScript run as a child process by test/e2e/client-node.test.ts, so the library's
// own @types/node (22) never meets the project's compilation. Usage: node client-node-e2e.mjs KUBECONFIG
// Prints one line per passed step; exits non-zero on the first failure.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';

const kubeconfigPath = process.argv[2];
assert.ok(kubeconfigPath, 'usage: client-node-e2e.mjs KUBECONFIG');
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfigPath);
const core = kc.makeApiClient(k8s.CoreV1Api);
const apps = kc.makeApiClient(k8s.AppsV1Api);
const namespace = 'client-node';
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const strategicPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
const stepTimeoutMs = 15_000;

function pass(step) {
  console.log(`ok ${step}`);
}

/** Resolves when `predicate` holds over `events`, polled as events arrive; rejects after stepTimeoutMs. */
function until(events, predicate, what) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      if (predicate(events)) resolve();
      else if (Date.now() - started > stepTimeoutMs)
        reject(new Error(`timed out waiting for ${what}; saw ${JSON.stringify(events)}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

async function main() {
  const ns = await core.createNamespace({ body: { metadata: { name: namespace } } });
  assert.equal(ns.metadata.name, namespace);
  assert.ok(ns.metadata.uid);
  pass('create namespace');

  // The Watch helper, started before the writes so that it sees each of them.
  const watchEvents = [];
  let watchDone;
  const watchEnded = new Promise((resolve) => (watchDone = resolve));
  const watchAbort = await new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { allowWatchBookmarks: true },
    (phase, obj) => watchEvents.push({ phase, name: obj?.metadata?.name, data: obj?.data }),
    (err) => watchDone(err),
  );

  const created = await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'one', labels: { app: 'web' } }, data: { key: 'a' } },
  });
  assert.equal(created.metadata.name, 'one');
  assert.equal(created.data.key, 'a');
  assert.match(created.metadata.resourceVersion, /^\d+$/);
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'two', labels: { app: 'db' } }, data: { key: 'b' } },
  });
  pass('create');

  const read = await core.readNamespacedConfigMap({ name: 'one', namespace });
  assert.equal(read.data.key, 'a');
  assert.equal(read.metadata.uid, created.metadata.uid);
  pass('get');

  const all = await core.listNamespacedConfigMap({ namespace });
  assert.deepEqual(all.items.map((i) => i.metadata.name).sort(), ['one', 'two']);
  assert.match(all.metadata.resourceVersion, /^\d+$/);
  const web = await core.listNamespacedConfigMap({ namespace, labelSelector: 'app=web' });
  assert.deepEqual(
    web.items.map((i) => i.metadata.name),
    ['one'],
  );
  const page = await core.listNamespacedConfigMap({ namespace, limit: 1 });
  assert.equal(page.items.length, 1);
  assert.ok(page.metadata._continue, 'a continue token on the first chunk');
  const rest = await core.listNamespacedConfigMap({
    namespace,
    limit: 1,
    _continue: page.metadata._continue,
  });
  assert.equal(rest.items.length, 1);
  assert.notEqual(rest.items[0].metadata.name, page.items[0].metadata.name);
  const everywhere = await core.listConfigMapForAllNamespaces({
    fieldSelector: `metadata.namespace=${namespace}`,
  });
  assert.equal(everywhere.items.length, 2);
  pass('list (selectors, chunks, all namespaces)');

  const patched = await core.patchNamespacedConfigMap(
    { name: 'one', namespace, body: { data: { key: 'patched', extra: 'x' } } },
    mergePatch,
  );
  assert.equal(patched.data.key, 'patched');
  assert.equal(patched.data.extra, 'x');
  pass('merge patch');

  const replaced = await core.replaceNamespacedConfigMap({
    name: 'two',
    namespace,
    body: { ...(await core.readNamespacedConfigMap({ name: 'two', namespace })), data: { key: 'replaced' } },
  });
  assert.equal(replaced.data.key, 'replaced');
  pass('replace');

  await assert.rejects(core.readNamespacedConfigMap({ name: 'missing', namespace }), (err) => {
    assert.equal(err.code, 404);
    const status = JSON.parse(err.body);
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'NotFound');
    assert.equal(status.message, 'configmaps "missing" not found');
    return true;
  });
  await assert.rejects(
    core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'one' } } }),
    (err) => err.code === 409 && JSON.parse(err.body).reason === 'AlreadyExists',
  );
  pass('errors (404, 409) as ApiException with a Status body');

  await core.deleteNamespacedConfigMap({ name: 'two', namespace });
  await assert.rejects(core.readNamespacedConfigMap({ name: 'two', namespace }), (err) => err.code === 404);
  pass('delete');

  await until(
    watchEvents,
    (evs) => {
      const seen = evs.filter((e) => e.phase !== 'BOOKMARK').map((e) => `${e.phase} ${e.name}`);
      return (
        seen.includes('ADDED one') &&
        seen.includes('ADDED two') &&
        seen.includes('MODIFIED one') &&
        seen.includes('MODIFIED two') &&
        seen.includes('DELETED two')
      );
    },
    'the Watch helper to see ADDED, MODIFIED, DELETED',
  );
  const modifiedOne = watchEvents.find((e) => e.phase === 'MODIFIED' && e.name === 'one');
  assert.equal(modifiedOne.data.key, 'patched');
  watchAbort.abort();
  await watchEnded;
  pass('Watch helper');

  // An informer: lists, then watches from the list's resourceVersion, and keeps a cache.
  const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace }),
  );
  const informed = [];
  informer.on('add', (o) => informed.push(`add ${o.metadata.name}`));
  informer.on('update', (o) => informed.push(`update ${o.metadata.name} ${o.data?.key}`));
  informer.on('delete', (o) => informed.push(`delete ${o.metadata.name}`));
  const informerErrors = [];
  informer.on('error', (err) => informerErrors.push(String(err)));
  await informer.start();
  await until(informed, (evs) => evs.includes('add one'), 'the informer to list "one"');
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'three' }, data: { key: 'c' } },
  });
  await core.patchNamespacedConfigMap(
    { name: 'three', namespace, body: { data: { key: 'd' } } },
    strategicPatch,
  );
  await core.deleteNamespacedConfigMap({ name: 'one', namespace });
  await until(
    informed,
    (evs) => evs.includes('add three') && evs.includes('update three d') && evs.includes('delete one'),
    'the informer to see add, update, delete',
  );
  assert.deepEqual(
    informer
      .list(namespace)
      .map((o) => o.metadata.name)
      .sort(),
    ['three'],
  );
  assert.equal(informer.get('three', namespace).data.key, 'd');
  assert.deepEqual(informerErrors, []);
  await informer.stop();
  pass('informer (list, then watch from its resourceVersion)');

  const deployment = await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] },
        },
      },
    },
  });
  assert.equal(deployment.spec.replicas, 1, 'defaulted');
  assert.equal(deployment.spec.strategy.type, 'RollingUpdate', 'defaulted');
  const scaled = await apps.patchNamespacedDeploymentScale(
    { name: 'web', namespace, body: { spec: { replicas: 3 } } },
    mergePatch,
  );
  assert.equal(scaled.spec.replicas, 3);
  pass('apps/v1 Deployment with defaults and scale');

  await core.deleteNamespace({ name: namespace });
  pass('delete namespace');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err?.stack ?? err);
    if (err?.body) console.error(err.body);
    process.exit(1);
  },
);
