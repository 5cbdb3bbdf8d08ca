// Temporary directories for tests: under os.tmpdir(), removed by the returned cleanup.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function tempDir(name: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `stoa-${name}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
