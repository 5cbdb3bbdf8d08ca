// Proves the reconnect backoff: delays grow exponentially within [ceiling/2, ceiling], stop at the maximum,
// start over after reset, and replay from the seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../../src/transport/backoff.js';
import { seededRandom } from '../../src/util/clock.js';

test('delays double per failure with equal jitter, capped at the maximum, and reset', () => {
  const backoff = new Backoff({ delayMsMin: 50, delayMsMax: 2000, random: seededRandom(1) });
  const ceilings = [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000];
  for (const ceiling of ceilings) {
    const delay = backoff.nextDelayMs();
    assert.ok(delay >= ceiling / 2 && delay <= ceiling, `${delay} within [${ceiling / 2}, ${ceiling}]`);
  }
  backoff.reset();
  assert.ok(backoff.nextDelayMs() <= 50);
});

test('the same seed gives the same delays; jitter spreads them', () => {
  const run = (seed: number): number[] => {
    const backoff = new Backoff({ delayMsMin: 1000, delayMsMax: 1000, random: seededRandom(seed) });
    return Array.from({ length: 20 }, () => backoff.nextDelayMs());
  };
  assert.deepEqual(run(5), run(5));
  assert.ok(new Set(run(5)).size > 10, 'jittered, not constant');
});
