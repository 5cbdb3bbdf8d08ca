// Builds the authenticator chain from the flags: proxy headers, client certificates, then the bearer-token
// methods (token file, bootstrap tokens, service account JWTs, OIDC/JWT issuers, the TokenReview webhook), and
// anonymous access. Start-up errors name the flag or the file field that is wrong.

import { readFile } from 'node:fs/promises';
import type { X509Certificate } from 'node:crypto';
import type { AuthenticationFlags } from '../server/authn-flags.js';
import { anonymousConfig } from './anonymous.js';
import { ClientCertificateAuthenticator, parseCertificateBundle } from './client-cert.js';
import { RequestHeaderAuthenticator } from './request-header.js';
import { loadTokenFile, TokenFileAuthenticator } from './token-file.js';
import { BearerTokenAuthenticator, UnionAuthenticator } from './union.js';
import type { Authenticator, TokenAuthenticator } from './user.js';

export class AuthenticationConfigError extends Error {
  override readonly name = 'AuthenticationConfigError';
}

export interface AuthenticationInputs {
  readonly flags: AuthenticationFlags;
  readonly tokenAuthFile: string | undefined;
  /** Every CA whose client certificates authenticate users (--client-ca-file plus the generated CA). */
  readonly clientCaPem: string;
  /** Token methods built elsewhere (service accounts, bootstrap tokens, JWT issuers, webhook), in order. */
  readonly tokenMethods?: readonly TokenAuthenticator[];
  /** The anonymous setting of --authentication-config, when the file has one. */
  readonly configAnonymous?: { readonly enabled: boolean; readonly paths: readonly string[] };
}

export interface BuiltAuthentication {
  readonly authenticator: UnionAuthenticator;
  /** PEM of every CA a client certificate may chain to (the TLS layer asks for certificates under these). */
  readonly tlsClientCaPem: string;
}

async function readCas(path: string, flag: string): Promise<{ pem: string; cas: X509Certificate[] }> {
  let pem: string;
  try {
    pem = await readFile(path, 'utf8');
  } catch (error) {
    throw new AuthenticationConfigError(`--${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return { pem, cas: parseCertificateBundle(pem, `--${flag} ${path}`) };
  } catch (error) {
    throw new AuthenticationConfigError((error as Error).message);
  }
}

export async function buildAuthentication(inputs: AuthenticationInputs): Promise<BuiltAuthentication> {
  const { flags } = inputs;
  const authenticators: Authenticator[] = [];
  let tlsClientCaPem = inputs.clientCaPem.trim();
  if (flags.requestHeader !== undefined) {
    const { pem, cas } = await readCas(flags.requestHeader.clientCaFile, 'requestheader-client-ca-file');
    authenticators.push(new RequestHeaderAuthenticator({ ...flags.requestHeader, clientCas: cas }));
    tlsClientCaPem = `${tlsClientCaPem}\n${pem.trim()}`;
  }
  authenticators.push(
    new ClientCertificateAuthenticator(parseCertificateBundle(inputs.clientCaPem, '--client-ca-file')),
  );
  let tokens;
  try {
    tokens = await loadTokenFile(inputs.tokenAuthFile);
  } catch (error) {
    throw new AuthenticationConfigError(`--token-auth-file: ${(error as Error).message}`);
  }
  const tokenMethods: TokenAuthenticator[] = [];
  if (tokens.size > 0) tokenMethods.push(new TokenFileAuthenticator(tokens));
  tokenMethods.push(...(inputs.tokenMethods ?? []));
  authenticators.push(new BearerTokenAuthenticator(tokenMethods));
  if (flags.anonymousAuth !== undefined && inputs.configAnonymous !== undefined) {
    throw new AuthenticationConfigError(
      'anonymous is not supported both in --authentication-config and with the --anonymous-auth flag: set one',
    );
  }
  const anonymous =
    inputs.configAnonymous !== undefined
      ? anonymousConfig(inputs.configAnonymous.enabled, inputs.configAnonymous.paths)
      : anonymousConfig(flags.anonymousAuth ?? true);
  return { authenticator: new UnionAuthenticator(authenticators, anonymous), tlsClientCaPem };
}
