// Shared by the sim-*.test.ts files: runs a range of seeds and reports every failing one with its replay command.
import assert from 'node:assert/strict';
import { runSimulation, SimFailure } from './sim.js';

export const simRounds = 160;

export interface SeedRange {
  readonly nodes: number;
  readonly from: number;
  readonly count: number;
  readonly membership: boolean;
}

export function runSeeds(range: SeedRange): void {
  const failures: string[] = [];
  for (let seed = range.from; seed < range.from + range.count; seed++) {
    try {
      runSimulation({
        seed,
        nodes: range.nodes,
        rounds: simRounds,
        membership: range.membership,
        transfers: true,
      });
    } catch (err) {
      if (!(err instanceof SimFailure) && !(err instanceof Error)) throw err;
      const replay = `npm run sim -- --seed ${seed} --nodes ${range.nodes} --rounds ${simRounds}${range.membership ? ' --membership' : ''} --trace`;
      failures.push(`${err.message}\n    replay: ${replay}`);
      if (failures.length >= 5) break;
    }
  }
  assert.equal(failures.length, 0, `simulation failures:\n${failures.join('\n')}`);
}
