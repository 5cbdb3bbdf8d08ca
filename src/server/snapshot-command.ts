// `stoa snapshot save|restore|status`: backups of a cluster's data, as etcdctl's snapshot commands.

import { readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeBackup, restoreBackup } from '../replica/backup.js';
import {
  connectionFrom,
  defaultKubeconfig,
  errorMessage,
  httpsRequest,
  parseCommandArgs,
  type CommandArgs,
} from './admin-client.js';

export const snapshotUsage = `usage: stoa snapshot <command> [flags]

commands:
  save FILE [--local]         a consistent backup of the data from a member (through its admin API);
                              --local: no quorum needed, the member's applied state (disaster recovery)
  status FILE                 what a backup holds: revision, keys, size
  restore FILE --data-dir D   write a backup into an empty member data dir; then start the members with
                              --initial-cluster-state=new (each member restores the same file)

flags:
  --kubeconfig FILE   credentials and server for save (default: $KUBECONFIG, ./data/cluster/admin.kubeconfig, ./data/admin.kubeconfig)
  --context NAME      kubeconfig context (default: its current context)
  --data-dir DIR      the member's data dir (restore)
`;

export async function runSnapshotCommand(argv: readonly string[]): Promise<number> {
  let args: CommandArgs;
  try {
    args = parseCommandArgs(argv, ['kubeconfig', 'context', 'data-dir'], ['local']);
  } catch (error) {
    process.stderr.write(`stoa snapshot: ${(error as Error).message}\n\n${snapshotUsage}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(snapshotUsage);
    return 0;
  }
  const [command, file] = args.positional;
  if (command === undefined || file === undefined) {
    process.stderr.write(snapshotUsage);
    return 2;
  }
  try {
    switch (command) {
      case 'save': {
        const connection = await connectionFrom(
          args.values.get('kubeconfig') ?? defaultKubeconfig(),
          args.values.get('context'),
        );
        const path = `/stoa/admin/v1/snapshot${args.switches.has('local') ? '?local=true' : ''}`;
        const reply = await httpsRequest(new URL(path, connection.server).toString(), connection, {
          timeoutMs: 120_000,
        });
        if (reply.status !== 200) throw new Error(errorMessage(reply));
        const bytes = reply.body;
        const backup = decodeBackup(bytes, connection.server); // check before writing
        await writeFile(`${file}.part`, bytes, { mode: 0o600 });
        await rename(`${file}.part`, file);
        process.stdout.write(
          `saved ${file}: revision ${backup.revision}, ${backup.pairs.length} records, ${bytes.length} bytes\n`,
        );
        return 0;
      }
      case 'status': {
        const bytes = await readFile(file);
        const backup = decodeBackup(bytes, file);
        process.stdout.write(
          JSON.stringify({
            revision: backup.revision,
            takenAt: backup.takenAt,
            records: backup.pairs.length,
            bytes: bytes.length,
          }) + '\n',
        );
        return 0;
      }
      case 'restore': {
        const dataDir = args.values.get('data-dir');
        if (dataDir === undefined) {
          process.stderr.write('stoa snapshot restore: --data-dir is required\n');
          return 2;
        }
        const backup = decodeBackup(await readFile(file), file);
        await restoreBackup(backup, join(dataDir, 'replica'));
        process.stdout.write(
          `restored revision ${backup.revision} into ${dataDir}; start the member with --data-dir=${dataDir} --initial-cluster-state=new\n`,
        );
        return 0;
      }
      default:
        process.stderr.write(`stoa snapshot: unknown command "${command}"\n\n${snapshotUsage}`);
        return 2;
    }
  } catch (error) {
    process.stderr.write(`stoa snapshot ${command}: ${(error as Error).message}\n`);
    return 1;
  }
}
