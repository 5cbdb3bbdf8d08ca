// Proves the linearizability checker accepts histories known to be linearizable and rejects ones known not to
// be, including unknown outcomes, per-key partitions, the time budget, and random histories of a real register.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkLinearizability } from '../../chaos/checker/linearizability.js';
import {
  objectModel,
  type ObjectInput,
  type ObjectOperation,
  type ObjectOutput,
} from '../../chaos/checker/object-model.js';

function op(
  clientId: number,
  callAt: number,
  returnAt: number | undefined,
  input: ObjectInput,
  output?: ObjectOutput,
): ObjectOperation {
  return {
    clientId,
    callAt,
    returnAt: returnAt ?? Infinity,
    input,
    output: returnAt === undefined ? undefined : output,
  };
}

const check = (history: ObjectOperation[]) => checkLinearizability(objectModel, history).verdict;

test('a sequential history is linearizable', () => {
  assert.equal(
    check([
      op(1, 0, 1, { type: 'create', key: 'a', value: 'v1' }, { type: 'ok', revision: '2' }),
      op(1, 2, 3, { type: 'get', key: 'a' }, { type: 'value', value: 'v1', revision: '2' }),
      op(
        1,
        4,
        5,
        { type: 'update', key: 'a', value: 'v2', expectedRevision: '2' },
        { type: 'ok', revision: '3' },
      ),
      op(1, 6, 7, { type: 'get', key: 'a' }, { type: 'value', value: 'v2', revision: '3' }),
      op(1, 8, 9, { type: 'delete', key: 'a' }, { type: 'ok' }),
      op(1, 10, 11, { type: 'get', key: 'a' }, { type: 'not-found' }),
    ]),
    'ok',
  );
});

test('a stale read after a completed write is not linearizable', () => {
  assert.equal(
    check([
      op(1, 0, 1, { type: 'create', key: 'a', value: 'v1' }, { type: 'ok', revision: '2' }),
      op(
        1,
        2,
        3,
        { type: 'update', key: 'a', value: 'v2', expectedRevision: '2' },
        { type: 'ok', revision: '3' },
      ),
      op(2, 4, 5, { type: 'get', key: 'a' }, { type: 'value', value: 'v1', revision: '2' }),
    ]),
    'illegal',
  );
});

test('a read concurrent with a write may see either value', () => {
  const base = [
    op(1, 0, 1, { type: 'create', key: 'a', value: 'v1' }, { type: 'ok', revision: '2' }),
    op(
      1,
      2,
      10,
      { type: 'update', key: 'a', value: 'v2', expectedRevision: '2' },
      { type: 'ok', revision: '3' },
    ),
  ];
  assert.equal(
    check([...base, op(2, 3, 4, { type: 'get', key: 'a' }, { type: 'value', value: 'v1', revision: '2' })]),
    'ok',
  );
  assert.equal(
    check([...base, op(2, 3, 4, { type: 'get', key: 'a' }, { type: 'value', value: 'v2', revision: '3' })]),
    'ok',
  );
  // But not the new value and then, later, the old one.
  assert.equal(
    check([
      ...base,
      op(2, 3, 4, { type: 'get', key: 'a' }, { type: 'value', value: 'v2', revision: '3' }),
      op(3, 5, 6, { type: 'get', key: 'a' }, { type: 'value', value: 'v1', revision: '2' }),
    ]),
    'illegal',
  );
});

test('two compare-and-swaps from the same revision cannot both succeed (a lost update)', () => {
  const history = [
    op(1, 0, 1, { type: 'create', key: 'a', value: 'v1' }, { type: 'ok', revision: '2' }),
    op(
      1,
      2,
      5,
      { type: 'update', key: 'a', value: 'x', expectedRevision: '2' },
      { type: 'ok', revision: '3' },
    ),
    op(
      2,
      2,
      5,
      { type: 'update', key: 'a', value: 'y', expectedRevision: '2' },
      { type: 'ok', revision: '4' },
    ),
  ];
  assert.equal(check(history), 'illegal');
  const conflictInstead = [
    ...history.slice(0, 2),
    op(2, 2, 5, { type: 'update', key: 'a', value: 'y', expectedRevision: '2' }, { type: 'conflict' }),
  ];
  assert.equal(check(conflictInstead), 'ok');
});

test('a write with an unknown outcome may have happened or not, but not both', () => {
  const unknownCreate = op(1, 0, undefined, { type: 'create', key: 'a', value: 'v1' });
  const readSees = op(2, 5, 6, { type: 'get', key: 'a' }, { type: 'value', value: 'v1', revision: '7' });
  const readMisses = op(2, 5, 6, { type: 'get', key: 'a' }, { type: 'not-found' });
  assert.equal(check([unknownCreate, readSees]), 'ok');
  assert.equal(check([unknownCreate, readMisses]), 'ok');
  const laterMiss = op(3, 7, 8, { type: 'get', key: 'a' }, { type: 'not-found' });
  assert.equal(check([unknownCreate, readSees, laterMiss]), 'illegal');
  // The revision learned from the read must match a later compare-and-swap.
  const casWrong = op(
    3,
    7,
    8,
    { type: 'update', key: 'a', value: 'v2', expectedRevision: '9' },
    { type: 'ok' },
  );
  assert.equal(check([unknownCreate, readSees, casWrong]), 'illegal');
});

test('partitions are checked on their own and the failing one is reported', () => {
  const result = checkLinearizability(objectModel, [
    op(1, 0, 1, { type: 'create', key: 'a', value: 'a1' }, { type: 'ok', revision: '2' }),
    op(1, 0, 1, { type: 'create', key: 'b', value: 'b1' }, { type: 'ok', revision: '3' }),
    op(2, 2, 3, { type: 'get', key: 'b' }, { type: 'not-found' }),
    op(2, 4, 5, { type: 'get', key: 'a' }, { type: 'value', value: 'a1', revision: '2' }),
  ]);
  assert.equal(result.verdict, 'illegal');
  const verdicts = result.partitions.map((p) => [p.operations[0]?.input.key, p.verdict]);
  assert.deepEqual(verdicts, [
    ['a', 'ok'],
    ['b', 'illegal'],
  ]);
  const failing = result.partitions[1];
  assert.deepEqual(failing?.longestLinearization, [0], 'the create linearizes, the read after it cannot');
});

test('an exhausted budget answers unknown, not ok', () => {
  // Many concurrent writes and a read of a value nobody wrote: the search must explore before it can say no.
  const history: ObjectOperation[] = [
    op(0, 0, 1, { type: 'create', key: 'a', value: 'v0' }, { type: 'ok', revision: '1' }),
  ];
  for (let i = 1; i <= 12; i++) {
    history.push(
      op(
        i,
        2,
        100,
        { type: 'update', key: 'a', value: `v${i}`, expectedRevision: '1' },
        { type: 'conflict' },
      ),
    );
  }
  history.push(
    op(99, 101, 102, { type: 'get', key: 'a' }, { type: 'value', value: 'nobody', revision: '5' }),
  );
  assert.equal(checkLinearizability(objectModel, history, { budgetMs: 0 }).verdict, 'unknown');
  assert.equal(checkLinearizability(objectModel, history, { budgetMs: 10_000 }).verdict, 'illegal');
  // A memo too small for the search is out of memory budget: unknown as well, never a crash or a verdict.
  assert.equal(
    checkLinearizability(objectModel, history, { budgetMs: 10_000, memoCharsMax: 10 }).verdict,
    'unknown',
  );
});

test('random histories of a real register are linearizable, and a read of an unwritten value is not', () => {
  // Clients run operations on a real sequential register; each operation takes effect at an instant inside
  // its [call, return] window, so the history is linearizable by construction.
  const arbitraryStep = fc.record({
    client: fc.integer({ min: 0, max: 3 }),
    kind: fc.constantFrom('create', 'update', 'delete', 'get'),
    useCurrentRevision: fc.boolean(),
    before: fc.integer({ min: 0, max: 5 }),
    after: fc.integer({ min: 0, max: 5 }),
    unknown: fc.integer({ min: 0, max: 9 }),
  });
  fc.assert(
    fc.property(fc.array(arbitraryStep, { minLength: 1, maxLength: 25 }), (steps) => {
      let exists = false;
      let value = '';
      let revision = 1;
      const history: ObjectOperation[] = [];
      steps.forEach((step, index) => {
        const at = index * 10; // the instant the operation takes effect
        const expectedRevision = step.useCurrentRevision ? String(revision) : String(revision + 100);
        let input: ObjectInput;
        let output: ObjectOutput;
        if (step.kind === 'create') {
          input = { type: 'create', key: 'k', value: `w${index}` };
          if (exists) output = { type: 'exists' };
          else {
            exists = true;
            value = `w${index}`;
            revision = at + 2;
            output = { type: 'ok', revision: String(revision) };
          }
        } else if (step.kind === 'update') {
          input = { type: 'update', key: 'k', value: `w${index}`, expectedRevision };
          if (!exists) output = { type: 'not-found' };
          else if (expectedRevision !== String(revision)) output = { type: 'conflict' };
          else {
            value = `w${index}`;
            revision = at + 2;
            output = { type: 'ok', revision: String(revision) };
          }
        } else if (step.kind === 'delete') {
          input = { type: 'delete', key: 'k' };
          output = exists ? { type: 'ok' } : { type: 'not-found' };
          exists = false;
        } else {
          input = { type: 'get', key: 'k' };
          output = exists ? { type: 'value', value, revision: String(revision) } : { type: 'not-found' };
        }
        // Unknown outcomes for some writes: the reply is lost, the effect happened.
        const lost = step.unknown === 0 && step.kind !== 'get';
        history.push(op(step.client, at - step.before, lost ? undefined : at + step.after, input, output));
      });
      assert.equal(checkLinearizability(objectModel, history).verdict, 'ok');

      const corrupted = [
        ...history,
        op(
          9,
          steps.length * 10 + 10,
          steps.length * 10 + 11,
          { type: 'get', key: 'k' },
          { type: 'value', value: 'never', revision: '1' },
        ),
      ];
      assert.equal(checkLinearizability(objectModel, corrupted).verdict, 'illegal');
    }),
    { numRuns: 300, seed: 20261121 },
  );
});
