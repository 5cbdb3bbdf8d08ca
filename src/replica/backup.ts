// Backups of a cluster's data (etcdctl snapshot save/restore, for Stoa): a consistent copy of a member's MVCC
// state (every revision still retained), without the member's own records, in a checksummed file. Restoring
// writes it into a fresh member's data dir; starting members from the same backup with
// --initial-cluster-state=new gives a new cluster with the old data and the new membership.

import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

const magic = Buffer.from('STOABAK1', 'latin1');
const packr = new Packr({ useRecords: false, moreTypes: false });

export interface Backup {
  /** The backup holds at least this store revision (the exact one is in its MVCC meta record). */
  readonly revision: number;
  readonly takenAt: string;
  /** LevelDB key-value pairs of the MVCC state (keys starting with 'm'). */
  readonly pairs: readonly (readonly [Uint8Array, Uint8Array])[];
}

export function encodeBackup(backup: Backup): Buffer {
  const payload = packr.pack({ revision: backup.revision, takenAt: backup.takenAt, pairs: backup.pairs });
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(crc32(payload));
  return Buffer.concat([magic, payload, trailer]);
}

export function decodeBackup(file: Uint8Array, name: string): Backup {
  const bytes = Buffer.from(file);
  if (bytes.length < magic.length + 4 || !bytes.subarray(0, magic.length).equals(magic)) {
    throw new Error(`${name} is not a Stoa backup (wrong magic bytes)`);
  }
  const payload = bytes.subarray(magic.length, bytes.length - 4);
  if (crc32(payload) !== bytes.readUInt32BE(bytes.length - 4)) {
    throw new Error(`${name} is corrupt: its checksum does not match`);
  }
  const value = packr.unpack(payload) as Backup;
  if (typeof value.revision !== 'number' || !Array.isArray(value.pairs))
    throw new Error(`${name} is malformed`);
  return value;
}

/**
 * Writes a backup into a member's replica directory (the engine's data dir: `<--data-dir>/replica` for
 * `stoa serve`); refuses one that already holds a member's state.
 */
export async function restoreBackup(backup: Backup, replicaDir: string): Promise<void> {
  if (existsSync(replicaDir) && (await readdir(replicaDir)).length > 0) {
    throw new Error(`${replicaDir} already holds a member's state; restore into an empty --data-dir`);
  }
  const mvccDir = join(replicaDir, 'mvcc');
  await mkdir(mvccDir, { recursive: true });
  const db = new ClassicLevel<Buffer, Buffer>(mvccDir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  try {
    const batchPairs = 1000;
    for (let i = 0; i < backup.pairs.length; i += batchPairs) {
      const ops = backup.pairs.slice(i, i + batchPairs).map(([key, value]) => ({
        type: 'put' as const,
        key: Buffer.from(key),
        value: Buffer.from(value),
      }));
      await db.batch(ops, { sync: i + batchPairs >= backup.pairs.length });
    }
  } finally {
    await db.close();
  }
}
