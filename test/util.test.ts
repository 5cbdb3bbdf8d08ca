// Proves the seeded random generator replays: the same seed gives the same sequence, another seed another one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRandom } from '../src/util/clock.js';

test('a seed replays the same sequence', () => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const c = seededRandom(43);
  const seqA = Array.from({ length: 100 }, () => a.int(0, 1000));
  const seqB = Array.from({ length: 100 }, () => b.int(0, 1000));
  const seqC = Array.from({ length: 100 }, () => c.int(0, 1000));
  assert.deepEqual(seqA, seqB);
  assert.notDeepEqual(seqA, seqC);
  assert.ok(seqA.every((n) => n >= 0 && n < 1000));
});
