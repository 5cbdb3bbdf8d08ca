// Proves the pieces of the Raft core on their own: MemoryStorage, the log (append, conflicts, commit rules),
// inflights (count and byte limits), progress (probe/replicate/snapshot transitions), quorum arithmetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { logIndex, nodeId, term } from '../../src/util/brand.js';
import type { LogIndex, NodeId } from '../../src/util/brand.js';
import { MemoryStorage } from '../../src/raft/storage.js';
import { RaftLog } from '../../src/raft/log.js';
import { Inflights, Progress } from '../../src/raft/progress.js';
import { committedIndex, voteResult } from '../../src/raft/quorum.js';
import type { Entry } from '../../src/raft/types.js';
import { decodeConfChange, encodeConfChange } from '../../src/raft/types.js';

const ent = (index: number, t: number, data = ''): Entry => ({
  index: logIndex(index),
  term: term(t),
  type: 'normal',
  data: new TextEncoder().encode(data),
});
const terms = (es: readonly Entry[] | 'compacted'): number[] | 'compacted' =>
  es === 'compacted' ? es : es.map((e) => e.term);

test('MemoryStorage appends, replaces a conflicting suffix, snapshots and compacts', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 1), ent(3, 2)]);
  assert.equal(s.lastIndex(), 3);
  s.append([ent(3, 3), ent(4, 3)]);
  assert.deepEqual(terms(s.entries(logIndex(1), logIndex(5), Infinity)), [1, 1, 3, 3]);
  const snap = s.createSnapshot(logIndex(3), { voters: [nodeId(1)], learners: [] }, new Uint8Array([7]));
  assert.notEqual(typeof snap, 'string');
  assert.equal(s.compact(logIndex(3)), null);
  assert.equal(s.firstIndex(), 4);
  assert.equal(s.term(logIndex(3)), 3);
  assert.equal(s.term(logIndex(2)), undefined);
  assert.equal(s.compact(logIndex(2)), 'Compacted');
  assert.equal(
    s.createSnapshot(logIndex(2), { voters: [], learners: [] }, new Uint8Array()),
    'SnapshotOutOfDate',
  );
  // entries below the first index are ignored by append
  s.append([ent(2, 1), ent(3, 3), ent(4, 3), ent(5, 4)]);
  assert.equal(s.lastIndex(), 5);
  assert.deepEqual(terms(s.entries(logIndex(4), logIndex(6), Infinity)), [3, 4]);
});

test('MemoryStorage limits entries by bytes but returns at least one', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1, 'aaaa'), ent(2, 1, 'bbbb'), ent(3, 1, 'cccc')]);
  assert.equal(s.entries(logIndex(1), logIndex(4), 0).length, 1);
  assert.equal(s.entries(logIndex(1), logIndex(4), 8).length, 2);
  assert.equal(s.entries(logIndex(1), logIndex(4), 100).length, 3);
});

test('RaftLog.maybeAppend matches, truncates conflicts and commits only what it verified', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 2), ent(3, 2)]);
  const log = new RaftLog(s, Infinity);
  // mismatch at (3, 3)
  assert.equal(log.maybeAppend(logIndex(3), term(3), logIndex(3), []), undefined);
  // match at (2, 2): replaces entry 3 (term 2) by term 3 entries, commit limited to the last new index
  assert.equal(log.maybeAppend(logIndex(2), term(2), logIndex(10), [ent(3, 3), ent(4, 3)]), 4);
  assert.equal(log.committed, 4);
  assert.deepEqual(terms(log.slice(logIndex(1), logIndex(5), Infinity)), [1, 2, 3, 3]);
  assert.deepEqual(
    log.unstable.entries.map((e) => e.index),
    [3, 4],
  );
  // a heartbeat-like append commits no further than the entries it carried
  assert.equal(log.maybeAppend(logIndex(2), term(2), logIndex(10), []), 2);
  assert.equal(log.committed, 4);
});

test('RaftLog.maybeAppend never commits entries past the ones the leader vouched for', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 1), ent(3, 1), ent(4, 1)]);
  const log = new RaftLog(s, Infinity);
  // The leader's commit is 10, but it only proved that our log matches up to 2: entries 3 and 4 may be stale.
  assert.equal(log.maybeAppend(logIndex(2), term(1), logIndex(10), []), 2);
  assert.equal(log.committed, 2);
});

test('RaftLog commits by counting only entries of the current term (Figure 8)', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 2)]);
  const log = new RaftLog(s, Infinity);
  assert.equal(log.maybeCommit(logIndex(2), term(4)), false);
  assert.equal(log.committed, 0);
  log.append([ent(3, 4)]);
  assert.equal(log.maybeCommit(logIndex(3), term(4)), true);
  assert.equal(log.committed, 3);
});

test('RaftLog.findConflictByTerm skips a whole term', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 1), ent(3, 4), ent(4, 4), ent(5, 4)]);
  const log = new RaftLog(s, Infinity);
  assert.deepEqual(log.findConflictByTerm(logIndex(5), term(2)), { index: 2, term: 1 });
  assert.deepEqual(log.findConflictByTerm(logIndex(5), term(4)), { index: 5, term: 4 });
  assert.deepEqual(log.findConflictByTerm(logIndex(5), term(0)), { index: 0, term: 0 });
});

test('RaftLog.isUpToDate compares last term, then length', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 3)]);
  const log = new RaftLog(s, Infinity);
  assert.equal(log.isUpToDate(logIndex(1), term(4)), true);
  assert.equal(log.isUpToDate(logIndex(2), term(3)), true);
  assert.equal(log.isUpToDate(logIndex(5), term(2)), false);
  assert.equal(log.isUpToDate(logIndex(1), term(3)), false);
});

test('RaftLog stableTo ignores a stale acknowledgement after a truncation', () => {
  const s = new MemoryStorage();
  const log = new RaftLog(s, Infinity);
  log.append([ent(1, 1), ent(2, 1)]);
  log.append([ent(2, 2)]); // truncates entry 2 of term 1
  log.unstable.stableTo(logIndex(2), term(1));
  assert.equal(log.unstable.entries.length, 2);
  log.unstable.stableTo(logIndex(2), term(2));
  assert.equal(log.unstable.entries.length, 0);
});

test('Inflights are full at the count limit or the byte limit, and free in order', () => {
  const byCount = new Inflights(3, 0);
  byCount.add(logIndex(1), 10);
  byCount.add(logIndex(2), 10);
  assert.equal(byCount.full(), false);
  byCount.add(logIndex(3), 10);
  assert.equal(byCount.full(), true);
  byCount.freeLE(logIndex(2));
  assert.equal(byCount.count(), 1);
  assert.equal(byCount.bytes, 10);
  const byBytes = new Inflights(100, 25);
  byBytes.add(logIndex(1), 10);
  byBytes.add(logIndex(2), 10);
  assert.equal(byBytes.full(), false);
  byBytes.add(logIndex(3), 10);
  assert.equal(byBytes.full(), true);
  byBytes.freeFirstOne();
  assert.equal(byBytes.full(), false);
  for (let i = 4; i < 500; i++) {
    byBytes.add(logIndex(i), 1);
    byBytes.freeLE(logIndex(i - 1));
  }
  assert.equal(byBytes.count(), 1);
});

test('Progress moves between probe, replicate and snapshot', () => {
  const pr = new Progress(logIndex(11), false, 2, 0);
  assert.equal(pr.state, 'probe');
  pr.sentEntries(logIndex(11), 1, 5);
  assert.equal(pr.isPaused(), true);
  // stale rejection (not for next - 1) is ignored
  assert.equal(pr.maybeDecrTo(logIndex(5), logIndex(4)), false);
  assert.equal(pr.maybeDecrTo(logIndex(10), logIndex(6)), true);
  assert.equal(pr.next, 7);
  assert.equal(pr.isPaused(), false);
  assert.equal(pr.maybeUpdate(logIndex(6)), true);
  pr.becomeReplicate();
  assert.equal(pr.next, 7);
  pr.sentEntries(logIndex(7), 2, 4);
  pr.sentEntries(logIndex(9), 2, 4);
  assert.equal(pr.next, 11);
  assert.equal(pr.isPaused(), true);
  pr.inflights.freeLE(logIndex(8));
  assert.equal(pr.inflights.full(), false);
  const snapshot = {
    metadata: { index: logIndex(20), term: term(3), confState: { voters: [], learners: [] } },
    data: new Uint8Array(),
  };
  pr.becomeSnapshot(snapshot);
  assert.equal(pr.isPaused(), true);
  pr.becomeProbe();
  assert.equal(pr.next, 21);
});

test('quorum: commit index is the majority match; elections are won, lost or pending', () => {
  const ids: NodeId[] = [1, 2, 3, 4, 5].map(nodeId);
  const match = new Map<NodeId, LogIndex>(ids.map((id, k) => [id, logIndex([5, 9, 1, 7, 3][k] ?? 0)]));
  assert.equal(
    committedIndex(ids, (id) => match.get(id) ?? logIndex(0)),
    5,
  );
  assert.equal(
    committedIndex([], () => logIndex(9)),
    0,
  );
  const votes = new Map<NodeId, boolean>([
    [nodeId(1), true],
    [nodeId(2), true],
  ]);
  assert.equal(voteResult(ids, votes), 'pending');
  votes.set(nodeId(3), true);
  assert.equal(voteResult(ids, votes), 'won');
  const lost = new Map<NodeId, boolean>([
    [nodeId(1), false],
    [nodeId(2), false],
    [nodeId(3), false],
  ]);
  assert.equal(voteResult(ids, lost), 'lost');
});

test('a membership change encodes as readable data and decodes back', () => {
  const change = { type: 'addLearner', nodeId: nodeId(4) } as const;
  assert.equal(new TextDecoder().decode(encodeConfChange(change)), 'addLearner 4');
  assert.deepEqual(decodeConfChange(encodeConfChange(change)), change);
  assert.throws(() => decodeConfChange(new TextEncoder().encode('promote 4')));
});
