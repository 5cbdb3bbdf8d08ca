// The checks of a chaos run over its recorded history: linearizability per object, the watch guarantees, reads
// at a resourceVersion, no acknowledged write lost, and convergence of every node. Each check gives a verdict
// and, when it fails, a small counterexample a person can read.

import { checkLinearizability, type Model, type PartitionReport } from './checker/linearizability.js';
import {
  objectModel,
  objectModelWith,
  type ObjectInput,
  type ObjectOperation,
  type ObjectOutput,
  type ObjectState,
} from './checker/object-model.js';
import { checkWatchers, type ObservedChange, type WatcherLog } from './checker/watch.js';
import type { ListItem, ListRecord } from './workload.js';

export type Verdict = 'pass' | 'fail' | 'unknown';

export interface CheckReport {
  readonly name: string;
  readonly verdict: Verdict;
  readonly summary: string;
  /** Lines of a minimal counterexample (the failing object's operations, the missed event, ...). */
  readonly counterexample: readonly string[];
  /** Findings that are not violations (known deviations from Kubernetes' answers). */
  readonly notes?: readonly string[];
}

const counterexampleLinesMax = 40;

function round(ms: number): string {
  return Number.isFinite(ms) ? ms.toFixed(1) : '∞';
}

function describe(operation: ObjectOperation, index: number): string {
  const input = operation.input;
  const args =
    input.type === 'create'
      ? `create ${input.value}`
      : input.type === 'update'
        ? `update ${input.value} if rv=${input.expectedRevision}`
        : input.type === 'delete'
          ? `delete${input.expectedRevision === undefined ? '' : ` if rv=${input.expectedRevision}`}`
          : 'get';
  const output = operation.output;
  const result =
    output === undefined
      ? 'unknown'
      : output.type === 'value'
        ? `${output.value}@${output.revision}`
        : output.type === 'ok' && output.revision !== undefined
          ? `ok@${output.revision}`
          : output.type;
  return `#${index} client ${operation.clientId} [${round(operation.callAt)}, ${round(operation.returnAt)}] ms: ${args} -> ${result}`;
}

/** The operations around where the search got stuck: those overlapping the first call it could not place. */
function counterexampleOf(illegal: PartitionReport<ObjectInput, ObjectOutput>): string[] {
  const ops = illegal.operations;
  const placed = new Set(illegal.longestLinearization);
  const stuck = ops
    .map((op, i) => ({ op, i }))
    .filter(({ i }) => !placed.has(i))
    .sort((a, b) => a.op.callAt - b.op.callAt)[0];
  const at = stuck?.op.callAt ?? 0;
  const window = ops
    .map((op, i) => ({ op, i }))
    .filter(({ op }) => op.returnAt >= at - 2_000 && op.callAt <= (stuck?.op.returnAt ?? at) + 200)
    .sort((a, b) => a.op.callAt - b.op.callAt);
  const lastPlaced = illegal.longestLinearization
    .slice(-5)
    .map((i) => describe(ops[i] as ObjectOperation, i));
  return [
    `object ${ops[0]?.input.key ?? '?'} (${ops.length} operations, ${placed.size} linearized before it breaks); first operation that cannot be placed: ${stuck === undefined ? '?' : describe(stuck.op, stuck.i)}`,
    'last operations of the longest linearization found:',
    ...lastPlaced.map((l) => `  ${l}`),
    'operations overlapping it (by call time):',
    ...window.slice(0, counterexampleLinesMax).map(({ op, i }) => `  ${describe(op, i)}`),
  ];
}

const shrinkBudgetMs = 10_000;

/** Operations that only constrain the state: reads, and writes whose reply says they changed nothing. */
const constrainsOnly = (op: ObjectOperation): boolean =>
  op.output !== undefined && (op.input.type === 'get' || op.output.type !== 'ok');

/**
 * The history up to a time T, when that is already illegal: operations called after T go, and those still open
 * at T become unknown (a read: dropped). Each is a relaxation of what happened before T, so an illegal cut is
 * a real violation. Tries T at the first operation the search could not place, then ever later.
 */
function truncate(
  illegal: PartitionReport<ObjectInput, ObjectOutput>,
  model: Model<ObjectState, ObjectInput, ObjectOutput>,
  deadline: number,
): PartitionReport<ObjectInput, ObjectOutput> {
  const ops = illegal.operations;
  const placed = new Set(illegal.longestLinearization);
  const stuck = ops.filter((_, i) => !placed.has(i)).sort((a, b) => a.callAt - b.callAt)[0];
  if (stuck === undefined || !Number.isFinite(stuck.returnAt)) return illegal;
  const end = Math.max(...ops.map((op) => op.callAt));
  for (let step = 0, cut = stuck.returnAt; cut < end && Date.now() < deadline; step++) {
    const prefix: ObjectOperation[] = [];
    for (const op of ops) {
      if (op.callAt > cut) continue;
      if (op.returnAt <= cut) prefix.push(op);
      else if (op.input.type !== 'get') prefix.push({ ...op, output: undefined, returnAt: Infinity });
    }
    const left = Math.max(1, deadline - Date.now());
    const again = checkLinearizability(model, prefix, { budgetMs: left }).partitions[0];
    if (again?.verdict === 'illegal') return again;
    cut += 250 * 2 ** step;
  }
  return illegal;
}

/**
 * A smaller history with the same violation: drops constraining-only operations, latest first, while the rest
 * stays illegal. Dropping a constraint never turns a linearizable history into one that is not, so what is left
 * is still a real violation (dropping a write could fabricate one: a read of a value nobody wrote).
 */
export function shrinkViolation(
  illegal: PartitionReport<ObjectInput, ObjectOutput>,
  budgetMs: number,
  model: Model<ObjectState, ObjectInput, ObjectOutput> = objectModel,
): PartitionReport<ObjectInput, ObjectOutput> {
  const deadline = Date.now() + budgetMs;
  let current = truncate(illegal, model, deadline);
  for (let i = current.operations.length - 1; i >= 0 && Date.now() < deadline; i--) {
    const operation = current.operations[i];
    if (operation === undefined || !constrainsOnly(operation)) continue;
    const without = current.operations.filter((_, k) => k !== i);
    const left = Math.max(1, deadline - Date.now());
    const again = checkLinearizability(model, without, { budgetMs: left }).partitions[0];
    if (again?.verdict === 'illegal') current = again;
  }
  return current;
}

/**
 * Linearizability per object with Kubernetes' answers. An object that fails only because an update answered
 * 409 where the object was gone (Kubernetes answers 404) is re-checked with that answer accepted: if it then
 * passes, it is a known API deviation (a note), not a consistency violation.
 */
export function checkLinearizable(operations: readonly ObjectOperation[], budgetMs: number): CheckReport {
  // Most of the budget decides consistency (with the 409-for-404 answer accepted); what is left looks for
  // objects that need that answer (notes only: undecided there is not reported).
  const started = Date.now();
  const relaxed = objectModelWith({ conflictWhenMissing: true });
  const result = checkLinearizability(relaxed, operations, { budgetMs: Math.round(budgetMs * 0.8) });
  const keys = result.partitions.length;
  const violations = result.partitions.filter((p) => p.verdict === 'illegal');
  const deviations: PartitionReport<ObjectInput, ObjectOutput>[] = [];
  if (violations.length === 0) {
    const decided = result.partitions.filter((p) => p.verdict === 'ok').flatMap((p) => p.operations);
    const left = Math.max(1_000, budgetMs - (Date.now() - started));
    const strict = checkLinearizability(objectModel, decided, { budgetMs: left });
    deviations.push(...strict.partitions.filter((p) => p.verdict === 'illegal'));
  }
  const notes =
    deviations.length === 0
      ? []
      : [
          `${deviations.length} objects are linearizable only if an update answered 409 Conflict after its object was deleted concurrently (Kubernetes answers 404 NotFound); the first:`,
          ...counterexampleOf(deviations[0] as PartitionReport<ObjectInput, ObjectOutput>),
        ];
  const first = violations[0];
  if (first !== undefined) {
    const shrunk = shrinkViolation(first, shrinkBudgetMs, relaxed);
    return {
      name: 'linearizability',
      verdict: 'fail',
      summary: `${violations.length} of ${keys} objects have no linearization (first: ${first.operations[0]?.input.key ?? '?'})`,
      counterexample: [
        `shrunk from ${first.operations.length} to ${shrunk.operations.length} operations (cut after the violation, then reads and writes that changed nothing dropped while it remains)`,
        ...counterexampleOf(shrunk),
      ],
      notes,
    };
  }
  const open = result.partitions.filter((p) => p.verdict === 'unknown').length;
  if (open > 0) {
    return {
      name: 'linearizability',
      verdict: 'unknown',
      summary: `${open} of ${keys} objects not decided within the ${budgetMs} ms budget (${operations.length} operations)`,
      counterexample: [],
      notes,
    };
  }
  return {
    name: 'linearizability',
    verdict: 'pass',
    summary: `${operations.length} operations on ${keys} objects are linearizable${deviations.length === 0 ? '' : ` (${deviations.length} with the 409-for-404 deviation, see notes)`}`,
    counterexample: [],
    notes,
  };
}

/** Writes whose replies named their revision: part of the reference history for watches and reads. */
export function acknowledgedChanges(operations: readonly ObjectOperation[]): ObservedChange[] {
  const changes: ObservedChange[] = [];
  for (const op of operations) {
    if (op.output?.type !== 'ok' || op.output.revision === undefined) continue;
    if (op.input.type === 'create' || op.input.type === 'update') {
      changes.push({
        type: op.input.type === 'create' ? 'ADDED' : 'MODIFIED',
        key: op.input.key,
        revision: Number(op.output.revision),
        value: op.input.value,
      });
    }
  }
  return changes;
}

export function checkWatches(
  logs: readonly WatcherLog[],
  acknowledged: readonly ObservedChange[],
): CheckReport {
  const violations = checkWatchers(logs, acknowledged);
  const events = logs.reduce((sum, log) => sum + log.records.length, 0);
  if (violations.length === 0) {
    return {
      name: 'watch',
      verdict: logs.length === 0 ? 'unknown' : 'pass',
      summary: `${logs.length} watchers, ${events} records: ordered, unique, reliable, bookmarks in place, agree with the writes`,
      counterexample: [],
    };
  }
  const kinds = [...new Set(violations.map((v) => v.kind))].join(', ');
  return {
    name: 'watch',
    verdict: 'fail',
    summary: `${violations.length} violations (${kinds})`,
    counterexample: violations.slice(0, counterexampleLinesMax).map((v) => `${v.kind}: ${v.message}`),
  };
}

/**
 * Lists at a resourceVersion: every item must be a version some write or watcher knows at that revision, no
 * item may be newer than the list, and the list's revision must honour NotOlderThan / Exact.
 */
export function checkListReads(
  lists: readonly ListRecord[],
  reference: ReadonlyMap<string, string | undefined>,
): CheckReport {
  const problems: string[] = [];
  for (const list of lists) {
    const where = `client ${list.clientId} list (${list.mode}${list.requested === undefined ? '' : ` ${list.requested}`}) on node ${list.node + 1} at ${round(list.callAt)} ms`;
    if (list.mode === 'not-older-than' && list.requested !== undefined && list.revision < list.requested) {
      problems.push(`${where}: served at ${list.revision}, older than asked`);
    }
    if (list.mode === 'exact' && list.requested !== undefined && list.revision !== list.requested) {
      problems.push(`${where}: served at ${list.revision}, not exactly as asked`);
    }
    for (const item of list.items) {
      if (item.revision > list.revision) {
        problems.push(
          `${where}: item ${item.key}@${item.revision} is newer than the list (${list.revision})`,
        );
      }
      const id = `${item.key}@${item.revision}`;
      if (reference.has(id) && reference.get(id) !== item.value) {
        problems.push(
          `${where}: item ${id}=${item.value ?? ''} but the history has ${reference.get(id) ?? ''}`,
        );
      }
    }
  }
  return {
    name: 'list reads',
    verdict: problems.length === 0 ? 'pass' : 'fail',
    summary:
      problems.length === 0
        ? `${lists.length} lists at every resourceVersion mode agree with the history`
        : `${problems.length} lists disagree with the history`,
    counterexample: problems.slice(0, counterexampleLinesMax),
  };
}

/** (key@revision → value) of every acknowledged write and every change a watcher saw. */
export function referenceValues(
  acknowledged: readonly ObservedChange[],
  logs: readonly WatcherLog[],
): Map<string, string | undefined> {
  const reference = new Map<string, string | undefined>();
  for (const change of acknowledged) reference.set(`${change.key}@${change.revision}`, change.value);
  for (const log of logs) {
    for (const record of log.records) {
      if (record.type === 'ADDED' || record.type === 'MODIFIED')
        reference.set(`${record.key}@${record.revision}`, record.value);
    }
  }
  return reference;
}

/**
 * No acknowledged write lost: for every acknowledged create or update of a key at revision R, the final state of
 * that key is at R or later, or the key is gone and some delete of it may explain that (a watcher saw a delete
 * after R, or a delete that succeeded or has an unknown outcome was called after the write was).
 */
export function checkNoLostWrites(
  operations: readonly ObjectOperation[],
  finalState: ReadonlyMap<string, ListItem>,
  logs: readonly WatcherLog[],
): CheckReport {
  const lost: string[] = [];
  let acknowledged = 0;
  const deletesSeen = new Map<string, number[]>();
  for (const log of logs) {
    for (const record of log.records) {
      if (record.type === 'DELETED') {
        const list = deletesSeen.get(record.key) ?? [];
        list.push(record.revision);
        deletesSeen.set(record.key, list);
      }
    }
  }
  for (const op of operations) {
    if (op.output?.type !== 'ok' || op.output.revision === undefined) continue;
    if (op.input.type !== 'create' && op.input.type !== 'update') continue;
    acknowledged++;
    const revision = Number(op.output.revision);
    const key = op.input.key;
    const final = finalState.get(key);
    if (final !== undefined) {
      if (final.revision < revision) {
        lost.push(
          `${key}: ${op.input.type} ${op.input.value}@${revision} acknowledged, final state is ${final.value ?? ''}@${final.revision}`,
        );
      }
      continue;
    }
    const seenDelete = (deletesSeen.get(key) ?? []).some((r) => r > revision);
    const deleteCalled = operations.some(
      (d) =>
        d.input.type === 'delete' &&
        d.input.key === key &&
        d.returnAt > op.callAt &&
        (d.output === undefined || d.output.type === 'ok'),
    );
    if (!seenDelete && !deleteCalled) {
      lost.push(
        `${key}: ${op.input.type} ${op.input.value}@${revision} acknowledged, key gone, and no delete explains it`,
      );
    }
  }
  return {
    name: 'no acknowledged write lost',
    verdict: lost.length === 0 ? 'pass' : 'fail',
    summary:
      lost.length === 0
        ? `all ${acknowledged} acknowledged writes are in the final state or superseded`
        : `${lost.length} of ${acknowledged} acknowledged writes lost`,
    counterexample: lost.slice(0, counterexampleLinesMax),
  };
}

export interface NodeFinalState {
  readonly name: string;
  readonly appliedIndex: number | undefined;
  readonly revision: number | undefined;
  /** Hash of the node's objects (name, resourceVersion, value) from a local list at resourceVersion=0. */
  readonly hash: string | undefined;
  readonly objects: number | undefined;
}

export function checkConvergence(
  nodes: readonly NodeFinalState[],
  quorumHash: string | undefined,
): CheckReport {
  const hashes = new Set(nodes.map((n) => n.hash));
  const rows = nodes.map(
    (n) =>
      `${n.name}: applied ${n.appliedIndex ?? '?'}, revision ${n.revision ?? '?'}, ${n.objects ?? '?'} objects, hash ${n.hash ?? 'no answer'}`,
  );
  const converged =
    hashes.size === 1 && !hashes.has(undefined) && (quorumHash === undefined || hashes.has(quorumHash));
  return {
    name: 'convergence',
    verdict: converged ? 'pass' : 'fail',
    summary: converged
      ? `${nodes.length} nodes hold the same state (hash ${[...hashes][0] ?? ''})`
      : `nodes differ after healing`,
    counterexample: converged ? [] : [...rows, `quorum list hash ${quorumHash ?? '?'}`],
  };
}
