// --authentication-config: an AuthenticationConfiguration (apiserver.config.DOMAIN, v1alpha1/v1beta1/v1) with a
// `jwt` list of at most 64 issuers and an `anonymous` setting; or the same issuer built from the --oidc-* flags.
// Every error names the field (`jwt[0].issuer.url: Required value`). The file is read again when it changes
// (polled once a second); a changed file that does not validate is logged and the previous one stays.

import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import type { OidcFlags } from '../server/authn-flags.js';
import { compileCel, JwtAuthenticator, type ClaimOrExpression, type JwtIssuer } from './oidc.js';

export const jwtIssuersMax = 64;
const reloadPollMs = 1000;

export interface AuthenticationConfiguration {
  readonly jwt: readonly JwtIssuer[];
  readonly anonymous?: { readonly enabled: boolean; readonly paths: readonly string[] };
}

type Json = Record<string, unknown>;

function obj(value: unknown, field: string): Json {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${field}: Invalid value: must be an object`);
  return value as Json;
}

function arr(value: unknown, field: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Error(`${field}: Invalid value: must be a list`);
  return value;
}

function str(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new Error(`${field}: Invalid value: must be a string`);
  return value;
}

function https(url: string, field: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${field}: Invalid value: "${url}": must be a valid URL`);
  }
  if (parsed.protocol !== 'https:')
    throw new Error(`${field}: Invalid value: "${url}": must use https scheme`);
}

function claimOrExpression(
  value: Json,
  field: string,
  prefixRequired: boolean,
): ClaimOrExpression | undefined {
  const claim = str(value.claim, `${field}.claim`);
  const expression = str(value.expression, `${field}.expression`);
  const prefix = str(value.prefix, `${field}.prefix`);
  if (claim !== undefined && expression !== undefined)
    throw new Error(`${field}: Invalid value: claim and expression can't both be set`);
  if (expression !== undefined) {
    if (prefix !== undefined)
      throw new Error(`${field}.prefix: Invalid value: may not be specified when expression is set`);
    return { expression: compileCel(expression, `${field}.expression`) };
  }
  if (claim === undefined) return undefined;
  if (prefixRequired && prefix === undefined)
    throw new Error(
      `${field}.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing`,
    );
  return { claim, prefix: prefix ?? '' };
}

function parseIssuer(raw: unknown, field: string): JwtIssuer {
  const jwt = obj(raw, field);
  const issuer = obj(jwt.issuer, `${field}.issuer`);
  const url = str(issuer.url, `${field}.issuer.url`);
  if (url === undefined || url === '') throw new Error(`${field}.issuer.url: Required value`);
  https(url, `${field}.issuer.url`);
  const discoveryUrl = str(issuer.discoveryURL, `${field}.issuer.discoveryURL`);
  if (discoveryUrl !== undefined) {
    https(discoveryUrl, `${field}.issuer.discoveryURL`);
    if (discoveryUrl.replace(/\/$/, '') === url.replace(/\/$/, ''))
      throw new Error(
        `${field}.issuer.discoveryURL: Invalid value: "${discoveryUrl}": discoveryURL must be different from URL`,
      );
  }
  const audiences = arr(issuer.audiences, `${field}.issuer.audiences`).map((a, i) => {
    const s = str(a, `${field}.issuer.audiences[${i}]`);
    if (s === undefined || s === '') throw new Error(`${field}.issuer.audiences[${i}]: Required value`);
    return s;
  });
  if (audiences.length === 0)
    throw new Error(`${field}.issuer.audiences: Required value: at least one issuer.audiences is required`);
  const policy = str(issuer.audienceMatchPolicy, `${field}.issuer.audienceMatchPolicy`);
  if (audiences.length > 1 && policy !== 'MatchAny')
    throw new Error(
      `${field}.issuer.audienceMatchPolicy: Invalid value: "${policy ?? ''}": audienceMatchPolicy must be MatchAny for multiple audiences`,
    );
  const ca = str(issuer.certificateAuthority, `${field}.issuer.certificateAuthority`);
  const mappings = obj(jwt.claimMappings, `${field}.claimMappings`);
  const username = claimOrExpression(
    obj(mappings.username, `${field}.claimMappings.username`),
    `${field}.claimMappings.username`,
    true,
  );
  if (username === undefined)
    throw new Error(`${field}.claimMappings.username: Required value: claim or expression is required`);
  const groups = claimOrExpression(
    obj(mappings.groups, `${field}.claimMappings.groups`),
    `${field}.claimMappings.groups`,
    true,
  );
  const uidRaw = obj(mappings.uid, `${field}.claimMappings.uid`);
  const uid = claimOrExpression(uidRaw, `${field}.claimMappings.uid`, false);
  const extra = arr(mappings.extra, `${field}.claimMappings.extra`).map((e, i) => {
    const f = `${field}.claimMappings.extra[${i}]`;
    const entry = obj(e, f);
    const key = str(entry.key, `${f}.key`);
    if (key === undefined || key === '') throw new Error(`${f}.key: Required value`);
    if (key !== key.toLowerCase())
      throw new Error(`${f}.key: Invalid value: "${key}": key must be lowercase`);
    if (!/^[^/]+\.[^/]+\/.+$/.test(key))
      throw new Error(
        `${f}.key: Invalid value: "${key}": must be a domain-prefix path (such as "acme.io/foo")`,
      );
    const expression = str(entry.valueExpression, `${f}.valueExpression`);
    if (expression === undefined) throw new Error(`${f}.valueExpression: Required value`);
    return { key, value: compileCel(expression, `${f}.valueExpression`) };
  });
  const claimValidation = arr(jwt.claimValidationRules, `${field}.claimValidationRules`).map((r, i) => {
    const f = `${field}.claimValidationRules[${i}]`;
    const rule = obj(r, f);
    const claim = str(rule.claim, `${f}.claim`);
    const expression = str(rule.expression, `${f}.expression`);
    if (claim !== undefined && expression !== undefined)
      throw new Error(`${f}: Invalid value: claim and expression can't both be set`);
    if (claim !== undefined)
      return { claim, requiredValue: str(rule.requiredValue, `${f}.requiredValue`) ?? '' };
    if (expression === undefined) throw new Error(`${f}: Required value: claim or expression is required`);
    return {
      expression: compileCel(expression, `${f}.expression`),
      message: str(rule.message, `${f}.message`) ?? '',
    };
  });
  const userValidation = arr(jwt.userValidationRules, `${field}.userValidationRules`).map((r, i) => {
    const f = `${field}.userValidationRules[${i}]`;
    const rule = obj(r, f);
    const expression = str(rule.expression, `${f}.expression`);
    if (expression === undefined) throw new Error(`${f}.expression: Required value`);
    return {
      expression: compileCel(expression, `${f}.expression`),
      message: str(rule.message, `${f}.message`) ?? '',
    };
  });
  return {
    url,
    ...(discoveryUrl === undefined ? {} : { discoveryUrl }),
    ...(ca === undefined ? {} : { caPem: ca }),
    audiences,
    signingAlgs: [],
    claimValidation,
    username,
    usernameIsEmail: 'claim' in username && username.claim === 'email',
    ...(groups === undefined ? {} : { groups }),
    ...(uid === undefined
      ? {}
      : { uid: 'claim' in uid ? { claim: uid.claim } : { expression: uid.expression } }),
    extra,
    userValidation,
  };
}

/** Parses and validates the file's text; `groupDomain` names the accepted apiVersion group. */
export function parseAuthenticationConfiguration(
  text: string,
  groupDomain: string,
): AuthenticationConfiguration {
  let doc: Json;
  try {
    doc = obj(parseYaml(text) as unknown, 'file');
  } catch (error) {
    throw new Error(`not YAML or JSON: ${(error as Error).message}`);
  }
  const groups = new Set([`apiserver.config.${groupDomain}`, 'apiserver.config.k8s.io']);
  const apiVersion = str(doc.apiVersion, 'apiVersion') ?? '';
  const [group = '', version = ''] = apiVersion.split('/');
  if (!groups.has(group) || !['v1alpha1', 'v1beta1', 'v1'].includes(version))
    throw new Error(
      `apiVersion: Unsupported value: "${apiVersion}": supported values: "apiserver.config.${groupDomain}/v1beta1", "apiserver.config.${groupDomain}/v1"`,
    );
  if (doc.kind !== 'AuthenticationConfiguration')
    throw new Error(
      `kind: Unsupported value: "${String(doc.kind)}": supported values: "AuthenticationConfiguration"`,
    );
  const list = arr(doc.jwt, 'jwt');
  if (list.length > jwtIssuersMax)
    throw new Error(`jwt: Too many: ${list.length}: must have at most ${jwtIssuersMax} items`);
  const jwt = list.map((j, i) => parseIssuer(j, `jwt[${i}]`));
  const seen = new Set<string>();
  jwt.forEach((j, i) => {
    if (seen.has(j.url)) throw new Error(`jwt[${i}].issuer.url: Duplicate value: "${j.url}"`);
    seen.add(j.url);
  });
  if (doc.anonymous === undefined) return { jwt };
  const anonymous = obj(doc.anonymous, 'anonymous');
  const enabled = anonymous.enabled;
  if (typeof enabled !== 'boolean')
    throw new Error('anonymous.enabled: Required value: must be true or false');
  const paths = arr(anonymous.conditions, 'anonymous.conditions').map((c, i) => {
    const path = str(obj(c, `anonymous.conditions[${i}]`).path, `anonymous.conditions[${i}].path`);
    if (path === undefined || path === '') throw new Error(`anonymous.conditions[${i}].path: Required value`);
    return path;
  });
  if (!enabled && paths.length > 0)
    throw new Error(
      'anonymous.conditions: Invalid value: enabled should be set to true when conditions are defined',
    );
  return { jwt, anonymous: { enabled, paths } };
}

/** The issuer the --oidc-* flags describe. */
export function issuerFromFlags(flags: OidcFlags, caPem: string | undefined): JwtIssuer {
  const prefix =
    flags.usernamePrefix === '-'
      ? ''
      : (flags.usernamePrefix ?? (flags.usernameClaim === 'email' ? '' : `${flags.issuerUrl}#`));
  return {
    url: flags.issuerUrl,
    ...(caPem === undefined ? {} : { caPem }),
    audiences: [flags.clientId],
    signingAlgs: flags.signingAlgs,
    claimValidation: [...flags.requiredClaims].map(([claim, requiredValue]) => ({ claim, requiredValue })),
    username: { claim: flags.usernameClaim, prefix },
    usernameIsEmail: flags.usernameClaim === 'email',
    ...(flags.groupsClaim === undefined
      ? {}
      : { groups: { claim: flags.groupsClaim, prefix: flags.groupsPrefix ?? '' } }),
    extra: [],
    userValidation: [],
  };
}

/** Polls the file; calls `changed` with each new valid configuration, `failed` with a new invalid one. */
export function watchAuthenticationConfiguration(
  path: string,
  initialText: string,
  groupDomain: string,
  changed: (config: AuthenticationConfiguration, authenticators: JwtAuthenticator[]) => void,
  failed: (error: Error) => void,
): { close(): void } {
  let last = initialText;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    readFile(path, 'utf8')
      .then((text) => {
        if (text === last) return;
        last = text;
        const config = parseAuthenticationConfiguration(text, groupDomain);
        changed(
          config,
          config.jwt.map((issuer) => new JwtAuthenticator(issuer)),
        );
      })
      .catch((error: unknown) => failed(error as Error))
      .finally(() => {
        busy = false;
      });
  }, reloadPollMs);
  timer.unref();
  return { close: () => clearInterval(timer) };
}
