// Proves periodic watch bookmarks: with allowWatchBookmarks a watch gets a BOOKMARK every interval (shortened
// here with the hidden --watch-bookmark-interval flag; a minute by default) at a resourceVersion that never goes
// back and covers the events already sent, one more as timeoutSeconds ends it, and none without the parameter.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, watch, type TestServer } from './harness.js';

let server: TestServer;

before(async () => {
  server = await startTestServer(['--watch-bookmark-interval', '400ms']);
});

after(async () => {
  await server?.stop();
});

test('periodic bookmarks, then one before the watch ends', async () => {
  const created = await server.request('POST', '/api/v1/namespaces/default/configmaps', {
    body: { metadata: { name: 'bm-1' }, data: { a: '1' } },
  });
  assert.equal(created.status, 201);
  const rv = created.body.metadata.resourceVersion as string;
  const stream = watch(
    server,
    `/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=3`,
  );
  assert.equal(await stream.status, 200);
  const first = await stream.next(5000);
  assert.equal(first.type, 'BOOKMARK');
  assert.equal(first.object.kind, 'ConfigMap');
  assert.equal(first.object.apiVersion, 'v1');
  assert.ok(Number(first.object.metadata.resourceVersion) >= Number(rv));
  assert.equal(
    first.object.metadata.annotations,
    undefined,
    'a periodic bookmark is not the initial-events one',
  );

  const updated = await server.request('PUT', '/api/v1/namespaces/default/configmaps/bm-1', {
    body: { ...created.body, data: { a: '2' } },
  });
  assert.equal(updated.status, 200);
  const events: { type: string; object: { metadata: { resourceVersion: string } } }[] = [];
  for (;;) {
    const event = await stream.next(5000);
    events.push(event);
    if (event.type === 'MODIFIED') break;
  }
  const updatedRv = Number(updated.body.metadata.resourceVersion);
  assert.equal(Number(events.at(-1)?.object.metadata.resourceVersion), updatedRv);
  // Every later bookmark is at or after the last event sent, and the stream ends right after the final one.
  let bookmarks = 0;
  let lastRv = updatedRv;
  const endedAt = stream.ended.then(() => 'ended');
  for (;;) {
    const next = await Promise.race([stream.next(5000), endedAt]);
    if (next === 'ended') break;
    assert.equal(next.type, 'BOOKMARK');
    const bookmarkRv = Number(next.object.metadata.resourceVersion);
    assert.ok(bookmarkRv >= lastRv, `bookmark ${bookmarkRv} went back from ${lastRv}`);
    lastRv = bookmarkRv;
    bookmarks++;
  }
  // About 3 s of watch at 400 ms: several periodic ones plus the last; at least two either way.
  assert.ok(bookmarks >= 2, `only ${bookmarks} bookmarks after the update`);
});

test('no bookmarks without allowWatchBookmarks', async () => {
  const stream = watch(
    server,
    '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1',
  );
  assert.equal(await stream.status, 200);
  const seen: string[] = [];
  const endedAt = stream.ended.then(() => 'ended');
  for (;;) {
    const next = await Promise.race([stream.next(5000), endedAt]);
    if (next === 'ended') break;
    seen.push(next.type);
  }
  assert.ok(!seen.includes('BOOKMARK'), `saw ${seen.join(',')}`);
  assert.ok(seen.includes('ADDED'), 'resourceVersion=0 starts with the current state');
});
