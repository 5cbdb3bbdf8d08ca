// Helpers of the Raft log tests: a temp dir removed after the test, entries with readable data, and snapshots.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PersistedEntry, PersistedSnapshot } from '../../src/raftlog/store.js';
import { logIndex, nodeId, term } from '../../src/util/brand.js';

export async function tempDir(
  t: { after: (fn: () => Promise<void>) => void },
  prefix = 'stoa-raftlog-',
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export const entry = (index: number, entryTerm: number, text = `e${index}t${entryTerm}`): PersistedEntry => ({
  index: logIndex(index),
  term: term(entryTerm),
  type: 'normal',
  data: Buffer.from(text),
});

/** `index:term:data` per entry, for readable comparisons. */
export const summary = (entries: readonly PersistedEntry[]): string[] =>
  entries.map((e) => `${e.index}:${e.term}:${Buffer.from(e.data).toString()}`);

/** A snapshot of this node's own state (no data: the MVCC LevelDB is the state) with voter 1. */
export const snapshotAt = (index: number, snapshotTerm = 1): PersistedSnapshot => ({
  metadata: {
    index: logIndex(index),
    term: term(snapshotTerm),
    confState: { voters: [nodeId(1)], learners: [] },
  },
  data: new Uint8Array(0),
});
