// Proves the CBOR codec (cbor-x underneath) against kube-apiserver 1.32's encode and decode modes, with cbor-x's
// plain encoder as another client's writer: the self-described prefix, byte-string strings and keys in bytewise
// lexical order, float64 floats and 8-byte integers, round trips of arbitrary JSON values, what is accepted
// (indefinite lengths, tags, non-canonical heads) and what is refused with which words and at which stage, and
// media-type negotiation with the gate on and off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Encoder, Tag } from 'cbor-x';
import fc from 'fast-check';
import {
  CborDecodeError,
  decodeCbor,
  decodeCborLenient,
  encodeCbor,
  encodeCborWatchEvent,
} from '../../src/apimachinery/cbor.js';
import { negotiateBody, negotiateResponse } from '../../src/apimachinery/negotiation.js';
import { ApiError } from '../../src/apimachinery/status.js';

const writer = new Encoder({ useRecords: false, mapsAsObjects: true, useFloat32: 0 });

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');

test('encoding: tag 55799 first, strings and keys as byte strings, keys shorter-first then bytewise', () => {
  const bytes = encodeCbor({ kind: 'Pod', a: 1, b: [true, false, null], ab: -2 });
  assert.equal(
    bytes.toString('hex'),
    'd9d9f7 a4 4161 01 4162 83f5f4f6 426162 21 446b696e64 43506f64'.replace(/ /g, ''),
  );
  assert.deepEqual(decodeCbor(bytes).value, { kind: 'Pod', a: 1, b: [true, false, null], ab: -2 });
});

test('encoding: floats as cbor-x writes them (float64), integers as integers up to 64 bits, undefined dropped', () => {
  // kube writes floats in their shortest exact width (0.5 as f93800); cbor-x has no float16 and its float32
  // modes round, so floats are always float64: the same values, a few bytes longer.
  const cases: [number, string][] = [
    [0.5, 'fb3fe0000000000000'],
    [-2.5, 'fbc004000000000000'],
    [1.1, 'fb3ff199999999999a'],
    [100000, '1a000186a0'],
    [-1, '20'],
    [2 ** 32 - 1, '1affffffff'],
    [2 ** 40, '1b0000010000000000'],
    [-(2 ** 32), '3affffffff'],
    [-(2 ** 40), '3b000000ffffffffff'],
    [2 ** 53 + 2, 'fb4340000000000001'],
  ];
  for (const [value, expected] of cases)
    assert.equal(encodeCbor(value).subarray(3).toString('hex'), expected, String(value));
  assert.equal(encodeCbor({ a: undefined, b: 1 }).toString('hex'), 'd9d9f7a1416201');
});

test('Secret data and ConfigMap binaryData are Go []byte: tag 22 over the raw bytes, base64 again on decode', () => {
  const secret = {
    kind: 'Secret',
    data: { password: Buffer.from('hunter2').toString('base64'), odd: 'abc' },
  };
  const bytes = encodeCbor(secret);
  const expected =
    'd9d9f7 a2 44 64617461 a2 43 6f6464 43 616263 48 70617373776f7264 d6 47 68756e74657232 44 6b696e64 46 536563726574';
  assert.equal(bytes.toString('hex'), expected.replace(/ /g, ''));
  assert.deepEqual(decodeCbor(bytes).value, secret);
  // In a list, the items are Secrets by the list's kind; in a watch event, by their own.
  const list = { kind: 'ConfigMapList', items: [{ binaryData: { b: 'AAE=' } }] };
  assert.ok(encodeCbor(list).toString('hex').includes('d6420001'));
  assert.deepEqual(decodeCbor(encodeCbor(list)).value, list);
  assert.ok(encodeCborWatchEvent('ADDED', secret).toString('hex').includes('d64768756e74657232'));
});

test('a watch event is a self-described map whose object is itself self-described', () => {
  const frame = encodeCborWatchEvent('ADDED', { kind: 'Pod' });
  const expected = 'd9d9f7 a2 44 74797065 45 4144444544 46 6f626a656374 d9d9f7 a1 44 6b696e64 43 506f64';
  assert.equal(frame.toString('hex'), expected.replace(/ /g, ''));
  assert.deepEqual(decodeCbor(frame).value, { type: 'ADDED', object: { kind: 'Pod' } });
});

test('any JSON value round-trips through our encoder and decoder, and is read as written by plain cbor-x', () => {
  const json = fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  fc.assert(
    fc.property(json, (value) => {
      const bytes = encodeCbor(value);
      assert.deepEqual(decodeCbor(bytes).value, value);
      // What another client writes for it: text strings, two-byte map heads, float64, no prefix.
      assert.deepEqual(decodeCbor(writer.encode(value)).value, value);
    }),
    { numRuns: 1000 },
  );
});

test('what other encoders write is accepted: text strings, non-shortest heads, float64, no prefix', () => {
  const value = { metadata: { name: 'x', labels: { a: 'b' } }, n: 1.5, items: [1, 'two', null] };
  const bytes = writer.encode(value);
  assert.equal(bytes[0], 0xb9, 'cbor-x writes a two-byte map length');
  assert.deepEqual(decodeCbor(bytes).value, value);
  assert.deepEqual(decodeCbor(writer.encode(new Tag(value, 55799))).value, value);
});

test('accepted: indefinite lengths, tags (content stands), expected-encoding tags, undefined as null', () => {
  const cases: [string, unknown][] = [
    ['bf 6161 9f 01 02 ff ff', { a: [1, 2] }],
    ['7f 6161 6162 ff', 'ab'],
    ['5f 4161 4162 ff', 'ab'],
    ['c0 74 323032342d30312d30315430303a30303a30305a', '2024-01-01T00:00:00Z'],
    ['d6 42 0102', 'AQI='],
    ['d5 42 fbff', '-_8'],
    ['d7 42 0aff', '0aff'],
    ['d9 1234 01', 1],
    ['c2 42 0100', 256],
    ['c3 41 00', -1],
    ['f7', null],
    ['f9 3c00', 1],
    ['3b 7fffffffffffffff', -(2 ** 63)],
    ['1b 0000000000000001', 1],
    // Tags cbor-x would read as a Set, a shared value or a Date: kube lets their content stand.
    ['d9 0102 82 01 02', [1, 2]],
    ['d8 1c 01', 1],
    ['c1 fb 3ff8000000000000', 1.5],
    ['c2 5f 41 01 41 00 ff', 256],
    ['a1 7f 6161 ff d9 d9f7 a0', { a: {} }],
  ];
  for (const [input, expected] of cases) assert.deepEqual(decodeCbor(hex(input)).value, expected, input);
  const nested64 = Buffer.concat([Buffer.alloc(64, 0x81), Buffer.of(0x00)]);
  assert.equal(JSON.stringify(decodeCbor(nested64).value), `${'['.repeat(64)}0${']'.repeat(64)}`);
});

test('refused, with the Go CBOR library words: malformed bytes and top-level keys stop the type read', () => {
  const cases: [string, string, 'envelope' | 'content'][] = [
    ['', 'EOF', 'envelope'],
    ['a1 61', 'unexpected EOF', 'envelope'],
    ['a0 00', 'cbor: 1 bytes of extraneous data starting at index 1', 'envelope'],
    ['ff', 'cbor: unexpected "break" code', 'envelope'],
    ['1c', 'cbor: invalid additional information 28 for type positive integer', 'envelope'],
    ['f8 10', 'cbor: invalid simple value 16 for type primitives', 'envelope'],
    ['a1 6161 62 fffe', 'cbor: invalid UTF-8 string', 'envelope'],
    [
      '7f 6161 4162 ff',
      'cbor: wrong element type byte string for indefinite-length UTF-8 text string',
      'envelope',
    ],
    ['c0 01', 'cbor: tag number 0 must be followed by text string, got positive integer', 'envelope'],
    ['a2 6161 01 6161 02', 'cbor: found duplicate map key "a" at map element index 1', 'envelope'],
    ['a2 6161 01 4161 02', 'cbor: found duplicate map key "a" at map element index 1', 'envelope'],
    ['a1 01 02', 'cbor: cannot unmarshal positive integer into Go value of type string', 'envelope'],
    ['a1 f93c00 02', 'cbor: cannot unmarshal primitives into Go value of type string', 'envelope'],
    ['a1 c0 6161 02', 'cbor: cannot unmarshal tag into Go value of type string', 'envelope'],
    [
      'f0',
      'cbor: data item of cbor type primitives is not accepted by protocol: simple value 16',
      'envelope',
    ],
    [
      'a1 6161 c2 49 010000000000000000',
      "cbor: cannot unmarshal tag into Go value of type int64 (18446744073709551616 overflows Go's int64)",
      'content',
    ],
    [
      'a1 6161 3b 8000000000000000',
      "cbor: cannot unmarshal negative integer into Go value of type int64 (-9223372036854775809 overflows Go's int64)",
      'content',
    ],
    ['a1 6161 a2 6162 01 6162 02', 'cbor: found duplicate map key "b" at map element index 1', 'content'],
    ['a1 6161 a1 f5 01', 'cbor: cannot unmarshal primitives into Go value of type string', 'content'],
    [
      'a1 6161 f97e00',
      'cbor: data item of cbor type primitives is not accepted by protocol: floating-point NaN',
      'content',
    ],
    [
      'a1 6161 fa7f800000',
      'cbor: data item of cbor type primitives is not accepted by protocol: floating-point infinity',
      'content',
    ],
    [
      'a1 6161 1b ffffffffffffffff',
      "cbor: cannot unmarshal positive integer into Go value of type int64 (18446744073709551615 overflows Go's int64)",
      'content',
    ],
  ];
  for (const [input, message, stage] of cases) {
    assert.throws(
      () => decodeCbor(hex(input)),
      (error: unknown) =>
        error instanceof CborDecodeError && error.message === message && error.stage === stage,
      input,
    );
  }
  const nested65 = Buffer.concat([Buffer.alloc(65, 0x81), Buffer.of(0x00)]);
  assert.throws(() => decodeCbor(nested65), { message: 'cbor: exceeded max nested level 64' });
  const long = Buffer.concat([hex('99 0401'), Buffer.alloc(1025, 0)]);
  assert.throws(() => decodeCbor(long), {
    message: 'cbor: exceeded max number of elements 1024 for CBOR array',
  });
  // Malformed bytes win over a refusal met earlier, as a well-formedness pass runs first.
  assert.throws(() => decodeCbor(hex('a2 6161 f97e00 6162 1c')), { stage: 'envelope' });
  assert.deepEqual(decodeCborLenient(hex('a2 6161 01 6162 f97e00')), { a: 1, b: null });
});

test('arbitrary bytes decode or are refused with a CborDecodeError, never another exception', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      try {
        decodeCbor(bytes);
      } catch (error) {
        assert.ok(error instanceof CborDecodeError, String(error));
      }
    }),
    { numRuns: 3000 },
  );
});

test('a `__proto__` key is a field, not the prototype', () => {
  const decoded = decodeCbor(hex('a1 49 5f5f70726f746f5f5f a0')).value as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
  assert.deepEqual(Object.keys(decoded), ['__proto__']);
});

test('negotiation: CBOR only when the gate is on; watch, metadata views yes, Table no; 406 and 415 lists', () => {
  const base = { metaGroup: 'meta.k8s.io', tableAllowed: true };
  assert.throws(
    () => negotiateResponse('application/cbor', base),
    (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 406);
      assert.equal(
        e.message,
        'only the following media types are accepted: application/json, application/yaml',
      );
      return true;
    },
  );
  const on = { ...base, cbor: true };
  assert.deepEqual(negotiateResponse('application/cbor', on), {
    serialization: 'cbor',
    as: 'object',
    contentType: 'application/cbor',
  });
  assert.equal(negotiateResponse('application/json;q=0.9,application/cbor;q=1', on).serialization, 'cbor');
  assert.equal(
    negotiateResponse('application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', on).contentType,
    'application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
  );
  assert.throws(() => negotiateResponse('application/cbor;as=Table;g=meta.k8s.io;v=v1', on), {
    message:
      'only the following media types are accepted: application/json, application/yaml, application/cbor',
  });
  assert.equal(
    negotiateResponse('application/cbor;as=Table;g=meta.k8s.io;v=v1, application/json', on).as,
    'object',
  );

  assert.throws(() => negotiateBody('application/cbor', ['json', 'yaml', 'cbor']), {
    message:
      'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml',
  });
  assert.equal(negotiateBody('application/cbor', ['json', 'yaml', 'cbor'], { cbor: true }), 'cbor');
  const patchTypes = ['json-patch', 'merge-patch', 'apply-patch', 'apply-patch-cbor'] as const;
  assert.equal(negotiateBody('application/apply-patch+cbor', patchTypes, { cbor: true }), 'apply-patch-cbor');
  assert.throws(() => negotiateBody('application/apply-patch+cbor', patchTypes), {
    message:
      'the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/json-patch+json, application/apply-patch+yaml',
  });
});
