// The authorization flags of `stoa serve` (kube-apiserver's names), parsed and checked together:
// --authorization-mode (default Node,RBAC), --authorization-policy-file (ABAC), --authorization-webhook-*
// and --authorization-config (AuthorizationConfiguration file), which cannot be combined with the others.

import { FlagError } from './flag-error.js';

export const authorizerTypes = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'RBAC', 'Node', 'Webhook'] as const;
export type AuthorizerType = (typeof authorizerTypes)[number];

export interface AuthorizationFlags {
  readonly modes: readonly AuthorizerType[];
  readonly policyFile?: string;
  readonly webhookConfigFile?: string;
  readonly webhookVersion: 'v1' | 'v1beta1';
  readonly webhookAuthorizedTtlMs: number;
  readonly webhookUnauthorizedTtlMs: number;
  /** Set: the modes come from this AuthorizationConfiguration file instead of the flags above. */
  readonly configFile?: string;
}

export const authorizationFlagNames = [
  'authorization-mode',
  'authorization-policy-file',
  'authorization-webhook-config-file',
  'authorization-webhook-version',
  'authorization-webhook-cache-authorized-ttl',
  'authorization-webhook-cache-unauthorized-ttl',
  'authorization-config',
] as const;

export const authorizationUsage = `  --authorization-mode MODES              ordered, comma-separated: AlwaysAllow, AlwaysDeny, ABAC, RBAC, Node, Webhook (default Node,RBAC)
  --authorization-policy-file FILE       ABAC policy, one JSON object per line (mode ABAC)
  --authorization-webhook-config-file F  kubeconfig of the authorization webhook (mode Webhook)
  --authorization-webhook-version V      SubjectAccessReview version sent to the webhook: v1 or v1beta1 (default v1beta1)
  --authorization-webhook-cache-authorized-ttl D    cache of allowed webhook answers (default 5m0s)
  --authorization-webhook-cache-unauthorized-ttl D  cache of denied webhook answers (default 30s)
  --authorization-config FILE            AuthorizationConfiguration (apiserver.config.<domain>/v1); not with --authorization-*
`;

export function parseAuthorizationFlags(
  get: (name: string) => string | undefined,
  parseDuration: (text: string, flag: string) => number,
): AuthorizationFlags {
  const configFile = get('authorization-config');
  const webhookVersion = get('authorization-webhook-version') ?? 'v1beta1';
  if (webhookVersion !== 'v1' && webhookVersion !== 'v1beta1') {
    throw new FlagError(
      `invalid value "${webhookVersion}" for flag --authorization-webhook-version: must be v1 or v1beta1`,
    );
  }
  const common = {
    webhookVersion,
    webhookAuthorizedTtlMs: parseDuration(
      get('authorization-webhook-cache-authorized-ttl') ?? '5m',
      'authorization-webhook-cache-authorized-ttl',
    ),
    webhookUnauthorizedTtlMs: parseDuration(
      get('authorization-webhook-cache-unauthorized-ttl') ?? '30s',
      'authorization-webhook-cache-unauthorized-ttl',
    ),
  } as const;
  if (configFile !== undefined) {
    for (const name of authorizationFlagNames) {
      if (name !== 'authorization-config' && get(name) !== undefined) {
        throw new FlagError(`--${name} can not be specified when --authorization-config is specified`);
      }
    }
    return { modes: [], configFile, ...common };
  }
  const modes: AuthorizerType[] = [];
  for (const mode of (get('authorization-mode') ?? 'Node,RBAC').split(',').map((m) => m.trim())) {
    if (!(authorizerTypes as readonly string[]).includes(mode))
      throw new FlagError(`authorization-mode "${mode}" is not a valid mode`);
    if (modes.includes(mode as AuthorizerType))
      throw new FlagError(`authorization-mode "${mode}" has mode specified more than once`);
    modes.push(mode as AuthorizerType);
  }
  const policyFile = get('authorization-policy-file');
  const webhookConfigFile = get('authorization-webhook-config-file');
  if (modes.includes('ABAC') && policyFile === undefined)
    throw new FlagError("authorization-mode ABAC's authorization policy file not passed");
  if (!modes.includes('ABAC') && policyFile !== undefined)
    throw new FlagError('cannot specify --authorization-policy-file without mode ABAC');
  if (modes.includes('Webhook') && webhookConfigFile === undefined)
    throw new FlagError("authorization-mode Webhook's authorization config file not passed");
  if (!modes.includes('Webhook') && webhookConfigFile !== undefined)
    throw new FlagError('cannot specify --authorization-webhook-config-file without mode Webhook');
  return {
    modes,
    ...(policyFile === undefined ? {} : { policyFile }),
    ...(webhookConfigFile === undefined ? {} : { webhookConfigFile }),
    ...common,
  };
}
