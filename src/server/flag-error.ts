// The error of a bad command-line flag: `stoa serve` prints it with the usage and exits 2.
export class FlagError extends Error {
  override readonly name = 'FlagError';
}
