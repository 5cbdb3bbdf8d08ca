// The one bench CLI: `npm run bench -- SCENARIO [options]`. Each scenario is a module with a run function and
// a one-line summary; add a new one as one entry of `scenarios` below. The common flags are parsed here, once,
// into BenchArgs; a scenario reads the ones it uses and says in its JSON which values it ran with.
import { runClusterBench } from './cluster.js';
import { runStoreBench } from './store.js';
import { runApiBench } from './api.js';
import { runAuthzBench } from './authz.js';
import { runLatencyBench } from './latency.js';
import { runRaftlogBench } from './raftlog.js';
import type { Target } from './measure.js';

export interface BenchArgs {
  /** Seconds per measured row (default 5). */
  readonly durationSeconds: number;
  /** A smoke run: a fraction of a second per row, one round. */
  readonly quick: boolean;
  /** Rounds of every phase; each row reports the median over rounds (default 3). */
  readonly rounds: number;
  /** Where to write the JSON result (default bench/results/SCENARIO-TIMESTAMP.json); the HTML goes beside it. */
  readonly out: string | undefined;
  /** Seeds the random choices of the run (recorded in the JSON). */
  readonly seed: number;
  /** What to measure: Stoa, etcd, or both side by side (default both). */
  readonly targets: readonly Target[];
  /** Cluster size (members of each target); undefined = the scenario's default. */
  readonly nodes: number | undefined;
  /** Concurrent clients of the concurrent rows; undefined = the scenario's default. */
  readonly concurrency: number | undefined;
  /** Value size in bytes of the write rows; undefined = the scenario's default. */
  readonly valueBytes: number | undefined;
  /** Leader kills of the failover rows (cluster); undefined = the scenario's default. */
  readonly kills: number | undefined;
}

export interface Scenario {
  readonly summary: string;
  readonly run: (args: BenchArgs) => Promise<void>;
}

const scenarios: Record<string, Scenario> = {
  store: { summary: 'embedded LevelDB engine vs a single-member etcd, in process', run: runStoreBench },
  cluster: { summary: 'N-node Stoa vs N-member etcd: puts, reads, watch, failover', run: runClusterBench },
  api: {
    summary: 'the HTTPS API on a Stoa cluster vs the same API server on an N-member etcd',
    run: runApiBench,
  },
  authz: {
    summary:
      'RBAC in process, and SubjectAccessReviews, impersonated GETs, binding-to-effect with 10 and 10,000 bindings on both targets',
    run: runAuthzBench,
  },
  latency: {
    summary: "one client's write on a 3-node Stoa cluster, traced stage by stage",
    run: runLatencyBench,
  },
  raftlog: {
    summary: 'Raft log save(): the segment WAL vs the LevelDB log it replaced, in process',
    run: runRaftlogBench,
  },
};

const usageText = `usage: npm run bench -- SCENARIO [flags]

flags:
  --target stoa|etcd|both   what to measure (default both, side by side with the ratio)
  --nodes N                 cluster size of each target (default: 3; store: 1)
  --duration SECONDS        seconds per measured row (default 5)
  --concurrency N           concurrent clients of the concurrent rows (default: per scenario, 64 or 32)
  --value-size BYTES        value size of the write rows (default: per scenario)
  --rounds N                rounds per phase, each row the median (default 3; store only)
  --kills N                 leader kills of the failover rows (default 11; cluster only)
  --seed N                  seed of the run's random choices (recorded)
  --out FILE                JSON result (default bench/results/SCENARIO-TIME.json); the HTML report beside it
  --quick                   a smoke run: a fraction of a second per row, one round

scenarios:
${Object.entries(scenarios)
  .map(([name, s]) => `  ${name.padEnd(10)}${s.summary}`)
  .join('\n')}
`;

function usage(problem?: string): never {
  process.stderr.write(`${problem === undefined ? '' : `bench: ${problem}\n`}${usageText}`);
  process.exit(2);
}

function positiveInteger(flag: string, text: string | undefined, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max)
    usage(`${flag} takes an integer from 1 to ${max}, not ${text}`);
  return n;
}

export function parseBenchArgs(argv: readonly string[]): { scenario: string; args: BenchArgs } {
  const [scenario, ...rest] = argv;
  if (scenario === undefined || scenario === '--help' || scenario === '-h') usage();
  if (!(scenario in scenarios)) usage(`unknown scenario ${scenario}`);
  let durationSeconds = 5;
  let quick = false;
  let out: string | undefined;
  let rounds = 3;
  let seed = Date.now() % 1_000_000;
  let targets: readonly Target[] = ['stoa', 'etcd'];
  let nodes: number | undefined;
  let concurrency: number | undefined;
  let valueBytes: number | undefined;
  let kills: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const eq = arg.indexOf('=');
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const value = (): string => (eq < 0 ? (rest[++i] ?? usage(`${flag} needs a value`)) : arg.slice(eq + 1));
    switch (flag) {
      case '--quick':
        quick = true;
        break;
      case '--duration':
        durationSeconds = Number(value().replace(/s$/, ''));
        if (!(durationSeconds > 0 && durationSeconds <= 3600)) usage('--duration takes 0 < SECONDS <= 3600');
        break;
      case '--out':
        out = value();
        break;
      case '--rounds':
        rounds = positiveInteger(flag, value(), 100);
        break;
      case '--seed':
        seed = Number(value());
        if (!Number.isInteger(seed)) usage('--seed takes an integer');
        break;
      case '--target': {
        const t = value();
        if (t === 'both') targets = ['stoa', 'etcd'];
        else if (t === 'stoa' || t === 'etcd') targets = [t];
        else usage(`--target takes stoa, etcd or both, not ${t}`);
        break;
      }
      case '--nodes':
        nodes = positiveInteger(flag, value(), 9);
        break;
      case '--concurrency':
        concurrency = positiveInteger(flag, value(), 4096);
        break;
      case '--value-size':
        valueBytes = positiveInteger(flag, value(), 1024 * 1024);
        break;
      case '--kills':
        kills = positiveInteger(flag, value(), 100);
        break;
      default:
        usage(`unknown flag ${arg}`);
    }
  }
  return {
    scenario,
    args: {
      durationSeconds,
      quick,
      rounds: quick ? 1 : rounds,
      out,
      seed,
      targets,
      nodes,
      concurrency,
      valueBytes,
      kills,
    },
  };
}

const { scenario, args } = parseBenchArgs(process.argv.slice(2));
await scenarios[scenario]!.run(args);
