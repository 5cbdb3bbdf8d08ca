// Proves a simulation run replays exactly from its seed (same trace, same outcome), which is what makes a
// failing seed reproducible with `npm run sim -- --seed N --trace`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSimulation } from './sim.js';

test('the same seed gives the same trace; another seed another one', () => {
  const trace = (seed: number): string[] => {
    const lines: string[] = [];
    runSimulation({
      seed,
      nodes: 5,
      rounds: 80,
      membership: true,
      transfers: true,
      trace: (l) => lines.push(l),
    });
    return lines;
  };
  const a = trace(4242);
  assert.ok(a.length > 100);
  assert.deepEqual(trace(4242), a);
  assert.notDeepEqual(trace(4243), a);
});
