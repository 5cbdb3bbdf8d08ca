// Proves writeBatch (the MVCC's chained-batch write) writes puts and deletes as one batch, and writes nothing when an op is invalid.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClassicLevel } from 'classic-level';
import { writeBatch, type BatchOp, type Db } from '../../src/storage/mvcc/mvcc.js';
import { tempDir } from '../support/tmp.js';

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

/** A LevelDB in a temp dir, closed and removed after the test. */
async function openDb(t: { after: (fn: () => Promise<void>) => void }, name: string): Promise<Db> {
  const dir = await tempDir(name);
  t.after(() => dir.remove());
  const db: Db = new ClassicLevel<Buffer, Buffer>(dir.path, {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await db.open();
  t.after(() => db.close());
  return db;
}

test('writeBatch applies every put and delete, in order, as one batch', async (t) => {
  const db = await openDb(t, 'write-batch');
  await db.put(b('gone'), b('x'));
  const ops: BatchOp[] = [
    { type: 'put', key: b('a'), value: b('1') },
    { type: 'put', key: b('b'), value: Buffer.alloc(2048, 7) },
    { type: 'del', key: b('gone') },
    { type: 'put', key: b('a'), value: b('2') }, // the later op on a key wins, as in one LevelDB batch
  ];
  await writeBatch(db, ops, { sync: true });
  assert.deepEqual(db.getSync(b('a')), b('2'));
  assert.deepEqual(db.getSync(b('b')), Buffer.alloc(2048, 7));
  assert.equal(db.getSync(b('gone')), undefined);
  await writeBatch(db, [], { sync: false }); // an empty batch is fine
});

test('writeBatch with an invalid op throws and writes none of the batch', async (t) => {
  const db = await openDb(t, 'write-batch-bad');
  const ops = [
    { type: 'put', key: b('first'), value: b('1') },
    { type: 'put', key: null as unknown as Buffer, value: b('2') },
  ] satisfies BatchOp[];
  assert.throws(() => writeBatch(db, ops, { sync: false }));
  assert.equal(db.getSync(b('first')), undefined);
  // The store is still usable afterwards.
  await writeBatch(db, [{ type: 'put', key: b('first'), value: b('ok') }], { sync: false });
  assert.deepEqual(db.getSync(b('first')), b('ok'));
});
