// `stoa snapshot save|restore|status`: backups of a cluster's data, as etcdctl's snapshot commands.

import { readFile, writeFile, rename } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { decodeBackup, restoreBackup } from '../replica/backup.js';
import { connectionFrom, defaultKubeconfig, type Connection } from './member-command.js';

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

function download(connection: Connection, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, connection.server),
      {
        ...(connection.ca !== undefined ? { ca: connection.ca } : {}),
        ...(connection.cert !== undefined ? { cert: connection.cert } : {}),
        ...(connection.key !== undefined ? { key: connection.key } : {}),
        headers: connection.token !== undefined ? { authorization: `Bearer ${connection.token}` } : {},
        timeout: 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          if ((res.statusCode ?? 0) !== 200) {
            let message = body.toString('utf8');
            try {
              message = (JSON.parse(message) as { message?: string }).message ?? message;
            } catch {
              // not JSON
            }
            reject(new Error(`${res.statusCode}: ${message}`));
          } else resolve(body);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('the server did not answer in 120 s')));
    req.on('error', reject);
    req.end();
  });
}

export async function runSnapshotCommand(argv: readonly string[]): Promise<number> {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') {
      process.stdout.write(snapshotUsage);
      return 0;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (name === 'local') {
        flags.set('local', 'true');
        continue;
      }
      if (!['kubeconfig', 'context', 'data-dir'].includes(name)) {
        process.stderr.write(`stoa snapshot: unknown flag: --${name}\n\n${snapshotUsage}`);
        return 2;
      }
      const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) {
        process.stderr.write(`stoa snapshot: flag needs an argument: --${name}\n`);
        return 2;
      }
      flags.set(name, value);
    } else positional.push(arg);
  }
  const [command, file] = positional;
  if (command === undefined || file === undefined) {
    process.stderr.write(snapshotUsage);
    return 2;
  }
  try {
    switch (command) {
      case 'save': {
        const connection = await connectionFrom(
          flags.get('kubeconfig') ?? defaultKubeconfig(),
          flags.get('context'),
        );
        const bytes = await download(
          connection,
          `/stoa/admin/v1/snapshot${flags.has('local') ? '?local=true' : ''}`,
        );
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
        const dataDir = flags.get('data-dir');
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
