// What the replicated log carries in its normal entries. Every node applies the same commands in the same
// order and so reaches the same MVCC state and revisions. Encoded with msgpackr (Uint8Array values stay bytes).

import { Packr } from 'msgpackr';
import type { Revision } from '../util/brand.js';
import type { TxnRequest } from '../storage/contract.js';

export type Command =
  /** A transaction; `id` names the proposal so that the proposing node can answer its caller. */
  | { readonly type: 'txn'; readonly id: string; readonly request: TxnRequest }
  | { readonly type: 'compact'; readonly id: string; readonly revision: Revision }
  /** A member's name and peer URL, applied before the conf change that adds it. */
  | {
      readonly type: 'member';
      readonly id: string;
      readonly member: { id: number; name: string; peerUrl: string };
    };

const packr = new Packr({ useRecords: false, moreTypes: false });

export function encodeCommand(command: Command): Uint8Array {
  return packr.pack(command);
}

export function decodeCommand(data: Uint8Array): Command {
  const value = packr.unpack(data) as Command;
  if (typeof value !== 'object' || value === null || typeof (value as { type?: unknown }).type !== 'string') {
    throw new Error('replicated entry is not a command');
  }
  return value;
}
