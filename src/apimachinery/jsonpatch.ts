// JSON patch (RFC 6902): add, remove, replace, move, copy, test over JSON pointers (RFC 6901). Failures are
// worded as kube-apiserver's JSON patch library words them (evanphx/json-patch v4), and keep its two leniencies:
// `replace` of a missing object member adds it, and a negative array index counts from the end.

/** kube-apiserver's limit on operations in one JSON patch (413 beyond it). */
export const jsonPatchOperationsMax = 10_000;

export interface JsonPatchOperation {
  readonly op: string;
  readonly path?: unknown;
  readonly from?: unknown;
  readonly value?: unknown;
  readonly hasValue: boolean;
}

/** A patch that could not be decoded (400) or applied (422); the message is the library's. */
export class JsonPatchError extends Error {
  override readonly name = 'JsonPatchError';
  constructor(
    message: string,
    readonly decoding: boolean,
  ) {
    super(message);
  }
}

/** Reads a decoded body as a list of operations: an array of objects. */
export function decodeJsonPatch(value: unknown): JsonPatchOperation[] {
  if (!Array.isArray(value)) {
    throw new JsonPatchError('json: cannot unmarshal object into Go value of type jsonpatch.Patch', true);
  }
  return value.map((entry) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new JsonPatchError(
        'json: cannot unmarshal array into Go value of type jsonpatch.Operation',
        true,
      );
    }
    const record = entry as Record<string, unknown>;
    return {
      op: typeof record.op === 'string' ? record.op : 'unknown',
      path: record.path,
      from: record.from,
      value: record.value,
      hasValue: Object.prototype.hasOwnProperty.call(record, 'value'),
    };
  });
}

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return value !== null && typeof value === 'object';
}

function decodeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** RFC 6901 escaping of one reference token. */
export function encodePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The container that holds the pointer's last token, and that token; undefined when a parent is missing. */
function locate(doc: Container, path: string): { container: Container; key: string } | undefined {
  const split = path.split('/');
  if (split.length < 2) return undefined;
  let current: Container = doc;
  for (const raw of split.slice(1, -1)) {
    const next = get(current, decodeToken(raw));
    if (!isContainer(next)) return undefined;
    current = next;
  }
  return { container: current, key: decodeToken(split[split.length - 1] ?? '') };
}

function arrayIndex(key: string, length: number, what: 'get' | 'add'): number {
  if (!/^-?\d+$/.test(key)) {
    throw new Error(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  }
  let index = Number(key);
  const size = what === 'add' ? length + 1 : length;
  if (index >= size || index < -size) {
    throw new Error(`Unable to access invalid index: ${index}: invalid index referenced`);
  }
  if (index < 0) index += size;
  return index;
}

function get(container: Container, key: string): unknown {
  if (Array.isArray(container)) {
    if (!/^-?\d+$/.test(key)) return undefined;
    const index = Number(key);
    return container[index < 0 ? container.length + index : index];
  }
  return Object.prototype.hasOwnProperty.call(container, key) ? container[key] : undefined;
}

function getChecked(container: Container, key: string): unknown {
  if (Array.isArray(container)) return container[arrayIndex(key, container.length, 'get')];
  return Object.prototype.hasOwnProperty.call(container, key) ? container[key] : undefined;
}

function add(container: Container, key: string, value: unknown): void {
  if (!Array.isArray(container)) {
    container[key] = value;
    return;
  }
  if (key === '-') {
    container.push(value);
    return;
  }
  let index: number;
  try {
    index = arrayIndex(key, container.length, 'add');
  } catch (error) {
    throw new Error(`value was not a proper array index: '${key}': ${(error as Error).message}`);
  }
  container.splice(index, 0, value);
}

function remove(container: Container, key: string): void {
  if (Array.isArray(container)) {
    container.splice(arrayIndex(key, container.length, 'get'), 1);
    return;
  }
  if (!Object.prototype.hasOwnProperty.call(container, key)) {
    throw new Error(`Unable to remove nonexistent key: ${key}: missing value`);
  }
  delete container[key];
}

function pathOf(op: JsonPatchOperation, field: 'path' | 'from'): string {
  const value = op[field];
  if (value === undefined || value === null) {
    const what = field === 'path' ? 'operation missing path field' : 'operation, missing from field';
    throw new Error(`${op.op} operation failed to decode ${field}: ${what}: missing value`);
  }
  if (typeof value !== 'string') {
    throw new Error(
      `${op.op} operation failed to decode ${field}: json: cannot unmarshal ${typeof value} into Go value of type string`,
    );
  }
  return value;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isContainer(a) && isContainer(b)) {
    const ak = Object.keys(a);
    const bk = Object.keys(b);
    if (ak.length !== bk.length) return false;
    return ak.every(
      (k) =>
        Object.prototype.hasOwnProperty.call(b, k) &&
        deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    );
  }
  return false;
}

function copyOf(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

function step(doc: Container, op: JsonPatchOperation): void {
  switch (op.op) {
    case 'add': {
      const path = pathOf(op, 'path');
      const at = locate(doc, path);
      if (at === undefined)
        throw new Error(`add operation does not apply: doc is missing path: "${path}": missing value`);
      try {
        add(at.container, at.key, copyOf(op.hasValue ? op.value : null));
      } catch (error) {
        throw new Error(`error in add for path: '${path}': ${(error as Error).message}`);
      }
      return;
    }
    case 'remove': {
      const path = pathOf(op, 'path');
      const at = locate(doc, path);
      if (at === undefined)
        throw new Error(`remove operation does not apply: doc is missing path: "${path}": missing value`);
      try {
        remove(at.container, at.key);
      } catch (error) {
        throw new Error(`error in remove for path: '${path}': ${(error as Error).message}`);
      }
      return;
    }
    case 'replace': {
      const path = pathOf(op, 'path');
      const at = locate(doc, path);
      if (at === undefined)
        throw new Error(`replace operation does not apply: doc is missing path: ${path}: missing value`);
      if (Array.isArray(at.container)) {
        let index: number;
        try {
          index = arrayIndex(at.key, at.container.length, 'get');
        } catch {
          throw new Error(`replace operation does not apply: doc is missing key: ${path}: missing value`);
        }
        at.container[index] = copyOf(op.hasValue ? op.value : null);
      } else at.container[at.key] = copyOf(op.hasValue ? op.value : null);
      return;
    }
    case 'move': {
      const from = pathOf(op, 'from');
      const source = locate(doc, from);
      if (source === undefined)
        throw new Error(`move operation does not apply: doc is missing from path: ${from}: missing value`);
      let value: unknown;
      try {
        value = getChecked(source.container, source.key);
        remove(source.container, source.key);
      } catch (error) {
        throw new Error(`error in move for path: '${source.key}': ${(error as Error).message}`);
      }
      const path = pathOf(op, 'path');
      const target = locate(doc, path);
      if (target === undefined)
        throw new Error(
          `move operation does not apply: doc is missing destination path: ${path}: missing value`,
        );
      try {
        add(target.container, target.key, value);
      } catch (error) {
        throw new Error(`error in move for path: '${path}': ${(error as Error).message}`);
      }
      return;
    }
    case 'copy': {
      const from = pathOf(op, 'from');
      const source = locate(doc, from);
      if (source === undefined)
        throw new Error(`copy operation does not apply: doc is missing from path: ${from}: missing value`);
      let value: unknown;
      try {
        value = getChecked(source.container, source.key);
      } catch (error) {
        throw new Error(`error in copy for from: '${from}': ${(error as Error).message}`);
      }
      const path = pathOf(op, 'path');
      const target = locate(doc, path);
      if (target === undefined)
        throw new Error(
          `copy operation does not apply: doc is missing destination path: ${path}: missing value`,
        );
      try {
        add(target.container, target.key, copyOf(value) ?? null);
      } catch (error) {
        throw new Error(`error while adding value during copy: ${(error as Error).message}`);
      }
      return;
    }
    case 'test': {
      const path = pathOf(op, 'path');
      const at = locate(doc, path);
      if (at === undefined)
        throw new Error(`test operation does not apply: is missing path: ${path}: missing value`);
      let actual: unknown;
      try {
        actual = getChecked(at.container, at.key);
      } catch (error) {
        throw new Error(`error in test for path: '${path}': ${(error as Error).message}`);
      }
      const expected = op.hasValue ? op.value : undefined;
      if (actual === undefined ? expected === undefined : deepEqual(actual, expected)) return;
      throw new Error(`testing value ${path} failed: test failed`);
    }
    default:
      throw new Error(`Unexpected kind: ${op.op}`);
  }
}

/** Applies the operations in order to a copy of `doc`; the first failure throws a JsonPatchError. */
export function applyJsonPatch(doc: unknown, operations: readonly JsonPatchOperation[]): unknown {
  if (!isContainer(doc)) throw new JsonPatchError('the document must be an object', false);
  const root = copyOf(doc) as Container;
  for (const op of operations) {
    try {
      step(root, op);
    } catch (error) {
      throw new JsonPatchError((error as Error).message, false);
    }
  }
  return root;
}
