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
  /** A watch that asked for bookmarks gets one this often (kube-apiserver: about once a minute), and one as it ends. */
  apiWatchBookmarkIntervalMs: 60 * 1000,
  /** Lifetime of a list continue token before it expires with compaction: 410 Expired. */
  apiContinueTokenLifetimeMs: 5 * 60 * 1000,
  /** Largest peer frame (u32 length prefix excluded): a receiver closes the connection and logs; senders split batches below it. */
  peerFrameBytesMax: 16 * 1024 * 1024,
  /** Messages queued for one peer: further messages to it are dropped and counted (Raft tolerates loss). */
  peerQueueMessagesMax: 4096,
  /** Encoded bytes queued for one peer: further messages to it are dropped and counted. */
  peerQueueBytesMax: 64 * 1024 * 1024,
  /** First reconnect delay to a peer; doubles per failed attempt (with jitter) up to the maximum. */
  peerReconnectDelayMsMin: 50,
  /** Longest reconnect delay to a peer. */
  peerReconnectDelayMsMax: 2000,
  /** TLS handshake plus the hello/welcome exchange must finish within this: the attempt is abandoned and retried. */
  peerHandshakeTimeoutMs: 5000,
  /** A listener sends a keepalive frame back on each inbound connection this often. */
  peerKeepaliveIntervalMs: 1000,
  /** A dialled connection that hears nothing for this long is dead (blackholed): it is closed and redialled. */
  peerKeepaliveTimeoutMs: 5000,
  /** Concurrent inbound peer connections (authenticated or not) a listener accepts; more are closed at once. */
  peerInboundConnectionsMax: 64,
} as const;
