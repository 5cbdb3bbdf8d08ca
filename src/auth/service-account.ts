// Service account tokens: JWTs signed with --service-account-signing-key-file (RSA → RS256, ECDSA → ES256/384/512;
// default: the TLS key) and verified with every --service-account-key-file key (default: the TLS key), for the
// issuers of --service-account-issuer and the audiences of --api-audiences. With --service-account-lookup a
// token whose account or bound object is gone (or was recreated with another uid) is refused.
// Also: the TokenRequest sub-resource (serviceaccounts/NAME/token) and the issuer discovery documents.

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  randomUUID,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { decodeJwt, decodeProtectedHeader, exportJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import type { CreateSubresource } from '../apimachinery/kind.js';
import { objectSchema, type ApiObject } from '../apimachinery/meta.js';
import { s } from '../apimachinery/schema.js';
import { ApiError, errors, type FieldError } from '../apimachinery/status.js';
import { timestamp } from '../registry/objects.js';
import type { AuthenticationResult, TokenAuthenticator, UserInfo } from './user.js';
import { serviceAccountGroups } from './user.js';

export const defaultServiceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';
const expirationSecondsDefault = 3600;
const expirationSecondsMin = 600;
const expirationSecondsMax = 2 ** 32;

/** Reads what the token machinery needs from the API (late-bound: the registries start after authentication). */
export interface ObjectLookup {
  /** The object, or undefined when it does not exist. `resource` is the core plural: serviceaccounts, pods, secrets. */
  get(resource: string, namespace: string, name: string): Promise<ApiObject | undefined>;
}

export interface SigningKey {
  readonly key: KeyObject;
  readonly alg: string;
  readonly kid: string;
}

export interface VerifyingKey {
  readonly key: KeyObject;
  readonly alg: string;
  readonly kid: string;
}

function algorithmOf(key: KeyObject, source: string): string {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return 'RS256';
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return 'ES256';
      if (curve === 'secp384r1') return 'ES384';
      if (curve === 'secp521r1') return 'ES512';
      throw new Error(`${source}: unsupported ECDSA curve ${String(curve)}`);
    }
    default:
      throw new Error(`${source}: unsupported key type ${String(key.asymmetricKeyType)} (RSA or ECDSA)`);
  }
}

/** kube-apiserver's key id: the unpadded base64url SHA-256 of the public key's DER (PKIX). */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64url');
}

export function signingKeyFromPem(pem: string, source: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new Error(`${source}: not a PEM private key: ${(error as Error).message}`);
  }
  return { key, alg: algorithmOf(key, source), kid: keyIdOf(createPublicKey(key)) };
}

/** Every public key of a PEM file: public keys, private keys (their public half) and certificates. */
export function verifyingKeysFromPem(pem: string, source: string): VerifyingKey[] {
  const blocks = pem.match(/-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g) ?? [];
  const keys: VerifyingKey[] = [];
  for (const block of blocks) {
    let key: KeyObject;
    try {
      key = block.includes('CERTIFICATE') ? new X509Certificate(block).publicKey : createPublicKey(block);
    } catch (error) {
      throw new Error(`${source}: a PEM block is not a key: ${(error as Error).message}`);
    }
    keys.push({ key, alg: algorithmOf(key, source), kid: keyIdOf(key) });
  }
  if (keys.length === 0) throw new Error(`${source}: no PEM public key, private key or certificate found`);
  return keys;
}

export async function loadServiceAccountKeys(
  signingKeyFile: string | undefined,
  keyFiles: readonly string[],
  tlsKeyPem: string,
): Promise<{ signing: SigningKey; verifying: VerifyingKey[] }> {
  const read = async (path: string, flag: string): Promise<string> => {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      throw new Error(`--${flag}: cannot read ${path}: ${(error as Error).message}`);
    }
  };
  const signing =
    signingKeyFile === undefined
      ? signingKeyFromPem(tlsKeyPem, 'the TLS private key')
      : signingKeyFromPem(
          await read(signingKeyFile, 'service-account-signing-key-file'),
          `--service-account-signing-key-file ${signingKeyFile}`,
        );
  const verifying: VerifyingKey[] = [];
  for (const file of keyFiles) {
    verifying.push(
      ...verifyingKeysFromPem(
        await read(file, 'service-account-key-file'),
        `--service-account-key-file ${file}`,
      ),
    );
  }
  if (keyFiles.length === 0) {
    verifying.push({ key: createPublicKey(signing.key), alg: signing.alg, kid: signing.kid });
  }
  return { signing, verifying };
}

export interface BoundObject {
  readonly kind: 'Pod' | 'Secret';
  readonly name: string;
  readonly uid: string;
}

export interface ServiceAccountTokenOptions {
  readonly issuers: readonly string[];
  /** Audiences an API token must have one of (--api-audiences; default: the issuers). */
  readonly apiAudiences: readonly string[];
  readonly lookup: boolean;
  readonly maxExpirationSeconds?: number;
  /** `kubernetes.io` with --group-domain=k8s.io: the private claim's name and the extra keys' prefix. */
  readonly domainPrefix: string;
  readonly nowMs: () => number;
}

interface PrivateClaim {
  namespace?: string;
  serviceaccount?: { name?: string; uid?: string };
  pod?: { name?: string; uid?: string };
  secret?: { name?: string; uid?: string };
}

export class ServiceAccountTokens implements TokenAuthenticator {
  readonly name = 'service-account';

  constructor(
    private readonly signing: SigningKey,
    private readonly verifying: readonly VerifyingKey[],
    private readonly options: ServiceAccountTokenOptions,
    private readonly objects: ObjectLookup,
  ) {}

  get issuer(): string {
    return this.options.issuers[0] ?? defaultServiceAccountIssuer;
  }

  get apiAudiences(): readonly string[] {
    return this.options.apiAudiences.length > 0 ? this.options.apiAudiences : this.options.issuers;
  }

  /** Signs a bound token for an account; expiration in seconds from now. */
  async issue(
    account: { namespace: string; name: string; uid: string },
    audiences: readonly string[],
    expirationSeconds: number,
    bound?: BoundObject,
  ): Promise<{ token: string; expiresAtMs: number }> {
    const nowSeconds = Math.floor(this.options.nowMs() / 1000);
    const claim: PrivateClaim = {
      namespace: account.namespace,
      serviceaccount: { name: account.name, uid: account.uid },
      ...(bound === undefined
        ? {}
        : { [bound.kind === 'Pod' ? 'pod' : 'secret']: { name: bound.name, uid: bound.uid } }),
    };
    const token = await new SignJWT({ [this.options.domainPrefix]: claim })
      .setProtectedHeader({ alg: this.signing.alg, kid: this.signing.kid })
      .setIssuer(this.issuer)
      .setSubject(`system:serviceaccount:${account.namespace}:${account.name}`)
      .setAudience([...audiences])
      .setIssuedAt(nowSeconds)
      .setNotBefore(nowSeconds)
      .setExpirationTime(nowSeconds + expirationSeconds)
      .setJti(randomUUID())
      .sign(this.signing.key);
    return { token, expiresAtMs: (nowSeconds + expirationSeconds) * 1000 };
  }

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    let issuer: unknown;
    let kid: string | undefined;
    try {
      issuer = decodeJwt(token).iss;
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return { kind: 'none' };
    }
    if (typeof issuer !== 'string' || !this.options.issuers.includes(issuer)) return { kind: 'none' };
    const candidates = this.verifying.filter((k) => kid === undefined || k.kid === kid);
    let payload: Record<string, unknown> | undefined;
    let failure = 'invalid signature';
    for (const key of candidates.length > 0 ? candidates : this.verifying) {
      try {
        const result = await jwtVerify(token, key.key, {
          issuer: [...this.options.issuers],
          algorithms: [key.alg],
          currentDate: new Date(this.options.nowMs()),
        });
        payload = result.payload;
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === 'ERR_JWT_EXPIRED') {
          failure = 'token has expired';
          break;
        }
        if (code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') failure = (error as Error).message;
      }
    }
    if (payload === undefined) return { kind: 'invalid', reason: failure };
    const aud = payload.aud;
    const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? (aud as string[]) : [];
    if (!audiences.some((a) => this.apiAudiences.includes(a))) {
      return { kind: 'invalid', reason: 'token audiences is invalid for the current issuer' };
    }
    const claim = payload[this.options.domainPrefix] as PrivateClaim | undefined;
    const namespace = claim?.namespace ?? '';
    const name = claim?.serviceaccount?.name ?? '';
    const uid = claim?.serviceaccount?.uid ?? '';
    if (namespace === '' || name === '' || payload.sub !== `system:serviceaccount:${namespace}:${name}`) {
      return { kind: 'invalid', reason: 'token is not a service account token' };
    }
    if (this.options.lookup) {
      const problem = await this.checkLiveness(namespace, name, uid, claim);
      if (problem !== undefined) return { kind: 'invalid', reason: problem };
    }
    const extra: Record<string, string[]> = {};
    const prefix = `authentication.${this.options.domainPrefix}`;
    if (claim?.pod?.name !== undefined) {
      extra[`${prefix}/pod-name`] = [claim.pod.name];
      extra[`${prefix}/pod-uid`] = [claim.pod.uid ?? ''];
    }
    if (typeof payload.jti === 'string') extra[`${prefix}/credential-id`] = [`JTI=${payload.jti}`];
    const user: UserInfo = {
      name: `system:serviceaccount:${namespace}:${name}`,
      uid,
      groups: serviceAccountGroups(namespace),
      extra,
    };
    return { kind: 'user', user, audiences };
  }

  private async checkLiveness(
    namespace: string,
    name: string,
    uid: string,
    claim: PrivateClaim | undefined,
  ): Promise<string | undefined> {
    const account = await this.objects.get('serviceaccounts', namespace, name);
    if (account === undefined) return `service account ${namespace}/${name} has been deleted`;
    if (uid !== '' && account.metadata.uid !== uid) {
      return `service account UID (${uid}) does not match the one in storage (${String(account.metadata.uid)})`;
    }
    for (const [resource, ref] of [
      ['pods', claim?.pod],
      ['secrets', claim?.secret],
    ] as const) {
      if (ref?.name === undefined) continue;
      const object = await this.objects.get(resource, namespace, ref.name);
      if (object === undefined) return `${resource} ${namespace}/${ref.name} has been deleted`;
      if (ref.uid !== undefined && object.metadata.uid !== ref.uid) {
        return `${resource} ${namespace}/${ref.name} UID (${ref.uid}) does not match the one in storage`;
      }
    }
    return undefined;
  }

  /** GET /.well-known/openid-configuration. */
  discoveryDocument(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer.replace(/\/$/, '')}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [...new Set(this.verifying.map((k) => k.alg))].sort(),
    };
  }

  /** GET /openid/v1/jwks: every verifying key, with its use, algorithm and key id. */
  async jwks(): Promise<{ keys: JWK[] }> {
    const keys: JWK[] = [];
    for (const k of this.verifying)
      keys.push({ ...(await exportJWK(k.key)), use: 'sig', alg: k.alg, kid: k.kid });
    return { keys };
  }

  /** serviceaccounts/NAME/token: a TokenRequest answered with a signed token. */
  tokenRequestSubresource(authenticationGroup: string): CreateSubresource {
    return {
      group: authenticationGroup,
      version: 'v1',
      kind: 'TokenRequest',
      schema: objectSchema({
        spec: s.obj({
          audiences: s.listAtomic(s.str()),
          expirationSeconds: s.int(),
          boundObjectRef: s.obj({ kind: s.str(), apiVersion: s.str(), name: s.str(), uid: s.str() }),
        }),
        status: s.obj({ token: s.str(), expirationTimestamp: s.str() }),
      }),
      create: (object, request) =>
        this.createTokenRequest(object, request.namespace, request.name, authenticationGroup),
    };
  }

  private async createTokenRequest(
    object: ApiObject,
    namespace: string,
    name: string,
    group: string,
  ): Promise<ApiObject> {
    const spec = (object.spec ?? {}) as {
      audiences?: string[];
      expirationSeconds?: number;
      boundObjectRef?: { kind?: string; apiVersion?: string; name?: string; uid?: string };
    };
    let expirationSeconds = spec.expirationSeconds ?? expirationSecondsDefault;
    const causes: FieldError[] = [];
    if (expirationSeconds < expirationSecondsMin) {
      causes.push({
        type: 'FieldValueInvalid',
        field: 'spec.expirationSeconds',
        value: expirationSeconds,
        detail: 'may not specify a duration less than 10 minutes',
      });
    }
    if (expirationSeconds > expirationSecondsMax) {
      causes.push({
        type: 'FieldValueInvalid',
        field: 'spec.expirationSeconds',
        value: expirationSeconds,
        detail: 'may not specify a duration larger than 2^32 seconds',
      });
    }
    if (causes.length > 0) throw errors.invalid(group, 'TokenRequest', name, causes);
    const max = this.options.maxExpirationSeconds;
    if (max !== undefined && expirationSeconds > max) expirationSeconds = max;
    const account = await this.objects.get('serviceaccounts', namespace, name);
    if (account === undefined) throw errors.notFound({ group: '', resource: 'serviceaccounts' }, name);
    let bound: BoundObject | undefined;
    const ref = spec.boundObjectRef;
    if (ref !== undefined) {
      if (ref.kind !== 'Pod' && ref.kind !== 'Secret') {
        throw errors.badRequest(
          `cannot bind token to object of type ${ref.apiVersion ?? 'v1'}, Kind=${ref.kind ?? ''}`,
        );
      }
      const resource = ref.kind === 'Pod' ? 'pods' : 'secrets';
      const target = await this.objects.get(resource, namespace, ref.name ?? '');
      if (target === undefined) throw errors.notFound({ group: '', resource }, ref.name ?? '');
      const uid = String(target.metadata.uid ?? '');
      if (ref.uid !== undefined && ref.uid !== '' && ref.uid !== uid) {
        throw new ApiError(
          'Conflict',
          `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
      }
      if (ref.kind === 'Pod') {
        const podAccount =
          (target.spec as { serviceAccountName?: string } | undefined)?.serviceAccountName ?? 'default';
        if (podAccount !== name) {
          throw errors.badRequest(
            `cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`,
          );
        }
      }
      bound = { kind: ref.kind, name: ref.name ?? '', uid };
    }
    const audiences =
      spec.audiences !== undefined && spec.audiences.length > 0 ? spec.audiences : [...this.apiAudiences];
    const { token, expiresAtMs } = await this.issue(
      { namespace, name, uid: String(account.metadata.uid ?? '') },
      audiences,
      expirationSeconds,
      bound,
    );
    return {
      metadata: { name, namespace, creationTimestamp: timestamp(this.options.nowMs()) },
      spec: {
        audiences,
        expirationSeconds,
        ...(bound === undefined
          ? {}
          : { boundObjectRef: { kind: bound.kind, apiVersion: 'v1', name: bound.name, uid: bound.uid } }),
      },
      status: { token, expirationTimestamp: timestamp(expiresAtMs) },
    };
  }
}
