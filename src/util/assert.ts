// Assertions catch programmer errors and crash; operating errors are handled elsewhere (STYLE.md).

export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Ends every switch over a closed union: a new member that is not handled fails to compile. */
export function unreachable(value: never, message = 'unreachable'): never {
  throw new AssertionError(`${message}: ${JSON.stringify(value)}`);
}
