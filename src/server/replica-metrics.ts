// A cluster member's own metrics on /metrics: its Raft state (from the replica's status) and its peer
// transport's counters, read at each scrape. Stoa's own (ALPHA) metrics: kube-apiserver has no Raft.

import { Counter, Gauge } from 'prom-client';
import type { ReplicatedStore } from '../replica/engine.js';
import { registerTransportMetrics } from '../transport/metrics.js';
import type { MetricLifecycle } from './metric-lifecycle.js';

type StatusField = 'term' | 'commitIndex' | 'appliedIndex' | 'snapshotIndex' | 'revision';

const gauges = {
  term: ['stoa_raft_term', 'The Raft term this member is in.'],
  commitIndex: ['stoa_raft_commit_index', 'The highest Raft log index this member knows to be committed.'],
  appliedIndex: ['stoa_raft_applied_index', 'The highest Raft log index applied to this member’s store.'],
  snapshotIndex: ['stoa_raft_snapshot_index', 'The index of the latest Raft snapshot this member holds.'],
  revision: ['stoa_mvcc_revision', 'The store revision this member has applied.'],
} as const satisfies Record<StatusField, readonly [string, string]>;

export function registerReplicaMetrics(lifecycle: MetricLifecycle, replica: ReplicatedStore): void {
  const alpha = { stabilityLevel: 'ALPHA' } as const;
  for (const [field, [name, help]] of Object.entries(gauges) as [StatusField, readonly [string, string]][]) {
    new Gauge({
      ...lifecycle.declare({ name, help }, alpha),
      collect() {
        this.set(replica.replicaStatus()[field]);
      },
    });
  }
  new Gauge({
    ...lifecycle.declare(
      { name: 'stoa_raft_has_leader', help: 'Whether this member knows a leader (1) or not (0).' },
      alpha,
    ),
    collect() {
      this.set(replica.replicaStatus().leader === null ? 0 : 1);
    },
  });
  new Gauge({
    ...lifecycle.declare(
      { name: 'stoa_raft_is_leader', help: 'Whether this member is the leader (1) or not (0).' },
      alpha,
    ),
    collect() {
      this.set(replica.replicaStatus().role === 'leader' ? 1 : 0);
    },
  });
  new Counter({
    ...lifecycle.declare(
      {
        name: 'stoa_raft_leader_down_hints_total',
        help: "Times this member saw its leader's process gone and campaigned without waiting for the election timeout.",
      },
      alpha,
    ),
    collect() {
      this.reset();
      this.inc(replica.replicaStatus().leaderDownHints);
    },
  });
  new Counter({
    ...lifecycle.declare(
      {
        name: 'stoa_raft_snapshots_restored_total',
        help: "Snapshots of a leader's state this member received and restored.",
      },
      alpha,
    ),
    collect() {
      this.reset();
      this.inc(replica.replicaStatus().snapshotsRestored);
    },
  });
  registerTransportMetrics(
    (options) => lifecycle.declare(options, alpha),
    () => replica.transportStats(),
  );
}
