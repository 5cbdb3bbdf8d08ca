// `stoa credential`: a kubectl exec credential plugin. kubectl runs it with KUBERNETES_EXEC_INFO (an
// ExecCredential whose apiVersion is client.authentication.DOMAIN/v1 or v1beta1, with spec.interactive and,
// when asked for, spec.cluster); it prints an ExecCredential of the same apiVersion whose status holds a bearer
// token or a client certificate and key (PEM), and optionally expirationTimestamp (RFC 3339).

import { readFile } from 'node:fs/promises';

export const credentialUsage = `usage: stoa credential [flags]

kubectl exec credential plugin (users[].user.exec in a kubeconfig). Prints an ExecCredential on stdout.

flags:
  --token TOKEN                 the bearer token to hand to kubectl
  --token-file FILE             read the token from a file (trailing whitespace dropped)
  --client-certificate FILE     a PEM client certificate (with --client-key) instead of a token
  --client-key FILE             its PEM private key
  --expiration-seconds N        status.expirationTimestamp = now + N seconds (kubectl runs the plugin again then)
  --api-version V               apiVersion when KUBERNETES_EXEC_INFO is absent
                                (default client.authentication.k8s.io/v1)
`;

export class CredentialError extends Error {
  override readonly name = 'CredentialError';
}

interface CredentialFlags {
  token?: string;
  tokenFile?: string;
  clientCertificate?: string;
  clientKey?: string;
  expirationSeconds?: number;
  apiVersion?: string;
}

function parseFlags(argv: readonly string[]): CredentialFlags | 'help' {
  const flags: CredentialFlags = {};
  const names: Record<string, keyof CredentialFlags> = {
    token: 'token',
    'token-file': 'tokenFile',
    'client-certificate': 'clientCertificate',
    'client-key': 'clientKey',
    'expiration-seconds': 'expirationSeconds',
    'api-version': 'apiVersion',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') return 'help';
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const key = names[name];
    if (!arg.startsWith('-') || key === undefined) throw new CredentialError(`unknown flag: ${arg}`);
    const value = eq < 0 ? argv[++i] : body.slice(eq + 1);
    if (value === undefined) throw new CredentialError(`flag needs an argument: --${name}`);
    if (key === 'expirationSeconds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0)
        throw new CredentialError(
          `invalid value "${value}" for flag --expiration-seconds: must be a positive integer`,
        );
      flags.expirationSeconds = n;
    } else flags[key] = value;
  }
  return flags;
}

/** The apiVersion to answer with: the one of KUBERNETES_EXEC_INFO, which must be a v1 or v1beta1 ExecCredential. */
export function execInfoApiVersion(execInfo: string | undefined, fallback: string): string {
  if (execInfo === undefined || execInfo.trim() === '') return fallback;
  let parsed: { apiVersion?: unknown; kind?: unknown };
  try {
    parsed = JSON.parse(execInfo) as { apiVersion?: unknown; kind?: unknown };
  } catch (error) {
    throw new CredentialError(`KUBERNETES_EXEC_INFO is not JSON: ${(error as Error).message}`);
  }
  const apiVersion = typeof parsed.apiVersion === 'string' ? parsed.apiVersion : '';
  if (
    parsed.kind !== 'ExecCredential' ||
    !/^client\.authentication\.[a-z0-9.-]+\/(v1|v1beta1)$/.test(apiVersion)
  ) {
    throw new CredentialError(
      `KUBERNETES_EXEC_INFO: unsupported ExecCredential apiVersion "${apiVersion}" (client.authentication.DOMAIN/v1 or v1beta1)`,
    );
  }
  return apiVersion;
}

export async function execCredential(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  nowMs: number,
): Promise<Record<string, unknown> | 'help'> {
  const flags = parseFlags(argv);
  if (flags === 'help') return 'help';
  const apiVersion = execInfoApiVersion(
    env.KUBERNETES_EXEC_INFO,
    flags.apiVersion ?? 'client.authentication.k8s.io/v1',
  );
  const read = async (path: string, flag: string): Promise<string> => {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      throw new CredentialError(`--${flag}: cannot read ${path}: ${(error as Error).message}`);
    }
  };
  let status: Record<string, unknown>;
  const hasCert = flags.clientCertificate !== undefined || flags.clientKey !== undefined;
  const hasToken = flags.token !== undefined || flags.tokenFile !== undefined;
  if (hasCert && hasToken) throw new CredentialError('give a token or a client certificate, not both');
  if (hasCert) {
    if (flags.clientCertificate === undefined || flags.clientKey === undefined)
      throw new CredentialError('--client-certificate and --client-key must be given together');
    status = {
      clientCertificateData: await read(flags.clientCertificate, 'client-certificate'),
      clientKeyData: await read(flags.clientKey, 'client-key'),
    };
  } else if (hasToken) {
    const token = flags.token ?? (await read(flags.tokenFile ?? '', 'token-file')).trim();
    if (token === '') throw new CredentialError('the token is empty');
    status = { token };
  } else {
    throw new CredentialError(
      'nothing to hand out: give --token, --token-file or --client-certificate and --client-key',
    );
  }
  if (flags.expirationSeconds !== undefined) {
    status.expirationTimestamp = new Date(nowMs + flags.expirationSeconds * 1000)
      .toISOString()
      .replace(/\.\d+Z$/, 'Z');
  }
  return { apiVersion, kind: 'ExecCredential', spec: {}, status };
}

export async function runCredentialCommand(argv: readonly string[]): Promise<number> {
  try {
    const credential = await execCredential(argv, process.env, Date.now());
    if (credential === 'help') {
      process.stdout.write(credentialUsage);
      return 0;
    }
    process.stdout.write(`${JSON.stringify(credential)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof CredentialError) {
      process.stderr.write(`stoa credential: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
