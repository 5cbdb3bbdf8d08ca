// Proves the replicated engine (3 nodes over real TLS peer links) passes the storage conformance suite, the
// same assertions as the embedded engine and real etcd; the suite talks to a follower, so every write is
// forwarded to the leader and every read is a ReadIndex round.
import { startReplicaCluster, testTuning } from '../support/replica.js';
import { storageConformance } from './suite.js';

const progressIntervalMs = 200;

storageConformance(
  'replicated (3 nodes)',
  async () => {
    const cluster = await startReplicaCluster(3, {
      ...testTuning,
      watchProgressIntervalMs: progressIntervalMs,
    });
    const leader = await cluster.leader();
    const follower = cluster.nodes.find((node) => node !== undefined && node !== leader);
    if (follower === undefined) throw new Error('no follower');
    return { store: follower, close: () => cluster.close() };
  },
  { progressIntervalMs },
);
