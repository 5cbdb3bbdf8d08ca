// `npm run chaos -- --nodes 3|5 --duration 120s --faults kill,pause,partition,loss,delay --seed N [--out DIR]
// [--clients 8] [--keys 24] [--watchers 3]`: one chaos run, a terminal summary, and a report in --out.
// Exit code: 0 every check passed, 1 a check failed, 3 a check could not decide, 2 bad flags or a broken run.

import { resolve } from 'node:path';
import { faultKinds, type FaultKind } from './faults.js';
import { writeReport, terminalSummary } from './report.js';
import { runChaos, type ChaosOptions } from './run.js';
import { netnsUnavailable } from './netns.js';

const usage = `usage: npm run chaos -- [flags]
  --nodes 3|5            cluster size (default 3)
  --duration D           how long faults and the workload run: 120s, 2m, 90000ms (default 120s)
  --faults K,...         any of ${faultKinds.join(',')} (default all; "none" for none)
  --seed N               the seed the schedule and workload derive from (default: random, printed)
  --clients N            concurrent workload clients (default 8)
  --keys N               objects the workload works on (default 24)
  --watchers N           long-lived watchers (default 3)
  --check-budget D       time the linearizability checker may take (default 60s)
  --out DIR              write report.md, report.json and history.jsonl there
  --keep-data            also copy every node's data directory and log into --out
  --net proxy|netns      peer faults through TCP proxies (default), or with root: nodes in network
                         namespaces on a private bridge, cuts as blackhole routes, loss by nftables,
                         delay by tc netem (when the kernel has it)
`;

class UsageError extends Error {}

export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (match === null) throw new UsageError(`invalid duration "${text}" (e.g. 120s, 2m)`);
  const n = Number(match[1]);
  const unit = match[2] ?? 's';
  return Math.round(unit === 'ms' ? n : unit === 's' ? n * 1000 : n * 60_000);
}

function integer(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${flag} must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return n;
}

export function parseChaosFlags(
  argv: readonly string[],
): (Omit<ChaosOptions, 'log' | 'signal' | 'keepDataIn'> & { out?: string; keepData: boolean }) | 'help' {
  const values = new Map<string, string>();
  let keepData = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--keep-data') {
      keepData = true;
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    values.set(name, value);
  }
  const known = [
    'nodes',
    'duration',
    'faults',
    'seed',
    'clients',
    'keys',
    'watchers',
    'check-budget',
    'out',
    'net',
  ];
  for (const name of values.keys()) if (!known.includes(name)) throw new UsageError(`unknown flag --${name}`);
  const net = values.get('net') ?? 'proxy';
  if (net !== 'proxy' && net !== 'netns') throw new UsageError(`--net takes proxy or netns, not "${net}"`);
  if (net === 'netns') {
    const unavailable = netnsUnavailable();
    if (unavailable !== undefined) throw new UsageError(unavailable);
  }
  const nodes = integer(values.get('nodes') ?? '3', 'nodes', 3, 5);
  if (nodes !== 3 && nodes !== 5) throw new UsageError('--nodes must be 3 or 5');
  const faultsText = values.get('faults') ?? faultKinds.join(',');
  const faults =
    faultsText === 'none'
      ? []
      : faultsText.split(',').map((f) => {
          if (!(faultKinds as readonly string[]).includes(f)) {
            throw new UsageError(`unknown fault "${f}"; known: ${faultKinds.join(', ')}`);
          }
          return f as FaultKind;
        });
  const out = values.get('out');
  if (keepData && out === undefined) throw new UsageError('--keep-data needs --out');
  return {
    nodes,
    durationMs: parseDurationMs(values.get('duration') ?? '120s'),
    faults,
    seed: integer(values.get('seed') ?? String(Math.floor(Math.random() * 2 ** 31)), 'seed', 0, 2 ** 32 - 1),
    clients: integer(values.get('clients') ?? '8', 'clients', 1, 64),
    keys: integer(values.get('keys') ?? '24', 'keys', 1, 1000),
    watchers: integer(values.get('watchers') ?? '3', 'watchers', 0, 32),
    checkBudgetMs: parseDurationMs(values.get('check-budget') ?? '60s'),
    net,
    ...(out === undefined ? {} : { out: resolve(out) }),
    keepData,
  };
}

async function main(): Promise<number> {
  let flags: ReturnType<typeof parseChaosFlags>;
  try {
    flags = parseChaosFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n${usage}`);
    return 2;
  }
  if (flags === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  const abort = new AbortController();
  const onSignal = (): void => {
    process.stderr.write('\ninterrupted: healing and stopping the cluster (again to force)\n');
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const { out, keepData, ...options } = flags;
  const report = await runChaos({
    ...options,
    log: (line) => process.stdout.write(`${line}\n`),
    signal: abort.signal,
    ...(keepData && out !== undefined ? { keepDataIn: resolve(out, 'data') } : {}),
  });
  process.stdout.write(terminalSummary(report));
  if (out !== undefined) {
    const files = await writeReport(out, report);
    process.stdout.write(`report: ${files.join(', ')}\n`);
  }
  return report.verdict === 'pass' ? 0 : report.verdict === 'fail' ? 1 : 3;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`chaos: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  },
);
