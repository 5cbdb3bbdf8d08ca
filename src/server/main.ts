#!/usr/bin/env node
// The `stoa` executable: one entry point, one function per subcommand.

import { AbacPolicyError } from '../auth/abac.js';
import { AuditPolicyError } from '../audit/policy.js';
import { AuthorizationConfigError } from '../auth/authorization-config.js';
import { FlagError, parseServeFlags, serveUsage } from './flags.js';
import { startServer } from './server.js';
import { AuthenticationConfigError } from '../auth/index.js';
import { runMemberCommand } from './member-command.js';
import { runSnapshotCommand } from './snapshot-command.js';
import { runCredentialCommand } from './credential-command.js';
import { runClusterCommand } from '../../cluster/command.js';

const usage = `usage: stoa <command> [flags]

commands:
  serve        run an API server node (see stoa serve --help)
  cluster      start, stop and inspect a local multi-process cluster (up|down|status)
  member       list, add, remove and promote cluster members, transfer leadership
  snapshot     save, inspect and restore backups of a cluster's data
  credential   kubectl exec credential plugin
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case undefined:
    case '-h':
    case '--help':
      process.stdout.write(usage);
      return command === undefined ? 2 : 0;
    case 'serve':
      return serve(argv.slice(1));
    case 'cluster':
      return runClusterCommand(argv.slice(1));
    case 'member':
      return runMemberCommand(argv.slice(1));
    case 'snapshot':
      return runSnapshotCommand(argv.slice(1));
    case 'credential':
      return runCredentialCommand(argv.slice(1));
    default:
      process.stderr.write(`stoa: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

async function serve(argv: readonly string[]): Promise<number> {
  let options;
  try {
    options = parseServeFlags(argv);
  } catch (error) {
    if (error instanceof FlagError) {
      process.stderr.write(`stoa serve: ${error.message}\n\n${serveUsage}`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') {
    process.stdout.write(serveUsage);
    return 0;
  }
  let server;
  try {
    server = await startServer(options);
  } catch (error) {
    // A bad authentication or authorization file: one line naming the file and the problem.
    if (
      error instanceof AuthenticationConfigError ||
      error instanceof AuthorizationConfigError ||
      error instanceof AbacPolicyError ||
      error instanceof AuditPolicyError
    ) {
      process.stderr.write(`stoa serve: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  process.stdout.write(`stoa: serving on ${server.url} (port ${server.port})\n`);
  if (server.kubeconfigPath !== undefined) {
    process.stdout.write(
      `stoa: admin credentials in ${server.kubeconfigPath}; try:\n  kubectl --kubeconfig ${server.kubeconfigPath} get namespaces\n`,
    );
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      server.close().then(resolve, resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return 0;
}

// A closed stdout (`| head`) ends the program quietly instead of with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `stoa: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
