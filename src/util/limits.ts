// Every limit of the server lives here, with its unit in its name and the outcome when it is hit.

export const limits = {
  /** Largest value the store accepts (as etcd's default request size): StorageError ValueTooLarge. */
  storeValueBytesMax: 1.5 * 1024 * 1024,
  /** Largest key the store accepts: StorageError KeyTooLarge. */
  storeKeyBytesMax: 4 * 1024,
  /** Most operations in one transaction (etcd's --max-txn-ops): StorageError TooManyOps. */
  storeTxnOpsMax: 128,
  /** Default history the store keeps before automatic compaction (kube-apiserver compacts etcd every 5 min). */
  storeHistoryRetentionMs: 5 * 60 * 1000,
  /** Events a single store watcher may have queued before it is cancelled as too slow: WatchOverflow. */
  storeWatchQueueEventsMax: 100_000,
  /** Request body size the API accepts: 413 RequestEntityTooLarge. */
  apiRequestBodyBytesMax: 3 * 1024 * 1024,
  /** Lifetime of a list continue token before it expires with compaction: 410 Expired. */
  apiContinueTokenLifetimeMs: 5 * 60 * 1000,
} as const;
