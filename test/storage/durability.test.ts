// Proves every acknowledged write survives a SIGKILL of the writing process, and the reopened store is intact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { openEmbeddedStore } from '../../src/storage/embedded/engine.js';
import { revision } from '../../src/util/brand.js';
import { tempDir } from '../support/tmp.js';
import { recordWatch } from '../support/watch.js';

const childScript = fileURLToPath(new URL('../support/writer-child.js', import.meta.url));

test('SIGKILL during a stream of acknowledged writes loses none of them', async (t) => {
  const dir = await tempDir('durability');
  t.after(() => dir.remove());
  const child = spawn(process.execPath, [childScript, dir.path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const acked = new Map<string, number>();
  const lines = createInterface({ input: child.stdout });
  // Kill after 400 acknowledgements (or give up after 20 s, which fails below).
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 20_000);
    lines.on('line', (line) => {
      const [word, key, revision] = line.split(' ');
      if (word !== 'ack' || key === undefined) return;
      acked.set(key, Number(revision));
      if (acked.size === 400) {
        child.kill('SIGKILL'); // by the child's PID
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await exited;
  assert.equal(child.signalCode, 'SIGKILL');
  assert.ok(acked.size >= 400, `only ${acked.size} acknowledgements`);

  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  t.after(() => store.close());
  const all = await store.range({ prefix: '/durable/' });
  const found = new Map(all.kvs.map((kv) => [kv.key, kv]));
  for (const [key, revision] of acked) {
    const kv = found.get(key);
    assert.ok(kv !== undefined, `acknowledged ${key} at revision ${revision} is lost`);
    assert.equal(kv.modRevision, revision);
    assert.ok(Buffer.from(kv.value).subarray(0, key.length).equals(Buffer.from(key)));
  }
  // Intact: revisions are dense (one per write, from 2), and the change log replays every write.
  const status = await store.status();
  assert.equal(status.revision, all.count + 1);
  const revisions = all.kvs.map((kv) => kv.modRevision).sort((a, b) => a - b);
  assert.deepEqual(
    revisions,
    Array.from({ length: all.count }, (_, i) => i + 2),
  );
  const watch = recordWatch(
    store,
    { prefix: '/durable/' },
    { afterRevision: revision(store.mvcc.revision - all.count) },
  );
  const events = await watch.waitForEvents(all.count);
  watch.close();
  assert.equal(events.length, all.count);
  // The store still takes writes, at the next revision.
  const next = await store.txn({
    compare: [],
    success: [{ type: 'put', key: '/after', value: Buffer.from('x') }],
    failure: [],
  });
  assert.equal(next.header.revision, status.revision + 1);
});
