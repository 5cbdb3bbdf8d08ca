// Proves the etcd engine passes the storage conformance suite against a real etcd process (Debian's etcd 3.4).
import { openEtcdStore } from '../../src/storage/etcd/engine.js';
import { startEtcd } from '../support/etcd.js';
import { storageConformance } from './suite.js';

const progressIntervalMs = 200;

storageConformance(
  'etcd',
  async () => {
    const etcd = await startEtcd({ progressNotifyIntervalMs: progressIntervalMs });
    try {
      const store = await openEtcdStore({ endpoints: etcd.endpoints });
      return {
        store,
        async close() {
          await store.close();
          await etcd.stop();
        },
      };
    } catch (error) {
      await etcd.stop();
      throw error;
    }
  },
  { progressIntervalMs },
);
