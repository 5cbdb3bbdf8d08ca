// Proves close() leaves no handles: a process that used transports (traffic, refusals, reconnects) and closed
// them exits by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

test('a process whose transports are closed exits on its own', async (t) => {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('./fixtures/close-child.js', import.meta.url))],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  t.after(() => {
    clearTimeout(killer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  assert.equal(signal, null, `killed: ${out}`);
  assert.equal(code, 0, out);
  assert.match(out, /^closed\n$/);
});
