/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of responses are read loosely in tests */
// Proves the proxy sub-resources: services (via Endpoints), pods (podIP) and nodes (kubelet over HTTPS) forward
// method, path, query and body to a real local server without the client's credentials, 503/400 without a target,
// RBAC on `services/proxy` decides (403 without it), discovery lists the sub-resources, and HTTP/2 streams.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect } from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startTestServer, writeTemp, type TestServer } from './harness.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly body: string;
  readonly headers: IncomingMessage['headers'];
  readonly tls: boolean;
}

let server: TestServer;
let backend: Server;
let kubelet: Server;
let backendPort = 0;
let kubeletPort = 0;
const seen: Seen[] = [];

function echo(tls: boolean) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        body: Buffer.concat(chunks).toString(),
        headers: req.headers,
        tls,
      });
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'text/plain', 'x-backend': 'yes' });
      res.end(`${tls ? 'kubelet' : 'backend'} ${req.method ?? ''} ${req.url ?? ''}`);
    });
  };
}

async function listen(s: Server): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
}

const ns = '/api/v1/namespaces/default';

async function ok(method: string, path: string, body: unknown, contentType?: string): Promise<any> {
  const r = await server.request(method, path, {
    body,
    ...(contentType === undefined ? {} : { headers: { 'content-type': contentType } }),
  });
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
}

const mergePatch = 'application/merge-patch+json';

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-proxy-'));
  const tokens = await writeTemp(dir, 'tokens.csv', 'alice-token,alice,alice-uid\nbob-token,bob,bob-uid\n');
  server = await startTestServer(['--token-auth-file', tokens], dir);
  backend = createServer(echo(false));
  backendPort = await listen(backend);
  kubelet = createHttpsServer({ cert: server.admin.cert, key: server.admin.key }, echo(true));
  kubeletPort = await listen(kubelet);

  await ok('POST', `${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { ports: [{ name: 'http', port: 80, targetPort: backendPort }] },
  });
  await ok('POST', `${ns}/endpoints`, {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: 'web' },
    subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'http', port: backendPort }] }],
  });
  await ok('POST', `${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'lonely' },
    spec: { ports: [{ port: 80 }] },
  });
  await ok('POST', `${ns}/endpoints`, { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'lonely' } });
  for (const name of ['p', 'no-ip']) {
    await ok('POST', `${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: backendPort }] }] },
    });
  }
  // A namespace named like the resource, and a pod named `proxy`, keep the path remainder exact.
  await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pods' } });
  await ok('POST', '/api/v1/namespaces/pods/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'proxy' },
    spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: backendPort }] }] },
  });
  await ok(
    'PATCH',
    '/api/v1/namespaces/pods/pods/proxy/status',
    { status: { podIP: '127.0.0.1' } },
    mergePatch,
  );
  await ok('PATCH', `${ns}/pods/p/status`, { status: { podIP: '127.0.0.1' } }, mergePatch);
  await ok('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  await ok(
    'PATCH',
    '/api/v1/nodes/n1/status',
    {
      status: {
        addresses: [
          { type: 'Hostname', address: 'n1' },
          { type: 'InternalIP', address: '127.0.0.1' },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
      },
    },
    mergePatch,
  );
  // bob may proxy to services (get and create), alice may do nothing.
  await ok('POST', '/apis/rbac.authorization.svc.io/v1/namespaces/default/roles', {
    apiVersion: 'rbac.authorization.svc.io/v1',
    kind: 'Role',
    metadata: { name: 'proxier' },
    rules: [{ apiGroups: [''], resources: ['services/proxy'], verbs: ['get', 'create'] }],
  });
  await ok('POST', '/apis/rbac.authorization.svc.io/v1/namespaces/default/rolebindings', {
    apiVersion: 'rbac.authorization.svc.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'bob-proxier' },
    roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'proxier' },
    subjects: [{ apiGroup: 'rbac.authorization.svc.io', kind: 'User', name: 'bob' }],
  });
});

after(async () => {
  backend?.closeAllConnections();
  kubelet?.closeAllConnections();
  await Promise.all([
    new Promise((r) => (backend === undefined ? r(undefined) : backend.close(r))),
    new Promise((r) => (kubelet === undefined ? r(undefined) : kubelet.close(r))),
  ]);
  await server?.stop();
  if (server !== undefined) await rm(server.dataDir, { recursive: true, force: true });
});

function last(): Seen {
  const s = seen.at(-1);
  assert.ok(s !== undefined, 'the backend saw no request');
  return s;
}

test('GET and POST through services/NAME/proxy reach an Endpoints address with path, query and body', async () => {
  for (const id of ['web:http', 'http:web:80']) {
    const r = await server.request('GET', `${ns}/services/${id}/proxy/some/path?x=1&y=two`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, 'backend GET /some/path?x=1&y=two');
    assert.equal(r.headers['x-backend'], 'yes');
    assert.equal(last().headers.authorization, undefined);
  }
  const r = await server.request('POST', `${ns}/services/web:http/proxy/submit?z=3`, {
    rawBody: 'hello body',
    headers: { 'content-type': 'text/plain', 'x-custom': 'kept' },
  });
  assert.equal(r.status, 201, r.text);
  const s = last();
  assert.equal(s.method, 'POST');
  assert.equal(s.url, '/submit?z=3');
  assert.equal(s.body, 'hello body');
  assert.equal(s.headers['x-custom'], 'kept');
  assert.equal(s.headers['content-type'], 'text/plain');
});

test('an empty proxy path redirects to the trailing slash; a port number no service port has is 503', async () => {
  const r = await server.request('GET', `${ns}/services/web:http/proxy?a=b`);
  assert.equal(r.status, 301);
  assert.equal(r.headers.location, `${ns}/services/web:http/proxy/?a=b`);
  const slash = await server.request('GET', `${ns}/services/web:http/proxy/`);
  assert.equal(slash.status, 200, slash.text);
  assert.equal(last().url, '/');
  const port = await server.request('GET', `${ns}/services/web:81/proxy/`);
  assert.equal(port.status, 503, port.text);
  assert.equal(port.body.message, 'no service port 81 found for service "web"');
  // Without a port the unnamed endpoint port is wanted; web's only port is named, so none (as kube-apiserver).
  const unnamed = await server.request('GET', `${ns}/services/web/proxy/`);
  assert.equal(unnamed.status, 503, unnamed.text);
  assert.equal(unnamed.body.message, 'no endpoints available for service "web"');
});

test('a service without endpoints is 503 ServiceUnavailable; a missing service is 404', async () => {
  const r = await server.request('GET', `${ns}/services/lonely/proxy/`);
  assert.equal(r.status, 503, r.text);
  assert.equal(r.body.kind, 'Status');
  assert.equal(r.body.reason, 'ServiceUnavailable');
  assert.equal(r.body.message, 'no endpoints available for service "lonely"');
  const missing = await server.request('GET', `${ns}/services/nope:80/proxy/`);
  assert.equal(missing.status, 404, missing.text);
});

test('pods/NAME/proxy reaches status.podIP on the first container port or the named port', async () => {
  const r = await server.request('GET', `${ns}/pods/p/proxy/healthz?verbose=1`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, 'backend GET /healthz?verbose=1');
  const post = await server.request('POST', `${ns}/pods/p:${backendPort}/proxy/x`, { rawBody: 'pod body' });
  assert.equal(post.status, 201, post.text);
  assert.equal(last().body, 'pod body');
  const odd = await server.request('GET', '/api/v1/namespaces/pods/pods/proxy/proxy/proxy/a%20b/');
  assert.equal(odd.status, 200, odd.text);
  assert.equal(last().url, '/proxy/a%20b/');
  const noIp = await server.request('GET', `${ns}/pods/no-ip/proxy/`);
  assert.equal(noIp.status, 400, noIp.text);
  assert.equal(noIp.body.message, 'address not allowed');
  const refused = await server.request('GET', `${ns}/pods/p:1/proxy/`);
  assert.equal(refused.status, 503, refused.text);
  assert.match(refused.body.message, /^error trying to reach pod: .*ECONNREFUSED/);
  const bad = await server.request('GET', `${ns}/pods/a:b:c:d/proxy/`);
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.message, 'invalid pod request "a:b:c:d"');
});

test('nodes/NAME/proxy reaches the kubelet port on the InternalIP over HTTPS', async () => {
  const r = await server.request('POST', '/api/v1/nodes/n1/proxy/stats/summary?only=cpu', { rawBody: 'n' });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.text, 'kubelet POST /stats/summary?only=cpu');
  assert.equal(last().tls, true);
  assert.equal(last().body, 'n');
});

test('RBAC on services/proxy: without it 403, with get and create GET and POST pass, delete is 403', async () => {
  const alice = await server.request('GET', `${ns}/services/web:http/proxy/x`, {
    anonymous: true,
    headers: { authorization: 'Bearer alice-token' },
  });
  assert.equal(alice.status, 403, alice.text);
  assert.match(alice.body.message, /User "alice" cannot get resource "services\/proxy"/);
  const bob = { anonymous: true, headers: { authorization: 'Bearer bob-token' } } as const;
  const get = await server.request('GET', `${ns}/services/web:http/proxy/x`, bob);
  assert.equal(get.status, 200, get.text);
  assert.equal(last().headers.authorization, undefined);
  const post = await server.request('POST', `${ns}/services/web:http/proxy/x`, { ...bob, rawBody: 'b' });
  assert.equal(post.status, 201, post.text);
  const del = await server.request('DELETE', `${ns}/services/web:http/proxy/x`, bob);
  assert.equal(del.status, 403, del.text);
  const pod = await server.request('GET', `${ns}/pods/p/proxy/x`, bob);
  assert.equal(pod.status, 403, pod.text);
});

test('discovery lists the proxy sub-resources with their verbs', async () => {
  const r = await server.request('GET', '/api/v1');
  assert.equal(r.status, 200, r.text);
  for (const [name, kind] of [
    ['pods/proxy', 'PodProxyOptions'],
    ['services/proxy', 'ServiceProxyOptions'],
    ['nodes/proxy', 'NodeProxyOptions'],
  ] as const) {
    const entry = r.body.resources.find((x: any) => x.name === name);
    assert.ok(entry !== undefined, name);
    assert.equal(entry.kind, kind);
    assert.deepEqual(entry.verbs, ['create', 'delete', 'get', 'patch', 'update']);
  }
  const aggregated = await server.request('GET', '/api', {
    headers: { accept: 'application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList' },
  });
  assert.equal(aggregated.status, 200, aggregated.text);
  const resources = aggregated.body.items[0].versions[0].resources;
  const services = resources.find((x: any) => x.resource === 'services');
  assert.deepEqual(
    services.subresources.find((x: any) => x.subresource === 'proxy'),
    {
      subresource: 'proxy',
      responseKind: { group: '', version: 'v1', kind: 'ServiceProxyOptions' },
      verbs: ['create', 'delete', 'get', 'patch', 'update'],
    },
  );
});

test('over HTTP/2 (as kubectl speaks) a POST body and the response stream through the proxy', async () => {
  const session = connect(server.url, {
    ca: server.admin.ca,
    cert: server.admin.cert,
    key: server.admin.key,
  });
  try {
    const body = 'x'.repeat(200_000);
    const stream = session.request({
      ':method': 'POST',
      ':path': `${ns}/pods/p/proxy/h2?q=1`,
      'content-type': 'text/plain',
    });
    stream.end(body);
    const [status, text] = await new Promise<[number, string]>((resolve, reject) => {
      let code = 0;
      let buf = '';
      stream.on('response', (headers) => (code = Number(headers[':status'])));
      stream.on('data', (c: Buffer) => (buf += c.toString()));
      stream.on('end', () => resolve([code, buf]));
      stream.on('error', reject);
    });
    assert.equal(status, 201, text);
    assert.equal(text, 'backend POST /h2?q=1');
    assert.equal(last().body.length, body.length);
  } finally {
    session.close();
  }
});
