// The storage conformance suite: one set of assertions that every KVStore engine must pass (embedded, etcd, ...).
// Tests share one store; each works under its own key prefix, and compaction tests run last.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { revision, type Revision } from '../../src/util/brand.js';
import { limits } from '../../src/util/limits.js';
import {
  StorageError,
  type Compare,
  type KeyValue,
  type KVStore,
  type StorageErrorCode,
  type TxnOp,
  type TxnResult,
  type WatchEvent,
} from '../../src/storage/contract.js';
import { recordWatch } from '../support/watch.js';

export interface ConformanceHarness {
  readonly store: KVStore;
  close(): Promise<void>;
}

const bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

let prefixCounter = 0;
const newPrefix = (name: string): string => `/conf/${name}-${++prefixCounter}/`;

export async function put(store: KVStore, key: string, value: string): Promise<Revision> {
  const result = await store.txn({
    compare: [],
    success: [{ type: 'put', key, value: bytes(value) }],
    failure: [],
  });
  return result.header.revision;
}

async function del(store: KVStore, key: string): Promise<TxnResult> {
  return store.txn({ compare: [], success: [{ type: 'delete', span: { key } }], failure: [] });
}

async function rejectsWith(promise: Promise<unknown>, code: StorageErrorCode): Promise<StorageError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof StorageError, `expected StorageError ${code}, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected StorageError ${code}, but it succeeded`);
}

/** A key-value as plain data, for deepEqual across engines. */
const plain = (kv: KeyValue | undefined): object | undefined =>
  kv === undefined
    ? undefined
    : {
        key: kv.key,
        value: text(kv.value),
        createRevision: kv.createRevision,
        modRevision: kv.modRevision,
        version: kv.version,
      };

const plainEvent = (event: WatchEvent): object => ({
  type: event.type,
  kv: plain(event.kv),
  prevKv: plain(event.prevKv),
});

export function storageConformance(
  engine: string,
  open: () => Promise<ConformanceHarness>,
  options: { progressIntervalMs: number },
): void {
  describe(`storage conformance: ${engine}`, () => {
    let harness: ConformanceHarness;
    let store: KVStore;
    before(async () => {
      harness = await open();
      store = harness.store;
    });
    after(async () => {
      await harness.close();
    });

    test('an empty store is at revision 1', async () => {
      const status = await store.status();
      assert.equal(status.revision, 1);
      const range = await store.range({ prefix: '' });
      assert.equal(range.header.revision, 1);
      assert.equal(range.count, 0);
    });

    test('each writing txn advances the revision by one; version and createRevision follow the key', async () => {
      const p = newPrefix('rev');
      const r0 = (await store.status()).revision;
      const r1 = await put(store, p + 'a', 'one');
      assert.equal(r1, r0 + 1);
      const r2 = await put(store, p + 'a', 'two');
      assert.equal(r2, r1 + 1);
      let kv = (await store.range({ key: p + 'a' })).kvs[0];
      assert.deepEqual(plain(kv), {
        key: p + 'a',
        value: 'two',
        createRevision: r1,
        modRevision: r2,
        version: 2,
      });
      // A txn with several writes uses one revision for all of them.
      const multi = await store.txn({
        compare: [],
        success: [
          { type: 'put', key: p + 'b', value: bytes('b') },
          { type: 'put', key: p + 'c', value: bytes('c') },
        ],
        failure: [],
      });
      assert.equal(multi.header.revision, r2 + 1);
      const range = await store.range({ prefix: p });
      assert.deepEqual(
        range.kvs.map((k) => k.modRevision),
        [r2, r2 + 1, r2 + 1],
      );
      // Deleting ends the key's life; a new put starts again at version 1.
      const r4 = (await del(store, p + 'a')).header.revision;
      assert.equal(r4, r2 + 2);
      const r5 = await put(store, p + 'a', 'three');
      kv = (await store.range({ key: p + 'a' })).kvs[0];
      assert.deepEqual(plain(kv), {
        key: p + 'a',
        value: 'three',
        createRevision: r5,
        modRevision: r5,
        version: 1,
      });
      // Txns that write nothing do not advance the revision.
      const noop = await del(store, p + 'missing');
      assert.equal(noop.header.revision, r5);
      const readOnly = await store.txn({
        compare: [],
        success: [{ type: 'range', span: { key: p + 'a' } }],
        failure: [],
      });
      assert.equal(readOnly.header.revision, r5);
      assert.equal((await store.status()).revision, r5);
    });

    test('txn compares: every target and operator, on a live key and a missing key', async () => {
      const p = newPrefix('cmp');
      const k = p + 'k';
      const created = await put(store, k, 'v1');
      const modified = await put(store, k, 'v2');
      const missing = p + 'missing';
      const cases: Array<[Compare, boolean]> = [
        [{ key: k, target: 'version', op: '=', value: 2 }, true],
        [{ key: k, target: 'version', op: '!=', value: 2 }, false],
        [{ key: k, target: 'version', op: '<', value: 3 }, true],
        [{ key: k, target: 'version', op: '>', value: 2 }, false],
        [{ key: k, target: 'createRevision', op: '=', value: created }, true],
        [{ key: k, target: 'createRevision', op: '!=', value: created }, false],
        [{ key: k, target: 'createRevision', op: '<', value: created }, false],
        [{ key: k, target: 'createRevision', op: '>', value: created - 1 }, true],
        [{ key: k, target: 'modRevision', op: '=', value: modified }, true],
        [{ key: k, target: 'modRevision', op: '!=', value: created }, true],
        [{ key: k, target: 'modRevision', op: '<', value: modified + 1 }, true],
        [{ key: k, target: 'modRevision', op: '>', value: modified }, false],
        [{ key: k, target: 'value', op: '=', value: bytes('v2') }, true],
        [{ key: k, target: 'value', op: '!=', value: bytes('v2') }, false],
        [{ key: k, target: 'value', op: '<', value: bytes('v3') }, true],
        [{ key: k, target: 'value', op: '>', value: bytes('v10') }, true],
        [{ key: k, target: 'exists', value: true }, true],
        [{ key: k, target: 'exists', value: false }, false],
        [{ key: missing, target: 'version', op: '=', value: 0 }, true],
        [{ key: missing, target: 'createRevision', op: '=', value: 0 }, true],
        [{ key: missing, target: 'modRevision', op: '<', value: 1 }, true],
        [{ key: missing, target: 'modRevision', op: '>', value: 0 }, false],
        [{ key: missing, target: 'value', op: '=', value: bytes('') }, false],
        [{ key: missing, target: 'value', op: '!=', value: bytes('x') }, false],
        [{ key: missing, target: 'exists', value: false }, true],
        [{ key: missing, target: 'exists', value: true }, false],
      ];
      for (const [compare, expected] of cases) {
        const result = await store.txn({ compare: [compare], success: [], failure: [] });
        assert.equal(
          result.succeeded,
          expected,
          JSON.stringify({ ...compare, value: String(compare.value) }),
        );
      }
      // Compares are ANDed; the failure branch runs when one fails, and its range sees the key.
      const result = await store.txn({
        compare: [
          { key: k, target: 'version', op: '=', value: 2 },
          { key: k, target: 'modRevision', op: '=', value: created },
        ],
        success: [{ type: 'put', key: k, value: bytes('never') }],
        failure: [{ type: 'range', span: { key: k } }],
      });
      assert.equal(result.succeeded, false);
      assert.equal(result.header.revision, modified);
      const only = result.responses[0];
      assert.ok(only?.type === 'range');
      assert.deepEqual(only.result.kvs.map(plain), [
        { key: k, value: 'v2', createRevision: created, modRevision: modified, version: 2 },
      ]);
      // The optimistic-concurrency write (kube-apiserver's GuaranteedUpdate) succeeds once.
      const cas = (): Promise<TxnResult> =>
        store.txn({
          compare: [{ key: k, target: 'modRevision', op: '=', value: modified }],
          success: [{ type: 'put', key: k, value: bytes('v3') }],
          failure: [],
        });
      const [first, second] = await Promise.all([cas(), cas()]);
      assert.deepEqual([first.succeeded, second.succeeded].sort(), [false, true]);
    });

    test('txn ops: put and delete return prevKv; a range sees the writes made before it in the txn', async () => {
      const p = newPrefix('ops');
      const r1 = await put(store, p + 'a', 'a1');
      await put(store, p + 'b', 'b1');
      const result = await store.txn({
        compare: [],
        success: [
          { type: 'put', key: p + 'a', value: bytes('a2'), prevKv: true },
          { type: 'put', key: p + 'c', value: bytes('c1'), prevKv: true },
          { type: 'range', span: { prefix: p } },
        ],
        failure: [],
      });
      const [putA, putC, range] = result.responses;
      assert.ok(putA?.type === 'put' && putC?.type === 'put' && range?.type === 'range');
      assert.deepEqual(plain(putA.prevKv), {
        key: p + 'a',
        value: 'a1',
        createRevision: r1,
        modRevision: r1,
        version: 1,
      });
      assert.equal(putC.prevKv, undefined);
      assert.deepEqual(
        range.result.kvs.map((kv) => [kv.key, text(kv.value)]),
        [
          [p + 'a', 'a2'],
          [p + 'b', 'b1'],
          [p + 'c', 'c1'],
        ],
      );
      assert.equal(range.result.count, 3);
      const deleted = await store.txn({
        compare: [],
        success: [{ type: 'delete', span: { prefix: p }, prevKv: true }],
        failure: [],
      });
      const d = deleted.responses[0];
      assert.ok(d?.type === 'delete');
      assert.equal(d.deleted, 3);
      assert.deepEqual(
        d.prevKvs.map((kv) => text(kv.value)),
        ['a2', 'b1', 'c1'],
      );
      assert.equal((await store.range({ prefix: p })).count, 0);
      const withoutPrev = await store.txn({
        compare: [],
        success: [{ type: 'delete', span: { prefix: p } }],
        failure: [],
      });
      assert.ok(withoutPrev.responses[0]?.type === 'delete');
      assert.equal(withoutPrev.responses[0].deleted, 0);
    });

    test('ranges at old revisions answer exactly as the store was then', async () => {
      const p = newPrefix('old');
      const r1 = await put(store, p + 'a', 'a1');
      const r2 = await put(store, p + 'b', 'b1');
      const r3 = await put(store, p + 'a', 'a2');
      const r4 = (await del(store, p + 'b')).header.revision;
      const at = async (rev: Revision): Promise<string[]> => {
        const range = await store.range({ prefix: p }, { revision: rev });
        assert.equal(range.header.revision >= r4, true);
        return range.kvs.map(
          (kv) => `${kv.key.slice(p.length)}=${text(kv.value)}@${kv.modRevision}/v${kv.version}`,
        );
      };
      assert.deepEqual(await at(revision(r1 - 1)), []);
      assert.deepEqual(await at(r1), [`a=a1@${r1}/v1`]);
      assert.deepEqual(await at(r2), [`a=a1@${r1}/v1`, `b=b1@${r2}/v1`]);
      assert.deepEqual(await at(r3), [`a=a2@${r3}/v2`, `b=b1@${r2}/v1`]);
      assert.deepEqual(await at(r4), [`a=a2@${r3}/v2`]);
      assert.deepEqual((await store.range({ key: p + 'b' }, { revision: r2 })).kvs.map(plain), [
        { key: p + 'b', value: 'b1', createRevision: r2, modRevision: r2, version: 1 },
      ]);
      assert.equal((await store.range({ prefix: p }, { revision: r2, countOnly: true })).count, 2);
      const current = (await store.status()).revision;
      const error = await rejectsWith(
        store.range({ prefix: p }, { revision: revision(current + 10) }),
        'FutureRevision',
      );
      assert.equal(error.revision, current);
    });

    test('limit, more, count and startKey continuation, also at a pinned revision', async () => {
      const p = newPrefix('page');
      const keys = Array.from({ length: 10 }, (_, i) => `${p}k${String(i).padStart(2, '0')}`);
      for (const key of keys) await put(store, key, 'v');
      const pinned = (await store.status()).revision;
      await put(store, p + 'k99', 'later'); // not visible at the pinned revision
      const seen: string[] = [];
      let startKey: string | undefined;
      const counts: number[] = [];
      for (let page = 0; page < 10; page++) {
        const range = await store.range(
          { prefix: p },
          { revision: pinned, limit: 3, ...(startKey !== undefined ? { startKey } : {}) },
        );
        seen.push(...range.kvs.map((kv) => kv.key));
        counts.push(range.count);
        if (!range.more) break;
        startKey = range.kvs[range.kvs.length - 1]!.key + '\0';
      }
      assert.deepEqual(seen, keys);
      assert.deepEqual(counts, [10, 7, 4, 1]);
      const current = await store.range({ prefix: p }, { limit: 4 });
      assert.equal(current.kvs.length, 4);
      assert.equal(current.more, true);
      assert.equal(current.count, 11);
      const exact = await store.range({ prefix: p }, { limit: 11 });
      assert.equal(exact.more, false);
      const countOnly = await store.range({ prefix: p }, { countOnly: true });
      assert.deepEqual([countOnly.kvs.length, countOnly.count], [0, 11]);
      const fromMiddle = await store.range({ prefix: p }, { startKey: p + 'k05', countOnly: true });
      assert.equal(fromMiddle.count, 6);
    });

    test('keys are arbitrary strings ordered by UTF-8 bytes; a key span is exact', async () => {
      const p = newPrefix('keys');
      const names = ['\u{1F600}', '\uFFFD', 'a\0b', 'a', 'a/b', 'é', ' ', '\x7f'];
      for (const name of names) await put(store, p + name, name);
      const range = await store.range({ prefix: p });
      const expected = [...names].sort((x, y) => Buffer.compare(bytes(x), bytes(y)));
      assert.deepEqual(
        range.kvs.map((kv) => kv.key.slice(p.length)),
        expected,
      );
      assert.ok(range.kvs.every((kv) => text(kv.value) === kv.key.slice(p.length)));
      assert.deepEqual(
        (await store.range({ key: p + 'a' })).kvs.map((kv) => kv.key),
        [p + 'a'],
      );
      assert.equal((await store.range({ prefix: p + 'a' })).count, 3);
    });

    test('bad requests answer with their error code and change nothing', async () => {
      const p = newPrefix('bad');
      const before = (await store.status()).revision;
      const putOp = (key: string, size = 1): TxnOp => ({ type: 'put', key, value: new Uint8Array(size) });
      await rejectsWith(
        store.txn({ compare: [], success: [putOp(p + 'x'.repeat(limits.storeKeyBytesMax))], failure: [] }),
        'KeyTooLarge',
      );
      await rejectsWith(store.range({ key: p + 'x'.repeat(limits.storeKeyBytesMax) }), 'KeyTooLarge');
      await rejectsWith(
        store.txn({ compare: [], success: [putOp(p + 'big', limits.storeValueBytesMax + 1)], failure: [] }),
        'ValueTooLarge',
      );
      await rejectsWith(
        store.txn({
          compare: [],
          success: Array.from({ length: limits.storeTxnOpsMax + 1 }, (_, i) => putOp(`${p}${i}`)),
          failure: [],
        }),
        'TooManyOps',
      );
      await rejectsWith(
        store.txn({ compare: [], success: [putOp(p + 'd'), putOp(p + 'd')], failure: [] }),
        'DuplicateKey',
      );
      await rejectsWith(
        store.txn({
          compare: [],
          success: [putOp(p + 'd'), { type: 'delete', span: { prefix: p } }],
          failure: [],
        }),
        'DuplicateKey',
      );
      await rejectsWith(store.txn({ compare: [], success: [putOp('')], failure: [] }), 'InvalidArgument');
      assert.equal((await store.status()).revision, before);
      // A large value within the limit is stored whole.
      const big = Buffer.alloc(1024 * 1024, 7);
      await store.txn({ compare: [], success: [{ type: 'put', key: p + 'big', value: big }], failure: [] });
      const got = (await store.range({ key: p + 'big' })).kvs[0];
      assert.ok(got !== undefined && Buffer.from(got.value).equals(big));
    });

    test('concurrent writers: every txn gets its own revision, all applied', async () => {
      const p = newPrefix('conc');
      const before = (await store.status()).revision;
      const writers = 8;
      const perWriter = 20;
      const revisions = (
        await Promise.all(
          Array.from({ length: writers }, async (_, w) => {
            const mine: number[] = [];
            for (let i = 0; i < perWriter; i++) mine.push(await put(store, `${p}w${w}/${i}`, `${w}:${i}`));
            return mine;
          }),
        )
      ).flat();
      assert.equal(new Set(revisions).size, writers * perWriter);
      assert.equal(Math.min(...revisions), before + 1);
      assert.equal(Math.max(...revisions), before + writers * perWriter);
      assert.equal((await store.range({ prefix: p }, { countOnly: true })).count, writers * perWriter);
      // Concurrent increments with compare-and-swap never lose an update.
      const counter = p + 'counter';
      await put(store, counter, '0');
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let done = 0; done < 5;) {
            const current = (await store.range({ key: counter })).kvs[0]!;
            const result = await store.txn({
              compare: [{ key: counter, target: 'modRevision', op: '=', value: current.modRevision }],
              success: [{ type: 'put', key: counter, value: bytes(String(Number(text(current.value)) + 1)) }],
              failure: [],
            });
            if (result.succeeded) done++;
          }
        }),
      );
      assert.equal(text((await store.range({ key: counter })).kvs[0]!.value), '20');
    });

    test('watch: events in order with correct prevKv; the events of one txn come together', async () => {
      const p = newPrefix('watch');
      const start = await put(store, p + 'a', 'a0');
      const recorder = recordWatch(store, { prefix: p }, { afterRevision: start, prevKv: true });
      await recorder.watch.ready;
      const r1 = await put(store, p + 'a', 'a1');
      const r2 = (
        await store.txn({
          compare: [],
          success: [
            { type: 'put', key: p + 'b', value: bytes('b1') },
            { type: 'put', key: p + 'c', value: bytes('c1') },
            { type: 'delete', span: { key: p + 'a' } },
          ],
          failure: [],
        })
      ).header.revision;
      await put(store, '/conf/elsewhere', 'x'); // outside the span
      const events = await recorder.waitForEvents(4);
      recorder.close();
      assert.deepEqual(events.map(plainEvent), [
        {
          type: 'put',
          kv: { key: p + 'a', value: 'a1', createRevision: start, modRevision: r1, version: 2 },
          prevKv: { key: p + 'a', value: 'a0', createRevision: start, modRevision: start, version: 1 },
        },
        {
          type: 'put',
          kv: { key: p + 'b', value: 'b1', createRevision: r2, modRevision: r2, version: 1 },
          prevKv: undefined,
        },
        {
          type: 'put',
          kv: { key: p + 'c', value: 'c1', createRevision: r2, modRevision: r2, version: 1 },
          prevKv: undefined,
        },
        {
          type: 'delete',
          kv: { key: p + 'a', value: '', createRevision: 0, modRevision: r2, version: 0 },
          prevKv: { key: p + 'a', value: 'a1', createRevision: start, modRevision: r1, version: 2 },
        },
      ]);
      // The three events of revision r2 are in one response.
      const batches = recorder.responses.filter((r) => r.type === 'events');
      assert.ok(
        batches.some(
          (r) => r.type === 'events' && r.events.filter((e) => e.kv.modRevision === r2).length === 3,
        ),
      );
      // Without prevKv, no prevKv; a key span sees only its key.
      const keyOnly = recordWatch(store, { key: p + 'b' }, { afterRevision: start });
      const keyEvents = await keyOnly.waitForEvents(1);
      keyOnly.close();
      assert.deepEqual(keyEvents.map(plainEvent), [
        {
          type: 'put',
          kv: { key: p + 'b', value: 'b1', createRevision: r2, modRevision: r2, version: 1 },
          prevKv: undefined,
        },
      ]);
    });

    test('watch: resumable from any retained revision, exactly the later changes', async () => {
      const p = newPrefix('resume');
      const revisions: Revision[] = [];
      for (let i = 0; i < 6; i++) revisions.push(await put(store, `${p}k${i % 3}`, `v${i}`));
      for (const [index, from] of revisions.entries()) {
        const expected = revisions.slice(index + 1);
        const recorder = recordWatch(store, { prefix: p }, { afterRevision: from, prevKv: true });
        const events = expected.length > 0 ? await recorder.waitForEvents(expected.length) : [];
        await new Promise((resolve) => setTimeout(resolve, 20));
        recorder.close();
        assert.deepEqual(
          recorder.events().map((e) => e.kv.modRevision),
          expected,
        );
        for (const event of events) {
          const i = revisions.indexOf(event.kv.modRevision);
          assert.equal(text(event.kv.value), `v${i}`);
          assert.equal(event.prevKv === undefined, i < 3);
          if (event.prevKv !== undefined) assert.equal(text(event.prevKv.value), `v${i - 3}`);
        }
      }
    });

    test('watch: no gap and no duplicate under concurrent writers, also for a watch that catches up', async () => {
      const p = newPrefix('stream');
      const before = (await store.status()).revision;
      const live = recordWatch(store, { prefix: p }, { afterRevision: before });
      await live.watch.ready;
      const writers = 6;
      const perWriter = 15;
      let lateWatch: ReturnType<typeof recordWatch> | undefined;
      const written = (
        await Promise.all(
          Array.from({ length: writers }, async (_, w) => {
            const mine: number[] = [];
            for (let i = 0; i < perWriter; i++) {
              mine.push(await put(store, `${p}w${w}`, String(i)));
              // Halfway, start a watch from the beginning: it must catch up while writes continue.
              if (w === 0 && i === perWriter / 2 - 0.5)
                lateWatch = recordWatch(store, { prefix: p }, { afterRevision: before });
            }
            return mine;
          }),
        )
      ).flat();
      const expected = [...written].sort((a, b) => a - b);
      for (const recorder of [live, lateWatch!]) {
        const events = await recorder.waitForEvents(expected.length);
        await new Promise((resolve) => setTimeout(resolve, 20));
        recorder.close();
        assert.deepEqual(
          recorder.events().map((e) => e.kv.modRevision),
          expected,
        );
        // Per key, versions count up by one: nothing lost, nothing repeated.
        for (let w = 0; w < writers; w++) {
          const versions = events.filter((e) => e.kv.key === `${p}w${w}`).map((e) => e.kv.version);
          assert.deepEqual(
            versions,
            Array.from({ length: perWriter }, (_, i) => i + 1),
          );
        }
      }
    });

    test('watch: progress notifications when idle, and on request', async () => {
      const p = newPrefix('progress');
      const notified = recordWatch(store, { prefix: p }, { progressNotify: true });
      await notified.watch.ready;
      const current = (await store.status()).revision;
      await notified.waitFor(
        (responses) => responses.some((r) => r.type === 'progress' && r.revision >= current),
        Math.max(10_000, options.progressIntervalMs * 10),
        'an idle progress notification',
      );
      notified.close();
      const requested = recordWatch(store, { prefix: p }, {});
      await requested.watch.ready;
      const written = await put(store, p + 'k', 'v');
      const other = await put(store, '/conf/progress-elsewhere', 'x');
      await requested.waitForEvents(1);
      requested.watch.requestProgress();
      await requested.waitFor(
        (responses) => responses.some((r) => r.type === 'progress'),
        10_000,
        'a requested progress response',
      );
      requested.close();
      const progress = requested.responses.find((r) => r.type === 'progress');
      assert.ok(progress?.type === 'progress');
      assert.ok(progress.revision >= written, `progress ${progress.revision} below the delivered ${written}`);
      assert.ok(progress.revision <= (await store.status()).revision);
      assert.ok(other > written);
      // Progress comes after the events it covers.
      assert.equal(requested.responses[0]?.type, 'events');
    });

    test('watch: close() stops delivery', async () => {
      const p = newPrefix('close');
      const recorder = recordWatch(store, { prefix: p }, {});
      await recorder.watch.ready;
      await put(store, p + 'a', '1');
      await recorder.waitForEvents(1);
      recorder.close();
      recorder.close(); // idempotent
      await put(store, p + 'a', '2');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(recorder.events().length, 1);
    });

    test('compaction: reads and watches below it fail with Compacted; at and above it they work', async () => {
      const p = newPrefix('compact');
      const r1 = await put(store, p + 'a', 'a1');
      const r2 = await put(store, p + 'a', 'a2');
      const r3 = await put(store, p + 'b', 'b1');
      const r4 = await put(store, p + 'a', 'a3');
      await store.compact(r3);
      const error = await rejectsWith(store.range({ prefix: p }, { revision: r2 }), 'Compacted');
      assert.equal(error.revision, r3);
      await rejectsWith(store.range({ prefix: p }, { revision: r1 }), 'Compacted');
      // At the compacted revision, the state is exact.
      assert.deepEqual(
        (await store.range({ prefix: p }, { revision: r3 })).kvs.map(
          (kv) => `${text(kv.value)}@${kv.modRevision}`,
        ),
        [`a2@${r2}`, `b1@${r3}`],
      );
      assert.equal((await store.status()).compactRevision, r3);
      const below = recordWatch(store, { prefix: p }, { afterRevision: revision(r1) });
      await below.waitFor(
        (responses) => responses.some((r) => r.type === 'canceled'),
        10_000,
        'a canceled watch',
      );
      below.close();
      const canceled = below.responses.find((r) => r.type === 'canceled');
      assert.ok(canceled?.type === 'canceled');
      assert.equal(canceled.error.code, 'Compacted');
      assert.equal(below.events().length, 0);
      // A watch from the compacted revision on still gets every later change.
      const from = recordWatch(store, { prefix: p }, { afterRevision: r3, prevKv: true });
      const events = await from.waitForEvents(1);
      from.close();
      assert.deepEqual(
        events.map((e) => [e.kv.modRevision, text(e.kv.value), e.prevKv && text(e.prevKv.value)]),
        [[r4, 'a3', 'a2']],
      );
      await rejectsWith(store.compact(r3), 'Compacted');
      await rejectsWith(store.compact(revision(r2)), 'Compacted');
      const current = (await store.status()).revision;
      const future = await rejectsWith(store.compact(revision(current + 5)), 'FutureRevision');
      assert.equal(future.revision, current);
      await store.compact(current);
      assert.deepEqual(
        (await store.range({ prefix: p })).kvs.map((kv) => text(kv.value)),
        ['a3', 'b1'],
      );
    });

    test('close: watches end with Closed, requests fail with Closed (runs last)', async () => {
      const p = newPrefix('closed');
      const recorder = recordWatch(store, { prefix: p }, {});
      await recorder.watch.ready;
      await store.close();
      await recorder.waitFor((r) => r.some((x) => x.type === 'canceled'), 10_000, 'a canceled watch');
      const canceled = recorder.responses.find((r) => r.type === 'canceled');
      assert.ok(canceled?.type === 'canceled');
      assert.equal(canceled.error.code, 'Closed');
      await rejectsWith(store.range({ prefix: p }), 'Closed');
      await rejectsWith(put(store, p + 'a', 'x'), 'Closed');
      await store.close(); // idempotent
    });
  });
}
