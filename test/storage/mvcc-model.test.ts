// Proves the MVCC engine matches a simple in-memory model on random txn histories: ranges at every retained
// revision, txn outcomes, and the watch change log, before and after compaction and reopen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { openEmbeddedStore } from '../../src/storage/embedded/engine.js';
import { revision } from '../../src/util/brand.js';
import type { KeyValue, TxnOp, TxnRequest } from '../../src/storage/contract.js';
import { tempDir } from '../support/tmp.js';
import { recordWatch } from '../support/watch.js';

interface ModelKv {
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
}
type State = Map<string, ModelKv>;

const keys = ['a', 'a/b', 'a\0', 'b', 'é', '\u{1F600}'];
const key = fc.constantFrom(...keys);
const op: fc.Arbitrary<TxnOp> = fc.oneof(
  fc.record({
    type: fc.constant('put' as const),
    key,
    value: fc.string({ maxLength: 4 }).map((s) => Buffer.from(s)),
  }),
  fc.record({ type: fc.constant('delete' as const), span: key.map((k) => ({ key: k })) }),
  fc.record({
    type: fc.constant('delete' as const),
    span: fc.constantFrom('a', 'b', '').map((p) => ({ prefix: p })),
  }),
);
const txn: fc.Arbitrary<TxnRequest> = fc
  .record({
    compare: fc.array(fc.record({ key, version: fc.integer({ min: 0, max: 3 }) }), { maxLength: 1 }),
    success: fc.array(op, { maxLength: 3 }),
    failure: fc.array(op, { maxLength: 2 }),
  })
  .map(({ compare, success, failure }) => ({
    compare: compare.map((c) => ({
      key: c.key,
      target: 'version' as const,
      op: '=' as const,
      value: c.version,
    })),
    // etcd (and so the contract) refuses a branch that writes a key twice; keep the first put of each key.
    success: dedupe(success),
    failure: dedupe(failure),
  }));

function dedupe(ops: TxnOp[]): TxnOp[] {
  const puts = new Set<string>();
  const kept: TxnOp[] = [];
  for (const o of ops) {
    if (o.type === 'put') {
      if (puts.has(o.key)) continue;
      puts.add(o.key);
    }
    kept.push(o);
  }
  // A put covered by a delete in the same branch is refused too: drop such deletes.
  return kept.filter(
    (o) =>
      o.type !== 'delete' ||
      ![...puts].some((k) => ('key' in o.span ? k === o.span.key : k.startsWith(o.span.prefix))),
  );
}

/** Applies a txn to the model; returns the new state (or the same one), whether compares held, range results. */
function applyModel(
  state: State,
  request: TxnRequest,
  next: number,
): { state: State; succeeded: boolean; ranges: string[] } {
  const succeeded = request.compare.every((c) => (state.get(c.key)?.version ?? 0) === c.value);
  const after = new Map(state);
  let wrote = false;
  const ranges: string[] = [];
  for (const o of succeeded ? request.success : request.failure) {
    if (o.type === 'range' && 'prefix' in o.span) {
      const prefix = o.span.prefix;
      const all = sorted(new Map([...after].filter(([k]) => k.startsWith(prefix))));
      const limit = o.options?.limit ?? 0;
      const kvs = limit > 0 ? all.slice(0, limit) : all;
      ranges.push(JSON.stringify({ kvs, more: kvs.length < all.length, count: all.length }));
    }
    if (o.type === 'put') {
      const prev = after.get(o.key);
      after.set(o.key, {
        value: Buffer.from(o.value).toString(),
        createRevision: prev?.createRevision ?? next,
        modRevision: next,
        version: (prev?.version ?? 0) + 1,
      });
      wrote = true;
    } else if (o.type === 'delete') {
      for (const k of [...after.keys()]) {
        if ('key' in o.span ? k === o.span.key : k.startsWith(o.span.prefix)) {
          after.delete(k);
          wrote = true;
        }
      }
    }
  }
  return { state: wrote ? after : state, succeeded, ranges };
}

const show = (kv: KeyValue): string =>
  `${kv.key}=${Buffer.from(kv.value).toString()}@${kv.createRevision}/${kv.modRevision}/v${kv.version}`;

const sorted = (state: State): string[] =>
  [...state]
    .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map(([k, kv]) => `${k}=${kv.value}@${kv.createRevision}/${kv.modRevision}/v${kv.version}`);

test('random txn histories: every retained revision reads as the model says', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(txn, { minLength: 1, maxLength: 25 }),
      fc.nat(),
      fc.boolean(),
      async (txns, compactPick, concurrent) => {
        const dir = await tempDir('model');
        let store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
        try {
          // Model: the state at each revision (index = revision).
          const states: State[] = [new Map(), new Map()];
          // Concurrent submission exercises group commit; the engine orders txns in submission order.
          const results = concurrent
            ? await Promise.all(txns.map((t) => store.txn(t)))
            : await txns.reduce<Promise<Awaited<ReturnType<typeof store.txn>>[]>>(
                async (acc, t) => [...(await acc), await store.txn(t)],
                Promise.resolve([]),
              );
          for (const [i, request] of txns.entries()) {
            const current = states[states.length - 1]!;
            const { state, succeeded, ranges } = applyModel(current, request, states.length);
            if (state !== current) states.push(state);
            assert.equal(results[i]!.succeeded, succeeded);
            const gotRanges = results[i]!.responses.flatMap((r) =>
              r.type === 'range'
                ? [
                    JSON.stringify({
                      kvs: r.result.kvs.map(show),
                      more: r.result.more,
                      count: r.result.count,
                    }),
                  ]
                : [],
            );
            assert.deepEqual(gotRanges, ranges, `range ops of txn ${i}`);
            assert.equal(results[i]!.header.revision, states.length - 1);
          }
          const head = states.length - 1;
          const check = async (from: number): Promise<void> => {
            for (let r = from; r <= head; r++) {
              const range = await store.range({ prefix: '' }, { revision: revision(r) });
              const got = range.kvs.map(show);
              assert.deepEqual(got, sorted(states[r]!), `revision ${r}`);
              assert.equal(range.count, states[r]!.size);
            }
          };
          await check(1);
          // Compact somewhere, reopen (finishing physical compaction), and check what is retained.
          const compactAt = 1 + (compactPick % head);
          if (compactAt > 1) await store.compact(revision(compactAt));
          await store.close();
          store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
          for (let i = 0; i < 100 && store.mvcc.compactionPending; i++)
            await new Promise((r) => setTimeout(r, 5));
          await check(compactAt);
          // The change log from the compacted revision replays the model's changes.
          const expectedChanges = head - compactAt;
          const watch = recordWatch(
            store,
            { prefix: '' },
            { afterRevision: revision(compactAt), prevKv: true },
          );
          const events = expectedChanges > 0 ? await watch.waitForEvents(1) : [];
          await watch.waitFor(
            () => new Set(watch.events().map((e) => e.kv.modRevision)).size === expectedChanges,
            5000,
            'all revisions',
          );
          watch.close();
          for (const event of watch.events()) {
            const r = event.kv.modRevision;
            const now = states[r]!.get(event.kv.key);
            const before = states[r - 1]!.get(event.kv.key);
            if (event.type === 'put') assert.equal(Buffer.from(event.kv.value).toString(), now?.value);
            else assert.equal(now, undefined);
            // prevKv is the key's state just before, when that state is still retained.
            if (event.prevKv !== undefined)
              assert.equal(Buffer.from(event.prevKv.value).toString(), before?.value);
            else if (before !== undefined)
              assert.ok(before.modRevision < compactAt, `missing prevKv at ${r}`);
          }
          void events;
        } finally {
          await store.close();
          await dir.remove();
        }
      },
    ),
    { numRuns: 40 },
  );
});
