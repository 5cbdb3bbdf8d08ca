// A child process for the crash test: appends entries one save at a time and prints each index once durable,
// with an unsynced commit-only hard state between them as a follower's Ready loop writes (argv: DIR
// [SEGMENT_BYTES]).
import { RaftLogStore } from '../../src/raftlog/store.js';
import { logIndex, nodeId, term } from '../../src/util/brand.js';

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: raftlog-child DIR');
const segmentBytes = Number(process.argv[3] ?? 0);
const { store, loaded } = await RaftLogStore.open(dir, segmentBytes > 0 ? { segmentBytes } : {});
let index = (loaded.entries.at(-1)?.index ?? 0) + 1;
for (let n = 0; n < 100_000; n++, index++) {
  await store.save({
    entries: [{ term: term(1), index: logIndex(index), type: 'normal', data: Buffer.from(`entry-${index}`) }],
    hardState: { term: term(1), vote: nodeId(1), commit: logIndex(index) },
  });
  process.stdout.write(`${index}\n`);
  // Not awaited before the next save is queued, as in the node; carried out by the next synced write.
  void store.save({ hardState: { term: term(1), vote: nodeId(1), commit: logIndex(index) }, sync: false });
}
