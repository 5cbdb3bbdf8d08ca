// A long sweep of seeded simulation runs, beyond what CI runs (not a test file):
//   node dist/test/raft/sim-sweep.js --nodes 3 --from 1000001 --count 50000 [--rounds 160] [--membership]
// Prints every failing seed with its replay command, and a summary line at the end.
import { runSimulation } from './sim.js';

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : (process.argv[at + 1] ?? fallback);
}

const nodes = Number(flag('nodes', '3'));
const from = Number(flag('from', '1'));
const count = Number(flag('count', '1000'));
const rounds = Number(flag('rounds', '160'));
const membership = process.argv.includes('--membership');
const startedMs = performance.now();
const failed: number[] = [];
for (let seed = from; seed < from + count; seed++) {
  try {
    runSimulation({ seed, nodes, rounds, membership, transfers: true });
  } catch (err) {
    failed.push(seed);
    const message = err instanceof Error ? err.message : String(err);
    console.log(
      `FAIL seed=${seed}: ${message.split('\n')[0]}\n  replay: npm run sim -- --seed ${seed} --nodes ${nodes} --rounds ${rounds}${membership ? ' --membership' : ''} --trace`,
    );
  }
}
const seconds = ((performance.now() - startedMs) / 1000).toFixed(0);
console.log(
  `sweep nodes=${nodes} rounds=${rounds} membership=${membership} seeds ${from}..${from + count - 1}: ` +
    `${count} runs, ${failed.length} failed${failed.length > 0 ? ` (${failed.join(', ')})` : ''}, ${seconds} s`,
);
