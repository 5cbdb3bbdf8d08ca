// Proves the record checksum is the same CRC-32 with or without zlib.crc32, so data dirs move between Node.js releases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { crc32, crc32ForTests, historyKey, parseHistoryKey } from '../../src/storage/mvcc/layout.js';

test('native and JavaScript CRC-32 agree (and match the known check value)', () => {
  assert.equal(crc32ForTests([Buffer.from('123456789')]), 0xcbf43926);
  assert.equal(crc32([Buffer.from('123456789')]), 0xcbf43926);
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 4 }), (parts) => {
      assert.equal(crc32(parts), crc32ForTests(parts));
    }),
  );
});

test('history keys keep byte order of (key, revision) and parse back, for any key bytes', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 8 }),
      fc.uint8Array({ maxLength: 8 }),
      fc.nat({ max: 2 ** 40 }),
      fc.nat({ max: 2 ** 40 }),
      (a, b, ra, rb) => {
        const keyA = Buffer.from(a);
        const keyB = Buffer.from(b);
        const order = Math.sign(Buffer.compare(keyA, keyB)) || Math.sign(ra - rb);
        assert.equal(Math.sign(Buffer.compare(historyKey(keyA, ra), historyKey(keyB, rb))), order);
        assert.deepEqual(parseHistoryKey(historyKey(keyA, ra)), { key: keyA, revision: ra });
      },
    ),
  );
});
