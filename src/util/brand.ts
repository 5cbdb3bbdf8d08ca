// Branded numbers: values that must never be mixed up carry their meaning in the type (STYLE.md).

declare const brand: unique symbol;
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** A store-wide MVCC revision; the API's resourceVersion. Strictly increasing, starts at 1 for an empty store. */
export type Revision = Brand<number, 'Revision'>;
/** A Raft term. */
export type Term = Brand<number, 'Term'>;
/** A position in the Raft log; 0 means "before the first entry". */
export type LogIndex = Brand<number, 'LogIndex'>;
/** A Raft member identity; never 0 (0 means "none"). */
export type NodeId = Brand<number, 'NodeId'>;

export const revision = (n: number): Revision => n as Revision;
export const term = (n: number): Term => n as Term;
export const logIndex = (n: number): LogIndex => n as LogIndex;
export const nodeId = (n: number): NodeId => n as NodeId;
