// Reconnect delays: exponential in the number of consecutive failures, with jitter so that peers that lost
// each other at the same moment do not redial in lockstep, and a bounded maximum.

import { assert } from '../util/assert.js';
import type { Random } from '../util/clock.js';

export interface BackoffOptions {
  readonly delayMsMin: number;
  readonly delayMsMax: number;
  readonly random: Random;
}

export class Backoff {
  private failures = 0;

  constructor(private readonly options: BackoffOptions) {
    assert(options.delayMsMin > 0 && options.delayMsMin <= options.delayMsMax, 'bad backoff bounds');
  }

  /**
   * The delay before the next attempt, and counts one more failure. "Equal jitter": half the exponential
   * delay is fixed and half is random, so the delay stays in [ceiling/2, ceiling] and never collapses to 0.
   */
  nextDelayMs(): number {
    const { delayMsMin, delayMsMax, random } = this.options;
    const ceiling = Math.min(delayMsMax, delayMsMin * 2 ** Math.min(this.failures, 30));
    this.failures += 1;
    const delay = ceiling / 2 + random.next() * (ceiling / 2);
    assert(delay >= 0 && delay <= delayMsMax);
    return Math.round(delay);
  }

  /** A connection succeeded: the next failure starts from the minimum again. */
  reset(): void {
    this.failures = 0;
  }
}
