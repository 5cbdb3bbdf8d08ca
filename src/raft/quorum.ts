// Majority rules: the commit index of a voter set, and the outcome of an election.

import type { LogIndex, NodeId } from '../util/brand.js';
import { logIndex } from '../util/brand.js';

export type VoteResult = 'pending' | 'lost' | 'won';

export function majority(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/** The largest index that a majority of `voters` have (0 for an empty voter set: nothing commits). */
export function committedIndex(voters: readonly NodeId[], match: (id: NodeId) => LogIndex): LogIndex {
  if (voters.length === 0) return logIndex(0);
  // Insertion sort, descending: voter sets are small and this runs on every acknowledgement.
  const matches: LogIndex[] = [];
  for (const id of voters) {
    const m = match(id);
    let k = matches.length;
    matches.push(m);
    while (k > 0 && (matches[k - 1] as LogIndex) < m) {
      matches[k] = matches[k - 1] as LogIndex;
      k--;
    }
    matches[k] = m;
  }
  return matches[majority(voters.length) - 1] ?? logIndex(0);
}

/** Won with a majority of grants, lost when a majority can no longer be reached, else pending. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (voters.length === 0) return 'lost';
  let granted = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === undefined) missing++;
    else if (v) granted++;
  }
  const q = majority(voters.length);
  if (granted >= q) return 'won';
  if (granted + missing >= q) return 'pending';
  return 'lost';
}
