// The compact notation the protobuf message definitions are written in, and its parser.
//
// One package per call. A message is `Name { field; field; ... }`, or `kind Name { ... }` for a top-level kind
// (an object a client sends or receives on its own, keyed by group and version). A field is
// `name[:type][?] number`:
//   - type defaults to string; scalars are string, bool, int32, int64, bytes, double; any other name is a
//     message, looked up in the same package first, then in the shared packages (meta.v1, runtime, intstr,
//     resource), or written in full (`core.v1.ObjectReference`);
//   - `[T]` is a repeated field, `<T>` a map with string keys;
//   - a trailing `?` marks a Go pointer field: its zero value (0, false, "", {}) is meaningful and kept on decode,
//     whereas a zero non-pointer field is dropped (Go always writes non-pointer fields, even when empty);
//   - a trailing `!` marks a field Go's JSON always writes (no omitempty): a scalar's zero is kept as well; on a
//     repeated field (`containers:[Container]!`) it only tells field management that Go writes a nil list as
//     `null` (the codec reads and writes lists the same either way);
//   - a leading `...` marks an embedded Go struct: a message field on the wire whose fields are inlined in JSON.
// Field numbers are the wire numbers of Kubernetes' generated.proto files.

export type Scalar = 'string' | 'bool' | 'int32' | 'int64' | 'bytes' | 'double';

export interface FieldDef {
  readonly name: string;
  readonly id: number;
  /** A scalar, or the full name of a message (`core.v1.PodSpec`). */
  readonly type: string;
  readonly scalar: boolean;
  readonly repeated: boolean;
  readonly map: boolean;
  readonly pointer: boolean;
  /** Keep a zero value on decode: a pointer field, or a scalar without omitempty. */
  readonly keepZero: boolean;
  readonly inline: boolean;
}

export interface MessageDef {
  readonly fullName: string;
  readonly fields: readonly FieldDef[];
  readonly isKind: boolean;
}

export interface PackageText {
  /** `core.v1`, `apps.v1`, `meta.v1`, ... */
  readonly name: string;
  /** The API group prefix without the domain ('' for core, `rbac.authorization`), for packages with kinds. */
  readonly groupPrefix?: string;
  readonly version?: string;
  readonly text: string;
}

const scalars: ReadonlySet<string> = new Set(['string', 'bool', 'int32', 'int64', 'bytes', 'double']);
const sharedPackages = ['meta.v1', 'runtime', 'intstr', 'resource'] as const;

interface RawField {
  name: string;
  id: number;
  type: string;
  repeated: boolean;
  map: boolean;
  pointer: boolean;
  keepZero: boolean;
  inline: boolean;
}

function parseField(text: string, where: string): RawField {
  const m = /^(\.\.\.)?([A-Za-z_][A-Za-z0-9_]*)(?::(\[[\w.]+\]|<[\w.]+>|[\w.]+))?([?!])?\s+(\d+)$/.exec(text);
  if (m === null) throw new Error(`protobuf schema: bad field "${text}" in ${where}`);
  const [, inline, name = '', typeText = 'string', pointer, id = '0'] = m;
  const repeated = typeText.startsWith('[');
  const map = typeText.startsWith('<');
  const type = repeated || map ? typeText.slice(1, -1) : typeText;
  return {
    name,
    id: Number(id),
    type,
    repeated,
    map,
    pointer: pointer === '?',
    keepZero: pointer !== undefined,
    inline: inline === '...',
  };
}

/** Parses packages and resolves every message reference; an unknown type is a programmer error and throws. */
export function parsePackages(packages: readonly PackageText[]): Map<string, MessageDef> {
  const raw = new Map<string, { pkg: string; fields: RawField[]; isKind: boolean }>();
  for (const pkg of packages) {
    const body = pkg.text.replace(/\s+/g, ' ');
    const re = /(kind\s+)?([A-Za-z][A-Za-z0-9]*)\s*\{([^}]*)\}/g;
    let m: RegExpExecArray | null;
    let consumed = 0;
    while ((m = re.exec(body)) !== null) {
      if (body.slice(consumed, m.index).trim() !== '')
        throw new Error(`protobuf schema: stray text in ${pkg.name}: ${body.slice(consumed, m.index)}`);
      consumed = re.lastIndex;
      const [, kindWord, name = '', fieldsText = ''] = m;
      const fullName = `${pkg.name}.${name}`;
      if (raw.has(fullName)) throw new Error(`protobuf schema: ${fullName} defined twice`);
      const fields = fieldsText
        .split(';')
        .map((f) => f.trim())
        .filter((f) => f !== '')
        .map((f) => parseField(f, fullName));
      const ids = new Set(fields.map((f) => f.id));
      if (ids.size !== fields.length)
        throw new Error(`protobuf schema: duplicate field number in ${fullName}`);
      raw.set(fullName, { pkg: pkg.name, fields, isKind: kindWord !== undefined });
    }
    if (body.slice(consumed).trim() !== '')
      throw new Error(`protobuf schema: stray text in ${pkg.name}: ${body.slice(consumed)}`);
  }
  const resolve = (pkg: string, type: string, where: string): string => {
    if (scalars.has(type)) return type;
    const candidates = type.includes('.') ? [type] : [pkg, ...sharedPackages].map((p) => `${p}.${type}`);
    const found = candidates.find((c) => raw.has(c));
    if (found === undefined) throw new Error(`protobuf schema: unknown type ${type} in ${where}`);
    return found;
  };
  const out = new Map<string, MessageDef>();
  for (const [fullName, def] of raw) {
    out.set(fullName, {
      fullName,
      isKind: def.isKind,
      fields: def.fields.map((f) => ({
        ...f,
        type: resolve(def.pkg, f.type, fullName),
        scalar: scalars.has(f.type),
      })),
    });
  }
  return out;
}

/** protobufjs's JSON descriptor of the parsed messages (nested namespaces by package). */
export function toProtobufJsDescriptor(messages: ReadonlyMap<string, MessageDef>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const def of messages.values()) {
    const path = def.fullName.split('.');
    let node = root;
    for (const part of path.slice(0, -1)) {
      const nested = (node.nested ??= {}) as Record<string, Record<string, unknown>>;
      node = nested[part] ??= {};
    }
    const fields: Record<string, unknown> = {};
    for (const f of def.fields) {
      const type = f.scalar ? f.type : `.${f.type}`;
      if (f.map) fields[f.name] = { keyType: 'string', type, id: f.id };
      else if (f.repeated)
        fields[f.name] = {
          rule: 'repeated',
          type,
          id: f.id,
          ...(f.scalar ? { options: { packed: false } } : {}),
        };
      else fields[f.name] = { type, id: f.id };
    }
    const nested = (node.nested ??= {}) as Record<string, unknown>;
    // proto2: explicit presence, so a pointer field's zero value still goes on the wire.
    nested[path[path.length - 1] ?? ''] = { edition: 'proto2', fields };
  }
  return root;
}
