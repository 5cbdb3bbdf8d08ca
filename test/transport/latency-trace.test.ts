// Proves the latency trace: off without STOA_LATENCY_TRACE (no file), and on with it a process writes its named
// events on exit, in order, with wall-clock times comparable to another process's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/tmp.js';

const modulePath = fileURLToPath(new URL('../../src/transport/latency-trace.js', import.meta.url));
const script = `
const trace = await import(${JSON.stringify(modulePath)});
trace.setTraceProcessName('node-x');
if (trace.latencyTraceOn) { trace.traceStage('propose', 0); trace.traceStage('persisted', 7); }
process.stdout.write(String(trace.latencyTraceOn));
`;

async function runChild(env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    env,
    timeout: 20_000,
  });
  return stdout;
}

test('without STOA_LATENCY_TRACE the trace is off and writes nothing', async (t) => {
  const dir = await tempDir('trace-off');
  t.after(() => dir.remove());
  const env = { ...process.env };
  delete env['STOA_LATENCY_TRACE'];
  assert.equal(await runChild(env), 'false');
  assert.deepEqual(await readdir(dir.path), []);
});

test('with STOA_LATENCY_TRACE a process writes its events on exit, with comparable wall-clock times', async (t) => {
  const dir = await tempDir('trace-on');
  t.after(() => dir.remove());
  const beforeMs = performance.timeOrigin + performance.now();
  assert.equal(await runChild({ ...process.env, STOA_LATENCY_TRACE: dir.path }), 'true');
  const afterMs = performance.timeOrigin + performance.now();
  const files = await readdir(dir.path);
  assert.equal(files.length, 1);
  const [header, ...lines] = (await readFile(`${dir.path}/${files[0]}`, 'utf8')).trim().split('\n');
  assert.equal((JSON.parse(header!) as { process: string }).process, 'node-x');
  const events = lines.map((line) => JSON.parse(line) as [number, string, number]);
  assert.deepEqual(
    events.map(([, stage, index]) => [stage, index]),
    [
      ['propose', 0],
      ['persisted', 7],
    ],
  );
  for (const [time] of events)
    assert.ok(time >= beforeMs && time <= afterMs, `${time} in [${beforeMs}, ${afterMs}]`);
  assert.ok(events[0]![0] <= events[1]![0]);
});
