// A linearizability checker: the Wing–Gong–Lowe search with memoization of (linearized set, state), run per
// partition (P-compositionality: each key is checked on its own), with a time budget.
//
// An operation whose outcome is unknown (a timeout, a dropped connection) has no return: it may take effect at
// any point after its call, or never. The model decides what "never" means by returning the unchanged state
// among the possible next states.

export interface Operation<I, O> {
  readonly clientId: number;
  readonly input: I;
  /** Undefined when the outcome is unknown. */
  readonly output: O | undefined;
  /** When the call was made (any monotonic unit). */
  readonly callAt: number;
  /** When the reply arrived; Infinity when the outcome is unknown. */
  readonly returnAt: number;
}

export interface Model<S, I, O> {
  readonly initial: S;
  /** Every state the operation may lead to from `state` given what it returned; empty = not legal here. */
  step(state: S, input: I, output: O | undefined): readonly S[];
  /** A string that is equal for equal states (memoization key). */
  key(state: S): string;
  /** Split a history into independent partitions (default: one). */
  partition?(operations: readonly Operation<I, O>[]): readonly (readonly Operation<I, O>[])[];
  describe?(operation: Operation<I, O>): string;
}

export type CheckVerdict = 'ok' | 'illegal' | 'unknown';

export interface PartitionReport<I, O> {
  readonly verdict: CheckVerdict;
  readonly operations: readonly Operation<I, O>[];
  /** For `illegal`: the longest prefix of a linearization found, as indexes into `operations`. */
  readonly longestLinearization: readonly number[];
}

export interface CheckResult<I, O> {
  /** `illegal` if any partition is; else `unknown` if any ran out of budget; else `ok`. */
  readonly verdict: CheckVerdict;
  readonly partitions: readonly PartitionReport<I, O>[];
}

interface Entry {
  readonly kind: 'call' | 'return';
  readonly at: number;
  readonly operation: number;
  /** For a call: its return entry. */
  match: Entry | undefined;
  prev: Entry | undefined;
  next: Entry | undefined;
}

/** Characters of memo keys one partition's search may hold (about as many bytes): past it, `unknown`. */
const memoCharsMaxDefault = 256 * 1024 * 1024;

/**
 * Checks a history against a model; `budgetMs` bounds the whole search in time, `memoCharsMax` each
 * partition's memo in memory (a long, highly concurrent history can otherwise exhaust the heap).
 */
export function checkLinearizability<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: { budgetMs?: number; memoCharsMax?: number } = {},
): CheckResult<I, O> {
  const deadline = Date.now() + (options.budgetMs ?? 10_000);
  const memoCharsMax = options.memoCharsMax ?? memoCharsMaxDefault;
  const partitions = model.partition ? model.partition(history) : [history];
  const reports = partitions.map((operations) => checkPartition(model, operations, deadline, memoCharsMax));
  const verdict: CheckVerdict = reports.some((r) => r.verdict === 'illegal')
    ? 'illegal'
    : reports.some((r) => r.verdict === 'unknown')
      ? 'unknown'
      : 'ok';
  return { verdict, partitions: reports };
}

/** A doubly linked list of call and return entries in time order, with a sentinel head. */
function buildEntries<I, O>(operations: readonly Operation<I, O>[]): Entry {
  const entries: Entry[] = [];
  operations.forEach((operation, index) => {
    const call: Entry = {
      kind: 'call',
      at: operation.callAt,
      operation: index,
      match: undefined,
      prev: undefined,
      next: undefined,
    };
    const ret: Entry = {
      kind: 'return',
      at: operation.returnAt,
      operation: index,
      match: undefined,
      prev: undefined,
      next: undefined,
    };
    call.match = ret;
    entries.push(call, ret);
  });
  // At equal times calls sort before returns: the two operations are then taken as concurrent, the
  // permissive reading of a tie in clocks of limited resolution.
  entries.sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === 'call' ? -1 : 1));
  const head: Entry = {
    kind: 'call',
    at: -Infinity,
    operation: -1,
    match: undefined,
    prev: undefined,
    next: undefined,
  };
  let last = head;
  for (const entry of entries) {
    last.next = entry;
    entry.prev = last;
    last = entry;
  }
  return head;
}

/** Removes a call and its return from the list (they are linearized). */
function lift(call: Entry): void {
  const ret = call.match;
  if (call.prev) call.prev.next = call.next;
  if (call.next) call.next.prev = call.prev;
  if (ret) {
    if (ret.prev) ret.prev.next = ret.next;
    if (ret.next) ret.next.prev = ret.prev;
  }
}

/** Puts a lifted call and its return back (exact inverse of lift, in reverse order). */
function unlift(call: Entry): void {
  const ret = call.match;
  if (ret) {
    if (ret.prev) ret.prev.next = ret;
    if (ret.next) ret.next.prev = ret;
  }
  if (call.prev) call.prev.next = call;
  if (call.next) call.next.prev = call;
}

interface Frame<S> {
  readonly call: Entry;
  readonly stateBefore: S;
  /** The remaining alternative next states not yet tried for this call. */
  readonly alternatives: S[];
}

function checkPartition<S, I, O>(
  model: Model<S, I, O>,
  operations: readonly Operation<I, O>[],
  deadline: number,
  memoCharsMax: number,
): PartitionReport<I, O> {
  const head = buildEntries(operations);
  const linearized = new Uint8Array(operations.length);
  const seen = new Set<string>();
  let memoChars = 0;
  const stack: Frame<S>[] = [];
  let longest: number[] = [];
  let state = model.initial;
  let entry = head.next;
  let iterations = 0;

  const memoKey = (next: S): string => `${Buffer.from(linearized).toString('base64')}|${model.key(next)}`;

  /** Tries the alternatives of a call in order; on the first unseen one, linearizes the call and returns true. */
  const tryAlternatives = (call: Entry, stateBefore: S, alternatives: S[]): boolean => {
    while (alternatives.length > 0) {
      const next = alternatives.shift() as S;
      linearized[call.operation] = 1;
      const key = memoKey(next);
      if (seen.has(key)) {
        linearized[call.operation] = 0;
        continue;
      }
      seen.add(key);
      memoChars += key.length;
      stack.push({ call, stateBefore, alternatives });
      state = next;
      lift(call);
      if (stack.length > longest.length) longest = stack.map((frame) => frame.call.operation);
      return true;
    }
    return false;
  };

  while (head.next !== undefined) {
    if (memoChars > memoCharsMax || (iterations++ % 1024 === 0 && Date.now() >= deadline)) {
      return { verdict: 'unknown', operations, longestLinearization: longest };
    }
    if (entry !== undefined && entry.kind === 'call') {
      const operation = operations[entry.operation] as Operation<I, O>;
      const alternatives = [...model.step(state, operation.input, operation.output)];
      if (tryAlternatives(entry, state, alternatives)) {
        entry = head.next;
      } else {
        entry = entry.next;
      }
      continue;
    }
    // A return whose call is not linearized yet (or the end of the list): undo the last choice and try its
    // next alternative, or else move past that call.
    const frame = stack.pop();
    if (frame === undefined) return { verdict: 'illegal', operations, longestLinearization: longest };
    unlift(frame.call);
    linearized[frame.call.operation] = 0;
    state = frame.stateBefore;
    entry = tryAlternatives(frame.call, frame.stateBefore, frame.alternatives) ? head.next : frame.call.next;
  }
  return { verdict: 'ok', operations, longestLinearization: longest };
}
