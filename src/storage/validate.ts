// Request checks shared by every engine, so that each answers bad input with the same StorageError code
// before anything is applied (etcd checks the same things server-side; we check first so the codes match).

import { limits } from '../util/limits.js';
import { unreachable } from '../util/assert.js';
import { StorageError, type KeySpan, type TxnOp, type TxnRequest } from './contract.js';

/** In u-mode a surrogate class matches only unpaired surrogates, which UTF-8 cannot encode. */
const loneSurrogate = /[\uD800-\uDFFF]/u;

export function checkKey(key: string, what = 'key'): void {
  if (loneSurrogate.test(key)) throw new StorageError('InvalidArgument', `${what} is not well-formed UTF-16`);
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > limits.storeKeyBytesMax) {
    throw new StorageError(
      'KeyTooLarge',
      `${what} is ${bytes} bytes; the limit is ${limits.storeKeyBytesMax} bytes`,
    );
  }
}

export function checkSpan(span: KeySpan): void {
  if ('key' in span) {
    if (span.key === '') throw new StorageError('InvalidArgument', 'key is empty');
    checkKey(span.key);
  } else {
    checkKey(span.prefix, 'prefix');
  }
}

function checkOp(op: TxnOp): void {
  switch (op.type) {
    case 'put':
      if (op.key === '') throw new StorageError('InvalidArgument', 'key is empty');
      checkKey(op.key);
      if (op.value.length > limits.storeValueBytesMax) {
        throw new StorageError(
          'ValueTooLarge',
          `value of ${op.value.length} bytes; the limit is ${limits.storeValueBytesMax} bytes`,
        );
      }
      return;
    case 'delete':
      checkSpan(op.span);
      return;
    case 'range':
      checkSpan(op.span);
      if (op.options?.limit !== undefined && (op.options.limit < 0 || !Number.isInteger(op.options.limit))) {
        throw new StorageError('InvalidArgument', 'limit must be a non-negative integer');
      }
      return;
    default:
      unreachable(op);
  }
}

const inSpan = (key: string, span: KeySpan): boolean =>
  'key' in span ? key === span.key : key.startsWith(span.prefix);

/** etcd refuses a branch that puts one key twice, or puts a key that one of its deletes covers. */
function checkDuplicates(ops: readonly TxnOp[]): void {
  const puts = new Set<string>();
  for (const op of ops) {
    if (op.type !== 'put') continue;
    if (puts.has(op.key)) throw new StorageError('DuplicateKey', `key ${op.key} is written twice in one txn`);
    puts.add(op.key);
  }
  for (const op of ops) {
    if (op.type !== 'delete') continue;
    for (const key of puts) {
      if (inSpan(key, op.span)) {
        throw new StorageError('DuplicateKey', `key ${key} is both put and deleted in one txn`);
      }
    }
  }
}

/** Checks a txn against the limits and etcd's rules; throws the StorageError the caller answers with. */
export function checkTxn(request: TxnRequest): void {
  for (const [name, ops] of [
    ['compare', request.compare],
    ['success', request.success],
    ['failure', request.failure],
  ] as const) {
    if (ops.length > limits.storeTxnOpsMax) {
      throw new StorageError(
        'TooManyOps',
        `${ops.length} ${name} operations in one txn; the limit is ${limits.storeTxnOpsMax}`,
      );
    }
  }
  for (const compare of request.compare) {
    if (compare.key === '') throw new StorageError('InvalidArgument', 'compare key is empty');
    checkKey(compare.key);
  }
  for (const op of request.success) checkOp(op);
  for (const op of request.failure) checkOp(op);
  checkDuplicates(request.success);
  checkDuplicates(request.failure);
}
