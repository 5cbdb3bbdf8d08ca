// JWT authenticators (OpenID Connect): one per issuer, from the --oidc-* flags or from the `jwt` list of
// --authentication-config. A token whose `iss` is not the issuer's is left to the other methods. Keys come from
// the issuer's discovery document and JWKS, fetched over HTTPS (with the issuer's CA when given) and fetched
// again when a token names an unknown key (at most every 10 s) and every hour. Claims are validated and mapped
// to the user by claim names or CEL expressions (@marcbachmann/cel-js) over `claims` (and `user` for the
// user validation rules).

import { request as httpsRequest } from 'node:https';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { parse as parseCel } from '@marcbachmann/cel-js';
import type { AuthenticationResult, TokenAuthenticator, UserInfo } from './user.js';

const keysRefreshIntervalMs = 60 * 60 * 1000;
const keysRefetchCooldownMs = 10_000;
const fetchTimeoutMs = 10_000;
const documentBytesMax = 1024 * 1024;

export type Cel = (context: Record<string, unknown>) => unknown;

/** Compiles a CEL expression; an error names the field it came from. */
export function compileCel(expression: string, field: string): Cel {
  try {
    const program = parseCel(expression);
    return (context) => program(context);
  } catch (error) {
    throw new Error(
      `${field}: Invalid value: ${JSON.stringify(expression)}: compilation failed: ${(error as Error).message.split('\n')[0] ?? ''}`,
    );
  }
}

export type ClaimOrExpression =
  { readonly claim: string; readonly prefix: string } | { readonly expression: Cel };

export interface JwtIssuer {
  readonly url: string;
  readonly discoveryUrl?: string;
  readonly caPem?: string;
  readonly audiences: readonly string[];
  /** Empty: any asymmetric algorithm. */
  readonly signingAlgs: readonly string[];
  readonly claimValidation: readonly (
    | { readonly claim: string; readonly requiredValue: string }
    | { readonly expression: Cel; readonly message: string }
  )[];
  readonly username: ClaimOrExpression;
  /** The username claim is `email`: email_verified, when present, must be true. */
  readonly usernameIsEmail: boolean;
  readonly groups?: ClaimOrExpression;
  readonly uid?: { readonly claim: string } | { readonly expression: Cel };
  readonly extra: readonly { readonly key: string; readonly value: Cel }[];
  readonly userValidation: readonly { readonly expression: Cel; readonly message: string }[];
}

/** GET of a JSON document over HTTPS, bounded in size and time. */
export function fetchJson(url: string, caPem: string | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: 'GET', ...(caPem === undefined ? {} : { ca: caPem }), timeout: fetchTimeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > documentBytesMax)
            req.destroy(new Error(`${url}: document larger than ${documentBytesMax} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          if (res.statusCode !== 200) {
            reject(new Error(`${url}: HTTP ${res.statusCode ?? 0}`));
            return;
          }
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (error) {
            reject(new Error(`${url}: not JSON: ${(error as Error).message}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

function asStrings(value: unknown, what: string): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new Error(`${what} must be a string or an array of strings`);
}

export class JwtAuthenticator implements TokenAuthenticator {
  readonly name: string;
  private keys: ReturnType<typeof createLocalJWKSet> | undefined;
  private keysFetchedAtMs = -Infinity;
  private fetching: Promise<void> | undefined;

  constructor(
    readonly issuer: JwtIssuer,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.name = `jwt ${issuer.url}`;
  }

  /** Fetches discovery and JWKS now (also used at start so that the first token does not wait). */
  refreshKeys(): Promise<void> {
    this.fetching ??= (async () => {
      try {
        const discoveryUrl =
          this.issuer.discoveryUrl ??
          `${this.issuer.url.replace(/\/$/, '')}/.well-known/openid-configuration`;
        const discovery = (await fetchJson(discoveryUrl, this.issuer.caPem)) as {
          issuer?: unknown;
          jwks_uri?: unknown;
        };
        if (discovery.issuer !== this.issuer.url)
          throw new Error(
            `${discoveryUrl}: issuer ${String(discovery.issuer)} does not match ${this.issuer.url}`,
          );
        if (typeof discovery.jwks_uri !== 'string') throw new Error(`${discoveryUrl}: no jwks_uri`);
        const jwks = (await fetchJson(discovery.jwks_uri, this.issuer.caPem)) as JSONWebKeySet;
        if (!Array.isArray(jwks.keys)) throw new Error(`${discovery.jwks_uri}: no keys`);
        this.keys = createLocalJWKSet(jwks);
        this.keysFetchedAtMs = this.nowMs();
      } finally {
        this.fetching = undefined;
      }
    })();
    return this.fetching;
  }

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return { kind: 'none' };
    }
    if (iss !== this.issuer.url) return { kind: 'none' };
    let payload: JWTPayload;
    try {
      payload = await this.verify(token);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'ERR_JWT_EXPIRED') return { kind: 'invalid', reason: 'oidc: token is expired' };
      return { kind: 'invalid', reason: `oidc: verify token: ${(error as Error).message}` };
    }
    try {
      return this.userOf(payload);
    } catch (error) {
      return { kind: 'invalid', reason: `oidc: ${(error as Error).message}` };
    }
  }

  private async verify(token: string): Promise<JWTPayload> {
    const now = this.nowMs();
    if (this.keys === undefined || now - this.keysFetchedAtMs > keysRefreshIntervalMs)
      await this.refreshKeys();
    const options = {
      issuer: this.issuer.url,
      audience: [...this.issuer.audiences],
      currentDate: new Date(now),
      ...(this.issuer.signingAlgs.length > 0 ? { algorithms: [...this.issuer.signingAlgs] } : {}),
    };
    try {
      return (await jwtVerify(token, this.keys as ReturnType<typeof createLocalJWKSet>, options)).payload;
    } catch (error) {
      // A key rotated in at the issuer: fetch the keys again (not more often than the cooldown) and retry once.
      if (
        (error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' ||
        now - this.keysFetchedAtMs < keysRefetchCooldownMs
      )
        throw error;
      await this.refreshKeys();
      return (await jwtVerify(token, this.keys as ReturnType<typeof createLocalJWKSet>, options)).payload;
    }
  }

  private userOf(claims: JWTPayload): AuthenticationResult {
    for (const rule of this.issuer.claimValidation) {
      if ('claim' in rule) {
        const value = claims[rule.claim];
        if (value !== rule.requiredValue)
          return {
            kind: 'invalid',
            reason: `required claim ${rule.claim} not found or does not have the value ${rule.requiredValue}`,
          };
      } else if (rule.expression({ claims }) !== true) {
        return {
          kind: 'invalid',
          reason: rule.message === '' ? 'claim validation rule failed' : rule.message,
        };
      }
    }
    const name = this.mapOne(this.issuer.username, claims, 'username');
    if (this.issuer.usernameIsEmail && claims.email_verified !== undefined && claims.email_verified !== true)
      return { kind: 'invalid', reason: 'email not verified' };
    if (name === '') return { kind: 'invalid', reason: 'username is empty' };
    const groups = this.issuer.groups === undefined ? [] : this.mapMany(this.issuer.groups, claims, 'groups');
    let uid = '';
    const uidMapping = this.issuer.uid;
    if (uidMapping !== undefined) {
      const value = 'claim' in uidMapping ? claims[uidMapping.claim] : uidMapping.expression({ claims });
      if (value !== undefined && typeof value !== 'string') throw new Error('uid must be a string');
      uid = value ?? '';
    }
    const extra: Record<string, string[]> = {};
    for (const e of this.issuer.extra) {
      const values = asStrings(e.value({ claims }), `extra ${e.key}`);
      if (values.length > 0) extra[e.key] = values;
    }
    const user: UserInfo = { name, uid, groups, extra };
    for (const rule of this.issuer.userValidation) {
      const value = rule.expression({ user: { username: name, uid, groups, extra } });
      if (value !== true)
        return {
          kind: 'invalid',
          reason: rule.message === '' ? 'user validation rule failed' : rule.message,
        };
    }
    return { kind: 'user', user };
  }

  private mapOne(mapping: ClaimOrExpression, claims: JWTPayload, what: string): string {
    if ('claim' in mapping) {
      const value = claims[mapping.claim];
      if (typeof value !== 'string') throw new Error(`claim not present or not a string: ${mapping.claim}`);
      return `${mapping.prefix}${value}`;
    }
    const value = mapping.expression({ claims });
    if (typeof value !== 'string') throw new Error(`${what} expression must return a string`);
    return value;
  }

  private mapMany(mapping: ClaimOrExpression, claims: JWTPayload, what: string): string[] {
    if ('claim' in mapping)
      return asStrings(claims[mapping.claim], `claim ${mapping.claim}`).map((g) => `${mapping.prefix}${g}`);
    return asStrings(mapping.expression({ claims }), `${what} expression`);
  }
}

/** The issuers of a configuration as one token method; the set is swapped whole on reload. */
export class JwtAuthenticators implements TokenAuthenticator {
  readonly name = 'jwt';
  constructor(private authenticators: readonly JwtAuthenticator[]) {}

  replace(authenticators: readonly JwtAuthenticator[]): void {
    this.authenticators = authenticators;
  }

  get issuers(): readonly string[] {
    return this.authenticators.map((a) => a.issuer.url);
  }

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    for (const a of this.authenticators) {
      const result = await a.authenticateToken(token);
      if (result.kind !== 'none') return result;
    }
    return { kind: 'none' };
  }
}
