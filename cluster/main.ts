#!/usr/bin/env node
// `npm run cluster -- up|down|status`: the same as `stoa cluster`.
import { runClusterCommand } from './command.js';

runClusterCommand(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`stoa cluster: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
