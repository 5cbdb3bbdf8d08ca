// The audit log backend: one line per event (JSON or legacy) to a file or stdout, in kube-apiserver's modes
// (blocking: the request waits for the write and ignores its failure; blocking-strict: a failed RequestReceived
// write fails the request; batch: buffered, written in the background, dropped when the buffer is full), and
// the file rotated as kube's lumberjack writer does it (size, backups kept, age in days).

import { createReadStream, createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { unreachable } from '../util/assert.js';

export const auditLogModes = ['batch', 'blocking', 'blocking-strict'] as const;
export type AuditLogMode = (typeof auditLogModes)[number];

export const auditLogFormats = ['legacy', 'json'] as const;
export type AuditLogFormat = (typeof auditLogFormats)[number];

/** kube's batch buffer (--audit-log-batch-buffer-size default): events kept before new ones are dropped. */
export const auditBatchBufferEventsMax = 10_000;

/** lumberjack's size when --audit-log-maxsize is 0: 100 megabytes. */
const defaultMaxSizeMegabytes = 100;
const megabyte = 1024 * 1024;
const dayMs = 24 * 60 * 60 * 1000;

export interface RotationOptions {
  /** Days to keep old files (0 = no age limit). */
  readonly maxAgeDays: number;
  /** Old files kept (0 = all, unless maxAge removes them). */
  readonly maxBackups: number;
  /** Megabytes before rotation (0 = lumberjack's 100). */
  readonly maxSizeMegabytes: number;
  /** Gzip rotated files (`name-<stamp>.ext.gz`), in the background. */
  readonly compress: boolean;
}

/** Where lines go: `write` throws on failure. */
export interface LineWriter {
  write(line: string): void;
  close(): void;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** lumberjack's backup time stamp: `2006-01-02T15-04-05.000`, UTC. */
function backupStamp(date: Date): string {
  return (
    `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T` +
    `${pad(date.getUTCHours())}-${pad(date.getUTCMinutes())}-${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}`
  );
}

function parseBackupStamp(stamp: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(stamp);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, ms] = m.map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return Date.UTC(y, mo - 1, d, h, mi, s, ms);
}

/** A file that rotates like lumberjack: `name-<stamp>.ext` backups next to it, pruned after each rotation. */
export class RotatingFile implements LineWriter {
  private fd: number;
  private size: number;
  private readonly maxBytes: number;
  /** Compressions of rotated files still running (lumberjack's mill runs them in the background too). */
  private compressing: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly options: RotationOptions,
    private readonly onError: (error: unknown) => void = () => {},
    private readonly now: () => Date = () => new Date(),
  ) {
    this.maxBytes =
      (options.maxSizeMegabytes === 0 ? defaultMaxSizeMegabytes : options.maxSizeMegabytes) * megabyte;
    mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  write(line: string): void {
    const bytes = Buffer.from(line);
    if (bytes.length > this.maxBytes)
      throw new Error(`write length ${bytes.length} exceeds maximum file size ${this.maxBytes}`);
    if (this.size + bytes.length > this.maxBytes) this.rotate();
    writeSync(this.fd, bytes);
    this.size += bytes.length;
  }

  close(): void {
    closeSync(this.fd);
  }

  private rotate(): void {
    closeSync(this.fd);
    const ext = extname(this.path);
    const prefix = basename(this.path, ext);
    const backup = join(dirname(this.path), `${prefix}-${backupStamp(this.now())}${ext}`);
    renameSync(this.path, backup);
    this.fd = openSync(this.path, 'a', 0o600);
    this.size = 0;
    this.prune(prefix, ext);
    if (this.options.compress) {
      this.compressing = this.compressing.then(() =>
        pipeline(createReadStream(backup), createGzip(), createWriteStream(`${backup}.gz`, { mode: 0o600 }))
          .then(() => unlink(backup))
          .catch((error: unknown) => this.onError(error)),
      );
    }
  }

  /** Resolves once the rotated files so far are compressed. */
  settled(): Promise<void> {
    return this.compressing;
  }

  /** Removes backups beyond --audit-log-maxbackup and older than --audit-log-maxage days. */
  private prune(prefix: string, ext: string): void {
    if (this.options.maxBackups === 0 && this.options.maxAgeDays === 0) return;
    const dir = dirname(this.path);
    const backups: { file: string; stampMs: number }[] = [];
    for (const file of readdirSync(dir)) {
      const end = file.endsWith(`${ext}.gz`) ? `${ext}.gz` : ext;
      if (!file.startsWith(`${prefix}-`) || !file.endsWith(end)) continue;
      const stampMs = parseBackupStamp(file.slice(prefix.length + 1, file.length - end.length));
      if (stampMs !== undefined) backups.push({ file, stampMs });
    }
    backups.sort((a, b) => b.stampMs - a.stampMs);
    const cutoffMs = this.now().getTime() - this.options.maxAgeDays * dayMs;
    backups.forEach(({ file, stampMs }, i) => {
      const tooMany = this.options.maxBackups > 0 && i >= this.options.maxBackups;
      const tooOld = this.options.maxAgeDays > 0 && stampMs < cutoffMs;
      if (tooMany || tooOld) unlinkSync(join(dir, file));
    });
  }
}

/** `--audit-log-path -`: standard output (ordered, written by the stream). */
export class StdoutWriter implements LineWriter {
  write(line: string): void {
    process.stdout.write(line);
  }
  close(): void {}
}

/** A backend takes events' lines; `process` answers false when the line could not be stored. */
export interface AuditBackend {
  process(line: string): boolean;
  close(): void;
}

export function newLogBackend(
  writer: LineWriter,
  mode: AuditLogMode,
  onError: (error: unknown) => void,
): AuditBackend {
  switch (mode) {
    case 'blocking':
    case 'blocking-strict':
      return {
        process(line) {
          try {
            writer.write(line);
            return true;
          } catch (error) {
            onError(error);
            return mode === 'blocking';
          }
        },
        close: () => writer.close(),
      };
    case 'batch':
      return new BatchBackend(writer, onError);
    default:
      return unreachable(mode);
  }
}

/** Batch mode: lines queue (bounded) and are written on the next turn of the event loop. */
class BatchBackend implements AuditBackend {
  private queue: string[] = [];
  private scheduled = false;

  constructor(
    private readonly writer: LineWriter,
    private readonly onError: (error: unknown) => void,
  ) {}

  process(line: string): boolean {
    if (this.queue.length >= auditBatchBufferEventsMax) {
      this.onError(new Error('audit buffer queue blocked'));
      return true;
    }
    this.queue.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return true;
  }

  private flush(): void {
    this.scheduled = false;
    const lines = this.queue;
    this.queue = [];
    for (const line of lines) {
      try {
        this.writer.write(line);
      } catch (error) {
        this.onError(error);
      }
    }
  }

  close(): void {
    this.flush();
    this.writer.close();
  }
}
