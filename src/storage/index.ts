// The one way the rest of the server opens a store: pick the engine from the configuration.

import { unreachable } from '../util/assert.js';
import type { KVStore } from './contract.js';
import { openEmbeddedStore } from './embedded/engine.js';
import { openEtcdStore } from './etcd/engine.js';

export type StoreConfig =
  | {
      readonly engine: 'embedded';
      /** The LevelDB directory (created if missing). */
      readonly dataDir: string;
      /** History kept by automatic compaction (default limits.storeHistoryRetentionMs = 5 minutes). */
      readonly retentionMs?: number;
      /** Idle time before a progressNotify watch gets a progress response (default 10 minutes, as etcd). */
      readonly progressIntervalMs?: number;
    }
  | {
      readonly engine: 'etcd';
      /** etcd client URLs, e.g. ['http://127.0.0.1:2379'] (kube-apiserver's --etcd-servers). */
      readonly endpoints: readonly string[];
    };

export async function openStore(config: StoreConfig): Promise<KVStore> {
  switch (config.engine) {
    case 'embedded':
      return openEmbeddedStore(config);
    case 'etcd':
      return openEtcdStore({ endpoints: config.endpoints });
    default:
      return unreachable(config);
  }
}

export * from './contract.js';
