// Proves the chaos run's own checks on hand-made histories: a lost acknowledged write, a stale or wrong list
// read, diverged nodes and a non-linearizable object are each reported with a counterexample, while correct
// histories pass; and that the fault schedule is a function of the seed that covers every enabled kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  acknowledgedChanges,
  checkConvergence,
  checkLinearizable,
  checkListReads,
  checkNoLostWrites,
  referenceValues,
  shrinkViolation,
} from '../../chaos/checks.js';
import { checkLinearizability } from '../../chaos/checker/linearizability.js';
import { objectModel, type ObjectOperation } from '../../chaos/checker/object-model.js';
import type { WatcherLog } from '../../chaos/checker/watch.js';
import { faultKinds, schedule } from '../../chaos/faults.js';
import type { ListItem, ListRecord } from '../../chaos/workload.js';

const create = (key: string, value: string, revision: number, callAt: number): ObjectOperation => ({
  clientId: 1,
  input: { type: 'create', key, value },
  output: { type: 'ok', revision: String(revision) },
  callAt,
  returnAt: callAt + 1,
});
const get = (key: string, callAt: number, value?: string, revision?: number): ObjectOperation => ({
  clientId: 2,
  input: { type: 'get', key },
  output: value === undefined ? { type: 'not-found' } : { type: 'value', value, revision: String(revision) },
  callAt,
  returnAt: callAt + 1,
});
const final = (items: ListItem[]): Map<string, ListItem> => new Map(items.map((i) => [i.key, i]));

test('a read that misses an acknowledged create is not linearizable, with the operations shown', () => {
  const ok = checkLinearizable([create('a', 'v1', 5, 0), get('a', 10, 'v1', 5)], 5_000);
  assert.equal(ok.verdict, 'pass');
  const bad = checkLinearizable([create('a', 'v1', 5, 0), get('a', 10, 'v1', 5), get('a', 20)], 5_000);
  assert.equal(bad.verdict, 'fail');
  assert.match(bad.summary, /first: a\)/);
  assert.ok(bad.counterexample.some((line) => /get -> not-found/.test(line)));
});

test('an acknowledged write missing from the final state is lost unless a delete explains it', () => {
  const ops = [create('a', 'v1', 5, 0), create('b', 'v2', 6, 0)];
  const kept = checkNoLostWrites(
    ops,
    final([
      { key: 'a', value: 'v1', revision: 5 },
      { key: 'b', value: 'v9', revision: 9 },
    ]),
    [],
  );
  assert.equal(kept.verdict, 'pass');
  const lost = checkNoLostWrites(ops, final([{ key: 'a', value: 'old', revision: 3 }]), []);
  assert.equal(lost.verdict, 'fail');
  assert.equal(lost.counterexample.length, 2); // a went back in time, b vanished
  const watcherSawDelete: WatcherLog = {
    id: 'w',
    prefix: '',
    startRevision: 1,
    records: [{ type: 'DELETED', key: 'b', revision: 8 }],
  };
  const explained = checkNoLostWrites(ops, final([{ key: 'a', value: 'v1', revision: 5 }]), [
    watcherSawDelete,
  ]);
  assert.equal(explained.verdict, 'pass');
});

test('list reads must honour NotOlderThan and Exact and agree with known versions', () => {
  const ops = [create('a', 'v1', 5, 0)];
  const reference = referenceValues(acknowledgedChanges(ops), []);
  const list = (over: Partial<ListRecord>): ListRecord => ({
    clientId: 1,
    node: 0,
    mode: 'any',
    requested: undefined,
    callAt: 0,
    returnAt: 1,
    revision: 7,
    items: [{ key: 'a', value: 'v1', revision: 5 }],
    ...over,
  });
  assert.equal(checkListReads([list({}), list({ mode: 'exact', requested: 7 })], reference).verdict, 'pass');
  const bad = checkListReads(
    [
      list({ mode: 'not-older-than', requested: 9 }),
      list({ mode: 'exact', requested: 6 }),
      list({ items: [{ key: 'a', value: 'other', revision: 5 }] }),
      list({ revision: 4 }),
    ],
    reference,
  );
  assert.equal(bad.verdict, 'fail');
  assert.equal(bad.counterexample.length, 4);
});

test('nodes with different state do not converge', () => {
  const node = (name: string, hash: string | undefined) => ({
    name,
    appliedIndex: 10,
    revision: 9,
    hash,
    objects: 3,
  });
  assert.equal(checkConvergence([node('n1', 'h'), node('n2', 'h')], 'h').verdict, 'pass');
  assert.equal(checkConvergence([node('n1', 'h'), node('n2', 'x')], 'h').verdict, 'fail');
  assert.equal(checkConvergence([node('n1', 'h'), node('n2', undefined)], 'h').verdict, 'fail');
  assert.equal(checkConvergence([node('n1', 'x'), node('n2', 'x')], 'h').verdict, 'fail');
});

test('the fault schedule derives from the seed and covers every enabled kind', () => {
  const a = schedule(42, faultKinds, 3, 60_000);
  assert.deepEqual(schedule(42, faultKinds, 3, 60_000), a);
  assert.notDeepEqual(schedule(43, faultKinds, 3, 60_000), a);
  assert.deepEqual(new Set(a.map((f) => f.fault.kind)), new Set(faultKinds));
  for (const f of a) assert.ok(f.atMs >= 3_000 && f.atMs + f.durationMs <= 57_000);
  for (let i = 1; i < a.length; i++) {
    const previous = a[i - 1]!;
    assert.ok(a[i]!.atMs >= previous.atMs + previous.durationMs, 'one fault at a time');
  }
  assert.deepEqual(schedule(1, [], 3, 60_000), []);
});

test('409 for an update racing a delete is a noted deviation, not a violation; a real violation still fails', () => {
  const race: ObjectOperation[] = [
    create('a', 'v1', 5, 0),
    {
      clientId: 3,
      input: { type: 'delete', key: 'a', expectedRevision: '5' },
      output: { type: 'ok' },
      callAt: 10,
      returnAt: 20,
    },
    {
      clientId: 4,
      input: { type: 'update', key: 'a', value: 'v2', expectedRevision: '5' },
      output: { type: 'conflict' },
      callAt: 12,
      returnAt: 22,
    },
  ];
  assert.equal(checkLinearizability(objectModel, race).verdict, 'illegal'); // Kubernetes answers 404 here
  const report = checkLinearizable(race, 5_000);
  assert.equal(report.verdict, 'pass');
  assert.match(report.notes?.[0] ?? '', /409 Conflict/);
  const lost = checkLinearizable([...race, get('a', 30, 'v1', 5)], 5_000);
  assert.equal(lost.verdict, 'fail');
  // Out of budget is undecided, never a failure (nor a pass).
  assert.equal(checkLinearizable([...race, get('a', 30, 'v1', 5)], 0).verdict, 'unknown');
});

test('a violation shrinks to the operations that make it, dropping only reads and no-op writes', () => {
  const history: ObjectOperation[] = [
    create('a', 'v1', 5, 0),
    get('a', 10, 'v1', 5),
    get('a', 20, 'v1', 5),
    {
      clientId: 3,
      input: { type: 'update', key: 'a', value: 'v2', expectedRevision: '4' },
      output: { type: 'conflict' },
      callAt: 30,
      returnAt: 31,
    },
    get('a', 40), // the violation: an acknowledged object reads as missing
    get('a', 50, 'v1', 5),
  ];
  const partition = checkLinearizability(objectModel, history).partitions[0]!;
  assert.equal(partition.verdict, 'illegal');
  const shrunk = shrinkViolation(partition, 5_000);
  assert.equal(checkLinearizability(objectModel, shrunk.operations).verdict, 'illegal');
  assert.deepEqual(
    shrunk.operations.map((op) => `${op.input.type}@${op.callAt}`),
    ['create@0', 'get@40'],
  );
  const report = checkLinearizable(history, 5_000);
  assert.match(report.counterexample[0] ?? '', /shrunk from 6 to 2 operations/);
});
