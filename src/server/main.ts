#!/usr/bin/env node
// The `stoa` executable: one entry point, one function per subcommand.

const usage = `usage: stoa <command> [flags]

commands:
  serve        run an API server node (see stoa serve --help)
  cluster      start, stop and inspect a local multi-process cluster (up|down|status)
  member       list, add, remove and promote cluster members
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
    default:
      process.stderr.write(`stoa: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

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
