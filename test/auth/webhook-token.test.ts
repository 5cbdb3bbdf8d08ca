// Proves webhook token authentication against a real HTTPS TokenReview service with mutual TLS: the kubeconfig
// file (server, CA, client certificate), the TokenReview request and answer, caching for the TTL (the service is
// not asked again until it passes), refusals, an unreachable service, and kubeconfig errors naming the field.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadWebhookKubeconfig, WebhookTokenAuthenticator } from '../../src/auth/webhook-token.js';
import { startWebhook, type TestWebhook } from '../support/webhook.js';

let webhook: TestWebhook | undefined;
let dir: string;
let kubeconfigPath: string;
const reviews: { apiVersion: string; kind: string; spec: { token: string }; clientCn: string }[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stoa-webhook-'));
  webhook = await startWebhook('kube-apiserver', (review: (typeof reviews)[number], req) => {
    review.clientCn = String((req.socket as TLSSocket).getPeerCertificate().subject.CN);
    reviews.push(review);
    const ok = review.spec.token === 'good-token';
    return {
      apiVersion: review.apiVersion,
      kind: 'TokenReview',
      status: ok
        ? {
            authenticated: true,
            user: { username: 'hook-user', uid: 'h-1', groups: ['hooked'], extra: { scope: ['all'] } },
          }
        : { authenticated: false, error: 'unknown token' },
    };
  });
  const { ca, client, port } = webhook;
  await writeFile(join(dir, 'ca.crt'), ca.certPem);
  kubeconfigPath = join(dir, 'webhook.kubeconfig');
  await writeFile(
    kubeconfigPath,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'hook',
          cluster: { server: `https://127.0.0.1:${port}/review`, 'certificate-authority': 'ca.crt' },
        },
      ],
      users: [
        {
          name: 'apiserver',
          user: {
            'client-certificate-data': Buffer.from(client.certPem).toString('base64'),
            'client-key-data': Buffer.from(client.keyPem).toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'c', context: { cluster: 'hook', user: 'apiserver' } }],
      'current-context': 'c',
    }),
  );
});

after(async () => {
  await webhook?.close();
  await rm(dir, { recursive: true, force: true });
});

test('a token the webhook accepts is its user; answers are cached for the TTL', async () => {
  let now = 1_000_000;
  const hook = new WebhookTokenAuthenticator(await loadWebhookKubeconfig(kubeconfigPath), {
    cacheTtlMs: 120_000,
    version: 'v1',
    nowMs: () => now,
  });
  reviews.length = 0;
  const result = await hook.authenticateToken('good-token');
  assert.deepEqual(result, {
    kind: 'user',
    user: { name: 'hook-user', uid: 'h-1', groups: ['hooked'], extra: { scope: ['all'] } },
  });
  assert.equal(reviews.length, 1);
  assert.equal(reviews[0]?.apiVersion, 'authentication.k8s.io/v1');
  assert.equal(reviews[0]?.kind, 'TokenReview');
  assert.equal(reviews[0]?.clientCn, 'kube-apiserver');
  await hook.authenticateToken('good-token');
  assert.equal(reviews.length, 1, 'served from the cache');
  now += 120_001;
  await hook.authenticateToken('good-token');
  assert.equal(reviews.length, 2, 'asked again after the TTL');
});

test('a refused token is invalid with the webhook error; v1beta1 is sent when asked', async () => {
  const hook = new WebhookTokenAuthenticator(await loadWebhookKubeconfig(kubeconfigPath), {
    cacheTtlMs: 0,
    version: 'v1beta1',
    nowMs: Date.now,
  });
  reviews.length = 0;
  assert.deepEqual(await hook.authenticateToken('bad-token'), { kind: 'invalid', reason: 'unknown token' });
  assert.equal(reviews[0]?.apiVersion, 'authentication.k8s.io/v1beta1');
});

test('an unreachable webhook is invalid (not cached); kubeconfig errors name the field', async () => {
  const hook = new WebhookTokenAuthenticator(
    { server: 'https://127.0.0.1:1/review' },
    { cacheTtlMs: 60_000, version: 'v1', nowMs: Date.now },
  );
  const r = await hook.authenticateToken('good-token');
  assert.equal(r.kind, 'invalid');
  const noServer = join(dir, 'no-server.kubeconfig');
  await writeFile(noServer, stringify({ clusters: [{ name: 'x', cluster: {} }] }));
  await assert.rejects(loadWebhookKubeconfig(noServer), /clusters\[0\]\.cluster\.server: Required value/);
  const http = join(dir, 'http.kubeconfig');
  await writeFile(http, stringify({ clusters: [{ name: 'x', cluster: { server: 'http://x' } }] }));
  await assert.rejects(loadWebhookKubeconfig(http), /must use https/);
});
