// Proves Raft's safety properties (and liveness after heal) hold for 3,500 seeded runs with membership changes
// (add learner, promote, remove voters including the leader) and leader transfers, on 3, 5 and 7 nodes.
import { test } from 'node:test';
import { runSeeds } from './sim-runs.js';

const chunk = 500;
const plan = [
  { nodes: 3, base: 1_000_001, count: 1500 },
  { nodes: 5, base: 1_500_001, count: 1500 },
  { nodes: 7, base: 1_700_001, count: 500 },
];
for (const { nodes, base, count } of plan) {
  for (let from = base; from < base + count; from += chunk) {
    test(`${nodes} nodes with membership changes, seeds ${from}..${from + chunk - 1}`, () => {
      runSeeds({ nodes, from, count: chunk, membership: true });
    });
  }
}
