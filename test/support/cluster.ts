// What the real-process cluster tests share: the admin credentials of a cluster harness data dir, and polling
// until a probe gives an answer (bounded in time).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tls } from './https.js';

/** The admin client certificate the cluster harness wrote under `dataDir/pki`. */
export async function adminTls(dataDir: string): Promise<Tls> {
  const pki = join(dataDir, 'pki');
  return {
    ca: await readFile(join(pki, 'ca.crt'), 'utf8'),
    cert: await readFile(join(pki, 'admin.crt'), 'utf8'),
    key: await readFile(join(pki, 'admin.key'), 'utf8'),
  };
}

/** Polls `probe` every 100 ms until it returns a value (a throw counts as none); fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
