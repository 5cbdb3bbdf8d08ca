// A child process for the durability test: writes through the embedded engine with concurrent writers and
// prints "ack <key> <revision>" for each write only after the engine acknowledged it. Runs until killed.
// Usage: node writer-child.js DATA_DIR
import { openEmbeddedStore } from '../../src/storage/embedded/engine.js';
import { writeAndAcknowledge } from './ack-writer.js';

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('usage: writer-child DATA_DIR');
const store = await openEmbeddedStore({ dataDir, retentionMs: 0 });
process.stdout.write('ready\n');
const writers = 16;
const value = Buffer.alloc(512, 'x');
await writeAndAcknowledge(store, writers, '/durable/', value);
await store.close();
