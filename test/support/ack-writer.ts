// The write loop of the durability child processes: concurrent writers put fresh keys through a store and print
// "ack <key> <revision>" for each write only after the store acknowledged it. Bounded: the parent kills the
// process long before it ends.
import type { KVStore } from '../../src/storage/contract.js';

export async function writeAndAcknowledge(
  store: Pick<KVStore, 'txn'>,
  writers: number,
  prefix: string,
  value: Buffer,
): Promise<void> {
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < 100_000; i++) {
        const key = `${prefix}w${w}/${i}`;
        const result = await store.txn({
          compare: [],
          success: [{ type: 'put', key, value: Buffer.concat([Buffer.from(key), value]) }],
          failure: [],
        });
        process.stdout.write(`ack ${key} ${result.header.revision}\n`);
      }
    }),
  );
}
