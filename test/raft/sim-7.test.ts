// Proves Raft's safety properties (and liveness after heal) hold for 1500 seeded runs of a 7-node cluster under
// drops, duplicates, delays, reordering, partitions, crashes with restarts, tick skew and leader transfers.
import { test } from 'node:test';
import { runSeeds } from './sim-runs.js';

const chunk = 500;
for (let from = 700001; from < 700001 + 1500; from += chunk) {
  test(`7 nodes, seeds ${from}..${from + chunk - 1}`, () => {
    runSeeds({ nodes: 7, from, count: chunk, membership: false });
  });
}
