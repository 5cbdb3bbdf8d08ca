// `stoa cluster up|down|status` (also `npm run cluster -- ...`): argument parsing for the local cluster harness.

import { down, formatStatus, status, up } from './harness.js';

export const clusterUsage = `usage: stoa cluster <up|down|status> [flags] [-- extra serve flags]

  up      start the nodes that are not running (the first up creates the cluster)
  down    stop every node (SIGTERM, then SIGKILL after 10s)
  status  name, PID, API URL, role, term, applied index and health of each node

flags:
  --nodes N          number of nodes (up only; default 3)
  --base-port P      first API port (up only; default 6443; peers use P+1000...)
  --data-dir DIR     where the cluster lives (default ./data/cluster)
  -o json            status as JSON
`;

interface Parsed {
  readonly command: string;
  readonly nodes: number | undefined;
  readonly basePort: number | undefined;
  readonly dataDir: string;
  readonly output: 'table' | 'json';
  readonly extra: readonly string[];
}

function parse(argv: readonly string[]): Parsed {
  const [command, ...rest] = argv;
  if (command === undefined) throw new Error('missing command (up, down or status)');
  let nodes: number | undefined;
  let basePort: number | undefined;
  let dataDir = './data/cluster';
  let output: 'table' | 'json' = 'table';
  const separator = rest.indexOf('--');
  const flags = separator < 0 ? rest : rest.slice(0, separator);
  const extra = separator < 0 ? [] : rest.slice(separator + 1);
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i] ?? '';
    const [name, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const value = (): string => {
      const v = inline ?? flags[++i];
      if (v === undefined) throw new Error(`flag needs an argument: ${name}`);
      return v;
    };
    const integer = (text: string, min: number, max: number): number => {
      const n = Number(text);
      if (!Number.isInteger(n) || n < min || n > max)
        throw new Error(`invalid value "${text}" for ${name}: ${min}..${max}`);
      return n;
    };
    switch (name) {
      case '--nodes':
        nodes = integer(value(), 1, 9);
        break;
      case '--base-port':
        basePort = integer(value(), 1, 64535 - 1000);
        break;
      case '--data-dir':
        dataDir = value();
        break;
      case '-o':
      case '--output': {
        const v = value();
        if (v !== 'json' && v !== 'table') throw new Error(`invalid output "${v}": json or table`);
        output = v;
        break;
      }
      default:
        throw new Error(`unknown flag: ${name}`);
    }
  }
  return { command, nodes, basePort, dataDir, output, extra };
}

export async function runClusterCommand(argv: readonly string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '-h' || argv[0] === '--help') {
    process.stdout.write(clusterUsage);
    return argv.length === 0 ? 2 : 0;
  }
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    process.stderr.write(`stoa cluster: ${(error as Error).message}\n\n${clusterUsage}`);
    return 2;
  }
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  switch (parsed.command) {
    case 'up':
      await up(
        {
          nodes: parsed.nodes ?? 3,
          basePort: parsed.basePort ?? 6443,
          dataDir: parsed.dataDir,
          extraServeFlags: parsed.extra,
        },
        { nodes: parsed.nodes !== undefined, basePort: parsed.basePort !== undefined },
        log,
      );
      return 0;
    case 'down':
      await down(parsed.dataDir, log);
      return 0;
    case 'status': {
      const rows = await status(parsed.dataDir);
      process.stdout.write(
        parsed.output === 'json' ? JSON.stringify(rows, null, 2) + '\n' : formatStatus(rows),
      );
      return rows.every((r) => r.running && r.healthy) ? 0 : 1;
    }
    default:
      process.stderr.write(`stoa cluster: unknown command "${parsed.command}"\n\n${clusterUsage}`);
      return 2;
  }
}
