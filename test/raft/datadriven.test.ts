// Proves the scripted Raft scenarios of test/raft/testdata/*.txt (the paper's cases, Figure 8, pre-vote,
// check-quorum, leader transfer, snapshots, learners, ReadIndex) produce exactly their recorded output.
// REWRITE=1 rewrites the expected output instead of comparing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InteractionEnv } from './interaction.js';
import type { Command } from './interaction.js';

// dist/test/raft/datadriven.test.js -> test/raft/testdata
const testdata = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'raft', 'testdata');
const rewrite = process.env['REWRITE'] === '1';

interface Case {
  readonly line: string;
  readonly command: Command;
  readonly expected: string;
  /** Lines before the command (comments, blank lines), kept on rewrite. */
  readonly preamble: string[];
}

function parseCommand(line: string): Command {
  const words = line.trim().split(/\s+/);
  const options = new Map<string, string>();
  const args: string[] = [];
  for (const w of words.slice(1)) {
    const eq = w.indexOf('=');
    if (eq > 0 && !w.includes('>')) options.set(w.slice(0, eq), w.slice(eq + 1));
    else args.push(w);
  }
  return { name: words[0] ?? '', args, options };
}

function parse(text: string): { cases: Case[]; trailer: string[] } {
  const lines = text.split('\n');
  const cases: Case[] = [];
  let preamble: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || line.startsWith('#')) {
      preamble.push(line);
      i++;
      continue;
    }
    if (lines[i + 1] !== '----') throw new Error(`line ${i + 1}: expected ---- after "${line}"`);
    i += 2;
    const out: string[] = [];
    while (i < lines.length && (lines[i] ?? '') !== '') out.push(lines[i++] ?? '');
    cases.push({ line, command: parseCommand(line), expected: out.join('\n'), preamble });
    preamble = [];
  }
  return { cases, trailer: preamble };
}

for (const file of readdirSync(testdata)
  .filter((f) => f.endsWith('.txt'))
  .sort()) {
  test(`datadriven ${file}`, () => {
    const path = join(testdata, file);
    const { cases, trailer } = parse(readFileSync(path, 'utf8'));
    const env = new InteractionEnv();
    const rewritten: string[] = [];
    for (const c of cases) {
      const actual = env.handle(c.command);
      if (rewrite) {
        rewritten.push(...c.preamble, c.line, '----', actual);
      } else {
        assert.equal(actual, c.expected, `${file}: "${c.line}"`);
      }
    }
    if (rewrite) writeFileSync(path, [...rewritten, ...trailer].join('\n').replace(/\n*$/, '\n'));
  });
}
