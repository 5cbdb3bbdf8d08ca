// Checks what watchers received against the guarantees etcd documents for watches, as seen through the API:
// - ordered: revisions never go backwards on one watcher;
// - unique: no (key, revision) is delivered twice;
// - reliable: no gap: every change in the watcher's span between where it started (or resynced) and the last
//   revision it saw (or a bookmark claimed) was delivered to it;
// - bookmarkable: a bookmark at R comes after every event <= R and before every event > R;
// - resumable: a watcher that reconnects from its last revision keeps all of the above across the reconnect
//   (its log is one sequence; only a RESYNC, a relist after 410 Gone, starts a new segment);
// - agreement: watchers and acknowledged writes agree on what happened at each (key, revision).
// Atomicity (all events of one revision together) is not observable per object: every API write is its own
// revision.

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ObservedChange {
  readonly type: WatchEventType;
  readonly key: string;
  readonly revision: number;
  /** What the object held (e.g. a value field); undefined for deletes. */
  readonly value?: string;
}

export type WatcherRecord =
  | ObservedChange
  | { readonly type: 'BOOKMARK'; readonly revision: number }
  /** The watcher relisted at `revision` (after 410 Gone) and watches on from there: a new segment. */
  | { readonly type: 'RESYNC'; readonly revision: number };

export interface WatcherLog {
  readonly id: string;
  /** Keys the watch covers (e.g. a namespace prefix). */
  readonly prefix: string;
  /** The watch started after this revision (the resourceVersion it was opened with). */
  readonly startRevision: number;
  readonly records: readonly WatcherRecord[];
}

export type WatchViolationKind = 'ordered' | 'unique' | 'reliable' | 'bookmark' | 'agreement';

export interface WatchViolation {
  readonly kind: WatchViolationKind;
  readonly watcher: string;
  readonly message: string;
}

const changeKey = (key: string, revision: number): string => `${revision}\u0000${key}`;

function describeChange(change: ObservedChange): string {
  return `${change.type} ${change.key}@${change.revision}${change.value === undefined ? '' : `=${change.value}`}`;
}

/**
 * Checks every watcher. `acknowledged` are writes whose replies named their revision: they are part of the
 * reference history even when no watcher saw them.
 */
export function checkWatchers(
  watchers: readonly WatcherLog[],
  acknowledged: readonly ObservedChange[] = [],
): WatchViolation[] {
  const violations: WatchViolation[] = [];
  const reference = new Map<string, { change: ObservedChange; source: string }>();
  const remember = (change: ObservedChange, source: string): void => {
    const id = changeKey(change.key, change.revision);
    const known = reference.get(id);
    if (known === undefined) {
      reference.set(id, { change, source });
    } else if (known.change.type !== change.type || known.change.value !== change.value) {
      violations.push({
        kind: 'agreement',
        watcher: source,
        message: `${source} saw ${describeChange(change)} but ${known.source} saw ${describeChange(known.change)}`,
      });
    }
  };
  for (const change of acknowledged) remember(change, 'acknowledged write');
  for (const watcher of watchers) {
    for (const record of watcher.records) {
      if (record.type !== 'BOOKMARK' && record.type !== 'RESYNC') remember(record, `watcher ${watcher.id}`);
    }
  }
  const history = [...reference.values()]
    .map((entry) => entry.change)
    .sort((a, b) => a.revision - b.revision);
  for (const watcher of watchers) violations.push(...checkOne(watcher, history));
  return violations;
}

interface Segment {
  /** Events after this revision belong to the segment. */
  readonly from: number;
  /** The highest revision the watcher has seen or had claimed by a bookmark in this segment. */
  upTo: number;
  readonly seen: Set<string>;
}

function checkOne(watcher: WatcherLog, history: readonly ObservedChange[]): WatchViolation[] {
  const violations: WatchViolation[] = [];
  const report = (kind: WatchViolationKind, message: string): void => {
    violations.push({ kind, watcher: watcher.id, message: `watcher ${watcher.id}: ${message}` });
  };
  const delivered = new Set<string>();
  const segments: Segment[] = [];
  let segment: Segment = { from: watcher.startRevision, upTo: watcher.startRevision, seen: new Set() };
  segments.push(segment);
  let lastRevision = watcher.startRevision;

  for (const record of watcher.records) {
    switch (record.type) {
      case 'RESYNC':
        segment = { from: record.revision, upTo: record.revision, seen: new Set() };
        segments.push(segment);
        lastRevision = record.revision;
        break;
      case 'BOOKMARK':
        if (record.revision < lastRevision) {
          report('bookmark', `bookmark at ${record.revision} after an event at ${lastRevision}`);
        }
        lastRevision = Math.max(lastRevision, record.revision);
        segment.upTo = Math.max(segment.upTo, record.revision);
        break;
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const id = changeKey(record.key, record.revision);
        if (!record.key.startsWith(watcher.prefix)) {
          report('reliable', `${describeChange(record)} is outside the watched prefix "${watcher.prefix}"`);
        }
        if (delivered.has(id)) {
          report('unique', `${describeChange(record)} delivered twice`);
        } else if (record.revision < lastRevision) {
          report('ordered', `${describeChange(record)} arrived after revision ${lastRevision}`);
        } else if (record.revision <= segment.from) {
          report('ordered', `${describeChange(record)} is not after the segment start ${segment.from}`);
        }
        delivered.add(id);
        segment.seen.add(id);
        lastRevision = Math.max(lastRevision, record.revision);
        segment.upTo = Math.max(segment.upTo, record.revision);
        break;
      }
    }
  }

  for (const { from, upTo, seen } of segments) {
    for (const change of history) {
      if (change.revision <= from || change.revision > upTo || !change.key.startsWith(watcher.prefix))
        continue;
      if (!seen.has(changeKey(change.key, change.revision))) {
        report('reliable', `missed ${describeChange(change)} (saw up to ${upTo} from ${from})`);
      }
    }
  }
  return violations;
}
