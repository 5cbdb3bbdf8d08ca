// The authentication flags of `stoa serve`, with kube-apiserver's names. Parsed here (not where files are read):
// combinations that cannot work are refused at once with a message naming the flags.

import { FlagError } from './flag-error.js';

export interface AuthenticationFlags {
  /** --anonymous-auth; undefined = not given (default on, unless the configuration file says otherwise). */
  readonly anonymousAuth?: boolean;
  readonly enableBootstrapTokenAuth: boolean;
  readonly serviceAccountKeyFiles: readonly string[];
  readonly serviceAccountSigningKeyFile?: string;
  readonly serviceAccountIssuers: readonly string[];
  readonly serviceAccountLookup: boolean;
  readonly serviceAccountMaxTokenExpirationMs?: number;
  readonly apiAudiences: readonly string[];
  readonly oidc?: OidcFlags;
  readonly authenticationConfig?: string;
  readonly requestHeader?: RequestHeaderFlags;
  readonly webhook?: {
    readonly configFile: string;
    readonly cacheTtlMs: number;
    readonly version: 'v1' | 'v1beta1';
  };
  /** --controllers: '*' and names, `-name` disables (tokencleaner and bootstrapsigner are off under '*'). */
  readonly controllers: readonly string[];
}

export interface OidcFlags {
  readonly issuerUrl: string;
  readonly clientId: string;
  readonly usernameClaim: string;
  readonly usernamePrefix?: string;
  readonly groupsClaim?: string;
  readonly groupsPrefix?: string;
  readonly requiredClaims: ReadonlyMap<string, string>;
  readonly caFile?: string;
  readonly signingAlgs: readonly string[];
}

export interface RequestHeaderFlags {
  readonly clientCaFile: string;
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

export const authenticationFlagNames = [
  'anonymous-auth',
  'enable-bootstrap-token-auth',
  'service-account-key-file',
  'service-account-signing-key-file',
  'service-account-issuer',
  'service-account-lookup',
  'service-account-max-token-expiration',
  'api-audiences',
  'oidc-issuer-url',
  'oidc-client-id',
  'oidc-username-claim',
  'oidc-username-prefix',
  'oidc-groups-claim',
  'oidc-groups-prefix',
  'oidc-required-claim',
  'oidc-ca-file',
  'oidc-signing-algs',
  'authentication-config',
  'requestheader-client-ca-file',
  'requestheader-allowed-names',
  'requestheader-username-headers',
  'requestheader-group-headers',
  'requestheader-extra-headers-prefix',
  'authentication-token-webhook-config-file',
  'authentication-token-webhook-cache-ttl',
  'authentication-token-webhook-version',
  'controllers',
] as const;

/** Flags that take no value (`--flag` means true; `--flag=false` is accepted). */
export const authenticationBoolFlags = new Set([
  'anonymous-auth',
  'enable-bootstrap-token-auth',
  'service-account-lookup',
]);

export const authenticationUsage = `
authentication flags (kube-apiserver's names; docs/authentication.md):
  --client-ca-file FILE                  CA bundle (one or more CAs) for client certificates: CN = user, O = groups
  --token-auth-file FILE                 static tokens: CSV token,user,uid[,"group1,group2"]
  --anonymous-auth[=false]               requests without credentials are system:anonymous (default true)
  --enable-bootstrap-token-auth          bootstrap tokens (secrets bootstrap-token-<id> in kube-system)
  --controllers LIST                     *,tokencleaner,bootstrapsigner: the bootstrap token controllers
  --service-account-signing-key-file F   private key (RSA or ECDSA PEM) that signs service account tokens
  --service-account-key-file FILE        public or private keys that verify them (repeatable; default: the TLS key)
  --service-account-issuer URL           iss of issued tokens (repeatable: the first issues, all are accepted)
  --service-account-lookup[=false]       refuse tokens whose account or bound object is gone (default true)
  --service-account-max-token-expiration D  cap on TokenRequest expirationSeconds
  --api-audiences A,B                    audiences API tokens must carry (default: the issuers)
  --oidc-issuer-url URL                  OpenID Connect issuer (https); with --oidc-client-id
  --oidc-client-id ID                    the audience of ID tokens
  --oidc-username-claim C                default sub
  --oidc-username-prefix P               default "<issuer>#" unless the claim is email; "-" = none
  --oidc-groups-claim C, --oidc-groups-prefix P
  --oidc-required-claim K=V              repeatable
  --oidc-ca-file FILE                    CA of the issuer (default: system roots)
  --oidc-signing-algs A,B                default RS256
  --authentication-config FILE           AuthenticationConfiguration (jwt issuers, anonymous); reloaded on change
  --requestheader-client-ca-file FILE    CA of the authenticating proxy's client certificate
  --requestheader-allowed-names N,...    allowed proxy certificate CNs (default any)
  --requestheader-username-headers H,... (default X-Remote-User)
  --requestheader-group-headers H,...    (default X-Remote-Group)
  --requestheader-extra-headers-prefix P (default X-Remote-Extra-)
  --authentication-token-webhook-config-file FILE  kubeconfig of a TokenReview webhook
  --authentication-token-webhook-cache-ttl D       cache of its answers (default 2m)
  --authentication-token-webhook-version V         v1 (default) or v1beta1`;

function parseBool(text: string, flag: string): boolean {
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw new FlagError(`invalid value "${text}" for flag --${flag}: must be true or false`);
}

function list(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function parseAuthenticationFlags(
  get: (name: string) => string | undefined,
  getAll: (name: string) => readonly string[],
  parseDuration: (text: string, flag: string) => number,
): AuthenticationFlags {
  const anonymous = get('anonymous-auth');
  const maxExpiration = get('service-account-max-token-expiration');
  const oidcNames = authenticationFlagNames.filter((n) => n.startsWith('oidc-'));
  const oidcGiven = oidcNames.filter((n) => get(n) !== undefined);
  const config = get('authentication-config');
  if (config !== undefined && oidcGiven.length > 0) {
    throw new FlagError(
      `authentication-config file and oidc-* flags are mutually exclusive: --authentication-config was given with --${oidcGiven.join(', --')}`,
    );
  }
  let oidc: OidcFlags | undefined;
  if (oidcGiven.length > 0) {
    const issuerUrl = get('oidc-issuer-url');
    const clientId = get('oidc-client-id');
    if (issuerUrl === undefined || clientId === undefined) {
      throw new FlagError(
        '--oidc-issuer-url and --oidc-client-id must be given together with any --oidc-* flag',
      );
    }
    let url: URL;
    try {
      url = new URL(issuerUrl);
    } catch {
      throw new FlagError(`invalid value "${issuerUrl}" for flag --oidc-issuer-url: not a URL`);
    }
    if (url.protocol !== 'https:')
      throw new FlagError(
        `invalid value "${issuerUrl}" for flag --oidc-issuer-url: must use the https scheme`,
      );
    const requiredClaims = new Map<string, string>();
    for (const pair of getAll('oidc-required-claim').flatMap(list)) {
      const eq = pair.indexOf('=');
      if (eq <= 0)
        throw new FlagError(`invalid value "${pair}" for flag --oidc-required-claim: must be key=value`);
      requiredClaims.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const optional = (flag: string, key: string): Record<string, string> => {
      const v = get(flag);
      return v === undefined ? {} : { [key]: v };
    };
    oidc = {
      issuerUrl,
      clientId,
      usernameClaim: get('oidc-username-claim') ?? 'sub',
      ...optional('oidc-username-prefix', 'usernamePrefix'),
      ...optional('oidc-groups-claim', 'groupsClaim'),
      ...optional('oidc-groups-prefix', 'groupsPrefix'),
      ...optional('oidc-ca-file', 'caFile'),
      requiredClaims,
      signingAlgs: list(get('oidc-signing-algs') ?? 'RS256'),
    };
  }
  const requestHeaderCa = get('requestheader-client-ca-file');
  const requestHeaderOthers = [
    'requestheader-allowed-names',
    'requestheader-username-headers',
    'requestheader-group-headers',
    'requestheader-extra-headers-prefix',
  ].filter((n) => get(n) !== undefined);
  if (requestHeaderCa === undefined && requestHeaderOthers.length > 0) {
    throw new FlagError(`--${requestHeaderOthers[0] ?? ''} needs --requestheader-client-ca-file`);
  }
  const webhookFile = get('authentication-token-webhook-config-file');
  const webhookVersion = get('authentication-token-webhook-version') ?? 'v1';
  if (webhookVersion !== 'v1' && webhookVersion !== 'v1beta1') {
    throw new FlagError(
      `invalid value "${webhookVersion}" for flag --authentication-token-webhook-version: must be v1 or v1beta1`,
    );
  }
  return {
    ...(anonymous === undefined ? {} : { anonymousAuth: parseBool(anonymous, 'anonymous-auth') }),
    enableBootstrapTokenAuth: parseBool(
      get('enable-bootstrap-token-auth') ?? 'false',
      'enable-bootstrap-token-auth',
    ),
    serviceAccountKeyFiles: getAll('service-account-key-file'),
    ...(get('service-account-signing-key-file') === undefined
      ? {}
      : { serviceAccountSigningKeyFile: get('service-account-signing-key-file') as string }),
    serviceAccountIssuers: getAll('service-account-issuer'),
    serviceAccountLookup: parseBool(get('service-account-lookup') ?? 'true', 'service-account-lookup'),
    ...(maxExpiration === undefined
      ? {}
      : {
          serviceAccountMaxTokenExpirationMs: parseDuration(
            maxExpiration,
            'service-account-max-token-expiration',
          ),
        }),
    apiAudiences: list(get('api-audiences')),
    ...(oidc === undefined ? {} : { oidc }),
    ...(config === undefined ? {} : { authenticationConfig: config }),
    ...(requestHeaderCa === undefined
      ? {}
      : {
          requestHeader: {
            clientCaFile: requestHeaderCa,
            allowedNames: list(get('requestheader-allowed-names')),
            usernameHeaders: list(get('requestheader-username-headers') ?? 'X-Remote-User'),
            groupHeaders: list(get('requestheader-group-headers') ?? 'X-Remote-Group'),
            extraHeaderPrefixes: list(get('requestheader-extra-headers-prefix') ?? 'X-Remote-Extra-'),
          },
        }),
    ...(webhookFile === undefined
      ? {}
      : {
          webhook: {
            configFile: webhookFile,
            cacheTtlMs: parseDuration(
              get('authentication-token-webhook-cache-ttl') ?? '2m',
              'authentication-token-webhook-cache-ttl',
            ),
            version: webhookVersion,
          },
        }),
    controllers: list(get('controllers') ?? '*'),
  };
}

/** Whether --controllers turns a controller on (`*` = the default set, which leaves the bootstrap ones off). */
export function controllerEnabled(
  controllers: readonly string[],
  name: string,
  onByDefault: boolean,
): boolean {
  if (controllers.includes(`-${name}`)) return false;
  if (controllers.includes(name)) return true;
  return controllers.includes('*') && onByDefault;
}
