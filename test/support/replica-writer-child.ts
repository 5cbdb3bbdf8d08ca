// A child process for the snapshot crash test: one single-member replica (src/replica/engine.ts) with frequent
// snapshots, written by concurrent writers; prints "ack <key> <revision>" for each write only after the engine
// acknowledged it, and "snapshot <step> <index>" when a snapshot reaches a step. Each step of a snapshot waits
// 20 ms, so that later applies land in between; with --block STEP, the first snapshot stops at that step for
// good (writes go on), so the parent can kill the process in the middle of it.
// Runs until killed. Usage: node replica-writer-child.js CONFIG.json [--block start|synced]
import { readFile } from 'node:fs/promises';
import { ReplicatedStore, type ReplicaOptions } from '../../src/replica/engine.js';
import { writeAndAcknowledge } from './ack-writer.js';

export interface ReplicaWriterConfig {
  readonly replica: Omit<ReplicaOptions, 'logger' | 'random' | 'onFatal' | 'snapshotHook'>;
  /** Keys are written under this prefix (one per run, so that every run's keys are new). */
  readonly prefix: string;
}

const [configPath, flag, blockStep] = process.argv.slice(2);
if (configPath === undefined || (flag !== undefined && flag !== '--block')) {
  throw new Error('usage: replica-writer-child CONFIG.json [--block start|synced]');
}
const config = JSON.parse(await readFile(configPath, 'utf8')) as ReplicaWriterConfig;
let blocked = false;
const store = await ReplicatedStore.open({
  ...config.replica,
  onFatal: (error) => {
    process.stderr.write(`fatal: ${String(error)}\n`);
    process.exit(1);
  },
  snapshotHook: (step, index) => {
    process.stdout.write(`snapshot ${step} ${index}\n`);
    if (step === blockStep && !blocked) {
      blocked = true;
      return new Promise<void>(() => undefined); // never resolves: the parent kills the process
    }
    // Slow snapshots: applies of later entries land between every two steps of each snapshot.
    return new Promise<void>((resolve) => setTimeout(resolve, 20));
  },
});
process.stdout.write('ready\n');
const value = Buffer.alloc(256, 'x');
await writeAndAcknowledge(store, 8, config.prefix, value);
await store.close();
