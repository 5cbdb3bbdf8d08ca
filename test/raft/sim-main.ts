// Replays one simulation run: npm run sim -- --seed N [--nodes 5] [--rounds K] [--membership] [--trace]
import { runSimulation } from './sim.js';

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}

const seed = Number(flag('seed') ?? '1');
const nodes = Number(flag('nodes') ?? '3');
const rounds = Number(flag('rounds') ?? flag('steps') ?? '160');
const membership = process.argv.includes('--membership');
const transfers = !process.argv.includes('--no-transfers');
const traced = process.argv.includes('--trace');
try {
  const stats = runSimulation({
    seed,
    nodes,
    rounds,
    membership,
    transfers,
    ...(traced ? { trace: (line: string) => console.log(line) } : {}),
  });
  console.log(`ok seed=${seed} nodes=${nodes}`, JSON.stringify(stats));
} catch (err) {
  console.error(String(err instanceof Error ? (err.stack ?? err.message) : err));
  process.exitCode = 1;
}
