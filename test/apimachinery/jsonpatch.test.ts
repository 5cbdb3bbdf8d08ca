// Proves JSON patch (RFC 6902): every operation, JSON pointer escaping, array indices, and the failures worded as
// kube-apiserver's JSON patch library words them (a failed test, missing paths, bad indices).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyJsonPatch,
  decodeJsonPatch,
  encodePointerToken,
  JsonPatchError,
} from '../../src/apimachinery/jsonpatch.js';

const apply = (doc: unknown, ops: unknown): unknown => applyJsonPatch(doc, decodeJsonPatch(ops));

function fails(doc: unknown, ops: unknown, message: string): void {
  assert.throws(
    () => apply(doc, ops),
    (e: unknown) => e instanceof JsonPatchError && !e.decoding && e.message === message,
  );
}

test('add, remove, replace, move, copy and test', () => {
  const doc = { a: 1, b: { c: [1, 2, 3] }, d: 'x' };
  assert.deepEqual(
    apply(doc, [
      { op: 'add', path: '/e', value: { f: true } },
      { op: 'add', path: '/b/c/1', value: 9 },
      { op: 'add', path: '/b/c/-', value: 4 },
      { op: 'remove', path: '/a' },
      { op: 'replace', path: '/d', value: 'y' },
      { op: 'move', from: '/e/f', path: '/g' },
      { op: 'copy', from: '/b/c', path: '/h' },
      { op: 'test', path: '/h/1', value: 9 },
      { op: 'test', path: '/b', value: { c: [1, 9, 2, 3, 4] } },
    ]),
    { b: { c: [1, 9, 2, 3, 4] }, d: 'y', e: {}, g: true, h: [1, 9, 2, 3, 4] },
  );
  // The input is not modified.
  assert.deepEqual(doc, { a: 1, b: { c: [1, 2, 3] }, d: 'x' });
  // A negative index counts from the end (as kube-apiserver's library allows).
  assert.deepEqual(apply({ l: [1, 2, 3] }, [{ op: 'remove', path: '/l/-1' }]), { l: [1, 2] });
  // Replacing a missing object member adds it (the library's leniency kube-apiserver keeps).
  assert.deepEqual(apply({}, [{ op: 'replace', path: '/n', value: 1 }]), { n: 1 });
});

test('JSON pointer escaping: ~1 is a slash, ~0 a tilde', () => {
  assert.equal(encodePointerToken('a/b~c'), 'a~1b~0c');
  const doc = { metadata: { labels: { 'app.kubernetes.io/name': 'x', 'a~b': 'y' } } };
  assert.deepEqual(
    apply(doc, [
      { op: 'replace', path: '/metadata/labels/app.kubernetes.io~1name', value: 'z' },
      { op: 'remove', path: '/metadata/labels/a~0b' },
    ]),
    { metadata: { labels: { 'app.kubernetes.io/name': 'z' } } },
  );
});

test('failures carry the library wording', () => {
  fails({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }], 'testing value /a failed: test failed');
  fails({ a: 1 }, [{ op: 'test', path: '/b', value: 2 }], 'testing value /b failed: test failed');
  fails(
    { a: 1 },
    [{ op: 'remove', path: '/b' }],
    "error in remove for path: '/b': Unable to remove nonexistent key: b: missing value",
  );
  fails(
    { a: 1 },
    [{ op: 'add', path: '/x/y', value: 1 }],
    'add operation does not apply: doc is missing path: "/x/y": missing value',
  );
  fails(
    { l: [1] },
    [{ op: 'add', path: '/l/5', value: 1 }],
    "error in add for path: '/l/5': value was not a proper array index: '5': Unable to access invalid index: 5: invalid index referenced",
  );
  fails(
    { l: [1] },
    [{ op: 'replace', path: '/l/3', value: 1 }],
    'replace operation does not apply: doc is missing key: /l/3: missing value',
  );
  fails({ a: 1 }, [{ op: 'frobnicate', path: '/a' }], 'Unexpected kind: frobnicate');
  fails(
    { a: 1 },
    [{ op: 'move', from: '/nope', path: '/a' }],
    "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value",
  );
  // The whole patch fails: no operation before the failing one takes effect.
  assert.throws(() =>
    apply({ a: 1 }, [
      { op: 'replace', path: '/a', value: 2 },
      { op: 'test', path: '/a', value: 1 },
    ]),
  );
  assert.throws(
    () => decodeJsonPatch({ op: 'add' }),
    (e: unknown) => e instanceof JsonPatchError && e.decoding,
  );
});
