/* eslint-disable @typescript-eslint/no-explicit-any -- decoded CBOR bodies are read loosely in tests */
// Proves CBOR end to end against a real server with --feature-gates=CBORServingAndStorage=true: create, get, list,
// update, status and scale updates, delete with CBOR DeleteOptions, Status errors in CBOR, a watch as an
// application/cbor-seq decoded frame by frame, server-side apply in apply-patch+cbor (create, 409 conflict, force),
// malformed and duplicate-key bodies as 400 with kube-apiserver's words, and the real kubectl 1.32 with client-go's
// CBOR gates listing, watching and deleting in CBOR; and that with the gate off CBOR is 415 and 406 as before.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { Decoder, Encoder } from 'cbor-x';
import { decodeCbor, encodeCbor } from '../../src/apimachinery/cbor.js';
import { rawRequest, startTestServer, type TestServer } from './harness.js';
import { ensureKubectl, kubectlPath } from '../support/kubectl.js';

const cbor = 'application/cbor';
const selfDescribed = 'd9d9f7';
let server: TestServer;
let gateOff: TestServer;

/** Another client's encoder: text strings, two-byte map heads (what kube-apiserver accepts from anyone). */
const otherClient = new Encoder({ useRecords: false, mapsAsObjects: true, useFloat32: 0 });
/** An independent reader, to find where one item of a CBOR sequence ends. */
const oracle = new Decoder({ mapsAsObjects: false, useRecords: false });

/** A CBOR request with a CBOR answer; the answer must carry the self-described prefix and decode. */
async function call(
  method: string,
  path: string,
  body?: unknown,
  contentType = cbor,
): Promise<{ status: number; contentType: string; object: any }> {
  const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : encodeCbor(body);
  const headers = { accept: cbor, ...(bytes === undefined ? {} : { 'content-type': contentType }) };
  const response = await rawRequest(server, method, path, headers, bytes);
  assert.equal(response.contentType, cbor, `${method} ${path}: ${response.body.toString()}`);
  assert.equal(response.body.subarray(0, 3).toString('hex'), selfDescribed);
  return {
    status: response.status,
    contentType: response.contentType,
    object: decodeCbor(response.body).value,
  };
}

before(async () => {
  ensureKubectl();
  [server, gateOff] = await Promise.all([
    startTestServer(['--group-domain', 'k8s.io', '--feature-gates', 'CBORServingAndStorage=true']),
    startTestServer(['--group-domain', 'k8s.io']),
  ]);
});

after(async () => {
  await Promise.all([server?.stop(), gateOff?.stop()]);
});

const cms = '/api/v1/namespaces/default/configmaps';

test('create, get, list, update and delete in CBOR both ways (kube-style and other encoders)', async () => {
  const created = await call('POST', cms, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'one', labels: { app: 'cbor' } },
    data: { a: '1' },
  });
  assert.equal(created.status, 201);
  assert.equal(created.object.metadata.name, 'one');
  assert.equal(created.object.kind, 'ConfigMap');
  // A client that writes text strings and non-shortest heads is read as well.
  const second = otherClient.encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two' } });
  assert.equal((await call('POST', cms, second)).status, 201);

  const got = await call('GET', `${cms}/one`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.object.data, { a: '1' });
  const list = await call('GET', `${cms}?labelSelector=app%3Dcbor`);
  assert.equal(list.object.kind, 'ConfigMapList');
  assert.deepEqual(
    list.object.items.map((i: any) => i.metadata.name),
    ['one'],
  );
  assert.match(list.object.metadata.resourceVersion, /^\d+$/);

  const updated = await call('PUT', `${cms}/one`, { ...got.object, data: { a: '2', b: 'x' } });
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.object.data, { a: '2', b: 'x' });
  assert.notEqual(updated.object.metadata.resourceVersion, got.object.metadata.resourceVersion);

  // DeleteOptions in CBOR: a failed precondition is a 409 Status in CBOR; dryRun keeps the object.
  const wrongUid = await call('DELETE', `${cms}/one`, {
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    preconditions: { uid: 'not-the-uid' },
  });
  assert.equal(wrongUid.status, 409);
  assert.equal(wrongUid.object.kind, 'Status');
  assert.equal(wrongUid.object.reason, 'Conflict');
  const dry = await call('DELETE', `${cms}/one`, {
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    dryRun: ['All'],
  });
  assert.equal(dry.status, 200);
  assert.equal((await call('GET', `${cms}/one`)).status, 200);
  const deleted = await call('DELETE', `${cms}/two`, {
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    preconditions: { uid: (await call('GET', `${cms}/two`)).object.metadata.uid },
  });
  assert.equal(deleted.status, 200);
  const missing = await call('GET', `${cms}/two`);
  assert.equal(missing.status, 404);
  assert.equal(missing.object.message, 'configmaps "two" not found');
});

test('a Secret: Go []byte data as tag 22 bytes both ways, base64 in its JSON form', async () => {
  const password = Buffer.from('hunter2').toString('base64');
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { password } };
  const created = await call('POST', '/api/v1/namespaces/default/secrets', secret);
  assert.equal(created.status, 201);
  assert.deepEqual(created.object.data, { password });
  const asJson = await rawRequest(server, 'GET', '/api/v1/namespaces/default/secrets/s', {
    accept: 'application/json',
  });
  assert.deepEqual(JSON.parse(asJson.body.toString()).data, { password });
  const asCbor = await rawRequest(server, 'GET', '/api/v1/namespaces/default/secrets/s', { accept: cbor });
  const tagged = Buffer.concat([Buffer.from('d647', 'hex'), Buffer.from('hunter2')]);
  assert.ok(asCbor.body.includes(tagged), 'the password is tag 22 over its 7 raw bytes');
});

test('status and scale sub-resources take CBOR bodies; the metadata view is served, Table is not', async () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
    },
  };
  const deps = '/apis/apps/v1/namespaces/default/deployments';
  assert.equal((await call('POST', deps, deployment)).status, 201);
  const scale = await call('GET', `${deps}/web/scale`);
  assert.equal(scale.object.kind, 'Scale');
  const scaled = await call('PUT', `${deps}/web/scale`, { ...scale.object, spec: { replicas: 3 } });
  assert.equal(scaled.status, 200);
  assert.equal(scaled.object.spec.replicas, 3);
  const current = (await call('GET', `${deps}/web`)).object;
  assert.equal(current.spec.replicas, 3);
  const status = await call('PUT', `${deps}/web/status`, { ...current, status: { observedGeneration: 7 } });
  assert.equal(status.status, 200);
  assert.equal(status.object.status.observedGeneration, 7);

  const metaType = 'application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
  const partial = await rawRequest(server, 'GET', deps, { accept: metaType });
  assert.equal(partial.status, 200);
  assert.equal(partial.contentType, metaType);
  const view = decodeCbor(partial.body).value as any;
  assert.equal(view.kind, 'PartialObjectMetadataList');
  assert.equal(view.items[0].metadata.name, 'web');
  assert.equal(view.items[0].spec, undefined);

  const table = 'application/cbor;as=Table;g=meta.k8s.io;v=v1';
  const refused = await rawRequest(server, 'GET', deps, { accept: table });
  assert.equal(refused.status, 406);
  assert.equal(
    JSON.parse(refused.body.toString()).message,
    'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/cbor',
  );
  const fallback = await rawRequest(server, 'GET', deps, { accept: `${table}, application/json` });
  assert.equal(fallback.contentType, 'application/json');
});

/** Splits an application/cbor-seq stream into its data items as they arrive. */
function watchCbor(path: string): {
  contentType: Promise<string>;
  next: () => Promise<any>;
  close: () => void;
} {
  const frames: Buffer[] = [];
  const waiters: ((frame: Buffer) => void)[] = [];
  let pending = Buffer.alloc(0);
  let resolveType: (type: string) => void = () => {};
  const contentType = new Promise<string>((r) => (resolveType = r));
  const push = (frame: Buffer): void => {
    const waiter = waiters.shift();
    if (waiter !== undefined) waiter(frame);
    else frames.push(frame);
  };
  const req = httpsRequest(
    `${server.url}${path}`,
    {
      headers: { accept: cbor },
      ca: server.admin.ca,
      cert: server.admin.cert,
      key: server.admin.key,
      agent: false,
    },
    (res) => {
      resolveType(String(res.headers['content-type']));
      res.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        for (let end = itemEnd(pending); end !== undefined; end = itemEnd(pending)) {
          push(pending.subarray(0, end));
          pending = pending.subarray(end);
        }
      });
    },
  );
  req.on('error', () => {});
  req.end();
  return {
    contentType,
    next: () =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no watch event in 10 s')), 10_000);
        const take = (frame: Buffer): void => {
          clearTimeout(timer);
          assert.equal(frame.subarray(0, 3).toString('hex'), selfDescribed, 'each event is self-described');
          resolve(decodeCbor(frame).value);
        };
        const frame = frames.shift();
        if (frame !== undefined) take(frame);
        else waiters.push(take);
      }),
    close: () => req.destroy(),
  };
}

/** The end of the first data item, when it is complete: the shortest prefix cbor-x reads as one item. */
function itemEnd(bytes: Buffer): number | undefined {
  for (let end = 1; end <= bytes.length; end++) {
    try {
      oracle.decode(bytes.subarray(0, end));
      return end;
    } catch {
      // not complete yet
    }
  }
  return undefined;
}

test('a watch asked for in application/cbor is an application/cbor-seq of WatchEvents', async () => {
  const rv = (await call('GET', cms)).object.metadata.resourceVersion as string;
  const stream = watchCbor(`${cms}?watch=true&resourceVersion=${rv}&fieldSelector=metadata.name%3Dwatched`);
  try {
    assert.equal(await stream.contentType, 'application/cbor-seq');
    await call('POST', cms, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'watched' } });
    const added = await stream.next();
    assert.equal(added.type, 'ADDED');
    assert.equal(added.object.metadata.name, 'watched');
    const got = (await call('GET', `${cms}/watched`)).object;
    await call('PUT', `${cms}/watched`, { ...got, data: { k: 'v' } });
    const modified = await stream.next();
    assert.equal(modified.type, 'MODIFIED');
    assert.deepEqual(modified.object.data, { k: 'v' });
    await call('DELETE', `${cms}/watched`);
    assert.equal((await stream.next()).type, 'DELETED');
  } finally {
    stream.close();
  }
});

test('apply-patch+cbor: creates, conflicts with another manager (409), force takes ownership', async () => {
  const intent = (value: string): Buffer =>
    encodeCbor({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied' }, data: { key: value } });
  const apply = 'application/apply-patch+cbor';
  const created = await call('PATCH', `${cms}/applied?fieldManager=alice`, intent('a'), apply);
  assert.equal(created.status, 201);
  assert.deepEqual(created.object.data, { key: 'a' });
  assert.equal(created.object.metadata.managedFields[0].manager, 'alice');
  assert.equal(created.object.metadata.managedFields[0].operation, 'Apply');

  const conflict = await call('PATCH', `${cms}/applied?fieldManager=bob`, intent('b'), apply);
  assert.equal(conflict.status, 409);
  assert.equal(conflict.object.reason, 'Conflict');
  assert.equal(conflict.object.message, 'Apply failed with 1 conflict: conflict with "alice": .data.key');

  const forced = await call('PATCH', `${cms}/applied?fieldManager=bob&force=true`, intent('b'), apply);
  assert.equal(forced.status, 200);
  assert.deepEqual(forced.object.data, { key: 'b' });
  assert.deepEqual(
    forced.object.metadata.managedFields.map((f: any) => f.manager),
    ['bob'],
  );
});

test('malformed CBOR and duplicate keys are 400 with kube-apiserver words; CBOR has no duplicate warnings', async () => {
  const truncated = await call('POST', cms, Buffer.from('d9d9f7a161', 'hex'));
  assert.equal(truncated.status, 400);
  assert.equal(truncated.object.reason, 'BadRequest');
  assert.equal(
    truncated.object.message,
    'the object provided is unrecognized (must be of type ConfigMap): unable to determine group/version/kind: unexpected EOF (d9d9f7a161)',
  );
  // apiVersion and kind can be read, the duplicate is further down: the kind is named.
  const nested = Buffer.concat([
    Buffer.from('d9d9f7a4', 'hex'),
    encodeCbor('apiVersion').subarray(3),
    encodeCbor('v1').subarray(3),
    encodeCbor('kind').subarray(3),
    encodeCbor('ConfigMap').subarray(3),
    encodeCbor('metadata').subarray(3),
    encodeCbor({ name: 'dup' }).subarray(3),
    encodeCbor('data').subarray(3),
    Buffer.from('a2 4161 4131 4161 4132'.replace(/ /g, ''), 'hex'),
  ]);
  const duplicate = await call('POST', `${cms}?fieldValidation=Ignore`, nested);
  assert.equal(duplicate.status, 400);
  assert.equal(
    duplicate.object.message,
    'ConfigMap in version "v1" cannot be handled as a ConfigMap: cbor: found duplicate map key "a" at map element index 1',
  );
  const topLevel = await call(
    'POST',
    cms,
    Buffer.from('d9d9f7a2 446b696e64 4141 446b696e64 4142'.replace(/ /g, ''), 'hex'),
  );
  assert.equal(topLevel.status, 400);
  assert.match(
    topLevel.object.message,
    /^the object provided is unrecognized \(must be of type ConfigMap\): unable to determine group\/version\/kind: cbor: found duplicate map key "kind" at map element index 1 \(d9d9f7/,
  );
  const array = await call('POST', cms, encodeCbor([1]));
  assert.equal(
    array.object.message,
    'the object provided is unrecognized (must be of type ConfigMap): unable to determine group/version/kind: cbor: cannot unmarshal array into Go value of type v1.TypeMeta (d9d9f78101)',
  );
  const patch = await call(
    'PATCH',
    `${cms}/applied?fieldManager=bob`,
    Buffer.from('a2 4161 01 4161 02'.replace(/ /g, ''), 'hex'),
    'application/apply-patch+cbor',
  );
  assert.equal(patch.status, 400);
  assert.equal(
    patch.object.message,
    'error decoding patch: cbor: found duplicate map key "a" at map element index 1',
  );
});

test('gate off: application/cbor bodies are 415, Accept application/cbor is 406, as without CBOR', async () => {
  const body = encodeCbor({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
  const create = await rawRequest(gateOff, 'POST', cms, { 'content-type': cbor }, body);
  assert.equal(create.status, 415);
  const status = JSON.parse(create.body.toString());
  assert.equal(status.reason, 'UnsupportedMediaType');
  assert.equal(
    status.message,
    'the body of the request was in an unknown format - accepted media types include: application/vnd.kubernetes.protobuf, application/json, application/yaml',
  );
  const get = await rawRequest(gateOff, 'GET', cms, { accept: cbor });
  assert.equal(get.status, 406);
  assert.equal(get.contentType, 'application/json');
  assert.equal(
    JSON.parse(get.body.toString()).message,
    'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf',
  );
  const apply = await rawRequest(
    gateOff,
    'PATCH',
    `${cms}/x?fieldManager=a`,
    { 'content-type': 'application/apply-patch+cbor' },
    body,
  );
  assert.equal(apply.status, 415);
  assert.equal(
    (await rawRequest(gateOff, 'GET', cms, { accept: `${cbor}, application/json` })).contentType,
    'application/json',
  );
});

/** kubectl with client-go's CBOR gates on, at -v=8 so the negotiated media types show. */
function kubectlCbor(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      kubectlPath,
      ['--kubeconfig', server.kubeconfig, '-v=8', ...args],
      {
        timeout: 30_000,
        maxBuffer: 16 * 1024 * 1024,
        env: {
          ...process.env,
          KUBE_FEATURE_ClientsAllowCBOR: 'true',
          KUBE_FEATURE_ClientsPreferCBOR: 'true',
        },
      },
      (error, stdout, stderr) =>
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr }),
    );
  });
}

test('kubectl 1.32 with ClientsAllowCBOR and ClientsPreferCBOR: wait lists and watches in CBOR, delete in CBOR', async () => {
  await call('POST', cms, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube' },
    data: { x: '1' },
  });
  const wait = await kubectlCbor(['wait', '--for=jsonpath={.data.x}=1', 'configmap/kube', '--timeout=20s']);
  assert.equal(wait.code, 0, wait.stderr);
  assert.match(wait.stdout, /configmap\/kube condition met/);
  assert.match(wait.stderr, /Accept: application\/json;q=0.9,application\/cbor;q=1/);
  assert.match(wait.stderr, /Content-Type: application\/cbor\n/);
  assert.match(wait.stderr, /Content-Type: application\/cbor-seq/);
  const removed = await kubectlCbor(['delete', 'configmap', 'kube']);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /configmap "kube" deleted/);
  assert.match(removed.stderr, /Content-Type: application\/cbor\n/);
  assert.equal((await call('GET', `${cms}/kube`)).status, 404);
});
