// The one bench CLI: `npm run bench -- SCENARIO [options]`. Each scenario is a module with a run function;
// add new ones to `scenarios` below.
import { runClusterBench } from './cluster.js';
import { runStoreBench } from './store.js';
import { runApiBench } from './api.js';
import { runAuthzBench } from './authz.js';

export interface BenchArgs {
  /** Seconds per measured row (default 5). */
  readonly durationSeconds: number;
  /** A smoke run: a fraction of a second per row, one round. */
  readonly quick: boolean;
  /** Rounds of every phase; each row reports the median over rounds (default 3). */
  readonly rounds: number;
  /** Where to write the JSON result (default bench/results/SCENARIO-TIMESTAMP.json). */
  readonly out: string | undefined;
  /** Seeds the random choices of the run (recorded in the JSON). */
  readonly seed: number;
}

const scenarios: Record<string, (args: BenchArgs) => Promise<void>> = {
  store: runStoreBench,
  cluster: runClusterBench,
  api: runApiBench,
  authz: runAuthzBench,
};

function usage(): never {
  process.stderr.write(
    `usage: npm run bench -- SCENARIO [--duration SECONDS] [--rounds N] [--quick] [--out FILE] [--seed N]\nscenarios: ${Object.keys(scenarios).join(', ')}\n`,
  );
  process.exit(2);
}

function parse(argv: readonly string[]): { scenario: string; args: BenchArgs } {
  const [scenario, ...rest] = argv;
  if (scenario === undefined || !(scenario in scenarios)) usage();
  let durationSeconds = 5;
  let quick = false;
  let out: string | undefined;
  let rounds = 3;
  let seed = Date.now() % 1_000_000;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    if (flag === '--quick') quick = true;
    else if (flag === '--duration') durationSeconds = Number(rest[++i]);
    else if (flag === '--out') out = rest[++i];
    else if (flag === '--rounds') rounds = Number(rest[++i]);
    else if (flag === '--seed') seed = Number(rest[++i]);
    else usage();
  }
  if (!(durationSeconds > 0) || !Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(seed)) usage();
  return { scenario, args: { durationSeconds, quick, rounds: quick ? 1 : rounds, out, seed } };
}

const { scenario, args } = parse(process.argv.slice(2));
await scenarios[scenario]!(args);
