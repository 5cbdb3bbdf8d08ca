// The sequential model of one API object as the chaos workload uses it: a register with compare-and-swap on
// resourceVersion. Every write carries a value no other write uses, so a read's value names the write it saw.

import { unreachable } from '../../src/util/assert.js';
import type { Model, Operation } from './linearizability.js';

export type ObjectInput =
  | { readonly type: 'create'; readonly key: string; readonly value: string }
  /** A PUT with metadata.resourceVersion set: succeeds only if the object is at that version. */
  | {
      readonly type: 'update';
      readonly key: string;
      readonly value: string;
      readonly expectedRevision: string;
    }
  | { readonly type: 'delete'; readonly key: string; readonly expectedRevision?: string }
  | { readonly type: 'get'; readonly key: string };

export type ObjectOutput =
  | { readonly type: 'ok'; readonly revision?: string }
  | { readonly type: 'value'; readonly value: string; readonly revision: string }
  | { readonly type: 'not-found' }
  | { readonly type: 'exists' }
  | { readonly type: 'conflict' };

export interface ObjectState {
  readonly exists: boolean;
  readonly value: string | undefined;
  /** Undefined when the object was last written by an operation whose reply never came. */
  readonly revision: string | undefined;
}

export type ObjectOperation = Operation<ObjectInput, ObjectOutput>;

const absent: ObjectState = { exists: false, value: undefined, revision: undefined };

/** Whether the object may be at `expected` (an unknown revision may be anything). */
const mayBeAt = (state: ObjectState, expected: string): boolean =>
  state.revision === undefined || state.revision === expected;
const mayNotBeAt = (state: ObjectState, expected: string): boolean =>
  state.revision === undefined || state.revision !== expected;

function stepCreate(state: ObjectState, value: string, output: ObjectOutput | undefined): ObjectState[] {
  const created = (revision: string | undefined): ObjectState => ({ exists: true, value, revision });
  if (output === undefined) return state.exists ? [state] : [state, created(undefined)];
  switch (output.type) {
    case 'ok':
      return state.exists ? [] : [created(output.revision)];
    case 'exists':
      return state.exists ? [state] : [];
    default:
      return [];
  }
}

function stepUpdate(
  state: ObjectState,
  value: string,
  expected: string,
  output: ObjectOutput | undefined,
  conflictWhenMissing: boolean,
): ObjectState[] {
  const updated = (revision: string | undefined): ObjectState => ({ exists: true, value, revision });
  if (output === undefined)
    return state.exists && mayBeAt(state, expected) ? [state, updated(undefined)] : [state];
  switch (output.type) {
    case 'ok':
      return state.exists && mayBeAt(state, expected) ? [updated(output.revision)] : [];
    case 'conflict':
      if (!state.exists) return conflictWhenMissing ? [state] : [];
      return mayNotBeAt(state, expected) ? [state] : [];
    case 'not-found':
      return state.exists ? [] : [state];
    default:
      return [];
  }
}

function stepDelete(
  state: ObjectState,
  expected: string | undefined,
  output: ObjectOutput | undefined,
): ObjectState[] {
  const allowed = state.exists && (expected === undefined || mayBeAt(state, expected));
  if (output === undefined) return allowed ? [state, absent] : [state];
  switch (output.type) {
    case 'ok':
      return allowed ? [absent] : [];
    case 'conflict':
      return state.exists && expected !== undefined && mayNotBeAt(state, expected) ? [state] : [];
    case 'not-found':
      return state.exists ? [] : [state];
    default:
      return [];
  }
}

function stepGet(state: ObjectState, output: ObjectOutput | undefined): ObjectState[] {
  if (output === undefined) return [state];
  switch (output.type) {
    case 'value':
      // A read of a value whose write never replied also tells us that write's revision.
      return state.exists && state.value === output.value && mayBeAt(state, output.revision)
        ? [{ ...state, revision: output.revision }]
        : [];
    case 'not-found':
      return state.exists ? [] : [state];
    default:
      return [];
  }
}

export interface ObjectModelOptions {
  /**
   * Accept 409 Conflict from an update whose object does not exist (its precondition cannot hold either).
   * Kubernetes answers 404 there; Stoa answers 409 when the object is deleted between its read and its write.
   */
  readonly conflictWhenMissing: boolean;
}

/** The model with Kubernetes' answers (an update of a missing object is 404), or relaxed by `options`. */
export function objectModelWith(options: ObjectModelOptions): Model<ObjectState, ObjectInput, ObjectOutput> {
  return { ...objectModel, step: (state, input, output) => step(state, input, output, options) };
}

function step(
  state: ObjectState,
  input: ObjectInput,
  output: ObjectOutput | undefined,
  options: ObjectModelOptions,
): readonly ObjectState[] {
  switch (input.type) {
    case 'create':
      return stepCreate(state, input.value, output);
    case 'update':
      return stepUpdate(state, input.value, input.expectedRevision, output, options.conflictWhenMissing);
    case 'delete':
      return stepDelete(state, input.expectedRevision, output);
    case 'get':
      return stepGet(state, output);
    default:
      return unreachable(input);
  }
}

export const objectModel: Model<ObjectState, ObjectInput, ObjectOutput> = {
  initial: absent,
  step: (state, input, output) => step(state, input, output, { conflictWhenMissing: false }),
  key: (state) => `${state.exists ? 1 : 0}|${state.value ?? ''}|${state.revision ?? '?'}`,
  partition(operations) {
    const byKey = new Map<string, ObjectOperation[]>();
    for (const operation of operations) {
      const list = byKey.get(operation.input.key) ?? [];
      list.push(operation);
      byKey.set(operation.input.key, list);
    }
    return [...byKey.values()];
  },
  describe(operation) {
    const input = operation.input;
    const call = input.type === 'get' ? `get(${input.key})` : `${input.type}(${JSON.stringify(input)})`;
    const output = operation.output === undefined ? 'unknown' : JSON.stringify(operation.output);
    return `client ${operation.clientId}: ${call} -> ${output} [${operation.callAt}, ${operation.returnAt}]`;
  },
};
