// Builds the authenticator chain from the flags: proxy headers, client certificates, then the bearer-token
// methods (token file, bootstrap tokens, service account JWTs, OIDC/JWT issuers, the TokenReview webhook), and
// anonymous access. Start-up errors name the flag or the file field that is wrong.

import { readFile } from 'node:fs/promises';
import type { X509Certificate } from 'node:crypto';
import type { AuthenticationFlags } from '../server/authn-flags.js';
import type { KindDeclaration } from '../apimachinery/kind.js';
import { ApiError } from '../apimachinery/status.js';
import { respond } from '../endpoints/context.js';
import type { Handler } from '../filters/handler.js';
import type { Registries } from '../registry/index.js';
import { anonymousConfig } from './anonymous.js';
import { ClientCertificateAuthenticator, parseCertificateBundle } from './client-cert.js';
import { RequestHeaderAuthenticator } from './request-header.js';
import { loadTokenFile, TokenFileAuthenticator } from './token-file.js';
import { BearerTokenAuthenticator, UnionAuthenticator } from './union.js';
import type { Authenticator, TokenAuthenticator } from './user.js';
import {
  defaultServiceAccountIssuer,
  loadServiceAccountKeys,
  ServiceAccountTokens,
  type ObjectLookup,
} from './service-account.js';

export class AuthenticationConfigError extends Error {
  override readonly name = 'AuthenticationConfigError';
}

export interface AuthenticationInputs {
  readonly flags: AuthenticationFlags;
  readonly tokenAuthFile: string | undefined;
  /** Every CA whose client certificates authenticate users (--client-ca-file plus the generated CA). */
  readonly clientCaPem: string;
  /** The TLS private key: signs and verifies service account tokens unless key flags say otherwise. */
  readonly servingKeyPem: string;
  /** Reads service accounts, pods and secrets (bound once the registries run). */
  readonly objects: ObjectLookup;
  /** `kubernetes.io` with --group-domain=k8s.io, else the group domain. */
  readonly domainPrefix: string;
  readonly nowMs: () => number;
  /** Token methods built elsewhere (bootstrap tokens, JWT issuers, webhook), after the service accounts'. */
  readonly tokenMethods?: readonly TokenAuthenticator[];
  /** The anonymous setting of --authentication-config, when the file has one. */
  readonly configAnonymous?: { readonly enabled: boolean; readonly paths: readonly string[] };
}

export interface BuiltAuthentication {
  readonly authenticator: UnionAuthenticator;
  readonly serviceAccounts: ServiceAccountTokens;
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
  let keys;
  try {
    keys = await loadServiceAccountKeys(
      flags.serviceAccountSigningKeyFile,
      flags.serviceAccountKeyFiles,
      inputs.servingKeyPem,
    );
  } catch (error) {
    throw new AuthenticationConfigError((error as Error).message);
  }
  const issuers =
    flags.serviceAccountIssuers.length > 0 ? flags.serviceAccountIssuers : [defaultServiceAccountIssuer];
  const serviceAccounts = new ServiceAccountTokens(
    keys.signing,
    keys.verifying,
    {
      issuers,
      apiAudiences: flags.apiAudiences,
      lookup: flags.serviceAccountLookup,
      ...(flags.serviceAccountMaxTokenExpirationMs === undefined
        ? {}
        : { maxExpirationSeconds: Math.floor(flags.serviceAccountMaxTokenExpirationMs / 1000) }),
      domainPrefix: inputs.domainPrefix,
      nowMs: inputs.nowMs,
    },
    inputs.objects,
  );
  tokenMethods.push(serviceAccounts);
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
  return {
    authenticator: new UnionAuthenticator(authenticators, anonymous),
    serviceAccounts,
    tlsClientCaPem,
  };
}

/** Service accounts, pods and secrets read from the watch caches (resourceVersion "0": no quorum round). */
export function registryLookup(registries: () => Registries | undefined): ObjectLookup {
  return {
    async get(resource, namespace, name) {
      const registry = registries()?.find('', 'v1', resource);
      if (registry === undefined) return undefined;
      try {
        return await registry.get(namespace, name, '0');
      } catch (error) {
        if (error instanceof ApiError && error.reason === 'NotFound') return undefined;
        throw error;
      }
    },
  };
}

/** The serviceaccounts kind with its `token` sub-resource (TokenRequest). */
export function withTokenRequest(
  kinds: readonly KindDeclaration[],
  serviceAccounts: ServiceAccountTokens,
  authenticationGroup: string,
): KindDeclaration[] {
  return kinds.map((decl) =>
    decl.group === '' && decl.plural === 'serviceaccounts'
      ? {
          ...decl,
          createSubresources: {
            ...decl.createSubresources,
            token: serviceAccounts.tokenRequestSubresource(authenticationGroup),
          },
        }
      : decl,
  );
}

/** GET /.well-known/openid-configuration and /openid/v1/jwks: the service account issuer's documents. */
export function issuerDiscoveryPaths(serviceAccounts: ServiceAccountTokens): Map<string, Handler> {
  const json = { serialization: 'json', as: 'object', contentType: 'application/json' } as const;
  return new Map<string, Handler>([
    [
      '/.well-known/openid-configuration',
      (ctx) => {
        respond(ctx, 200, serviceAccounts.discoveryDocument(), json);
        return Promise.resolve();
      },
    ],
    [
      '/openid/v1/jwks',
      async (ctx) => {
        respond(ctx, 200, await serviceAccounts.jwks(), { ...json, contentType: 'application/jwk-set+json' });
      },
    ],
  ]);
}
