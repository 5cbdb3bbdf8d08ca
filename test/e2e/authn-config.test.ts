// Proves --authentication-config on a real server with a real HTTPS issuer: its ID tokens authenticate, the file
// is reloaded when it changes (a new username prefix takes effect); and bad configurations stop the server at
// start with a message naming the problem (flags together, more than 64 issuers, missing fields, http issuer).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIssuer, type TestIssuer } from '../auth/issuer-support.js';
import { startTestServer, type TestServer, whoami as whoamiOf } from './harness.js';

let server: TestServer;
let issuer: TestIssuer;
let dir: string;
let configPath: string;

function config(prefix: string): string {
  return JSON.stringify({
    apiVersion: 'apiserver.config.svc.io/v1beta1',
    kind: 'AuthenticationConfiguration',
    jwt: [
      {
        issuer: { url: issuer.url, audiences: ['stoa'], certificateAuthority: issuer.caPem },
        claimMappings: { username: { claim: 'sub', prefix }, groups: { claim: 'groups', prefix: '' } },
      },
    ],
  });
}

const whoami = (token: string): Promise<string | number> => whoamiOf(server, token);

/** Runs `stoa serve` expecting it to stop at start: its exit code and stderr. */
function serveFails(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join('dist', 'src', 'server', 'main.js'),
        'serve',
        '--secure-port',
        '0',
        '--data-dir',
        join(dir, 'fail'),
        ...args,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stoa serve did not stop: ${stderr}`));
    }, 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

before(async () => {
  issuer = await startIssuer();
  dir = await mkdtemp(join(tmpdir(), 'stoa-authn-config-'));
  configPath = join(dir, 'authn.json');
  await writeFile(configPath, config('oidc:'));
  server = await startTestServer(['--authentication-config', configPath], join(dir, 'data'));
});

after(async () => {
  await server?.stop();
  await issuer?.close();
  await rm(dir, { recursive: true, force: true });
});

test('an ID token of the configured issuer authenticates; the file is reloaded on change', async () => {
  const token = await issuer.sign({ sub: 'jane', groups: ['dev'] });
  assert.equal(await whoami(token), 'oidc:jane');
  assert.equal(await whoami(await issuer.sign({ sub: 'jane' }, { audience: 'other' })), 401);
  assert.equal(await whoami(await issuer.sign({ sub: 'jane' }, { expiresInSeconds: -300 })), 401);
  await writeFile(configPath, config('sso:'));
  let name = await whoami(token);
  for (let i = 0; i < 50 && name !== 'sso:jane'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    name = await whoami(token);
  }
  assert.equal(name, 'sso:jane');
  await writeFile(configPath, '{"kind": "broken"');
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await whoami(token), 'sso:jane', 'an invalid file keeps the previous configuration');
});

test('start-up errors name the problem', async () => {
  const both = await serveFails([
    '--authentication-config',
    configPath,
    '--oidc-issuer-url',
    'https://x',
    '--oidc-client-id',
    'a',
  ]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /authentication-config file and oidc-\* flags are mutually exclusive/);
  const many = join(dir, 'many.json');
  await writeFile(
    many,
    JSON.stringify({
      apiVersion: 'apiserver.config.svc.io/v1beta1',
      kind: 'AuthenticationConfiguration',
      jwt: Array.from({ length: 65 }, (_, i) => ({
        issuer: { url: `https://issuer${i}.test`, audiences: ['a'] },
        claimMappings: { username: { claim: 'sub', prefix: '' } },
      })),
    }),
  );
  const tooMany = await serveFails(['--authentication-config', many]);
  assert.equal(tooMany.code, 1);
  assert.match(
    tooMany.stderr,
    /--authentication-config .*many\.json: jwt: Too many: 65: must have at most 64 items/,
  );
  const http = await serveFails(['--oidc-issuer-url', 'http://x', '--oidc-client-id', 'a']);
  assert.equal(http.code, 2);
  assert.match(http.stderr, /--oidc-issuer-url: must use the https scheme/);
  const missing = await serveFails(['--oidc-issuer-url', 'https://x']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--oidc-issuer-url and --oidc-client-id must be given together/);
  const header = await serveFails(['--requestheader-allowed-names', 'proxy']);
  assert.match(header.stderr, /--requestheader-allowed-names needs --requestheader-client-ca-file/);
  const tokenFile = join(dir, 'tokens.csv');
  await writeFile(tokenFile, 'only-a-token\n');
  const badTokens = await serveFails(['--token-auth-file', tokenFile]);
  assert.equal(badTokens.code, 1);
  assert.match(badTokens.stderr, /--token-auth-file: .*line 1: needs at least token, user name and uid/);
});
