// Proves every Raft message type is plain data: msgpackr encodes and decodes each one seen in simulation runs
// to the same structure, so the transport can send messages as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pack, unpack } from 'msgpackr';
import type { Message, MessageType } from '../../src/raft/types.js';
import { messageClasses } from '../../src/raft/types.js';
import { runSimulation } from './sim.js';

/** Buffers (what msgpackr decodes bytes into) compare as the Uint8Arrays they are. */
function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) return Array.from(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  return value;
}

test('every message type survives a msgpackr round trip', () => {
  const seen = new Map<MessageType, Message>();
  for (let seed = 1; seed <= 40 && seen.size < Object.keys(messageClasses).length; seed++) {
    runSimulation({
      seed,
      nodes: 3,
      rounds: 120,
      membership: true,
      transfers: true,
      onMessage: (m) => {
        if (!seen.has(m.type) || (m.type === 'MsgApp' && m.entries.length > 0)) seen.set(m.type, m);
      },
    });
  }
  assert.deepEqual([...seen.keys()].sort(), Object.keys(messageClasses).sort());
  for (const m of seen.values()) {
    const decoded: unknown = unpack(pack(m));
    assert.deepEqual(normalize(decoded), normalize(m), m.type);
  }
});
