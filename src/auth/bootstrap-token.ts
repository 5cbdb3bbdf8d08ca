// Bootstrap tokens (--enable-bootstrap-token-auth): `<6 [a-z0-9]>.<16 [a-z0-9]>` bearer tokens backed by secrets
// `bootstrap-token-<id>` of type `bootstrap.DOMAIN/token` in kube-system. Every key is checked: the id and
// secret match, usage-bootstrap-authentication is "true", the expiration (RFC 3339) is in the future, and each
// auth-extra-groups entry is a system:bootstrappers:* group. User system:bootstrap:<id>, group
// system:bootstrappers plus the extra groups.

import { timingSafeEqual } from 'node:crypto';
import type { ApiObject } from '../apimachinery/meta.js';
import type { ObjectLookup } from './service-account.js';
import type { AuthenticationResult, TokenAuthenticator } from './user.js';

export const bootstrapTokenPattern = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
export const bootstrapSecretPrefix = 'bootstrap-token-';
const extraGroupPattern = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** `bootstrap.kubernetes.io/token` with --group-domain=k8s.io, `bootstrap.svc.io/token` by default. */
export function bootstrapSecretType(domainPrefix: string): string {
  return `bootstrap.${domainPrefix}/token`;
}

/** The decoded data of a secret (base64 values). */
export function secretData(secret: ApiObject): Record<string, string> {
  const data = (secret.data ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data))
    if (typeof v === 'string') out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

export interface BootstrapToken {
  readonly id: string;
  readonly secret: string;
  readonly expiresAtMs?: number;
  readonly authentication: boolean;
  readonly signing: boolean;
  readonly extraGroups: readonly string[];
}

/** A bootstrap token secret checked key by key; a string says what is wrong. */
export function parseBootstrapSecret(secret: ApiObject, domainPrefix: string): BootstrapToken | string {
  const name = secret.metadata.name ?? '';
  if (secret.type !== bootstrapSecretType(domainPrefix))
    return `secret ${name} has type ${String(secret.type)}`;
  if (secret.metadata.deletionTimestamp !== undefined) return `secret ${name} is being deleted`;
  const data = secretData(secret);
  const id = data['token-id'] ?? '';
  const tokenSecret = data['token-secret'] ?? '';
  if (!/^[a-z0-9]{6}$/.test(id)) return `secret ${name}: token-id must be 6 characters of [a-z0-9]`;
  if (name !== `${bootstrapSecretPrefix}${id}`) return `secret ${name}: name does not match token-id ${id}`;
  if (!/^[a-z0-9]{16}$/.test(tokenSecret))
    return `secret ${name}: token-secret must be 16 characters of [a-z0-9]`;
  let expiresAtMs: number | undefined;
  const expiration = data.expiration;
  if (expiration !== undefined) {
    expiresAtMs = Date.parse(expiration);
    if (
      !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(expiration) ||
      Number.isNaN(expiresAtMs)
    )
      return `secret ${name}: expiration "${expiration}" is not an RFC 3339 time`;
  }
  const extraGroups = (data['auth-extra-groups'] ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g !== '');
  const bad = extraGroups.find((g) => !extraGroupPattern.test(g));
  if (bad !== undefined)
    return `secret ${name}: auth-extra-groups entry "${bad}" must start with system:bootstrappers:`;
  return {
    id,
    secret: tokenSecret,
    ...(expiresAtMs === undefined ? {} : { expiresAtMs }),
    authentication: data['usage-bootstrap-authentication'] === 'true',
    signing: data['usage-bootstrap-signing'] === 'true',
    extraGroups,
  };
}

export class BootstrapTokenAuthenticator implements TokenAuthenticator {
  readonly name = 'bootstrap-token';

  constructor(
    private readonly objects: ObjectLookup,
    private readonly domainPrefix: string,
    private readonly nowMs: () => number,
  ) {}

  async authenticateToken(token: string): Promise<AuthenticationResult> {
    const m = bootstrapTokenPattern.exec(token);
    if (m === null) return { kind: 'none' };
    const [, id = '', given = ''] = m;
    const secret = await this.objects.get('secrets', 'kube-system', `${bootstrapSecretPrefix}${id}`);
    if (secret === undefined)
      return { kind: 'invalid', reason: `no bootstrap token secret for token id ${id}` };
    const parsed = parseBootstrapSecret(secret, this.domainPrefix);
    if (typeof parsed === 'string') return { kind: 'invalid', reason: parsed };
    const a = Buffer.from(parsed.secret);
    const b = Buffer.from(given);
    if (a.length !== b.length || !timingSafeEqual(a, b))
      return { kind: 'invalid', reason: 'bootstrap token secret does not match' };
    if (parsed.expiresAtMs !== undefined && parsed.expiresAtMs <= this.nowMs())
      return { kind: 'invalid', reason: `bootstrap token ${id} has expired` };
    if (!parsed.authentication)
      return { kind: 'invalid', reason: `bootstrap token ${id} is not usable for authentication` };
    return {
      kind: 'user',
      user: {
        name: `system:bootstrap:${id}`,
        uid: '',
        groups: ['system:bootstrappers', ...parsed.extraGroups],
        extra: {},
      },
    };
  }
}
