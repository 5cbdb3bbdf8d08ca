// Proves the watch cache over the real embedded store: it loads the prefix, follows changes in revision order
// with previous states, keeps a bounded window (whole revisions drop out), replays from a revision without gaps
// or repeats, and waits for a revision (progress from the store) or times out; values that do not decode are
// kept aside as corrupt keys, and a change to one resets the watchers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/storage/index.js';
import type { KeyValue, KVStore } from '../../src/storage/contract.js';
import { revision } from '../../src/util/brand.js';
import { systemClock } from '../../src/util/clock.js';
import { WaitTimeout, WatchCache, type CacheEvent } from '../../src/watchcache/cache.js';

const text = (kv: KeyValue): string => new TextDecoder().decode(kv.value);
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** An embedded store in a temp dir removed after the test, and a put answering its revision. */
async function embeddedStore(
  t: { after: (fn: () => Promise<void>) => void },
  prefix: string,
): Promise<{ store: KVStore; put: (key: string, value: string) => Promise<number> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const store = await openStore({ engine: 'embedded', dataDir: dir, retentionMs: 0 });
  t.after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const put = async (key: string, value: string): Promise<number> =>
    (await store.txn({ compare: [], success: [{ type: 'put', key, value: enc(value) }], failure: [] })).header
      .revision;
  return { store, put };
}

test('load, follow, window, replay, wait', async (t) => {
  const { store, put } = await embeddedStore(t, 'stoa-cache-');
  await put('/p/a', 'a1');
  await put('/other/x', 'x');
  const cache = await WatchCache.start<string>({
    store,
    prefix: '/p/',
    decode: text,
    decodeDeleted: (prev) => `deleted:${text(prev)}`,
    eventsMax: 4,
    clock: systemClock,
  });
  t.after(() => cache.close());
  assert.deepEqual(
    cache.snapshot().entries.map((e) => e.object),
    ['a1'],
  );
  const seen: CacheEvent<string>[] = [];
  const sub = cache.subscribe(cache.revision, (events) => seen.push(...events));
  const r1 = await put('/p/b', 'b1');
  await put('/p/a', 'a2');
  const r3 = (
    await store.txn({ compare: [], success: [{ type: 'delete', span: { key: '/p/b' } }], failure: [] })
  ).header.revision;
  await cache.waitFor(revision(r3), 2000);
  assert.deepEqual(
    seen.map((e) => [e.type, e.object, e.previous]),
    [
      ['ADDED', 'b1', undefined],
      ['MODIFIED', 'a2', 'a1'],
      ['DELETED', 'deleted:b1', 'b1'],
    ],
  );
  sub.unsubscribe();
  // Replay from r1: exactly the events after it.
  assert.deepEqual(
    cache.subscribe(revision(r1), () => {}).replay.map((e) => e.object),
    ['a2', 'deleted:b1'],
  );
  // Changes outside the prefix still advance the cache revision (progress), so waitFor resolves.
  const rOther = await put('/other/y', 'y');
  await cache.waitFor(revision(rOther), 2000);
  assert.ok(cache.revision >= rOther);
  // The window keeps 4 events: after more writes the oldest revisions drop out.
  for (let i = 0; i < 5; i++) await put(`/p/n${i}`, 'n');
  await cache.waitFor(revision(await put('/p/last', 'l')), 2000);
  assert.ok(cache.oldestRevision > r3, 'old revisions left the window');
  assert.throws(() => cache.subscribe(revision(r1), () => {}));
  await assert.rejects(cache.waitFor(revision(cache.revision + 100), 300), WaitTimeout);
  // Many waiters at once (they share one progress nudge): one that times out leaves the others waiting, and
  // all of those resolve when the store gets there.
  const target = revision(cache.revision + 3);
  const early = cache.waitFor(target, 50);
  const many = Array.from({ length: 200 }, () => cache.waitFor(target, 5000));
  await assert.rejects(early, WaitTimeout);
  for (let i = 0; i < 3; i++) await put(`/other/w${i}`, 'w');
  await Promise.all(many);
  assert.ok(cache.revision >= target);
});

test('corrupt values (decode throws) are kept aside: loaded, written and deleted ones reset the watchers', async (t) => {
  const { store, put } = await embeddedStore(t, 'stoa-cache-corrupt-');
  const del = async (key: string): Promise<number> =>
    (await store.txn({ compare: [], success: [{ type: 'delete', span: { key } }], failure: [] })).header
      .revision;
  // "bad..." values do not decode.
  const decode = (kv: KeyValue): string => {
    const value = text(kv);
    if (value.startsWith('bad')) throw new Error(`cannot decode ${value}`);
    return value;
  };
  await put('/p/a', 'a1');
  await put('/p/x/b', 'bad1');
  const cache = await WatchCache.start<string>({
    store,
    prefix: '/p/',
    decode,
    decodeDeleted: (prev) => `deleted:${decode(prev)}`,
    eventsMax: 10,
    clock: systemClock,
  });
  t.after(() => cache.close());
  // Loaded: the corrupt key is not an object, and it is known as corrupt.
  assert.deepEqual(
    cache.snapshot().entries.map((e) => e.object),
    ['a1'],
  );
  assert.equal(cache.hasCorrupt('/p/'), true);
  assert.equal(cache.hasCorrupt('/p/x/'), true);
  assert.equal(cache.hasCorrupt('/p/a'), false);

  const seen: string[] = [];
  let resets = 0;
  const sub = cache.subscribe(
    cache.revision,
    (events) => seen.push(...events.map((e) => `${e.type}:${e.object}`)),
    () => resets++,
  );
  // Deleting the corrupt key: no event can describe it; the watcher is reset and the window restarts there.
  const r1 = await del('/p/x/b');
  await cache.waitFor(revision(r1), 2000);
  assert.equal(resets, 1);
  assert.equal(cache.hasCorrupt('/p/'), false);
  assert.equal(cache.oldestRevision, r1);
  sub.unsubscribe();

  // A readable object overwritten with garbage leaves the snapshot; listeners without a reset hook (the
  // controllers) still get the readable changes of the same batch; a later valid write repairs it.
  const plain: string[] = [];
  let resets2 = 0;
  const sub2 = cache.subscribe(
    cache.revision,
    (events) => plain.push(...events.map((e) => `${e.type}:${e.object}`)),
    () => resets2++,
  );
  const r2 = (
    await store.txn({
      compare: [],
      success: [
        { type: 'put', key: '/p/c', value: enc('c1') },
        { type: 'put', key: '/p/a', value: enc('bad2') },
      ],
      failure: [],
    })
  ).header.revision;
  await cache.waitFor(revision(r2), 2000);
  assert.equal(resets2, 1);
  assert.deepEqual(plain, ['ADDED:c1']);
  assert.deepEqual(
    cache.snapshot().entries.map((e) => e.object),
    ['c1'],
  );
  assert.equal(cache.hasCorrupt('/p/'), true);
  sub2.unsubscribe();
  const r3 = await put('/p/a', 'a3');
  await cache.waitFor(revision(r3), 2000);
  assert.equal(cache.hasCorrupt('/p/'), false);
  assert.deepEqual(
    cache.snapshot().entries.map((e) => e.object),
    ['a3', 'c1'],
  );
  assert.deepEqual(seen, []);
});
