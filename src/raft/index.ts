// The public surface of the Raft core (see docs/raft.md).
export * from './types.js';
export * from './storage.js';
export { Raft, raftDefaults } from './raft.js';
export type { RaftConfig, Status } from './raft.js';
