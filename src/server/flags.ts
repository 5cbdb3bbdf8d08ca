// `stoa serve` flags, parsed in one place. Names are kube-apiserver's; unknown flags are an error naming the flag.

import { FlagError } from './flag-error.js';
import {
  parseDisabledMetrics,
  validateShowHiddenMetricsVersion,
  type MetricLifecycleFlags,
} from './metric-lifecycle.js';
import { servedRelease } from './version.js';
import { ApiEnablement, parseRuntimeConfig } from './runtime-config.js';
import { builtinKinds } from '../kinds/index.js';
import {
  clusterFlagNames,
  clusterUsage,
  parseClusterFlags,
  type ClusterServeOptions,
} from './cluster-flags.js';
import {
  authenticationBoolFlags,
  authenticationFlagNames,
  authenticationUsage,
  parseAuthenticationFlags,
  type AuthenticationFlags,
} from './authn-flags.js';
// ---- authorization flags (issue 7)
import {
  authorizationFlagNames,
  authorizationUsage,
  parseAuthorizationFlags,
  type AuthorizationFlags,
} from './authorization-flags.js';
// ---- end of authorization flags
import { auditBoolFlags, auditFlagNames, auditUsage, parseAuditFlags } from './audit-flags.js';
import type { AuditFlags } from '../audit/auditor.js';

export interface ServeOptions {
  readonly bindAddress: string;
  /** 0 = pick a free port (printed on start). */
  readonly securePort: number;
  readonly dataDir: string;
  readonly groupDomain: string;
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  readonly clientCaFile?: string;
  readonly tokenAuthFile?: string;
  readonly advertiseAddress?: string;
  readonly etcdServers: readonly string[];
  readonly serviceClusterIpRange: string;
  readonly featureGates: string;
  readonly maxRequestsInflight: number;
  readonly maxMutatingRequestsInflight: number;
  readonly shutdownDelayMs: number;
  readonly livezGracePeriodMs: number;
  /** Watch cache window: events kept per resource (below it a watch answers 410). */
  readonly watchCacheEventsMax: number;
  /** Store history kept before automatic compaction. */
  readonly storeRetentionMs?: number;
  readonly logLevel: string;
  /** Hidden (for tests): periodic watch bookmark interval instead of limits.apiWatchBookmarkIntervalMs. */
  readonly watchBookmarkIntervalMs?: number;
  /** --anonymous-auth, --oidc-*, --service-account-*, --requestheader-*, ... (src/server/authn-flags.ts). */
  readonly authentication: AuthenticationFlags;
  /** --authorization-mode and friends, or --authorization-config. */
  readonly authorization: AuthorizationFlags;
  /** --runtime-config, checked against the built-in kinds: which versions and resources are served. */
  readonly apiEnablement: ApiEnablement;
  /** --show-hidden-metrics-for-version and --disabled-metrics (the metric life cycle). */
  readonly metrics: MetricLifecycleFlags;
  /** --audit-policy-file and --audit-log-* (src/server/audit-flags.ts). */
  readonly audit: AuditFlags;
  /** Set when the node is a member of a replicated cluster (--initial-cluster given). */
  readonly cluster?: ClusterServeOptions;
}

export const serveUsage = `usage: stoa serve [flags]

flags:
  --bind-address IP                      address to serve on (default 127.0.0.1)
  --secure-port N                        HTTPS port (default 6443; 0 = pick a free port and print it)
  --data-dir DIR                         store, certificates and admin.kubeconfig (default ./data)
  --group-domain DOMAIN                  domain of built-in group names (default svc.io; k8s.io = Kubernetes' names)
  --tls-cert-file FILE                   serving certificate (default: generated in the data dir)
  --tls-private-key-file FILE            its key
  --client-ca-file FILE                  CA bundle for client certificates (default: the generated CA)
  --token-auth-file FILE                 static tokens: CSV token,user,uid[,"group1,group2"]
  --advertise-address IP                 address added to the generated serving certificate
  --etcd-servers URLS                    use an external etcd (comma-separated URLs) instead of the embedded store
  --service-cluster-ip-range CIDR        service cluster IPs (default 10.0.0.0/24)
  --feature-gates K=V,...                enable or disable feature gates
  --max-requests-inflight N              non-mutating requests in flight before 429 (default 400; 0 = no limit)
  --max-mutating-requests-inflight N     mutating requests in flight before 429 (default 200; 0 = no limit)
  --shutdown-delay-duration D            readyz fails this long before the server stops (default 0s)
  --livez-grace-period D                 startup time during which livez does not fail (default 0s)
  --watch-cache-size N                   events kept per resource in the watch cache (default 10000)
  --storage-retention D                  store history kept before compaction (default 5m)
  --v LEVEL                              log level: info, debug, warn (default info)
  --runtime-config K[=V],...             enable or disable API versions and resources: api/all|api/ga|api/beta|api/alpha=BOOL,
                                         GROUP/VERSION[=BOOL], GROUP/VERSION/RESOURCE[=BOOL] (core group: /v1)
  --show-hidden-metrics-for-version V    also expose metrics hidden in this release (only the previous minor, 1.31)
  --disabled-metrics NAMES               metrics not to expose (comma-separated, repeatable)
${authorizationUsage}${auditUsage}${authenticationUsage}
${clusterUsage}`;

export { FlagError };

/** Go duration syntax as kube-apiserver takes it: `70s`, `1m30s`, `500ms`, `0`. */
export function parseDuration(text: string, flag: string): number {
  if (text === '0') return 0;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text;
  while (rest !== '') {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (m === null) throw new FlagError(`invalid value "${text}" for flag --${flag}: not a duration`);
    total += Number(m[1]) * (units[m[2] ?? 's'] ?? 1000);
    rest = rest.slice(m[0].length);
  }
  return total;
}

function positiveDuration(text: string, flag: string): number {
  const ms = parseDuration(text, flag);
  if (ms <= 0) throw new FlagError(`invalid value "${text}" for flag --${flag}: must be positive`);
  return ms;
}

function parseInteger(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new FlagError(
      `invalid value "${text}" for flag --${flag}: must be an integer from ${min} to ${max}`,
    );
  }
  return n;
}

function parseMetricFlags(showHidden: string | undefined, disabled: readonly string[]): MetricLifecycleFlags {
  if (showHidden !== undefined) validateShowHiddenMetricsVersion(servedRelease, showHidden);
  const disabledMetrics = parseDisabledMetrics(disabled);
  return {
    ...(showHidden === undefined ? {} : { showHiddenMetricsForVersion: showHidden }),
    ...(disabledMetrics.length === 0 ? {} : { disabledMetrics }),
  };
}

export function parseServeFlags(argv: readonly string[]): ServeOptions | 'help' {
  const values = new Map<string, string>();
  const known = new Set([
    'bind-address',
    'secure-port',
    'data-dir',
    'group-domain',
    'tls-cert-file',
    'tls-private-key-file',
    'client-ca-file',
    'token-auth-file',
    'advertise-address',
    'etcd-servers',
    'service-cluster-ip-range',
    'feature-gates',
    'max-requests-inflight',
    'max-mutating-requests-inflight',
    'shutdown-delay-duration',
    'livez-grace-period',
    'watch-cache-size',
    'storage-retention',
    'v',
    'runtime-config',
    'show-hidden-metrics-for-version',
    'disabled-metrics',
    // Hidden, not in the usage: lets a test see periodic bookmarks without waiting a minute.
    'watch-bookmark-interval',
    ...authorizationFlagNames,
    ...auditFlagNames,
    ...clusterFlagNames,
    ...authenticationFlagNames,
  ]);
  // Repeatable flags (--service-account-key-file, --oidc-required-claim) keep every value; get() is the last.
  const repeated = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') return 'help';
    if (!arg.startsWith('-')) throw new FlagError(`unexpected argument "${arg}"`);
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    if (!known.has(name)) throw new FlagError(`unknown flag: --${name}`);
    let value: string | undefined = eq < 0 ? undefined : body.slice(eq + 1);
    if (value === undefined && (authenticationBoolFlags.has(name) || auditBoolFlags.has(name)))
      value = 'true';
    if (value === undefined) {
      value = argv[i + 1];
      if (value === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      i++;
    }
    values.set(name, value);
    repeated.set(name, [...(repeated.get(name) ?? []), value]);
  }
  const get = (name: string): string | undefined => values.get(name);
  const domain = get('group-domain') ?? 'svc.io';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(domain)) {
    throw new FlagError(
      `invalid value "${domain}" for flag --group-domain: must be a DNS domain such as svc.io`,
    );
  }
  const optional = (name: string): Record<string, string> => {
    const v = get(name);
    return v === undefined ? {} : { [name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())]: v };
  };
  const retention = get('storage-retention');
  const bookmarkInterval = get('watch-bookmark-interval');
  const cluster = parseClusterFlags(get);
  return {
    bindAddress: get('bind-address') ?? '127.0.0.1',
    securePort: parseInteger(get('secure-port') ?? '6443', 'secure-port', 0, 65535),
    dataDir: get('data-dir') ?? './data',
    groupDomain: domain,
    ...(optional('tls-cert-file') as { tlsCertFile?: string }),
    ...(optional('tls-private-key-file') as { tlsPrivateKeyFile?: string }),
    ...(optional('client-ca-file') as { clientCaFile?: string }),
    ...(optional('token-auth-file') as { tokenAuthFile?: string }),
    ...(optional('advertise-address') as { advertiseAddress?: string }),
    etcdServers: (get('etcd-servers') ?? '').split(',').filter((s) => s !== ''),
    serviceClusterIpRange: get('service-cluster-ip-range') ?? '10.0.0.0/24',
    featureGates: get('feature-gates') ?? '',
    maxRequestsInflight: parseInteger(
      get('max-requests-inflight') ?? '400',
      'max-requests-inflight',
      0,
      1_000_000,
    ),
    maxMutatingRequestsInflight: parseInteger(
      get('max-mutating-requests-inflight') ?? '200',
      'max-mutating-requests-inflight',
      0,
      1_000_000,
    ),
    shutdownDelayMs: parseDuration(get('shutdown-delay-duration') ?? '0', 'shutdown-delay-duration'),
    livezGracePeriodMs: parseDuration(get('livez-grace-period') ?? '0', 'livez-grace-period'),
    watchCacheEventsMax: parseInteger(get('watch-cache-size') ?? '10000', 'watch-cache-size', 10, 10_000_000),
    ...(retention === undefined ? {} : { storeRetentionMs: parseDuration(retention, 'storage-retention') }),
    logLevel: get('v') ?? 'info',
    ...(bookmarkInterval === undefined
      ? {}
      : { watchBookmarkIntervalMs: positiveDuration(bookmarkInterval, 'watch-bookmark-interval') }),
    apiEnablement: ApiEnablement.resolve(
      parseRuntimeConfig(repeated.get('runtime-config') ?? []),
      () => builtinKinds({ groupDomain: domain, serviceClusterIpRange: '10.0.0.0/24' }), // only groups and versions are read
    ),
    metrics: parseMetricFlags(get('show-hidden-metrics-for-version'), repeated.get('disabled-metrics') ?? []),
    authentication: parseAuthenticationFlags(get, (name) => repeated.get(name) ?? [], parseDuration),
    authorization: parseAuthorizationFlags(get, parseDuration),
    audit: parseAuditFlags(get, domain),
    ...(cluster === undefined ? {} : { cluster }),
  };
}
