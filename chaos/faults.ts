// The fault schedule of a chaos run, derived from its seed: a sequence of faults, one at a time, each held for
// a while and then healed, with quiet gaps between. Which node a fault hits is either fixed by the schedule or
// "the leader" (resolved when the fault starts, since who leads depends on the run); the timeline records what
// really happened.

import { unreachable } from '../src/util/assert.js';
import type { Random } from '../src/util/clock.js';
import { seededRandom } from '../src/util/clock.js';
import type { ChaosCluster } from './cluster.js';

export const faultKinds = ['kill', 'pause', 'partition', 'loss', 'delay'] as const;
export type FaultKind = (typeof faultKinds)[number];

export type PartitionShape = 'symmetric' | 'one-way' | 'isolate-leader';

export type PlannedFault =
  | { readonly kind: 'kill'; readonly target: number | 'leader' }
  | { readonly kind: 'pause'; readonly target: number | 'leader' }
  | { readonly kind: 'partition'; readonly shape: PartitionShape; readonly split: number }
  | { readonly kind: 'loss'; readonly probability: number }
  | { readonly kind: 'delay'; readonly delayMs: number; readonly jitterMs: number };

export interface ScheduledFault {
  /** When it starts, ms after the workload started. */
  readonly atMs: number;
  readonly durationMs: number;
  readonly fault: PlannedFault;
}

export interface TimelineEntry {
  /** Seconds since the workload started. */
  readonly atS: number;
  readonly event: 'start' | 'heal';
  readonly kind: FaultKind;
  readonly detail: string;
}

function plan(kind: FaultKind, random: Random, nodes: number): PlannedFault {
  const target = (): number | 'leader' => (random.next() < 0.5 ? 'leader' : random.int(0, nodes));
  switch (kind) {
    case 'kill':
      return { kind, target: target() };
    case 'pause':
      return { kind, target: target() };
    case 'partition': {
      const shapes: PartitionShape[] = ['symmetric', 'one-way', 'isolate-leader'];
      return {
        kind,
        shape: shapes[random.int(0, shapes.length)] ?? 'symmetric',
        split: random.int(0, 2 ** 16),
      };
    }
    case 'loss':
      return { kind, probability: 0.02 + random.next() * 0.1 };
    case 'delay':
      return { kind, delayMs: 20 + random.int(0, 120), jitterMs: random.int(0, 50) };
    default:
      return unreachable(kind);
  }
}

/**
 * The schedule for a run of `durationMs`: faults start after a quiet warm-up and the last one heals with time to
 * spare; every enabled kind appears at least once when there is room (round-robin order, shuffled by the seed).
 */
export function schedule(
  seed: number,
  kinds: readonly FaultKind[],
  nodes: number,
  durationMs: number,
): ScheduledFault[] {
  const random = seededRandom(seed ^ 0x5eed);
  const faults: ScheduledFault[] = [];
  if (kinds.length === 0) return faults;
  const order = [...kinds];
  for (let i = order.length - 1; i > 0; i--) {
    const j = random.int(0, i + 1);
    [order[i], order[j]] = [order[j] as FaultKind, order[i] as FaultKind];
  }
  const endMs = durationMs - 3_000;
  let atMs = 3_000;
  for (let i = 0; i < 10_000; i++) {
    const durationMsOfFault = 2_000 + random.int(0, 4_000);
    if (atMs + durationMsOfFault > endMs) break;
    const kind = order[i % order.length] as FaultKind;
    faults.push({ atMs, durationMs: durationMsOfFault, fault: plan(kind, random, nodes) });
    atMs += durationMsOfFault + 1_000 + random.int(0, 2_500);
  }
  return faults;
}

export function describePlanned(fault: PlannedFault): string {
  switch (fault.kind) {
    case 'kill':
    case 'pause':
      return `${fault.kind} ${fault.target === 'leader' ? 'the leader' : `node ${fault.target + 1}`}`;
    case 'partition':
      return `partition (${fault.shape})`;
    case 'loss':
      return `loss ${(fault.probability * 100).toFixed(0)}% on every peer link`;
    case 'delay':
      return `delay ${fault.delayMs}±${fault.jitterMs} ms on every peer link`;
    default:
      return unreachable(fault);
  }
}

/** Applies one fault and returns how to heal it, plus what was really done. */
export async function inject(
  cluster: ChaosCluster,
  fault: PlannedFault,
): Promise<{ detail: string; heal: () => Promise<void> }> {
  const n = cluster.nodes.length;
  const resolveTarget = async (target: number | 'leader'): Promise<number> =>
    target === 'leader' ? ((await cluster.leader()) ?? 0) : target;
  const name = (i: number): string => cluster.node(i).name;
  switch (fault.kind) {
    case 'kill': {
      const i = await resolveTarget(fault.target);
      await cluster.kill(i);
      return {
        detail: `SIGKILL ${name(i)}${fault.target === 'leader' ? ' (leader)' : ''}`,
        heal: async () => cluster.upAll(),
      };
    }
    case 'pause': {
      const i = await resolveTarget(fault.target);
      await cluster.pause(i);
      return {
        detail: `SIGSTOP ${name(i)}${fault.target === 'leader' ? ' (leader)' : ''}`,
        heal: async () => cluster.resume(i),
      };
    }
    case 'partition': {
      const heal = async (): Promise<void> => cluster.mesh.healAll();
      switch (fault.shape) {
        case 'isolate-leader': {
          const i = await resolveTarget('leader');
          cluster.mesh.isolate(cluster.id(i));
          return { detail: `isolate ${name(i)} (leader)`, heal };
        }
        case 'symmetric': {
          // A minority of floor((n-1)/2) nodes (at least one) cut from the rest.
          const minority = Math.max(1, Math.floor((n - 1) / 2));
          const start = fault.split % n;
          const small = Array.from({ length: minority }, (_, k) => (start + k) % n);
          const big = Array.from({ length: n }, (_, k) => k).filter((k) => !small.includes(k));
          cluster.mesh.partition([small.map((k) => cluster.id(k)), big.map((k) => cluster.id(k))]);
          return {
            detail: `partition {${small.map(name).join(',')}} | {${big.map(name).join(',')}}`,
            heal,
          };
        }
        case 'one-way': {
          // The leader's messages to everyone else are cut; theirs to it still pass.
          const i = await resolveTarget('leader');
          for (let k = 0; k < n; k++) if (k !== i) cluster.mesh.cutOneWay(cluster.id(i), cluster.id(k));
          return { detail: `one-way: ${name(i)} (leader) -> others cut`, heal };
        }
        default:
          return unreachable(fault.shape);
      }
    }
    case 'loss':
      cluster.mesh.setFaultAll({ kind: 'loss', probability: fault.probability });
      return { detail: describePlanned(fault), heal: async () => cluster.mesh.healAll() };
    case 'delay':
      cluster.mesh.setFaultAll({ kind: 'delay', delayMs: fault.delayMs, jitterMs: fault.jitterMs });
      return { detail: describePlanned(fault), heal: async () => cluster.mesh.healAll() };
    default:
      return unreachable(fault);
  }
}
