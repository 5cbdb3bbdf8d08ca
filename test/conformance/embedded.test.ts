// Proves the embedded LevelDB engine passes the storage conformance suite (the same assertions as real etcd).
import { openEmbeddedStore } from '../../src/storage/embedded/engine.js';
import { tempDir } from '../support/tmp.js';
import { storageConformance } from './suite.js';

const progressIntervalMs = 200;

storageConformance(
  'embedded',
  async () => {
    const dir = await tempDir('conformance');
    const store = await openEmbeddedStore({ dataDir: dir.path, retentionMs: 0, progressIntervalMs });
    return {
      store,
      async close() {
        await store.close();
        await dir.remove();
      },
    };
  },
  { progressIntervalMs },
);
