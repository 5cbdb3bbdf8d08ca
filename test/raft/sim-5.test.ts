// Proves Raft's safety properties (and liveness after heal) hold for 2500 seeded runs of a 5-node cluster under
// drops, duplicates, delays, reordering, partitions, crashes with restarts, tick skew and leader transfers.
import { test } from 'node:test';
import { runSeeds } from './sim-runs.js';

const chunk = 500;
for (let from = 300001; from < 300001 + 2500; from += chunk) {
  test(`5 nodes, seeds ${from}..${from + chunk - 1}`, () => {
    runSeeds({ nodes: 5, from, count: chunk, membership: false });
  });
}
