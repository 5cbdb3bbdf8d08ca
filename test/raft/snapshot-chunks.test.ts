// Proves a follower reassembles a chunked InstallSnapshot: in-order chunks install one snapshot with the
// leader's bytes; a gap is answered with the offset it needs; inconsistent chunks restart the transfer; a
// snapshot it already covers is answered with its commit index instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { logIndex, nodeId, term } from '../../src/util/brand.js';
import { Raft } from '../../src/raft/raft.js';
import { MemoryStorage, bootstrap } from '../../src/raft/storage.js';
import type { Message, MsgSnap } from '../../src/raft/types.js';
import { simRandom } from './sim.js';

const voters = [nodeId(1), nodeId(2), nodeId(3)];

function follower(): { raft: Raft; storage: MemoryStorage } {
  const storage = new MemoryStorage();
  bootstrap(storage, voters);
  const raft = new Raft({
    id: nodeId(2),
    storage,
    random: simRandom(2),
    electionTicks: 10,
    heartbeatTicks: 1,
  });
  const rd = raft.ready();
  storage.append(rd.entries);
  raft.advance();
  return { raft, storage };
}

const data = Uint8Array.from({ length: 100 }, (_, k) => k);

function chunk(offset: number, length: number, overrides: Partial<MsgSnap> = {}): MsgSnap {
  return {
    type: 'MsgSnap',
    from: nodeId(1),
    to: nodeId(2),
    term: term(2),
    snapshotIndex: logIndex(50),
    snapshotTerm: term(2),
    confState: { voters, learners: [] },
    totalBytes: data.length,
    offset,
    data: data.subarray(offset, offset + length),
    done: offset + length >= data.length,
    ...overrides,
  };
}

function sent(raft: Raft): Message[] {
  const rd = raft.ready();
  raft.advance();
  return [...rd.messages];
}

test('in-order chunks install one snapshot with the leader bytes', () => {
  const { raft } = follower();
  raft.step(chunk(0, 40));
  assert.deepEqual(
    sent(raft).map((m) => (m.type === 'MsgSnapResp' ? m.offset : m.type)),
    [40],
  );
  raft.step(chunk(40, 40));
  raft.step(chunk(80, 20));
  const rd = raft.ready();
  assert.deepEqual(rd.snapshot?.data, data);
  assert.equal(rd.snapshot?.metadata.index, 50);
  const last = rd.messages[rd.messages.length - 1];
  assert.equal(last?.type, 'MsgAppResp');
  assert.equal(last?.type === 'MsgAppResp' ? last.index : -1, 50);
  raft.advance();
  assert.equal(raft.status().commit, 50);
});

test('a gap is answered with the offset the follower needs; a stray chunk of an unknown transfer with 0', () => {
  const { raft } = follower();
  raft.step(chunk(0, 40));
  sent(raft);
  raft.step(chunk(80, 20));
  const [resp] = sent(raft);
  assert.equal(resp?.type === 'MsgSnapResp' ? resp.offset : -1, 40);
  const fresh = follower().raft;
  fresh.step(chunk(40, 40));
  const [first] = sent(fresh);
  assert.equal(first?.type === 'MsgSnapResp' ? first.offset : -1, 0);
});

test('inconsistent chunks restart the transfer instead of installing a torn snapshot', () => {
  const { raft } = follower();
  raft.step(chunk(0, 40));
  sent(raft);
  raft.step(chunk(40, 40, { done: true }));
  const rd = raft.ready();
  raft.advance();
  assert.equal(rd.snapshot, undefined);
  const resp = rd.messages[rd.messages.length - 1];
  assert.equal(resp?.type === 'MsgSnapResp' ? resp.offset : -1, 0);
});

test('a snapshot the follower already covers is answered with its commit index', () => {
  const { raft } = follower();
  raft.step(chunk(0, 40, { snapshotIndex: logIndex(2) }));
  const [resp] = sent(raft);
  assert.equal(resp?.type, 'MsgAppResp');
  assert.equal(resp?.type === 'MsgAppResp' ? resp.index : -1, 3);
});
