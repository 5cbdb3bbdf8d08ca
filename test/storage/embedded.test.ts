// Proves the embedded engine's own duties: group commit, reopen, physical and automatic compaction, watch overflow, close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/storage/embedded/engine.js';
import { StorageError, type TxnResult } from '../../src/storage/contract.js';
import { revision } from '../../src/util/brand.js';
import { historyPrefix, changePrefix, prefixEnd } from '../../src/storage/mvcc/layout.js';
import { tempDir } from '../support/tmp.js';
import { recordWatch } from '../support/watch.js';
import { put } from '../conformance/suite.js';

const bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

async function withStore(
  t: { after(fn: () => Promise<void>): void },
  options: { retentionMs?: number; watchQueueEventsMax?: number } = {},
): Promise<{ store: EmbeddedStore; dataDir: string; reopen(): Promise<EmbeddedStore> }> {
  const dir = await tempDir('embedded');
  let store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0, ...options });
  t.after(async () => {
    await store.close();
    await dir.remove();
  });
  return {
    get store() {
      return store;
    },
    dataDir: dir.path,
    async reopen() {
      await store.close();
      store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0, ...options });
      return store;
    },
  };
}

async function countKeys(store: EmbeddedStore, prefix: Buffer): Promise<number> {
  let count = 0;
  for await (const _ of store.mvcc.db.keys({ gte: prefix, lt: prefixEnd(prefix)! })) count++;
  return count;
}

test('concurrent txns are group-committed, each at its own revision, compares seeing earlier txns of the group', async (t) => {
  const { store } = await withStore(t);
  const before = { ...store.writeStats };
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      store.txn({
        compare: [],
        success: [{ type: 'put', key: `/g/${i}`, value: bytes(String(i)) }],
        failure: [],
      }),
    ),
  );
  const revisions = results.map((r) => r.header.revision);
  assert.equal(new Set(revisions).size, 200);
  assert.deepEqual(
    [...revisions].sort((a, b) => a - b),
    Array.from({ length: 200 }, (_, i) => i + 2),
  );
  const batches = store.writeStats.batches - before.batches;
  assert.ok(batches < 200, `${batches} batches for 200 concurrent txns: no group commit`);
  // Create-if-absent raced 50 times: exactly one wins, even inside one group.
  const creates: TxnResult[] = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      store.txn({
        compare: [{ key: '/g/once', target: 'exists', value: false }],
        success: [{ type: 'put', key: '/g/once', value: bytes(String(i)) }],
        failure: [],
      }),
    ),
  );
  assert.equal(creates.filter((r) => r.succeeded).length, 1);
  // A txn reading at an explicit revision amid a group reads exactly that revision.
  const pinned = (await store.status()).revision;
  const [, , reading] = await Promise.all([
    put(store, '/g/0', 'changed'),
    put(store, '/g/1', 'changed'),
    store.txn({
      compare: [],
      success: [{ type: 'range', span: { prefix: '/g/' }, options: { revision: pinned } }],
      failure: [],
    }),
    put(store, '/g/2', 'changed'),
  ]);
  const range = reading.responses[0];
  assert.ok(range?.type === 'range');
  assert.ok(range.result.kvs.every((kv) => text(kv.value) !== 'changed'));
  assert.equal(range.result.count, 201);
});

test('a reopened store has its revision, keys, history and change log', async (t) => {
  const ctx = await withStore(t);
  const r1 = await put(ctx.store, '/r/a', 'a1');
  const r2 = await put(ctx.store, '/r/a', 'a2');
  await ctx.store.txn({ compare: [], success: [{ type: 'delete', span: { key: '/r/a' } }], failure: [] });
  const r4 = await put(ctx.store, '/r/b', 'b1');
  const store = await ctx.reopen();
  assert.equal((await store.status()).revision, r4);
  assert.deepEqual(
    (await store.range({ prefix: '/r/' })).kvs.map((kv) => kv.key),
    ['/r/b'],
  );
  assert.equal(text((await store.range({ key: '/r/a' }, { revision: r2 })).kvs[0]!.value), 'a2');
  const watch = recordWatch(store, { prefix: '/r/' }, { afterRevision: r1, prevKv: true });
  const events = await watch.waitForEvents(3);
  watch.close();
  assert.deepEqual(
    events.map((e) => `${e.type} ${e.kv.key} ${text(e.kv.value)} prev=${e.prevKv && text(e.prevKv.value)}`),
    ['put /r/a a2 prev=a1', 'delete /r/a  prev=a2', 'put /r/b b1 prev=undefined'],
  );
  const next = await put(store, '/r/c', 'c');
  assert.equal(next, r4 + 1);
});

test('physical compaction deletes superseded history and keeps reads at the compacted revision exact', async (t) => {
  const ctx = await withStore(t);
  const revisions: number[] = [];
  for (let i = 0; i < 60; i++) revisions.push(await put(ctx.store, `/c/k${i % 5}`, `v${i}`));
  await ctx.store.txn({ compare: [], success: [{ type: 'delete', span: { key: '/c/k0' } }], failure: [] });
  await put(ctx.store, '/c/k1', 'after');
  const historyBefore = await countKeys(ctx.store, historyPrefix);
  const at = revision(revisions[57]!);
  const expected = (await ctx.store.range({ prefix: '/c/' }, { revision: at })).kvs.map(
    (kv) => `${kv.key}=${text(kv.value)}`,
  );
  await ctx.store.compact(at);
  // Physical deletion runs in the writer between groups; a reopen finishes any that is left.
  const store = await ctx.reopen();
  for (let i = 0; i < 100 && store.mvcc.compactionPending; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(store.mvcc.compactionPending, false);
  const historyAfter = await countKeys(store, historyPrefix);
  // Left: the newest record at or below `at` of each of the 5 keys, plus the 4 records written after it.
  assert.equal(historyAfter, 9, `history records ${historyBefore} -> ${historyAfter}`);
  assert.equal(await countKeys(store, changePrefix), 5); // the change log of `at` and of the 4 later revisions
  assert.deepEqual(
    (await store.range({ prefix: '/c/' }, { revision: at })).kvs.map((kv) => `${kv.key}=${text(kv.value)}`),
    expected,
  );
  await assert.rejects(store.range({ prefix: '/c/' }, { revision: revision(at - 1) }), { code: 'Compacted' });
  const watch = recordWatch(store, { prefix: '/c/' }, { afterRevision: at, prevKv: true });
  const events = await watch.waitForEvents(4);
  watch.close();
  assert.deepEqual(
    events.map((e) => `${e.type} ${e.kv.key} ${text(e.kv.value)} prev=${e.prevKv && text(e.prevKv.value)}`),
    [
      'put /c/k3 v58 prev=v53',
      'put /c/k4 v59 prev=v54',
      'delete /c/k0  prev=v55',
      'put /c/k1 after prev=v56',
    ],
  );
});

test('automatic compaction keeps about retentionMs of history', async (t) => {
  const { store } = await withStore(t, { retentionMs: 200 });
  const first = await put(store, '/auto/a', '1');
  // Keep writing (bounded) until the compactor has moved past the first write.
  for (let i = 0; i < 200 && (await store.status()).compactRevision < first; i++) {
    await put(store, '/auto/a', String(i));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const status = await store.status();
  assert.ok(status.compactRevision >= first, `compacted at ${status.compactRevision}`);
  assert.ok(status.compactRevision < status.revision);
  await assert.rejects(store.range({ key: '/auto/a' }, { revision: revision(first - 1) }), {
    code: 'Compacted',
  });
});

test('a watcher that falls too far behind is cancelled with WatchOverflow; others are not', async (t) => {
  const { store } = await withStore(t, { watchQueueEventsMax: 10 });
  const start = (await store.status()).revision;
  for (let i = 0; i < 15; i++) await put(store, `/o/${i}`, 'v');
  // A watch that must catch up 15 events at once overflows its queue of 10.
  const behind = recordWatch(store, { prefix: '/o/' }, { afterRevision: start });
  await behind.waitFor((r) => r.some((x) => x.type === 'canceled'), 5000, 'overflow');
  const canceled = behind.responses.find((r) => r.type === 'canceled');
  assert.ok(canceled?.type === 'canceled');
  assert.equal(canceled.error.code, 'WatchOverflow');
  behind.close();
  // A watch that keeps up receives everything.
  const live = recordWatch(store, { prefix: '/o/' }, {});
  await live.watch.ready;
  for (let i = 0; i < 30; i++) await put(store, `/o/${i}`, 'w');
  assert.equal((await live.waitForEvents(30)).length, 30);
  live.close();
});

test('close cancels watches with Closed and refuses further requests', async (t) => {
  const dir = await tempDir('close');
  t.after(() => dir.remove());
  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  const watch = recordWatch(store, { prefix: '' }, {});
  const pending = put(store, '/x', 'y'); // in flight at close: completes
  await store.close();
  assert.equal(typeof (await pending), 'number');
  await watch.waitFor((r) => r.some((x) => x.type === 'canceled'), 5000, 'cancel');
  const canceled = watch.responses.find((r) => r.type === 'canceled');
  assert.ok(canceled?.type === 'canceled' && canceled.error.code === 'Closed');
  await assert.rejects(
    store.range({ prefix: '' }),
    (e: unknown) => e instanceof StorageError && e.code === 'Closed',
  );
  await assert.rejects(put(store, '/x', 'z'), { code: 'Closed' });
  await store.close(); // idempotent
});

test('reads racing group commits see one consistent revision: no newer key, count matching the header', async (t) => {
  const { store } = await withStore(t);
  const base = (await store.status()).revision;
  let writing = true;
  // Each txn creates one new key, so at revision R exactly R - base keys exist.
  const writers = Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; i < 40; i++) await put(store, `/race/${w}/${i}`, 'v');
    }),
  ).finally(() => (writing = false));
  let reads = 0;
  while (writing && reads < 5000) {
    const range = await store.range({ prefix: '/race/' }, { limit: 5 });
    reads++;
    const header = range.header.revision;
    assert.equal(range.count, header - base, `count at revision ${header}`);
    for (const kv of range.kvs)
      assert.ok(kv.modRevision <= header, `${kv.key}@${kv.modRevision} > ${header}`);
    const got = await store.range({ key: '/race/0/0' });
    for (const kv of got.kvs) assert.ok(kv.modRevision <= got.header.revision);
  }
  await writers;
  assert.ok(reads > 0);
  assert.equal((await store.range({ prefix: '/race/' }, { countOnly: true })).count, 640);
});

test('a progress response requested during catch-up comes after every change it covers', async (t) => {
  const { store } = await withStore(t, {});
  const start = (await store.status()).revision;
  for (let i = 0; i < 50; i++) await put(store, `/p/${i % 7}`, String(i));
  const last = (await store.status()).revision;
  const watch = recordWatch(store, { prefix: '/p/' }, { afterRevision: start });
  watch.watch.requestProgress(); // while it still reads history
  await watch.waitFor((r) => r.some((x) => x.type === 'progress'), 5000, 'progress');
  watch.close();
  const progressAt = watch.responses.findIndex((r) => r.type === 'progress');
  const progress = watch.responses[progressAt];
  assert.ok(progress?.type === 'progress');
  assert.ok(progress.revision >= last);
  const before = watch.responses.slice(0, progressAt).flatMap((r) => (r.type === 'events' ? r.events : []));
  assert.equal(before.length, 50);
  assert.ok(before.every((e) => e.kv.modRevision <= progress.revision));
});
