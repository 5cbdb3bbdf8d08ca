// Proves the watch checker accepts a correct set of watcher logs and names each guarantee a bad log breaks:
// ordered, unique, reliable (gaps, also across a reconnect), bookmark placement, agreement, and resync.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkWatchers, type ObservedChange, type WatcherLog } from '../../chaos/checker/watch.js';

const history: ObservedChange[] = [
  { type: 'ADDED', key: '/ns/a', revision: 2, value: 'a1' },
  { type: 'ADDED', key: '/ns/b', revision: 3, value: 'b1' },
  { type: 'MODIFIED', key: '/ns/a', revision: 4, value: 'a2' },
  { type: 'ADDED', key: '/other/c', revision: 5, value: 'c1' },
  { type: 'DELETED', key: '/ns/b', revision: 6 },
];
const inNs = history.filter((c) => c.key.startsWith('/ns/'));

const kinds = (watchers: WatcherLog[], acknowledged: ObservedChange[] = history) =>
  checkWatchers(watchers, acknowledged).map((v) => v.kind);

test('complete, ordered logs pass, including a bookmark and a prefix watch', () => {
  const watchers: WatcherLog[] = [
    { id: 'all', prefix: '/', startRevision: 1, records: history },
    {
      id: 'ns',
      prefix: '/ns/',
      startRevision: 1,
      records: [...inNs.slice(0, 2), { type: 'BOOKMARK', revision: 3 }, ...inNs.slice(2)],
    },
    { id: 'late', prefix: '/ns/', startRevision: 3, records: inNs.slice(2) },
  ];
  assert.deepEqual(kinds(watchers), []);
});

test('a gap is a reliability violation, also when it spans a reconnect', () => {
  const skipping: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [inNs[0]!, inNs[2]!, inNs[3]!],
  };
  const violations = checkWatchers([skipping], history);
  assert.deepEqual(
    violations.map((v) => v.kind),
    ['reliable'],
  );
  assert.match(violations[0]!.message, /missed ADDED \/ns\/b@3/);
});

test('a bookmark claims everything before it', () => {
  const claims: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [inNs[0]!, { type: 'BOOKMARK', revision: 4 }],
  };
  assert.deepEqual(kinds([claims]), ['reliable', 'reliable']); // b@3 and a@4 were claimed but not delivered
  const backwards: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [...inNs.slice(0, 3), { type: 'BOOKMARK', revision: 3 }, inNs[3]!],
  };
  assert.deepEqual(kinds([backwards]), ['bookmark']);
});

test('reordered and duplicated events are named', () => {
  const reordered: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [inNs[1]!, inNs[0]!, ...inNs.slice(2)],
  };
  assert.deepEqual(kinds([reordered]), ['ordered']);
  const duplicated: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [...inNs.slice(0, 2), inNs[1]!, ...inNs.slice(2)],
  };
  assert.deepEqual(kinds([duplicated]), ['unique']);
  const beforeStart: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 3,
    records: [inNs[0]!, ...inNs.slice(2)],
  };
  assert.deepEqual(kinds([beforeStart]), ['ordered']);
});

test('watchers that disagree with each other or with an acknowledged write are named', () => {
  const liar: WatcherLog = {
    id: 'liar',
    prefix: '/ns/',
    startRevision: 1,
    records: [inNs[0]!, inNs[1]!, { type: 'MODIFIED', key: '/ns/a', revision: 4, value: 'forged' }, inNs[3]!],
  };
  assert.deepEqual(kinds([liar]), ['agreement']);
  // An acknowledged write that a watcher covering its revision never saw.
  const acknowledged = [...history, { type: 'ADDED' as const, key: '/ns/z', revision: 7, value: 'z' }];
  const blind: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [...inNs, { type: 'BOOKMARK', revision: 8 }],
  };
  assert.deepEqual(kinds([blind], acknowledged), ['reliable']);
});

test('a resync after 410 starts a new segment: the gap before it is allowed', () => {
  const resynced: WatcherLog = {
    id: 'w',
    prefix: '/ns/',
    startRevision: 1,
    records: [inNs[0]!, { type: 'RESYNC', revision: 4 }, inNs[3]!],
  };
  assert.deepEqual(kinds([resynced]), []);
});
