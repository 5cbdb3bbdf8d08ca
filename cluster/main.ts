#!/usr/bin/env node
// `npm run cluster -- up|down|status`: the same as `stoa cluster`.
import { runClusterCommand } from './command.js';

// A closed stdout (`| head`) ends the program quietly instead of with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

runClusterCommand(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`stoa cluster: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
