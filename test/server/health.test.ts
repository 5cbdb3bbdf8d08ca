// Proves --livez-grace-period: during the grace period /livez counts unfinished post-start hooks as healthy,
// after it they fail /livez; /readyz and /healthz fail on them from the start; finished hooks pass everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Health } from '../../src/endpoints/health.js';

const query = (text = ''): URLSearchParams => new URLSearchParams(text);

function healthAt(graceMs: number): { health: Health; advance: (ms: number) => void } {
  let now = 1_000;
  const health = new Health(
    [{ name: 'ping', check: async () => {} }],
    ['start-watch-caches', 'start-controllers'],
    graceMs,
    () => now,
  );
  return { health, advance: (ms) => (now += ms) };
}

test('livez passes unfinished hooks during the grace period and fails them after it', async () => {
  const { health, advance } = healthAt(10_000);
  health.hookCompleted('start-watch-caches');

  const during = await health.serve('livez', '', query('verbose'));
  assert.equal(during.code, 200);
  assert.match(during.body, /\[\+\]poststarthook\/start-controllers ok/);
  assert.equal((await health.serve('livez', 'poststarthook/start-controllers', query())).code, 200);
  // readyz and healthz have no grace period.
  const ready = await health.serve('readyz', '', query());
  assert.equal(ready.code, 500);
  assert.match(ready.body, /\[-\]poststarthook\/start-controllers failed: reason withheld/);
  assert.equal((await health.serve('healthz', '', query())).code, 500);

  advance(9_999);
  assert.equal((await health.serve('livez', '', query())).code, 200, 'still inside the grace period');
  advance(1);
  const after = await health.serve('livez', '', query());
  assert.equal(after.code, 500);
  assert.match(after.body, /\[\+\]poststarthook\/start-watch-caches ok/);
  assert.match(
    after.body,
    /\[-\]poststarthook\/start-controllers failed: reason withheld\nlivez check failed\n$/,
  );
  const single = await health.serve('livez', 'poststarthook/start-controllers', query());
  assert.equal(single.code, 500);
  assert.equal(single.body, 'internal server error: poststarthook/start-controllers check failed\n');

  health.hookCompleted('start-controllers');
  assert.deepEqual(await health.serve('livez', '', query()), { code: 200, body: 'ok' });
  assert.equal((await health.serve('readyz', '', query())).code, 200);
});

test('without a grace period (the default 0s) livez fails unfinished hooks at once', async () => {
  const { health } = healthAt(0);
  health.hookCompleted('start-watch-caches');
  const live = await health.serve('livez', '', query());
  assert.equal(live.code, 500);
  assert.match(live.body, /\[-\]poststarthook\/start-controllers failed/);
});
