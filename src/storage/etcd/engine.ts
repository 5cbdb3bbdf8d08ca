// The etcd engine: the storage contract over a real etcd v3 (placeholder until implemented).
import { StorageError, type KVStore } from '../contract.js';

export interface EtcdStoreOptions {
  readonly endpoints: readonly string[];
}

export async function openEtcdStore(_options: EtcdStoreOptions): Promise<KVStore> {
  throw new StorageError('Unavailable', 'the etcd engine is not built yet');
}
