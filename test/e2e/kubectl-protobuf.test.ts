/* eslint-disable @typescript-eslint/no-explicit-any -- kubectl JSON output is read loosely in tests */
// Proves the real kubectl 1.32, which sends typed objects as protobuf (application/vnd.kubernetes.protobuf), works
// against the server with --group-domain=k8s.io (create namespace/configmap/secret/serviceaccount/deployment/
// service, run, scale, drain), and that the server answers in protobuf when asked: get, list, create, Status errors
// and watch streams, decoded here from the raw bytes; JSON when JSON comes first; 406 and 400 where due.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import {
  decodeEnvelope,
  decodeMessage,
  decodeObject,
  encodeObject,
  protobufPrefix,
} from '../../src/apimachinery/protobuf.js';
import { rawRequest, startTestServer, type RawResponse, type TestServer } from './harness.js';
import { ensureKubectl, kubectlOk, runKubectl, type KubectlResult } from '../support/kubectl.js';

const protobufType = 'application/vnd.kubernetes.protobuf';

let server: TestServer;
const kubectl = (...args: string[]): Promise<KubectlResult> => runKubectl(server.kubeconfig, args);
const ok = (...args: string[]): Promise<string> => kubectlOk(server.kubeconfig, args);

async function getJson(...args: string[]): Promise<Record<string, any>> {
  return JSON.parse(await ok('get', ...args, '-o', 'json')) as Record<string, any>;
}

/** Decodes a protobuf response body (checking the prefix) into its JSON form. */
function decoded(response: RawResponse, kind: string, group = '', version = 'v1'): Record<string, any> {
  assert.deepEqual([...response.body.subarray(0, 4)], [...protobufPrefix], 'the k8s\\0 prefix');
  return decodeObject('k8s.io', response.body, { group, version, kind });
}

before(async () => {
  ensureKubectl();
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

test('run, create deployment, create service clusterip, scale to zero, drain (Eviction with DeleteOptions)', async () => {
  assert.match(await ok('run', 'web', '--image=nginx', '--port=80', '--labels=app=web'), /pod\/web created/);
  const pod = await getJson('pod', 'web');
  assert.equal(pod.spec.containers[0].image, 'nginx');
  assert.equal(pod.spec.containers[0].ports[0].containerPort, 80);
  assert.deepEqual(pod.metadata.labels, { app: 'web' });
  assert.match(
    await ok('create', 'deployment', 'dep', '--image=nginx', '--replicas=2'),
    /deployment.apps\/dep created/,
  );
  const deployment = await getJson('deployment', 'dep');
  assert.equal(deployment.spec.replicas, 2);
  assert.equal(deployment.spec.template.spec.containers[0].image, 'nginx');
  assert.match(await ok('create', 'service', 'clusterip', 'svc', '--tcp=80:8080'), /service\/svc created/);
  const service = await getJson('service', 'svc');
  assert.deepEqual(
    service.spec.ports.map((p: any) => [p.port, p.targetPort]),
    [[80, 8080]],
  );
  assert.match(service.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/);
  assert.match(await ok('scale', 'deployment', 'dep', '--replicas=0'), /deployment.apps\/dep scaled/);
  assert.equal((await getJson('deployment', 'dep')).spec.replicas, 0);

  const node = JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  const onNode = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'onnode', namespace: 'default' },
    spec: { nodeName: 'n1', terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'nginx' }] },
  });
  assert.equal(
    (await rawRequest(server, 'POST', '/api/v1/nodes', { 'content-type': 'application/json' }, node)).status,
    201,
  );
  assert.equal(
    (
      await rawRequest(
        server,
        'POST',
        '/api/v1/namespaces/default/pods',
        { 'content-type': 'application/json' },
        onNode,
      )
    ).status,
    201,
  );
  const drained = await ok('drain', 'n1', '--force', '--grace-period=0', '--timeout=15s');
  assert.match(drained, /pod\/onnode evicted/);
  assert.match(drained, /node\/n1 drained/);
  assert.equal((await getJson('node', 'n1')).spec.unschedulable, true);
  assert.notEqual((await kubectl('get', 'pod', 'onnode')).code, 0);
});

test('responses in protobuf: get, list, create, Status errors, metadata view; JSON when JSON comes first; 406 for Table', async () => {
  const accept = { accept: `${protobufType}, application/json` };
  const got = await rawRequest(server, 'GET', '/api/v1/namespaces/default', accept);
  assert.equal(got.status, 200);
  assert.equal(got.contentType, protobufType);
  const namespace = decoded(got, 'Namespace');
  assert.equal(namespace.apiVersion, 'v1');
  assert.equal(namespace.kind, 'Namespace');
  assert.equal(namespace.metadata.name, 'default');
  assert.match(namespace.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  const list = await rawRequest(server, 'GET', '/api/v1/namespaces', accept);
  assert.equal(list.contentType, protobufType);
  const namespaces = decoded(list, 'NamespaceList');
  assert.equal(namespaces.kind, 'NamespaceList');
  assert.ok(namespaces.items.some((n: any) => n.metadata.name === 'kube-system'));
  assert.match(namespaces.metadata.resourceVersion, /^\d+$/);

  // A protobuf body in, a protobuf object out: the round trip keeps bytes and labels.
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'raw-secret', labels: { via: 'protobuf' } },
    data: { bin: Buffer.from([0, 1, 2, 250]).toString('base64') },
    type: 'Opaque',
  };
  const created = await rawRequest(
    server,
    'POST',
    '/api/v1/namespaces/default/secrets',
    { ...accept, 'content-type': protobufType },
    encodeObject('k8s.io', secret),
  );
  assert.equal(created.status, 201);
  const createdSecret = decoded(created, 'Secret');
  assert.deepEqual(createdSecret.data, secret.data);
  assert.deepEqual(createdSecret.metadata.labels, { via: 'protobuf' });
  assert.ok(createdSecret.metadata.uid);

  const missing = await rawRequest(server, 'GET', '/api/v1/namespaces/default/configmaps/nope', accept);
  assert.equal(missing.status, 404);
  assert.equal(missing.contentType, protobufType);
  const status = decoded(missing, 'Status');
  assert.equal(status.kind, 'Status');
  assert.equal(status.reason, 'NotFound');
  assert.equal(status.code, 404);
  assert.equal(status.message, 'configmaps "nope" not found');

  const json = await rawRequest(server, 'GET', '/api/v1/namespaces/default', {
    accept: `application/json, ${protobufType}`,
  });
  assert.equal(json.contentType, 'application/json');
  assert.equal(JSON.parse(json.body.toString()).metadata.name, 'default');

  // The metadata view (client-go's metadata informers) in protobuf.
  const partial = await rawRequest(server, 'GET', '/api/v1/namespaces', {
    accept: `${protobufType};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json`,
  });
  assert.equal(partial.status, 200);
  assert.match(partial.contentType, /^application\/vnd\.kubernetes\.protobuf;as=PartialObjectMetadataList/);
  const metadataList = decoded(partial, 'PartialObjectMetadataList', 'meta.k8s.io');
  assert.equal(metadataList.kind, 'PartialObjectMetadataList');
  assert.ok(metadataList.items.some((i: any) => i.metadata.name === 'default'));

  const table = await rawRequest(server, 'GET', '/api/v1/namespaces/default', {
    accept: `${protobufType};as=Table;v=v1;g=meta.k8s.io`,
  });
  assert.equal(table.status, 406);
});

test('bad protobuf bodies are refused with the Status kube-apiserver gives', async () => {
  const json = { 'content-type': protobufType, accept: 'application/json' };
  const wrongPrefix = await rawRequest(server, 'POST', '/api/v1/namespaces', json, '{"kind":"Namespace"}');
  assert.equal(wrongPrefix.status, 400);
  const status = JSON.parse(wrongPrefix.body.toString());
  assert.equal(status.reason, 'BadRequest');
  assert.equal(
    status.message,
    'the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a ' +
      'protobuf message, expected prefix [107 56 115 0] ({"kind":"Namespace"})',
  );
  // A good envelope around bytes that are not a Namespace.
  const bad = Buffer.concat([
    protobufPrefix,
    Buffer.from('0a0f0a02763112094e616d657370616365' + '1203' + '0a050a' + '1a002200', 'hex'),
  ]);
  const undecodable = await rawRequest(server, 'POST', '/api/v1/namespaces', json, bad);
  assert.equal(undecodable.status, 400);
  assert.match(
    JSON.parse(undecodable.body.toString()).message,
    /^Namespace in version "v1" cannot be handled as a Namespace: /,
  );
});

test('watch streams in protobuf: length-prefixed frames of WatchEvent envelopes', async () => {
  const listed = await rawRequest(server, 'GET', '/api/v1/namespaces/default/configmaps', {
    accept: 'application/json',
  });
  const resourceVersion = String(JSON.parse(listed.body.toString()).metadata.resourceVersion);
  const frames: Buffer[] = [];
  let contentType = '';
  const done = new Promise<void>((resolvePromise, reject) => {
    const req = httpsRequest(
      `${server.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${resourceVersion}&timeoutSeconds=10`,
      {
        headers: { accept: `${protobufType}, application/json` },
        ca: server.admin.ca,
        cert: server.admin.cert,
        key: server.admin.key,
        agent: false,
      },
      (res) => {
        contentType = String(res.headers['content-type'] ?? '');
        let buffer = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          buffer = Buffer.concat([buffer, chunk]);
          while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
            const length = buffer.readUInt32BE(0);
            frames.push(buffer.subarray(4, 4 + length));
            buffer = buffer.subarray(4 + length);
          }
          if (frames.length >= 2) {
            req.destroy();
            resolvePromise();
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', (error) => (frames.length >= 2 ? resolvePromise() : reject(error)));
    req.setTimeout(15_000, () => req.destroy(new Error('watch timed out')));
    req.end();
  });
  // Wait until the stream is open, then cause one event.
  await new Promise((r) => setTimeout(r, 300));
  await ok('create', 'configmap', 'watched', '--from-literal=k=v');
  await ok('label', 'configmap', 'watched', 'step=two');
  await done;
  assert.equal(contentType, `${protobufType};stream=watch`);
  const events = frames.map((frame) => {
    const outer = decodeEnvelope(frame);
    assert.equal(outer.kind, 'WatchEvent');
    return decodeMessage('meta.v1.WatchEvent', outer.raw) as Record<string, any>;
  });
  assert.deepEqual(
    events.map((e) => [e.type, e.object.kind, e.object.metadata.name]),
    [
      ['ADDED', 'ConfigMap', 'watched'],
      ['MODIFIED', 'ConfigMap', 'watched'],
    ],
  );
  assert.deepEqual(events[0]?.object.data, { k: 'v' });
  assert.equal(events[1]?.object.metadata.labels.step, 'two');
});
