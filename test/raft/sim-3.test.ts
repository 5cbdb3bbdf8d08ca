// Proves Raft's safety properties (and liveness after heal) hold for 3000 seeded runs of a 3-node cluster under
// drops, duplicates, delays, reordering, partitions, crashes with restarts, tick skew and leader transfers.
import { test } from 'node:test';
import { runSeeds } from './sim-runs.js';

const chunk = 500;
for (let from = 1; from < 1 + 3000; from += chunk) {
  test(`3 nodes, seeds ${from}..${from + chunk - 1}`, () => {
    runSeeds({ nodes: 3, from, count: chunk, membership: false });
  });
}
