// Time and randomness are injected so that simulations and chaos runs replay from a seed.

export interface Clock {
  /** Milliseconds since the epoch (wall clock, for timestamps shown to users). */
  nowMs(): number;
  /** Monotonic milliseconds (for timeouts and latency). */
  monotonicMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
};

export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max). */
  int(min: number, max: number): number;
}

/** A small, fast, seedable generator (mulberry32); good enough for simulation schedules, not for secrets. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (min, max) => min + Math.floor(next() * (max - min)) };
}

export const systemRandom: Random = {
  next: () => Math.random(),
  int: (min, max) => min + Math.floor(Math.random() * (max - min)),
};
