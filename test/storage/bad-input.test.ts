// Proves bad data dirs and bad input are refused with clear errors: newer format, corrupt records, size limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClassicLevel } from 'classic-level';
import { openEmbeddedStore } from '../../src/storage/embedded/engine.js';
import { StorageError } from '../../src/storage/contract.js';
import { encodeRecord, historyKey, latestKey, metaKey } from '../../src/storage/mvcc/layout.js';
import { formatVersion } from '../../src/storage/mvcc/mvcc.js';
import { limits } from '../../src/util/limits.js';
import { revision } from '../../src/util/brand.js';
import { tempDir } from '../support/tmp.js';
import { put } from '../conformance/suite.js';

/** Opens the raw LevelDB of a closed store, runs `change`, closes it. */
async function editRaw(
  dataDir: string,
  change: (db: ClassicLevel<Buffer, Buffer>) => Promise<void>,
): Promise<void> {
  const db = new ClassicLevel<Buffer, Buffer>(dataDir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  try {
    await change(db);
  } finally {
    await db.close();
  }
}

const isStorageError =
  (code: StorageError['code'], ...mentions: string[]) =>
  (error: unknown): boolean => {
    assert.ok(error instanceof StorageError, String(error));
    assert.equal(error.code, code, error.message);
    for (const mention of mentions)
      assert.ok(error.message.includes(mention), `${error.message} lacks ${mention}`);
    return true;
  };

test('a data dir written by a newer format version is refused, naming the dir and both versions', async (t) => {
  const dir = await tempDir('format');
  t.after(() => dir.remove());
  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  await put(store, '/k', 'v');
  await store.close();
  await editRaw(dir.path, async (db) => {
    const meta = { formatVersion: formatVersion + 1, revision: 2, compactRevision: 0, physicalRevision: 0 };
    await db.put(metaKey, encodeRecord(metaKey, meta));
  });
  await assert.rejects(
    openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 }),
    isStorageError('UnsupportedFormat', dir.path, `version ${formatVersion + 1}`, `version ${formatVersion}`),
  );
});

test('a corrupt record fails the read with Corrupt naming the data dir; nothing is silently dropped', async (t) => {
  const dir = await tempDir('corrupt');
  t.after(() => dir.remove());
  let store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  const r1 = await put(store, '/a', 'first');
  await put(store, '/a', 'second');
  await put(store, '/b', 'other');
  await store.close();
  const flip = async (db: ClassicLevel<Buffer, Buffer>, key: Buffer): Promise<void> => {
    const value = (await db.get(key))!;
    value.writeUInt8(value.readUInt8(value.length - 1) ^ 0xff, value.length - 1);
    await db.put(key, value);
  };
  await editRaw(dir.path, async (db) => {
    await flip(db, latestKey(Buffer.from('/a')));
    await flip(db, historyKey(Buffer.from('/a'), r1));
  });
  store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  t.after(() => store.close());
  await assert.rejects(store.range({ prefix: '/' }), isStorageError('Corrupt', dir.path, 'checksum'));
  await assert.rejects(store.range({ key: '/a' }, { revision: r1 }), isStorageError('Corrupt', dir.path));
  // A txn that reads the corrupt key fails too, and changes nothing.
  const before = (await store.status()).revision;
  await assert.rejects(put(store, '/a', 'third'), isStorageError('Corrupt', dir.path));
  assert.equal((await store.status()).revision, before);
  // Undamaged keys still answer.
  assert.equal((await store.range({ key: '/b' })).count, 1);
});

test('a corrupt meta record makes open fail with Corrupt', async (t) => {
  const dir = await tempDir('corrupt-meta');
  t.after(() => dir.remove());
  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  await store.close();
  await editRaw(dir.path, async (db) => {
    await db.put(metaKey, Buffer.from('garbage!'));
  });
  await assert.rejects(
    openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 }),
    isStorageError('Corrupt', dir.path),
  );
});

test('size limits: the largest key and value are accepted, one byte more is refused', async (t) => {
  const dir = await tempDir('limits');
  t.after(() => dir.remove());
  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  t.after(() => store.close());
  const key = '/'.padEnd(limits.storeKeyBytesMax, 'k');
  const value = Buffer.alloc(limits.storeValueBytesMax, 1);
  const r = (await store.txn({ compare: [], success: [{ type: 'put', key, value }], failure: [] })).header
    .revision;
  const got = (await store.range({ key }, { revision: revision(r) })).kvs[0]!;
  assert.equal(got.value.length, limits.storeValueBytesMax);
  await assert.rejects(
    store.txn({
      compare: [],
      success: [{ type: 'put', key: key + 'k', value: Buffer.alloc(1) }],
      failure: [],
    }),
    isStorageError('KeyTooLarge', String(limits.storeKeyBytesMax)),
  );
  await assert.rejects(
    store.txn({
      compare: [],
      success: [{ type: 'put', key: '/v', value: Buffer.alloc(limits.storeValueBytesMax + 1) }],
      failure: [],
    }),
    isStorageError('ValueTooLarge', String(limits.storeValueBytesMax)),
  );
  await assert.rejects(
    store.txn({
      compare: [],
      success: [{ type: 'put', key: '/\uD800', value: Buffer.alloc(1) }],
      failure: [],
    }),
    isStorageError('InvalidArgument'),
  );
});

test('a data dir in use by another store is refused with Unavailable naming the dir', async (t) => {
  const dir = await tempDir('locked');
  t.after(() => dir.remove());
  const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 });
  t.after(() => store.close());
  await assert.rejects(
    openEmbeddedStore({ dataDir: dir.path, retentionMs: 0 }),
    isStorageError('Unavailable', dir.path),
  );
});
