// The bootstrap token controllers (--controllers=*,tokencleaner,bootstrapsigner). The token cleaner deletes
// bootstrap token secrets whose expiration has passed. The bootstrap signer keeps the `cluster-info` ConfigMap
// in kube-public: `kubeconfig` (the server and its CA) and one `jws-kubeconfig-<id>` per valid signing token,
// a detached JWS (HS256, the full token as key, kid = the token id) over the kubeconfig. One actor: syncs run
// one at a time, on changes to secrets or the config map, and on a timer for expirations.

import { CompactSign } from 'jose';
import type { Logger } from 'pino';
import { stringify } from 'yaml';
import type { ApiObject } from '../apimachinery/meta.js';
import { ApiError } from '../apimachinery/status.js';
import { bootstrapSecretPrefix, parseBootstrapSecret } from '../auth/bootstrap-token.js';
import type { Registries } from '../registry/index.js';
import type { ResourceRegistry } from '../registry/store.js';

const resyncIntervalMs = 5000;
const jwsKeyPrefix = 'jws-kubeconfig-';

export interface BootstrapControllerOptions {
  readonly cleaner: boolean;
  readonly signer: boolean;
  readonly domainPrefix: string;
  /** The server URL and CA written into cluster-info's kubeconfig. */
  readonly serverUrl: () => string;
  readonly caPem: string;
  readonly nowMs: () => number;
}

/** A detached JWS: the compact serialization with its payload removed (`header..signature`). */
export async function detachedSignature(
  content: string,
  tokenId: string,
  tokenSecret: string,
): Promise<string> {
  const jws = await new CompactSign(new TextEncoder().encode(content))
    .setProtectedHeader({ alg: 'HS256', kid: tokenId })
    .sign(new TextEncoder().encode(`${tokenId}.${tokenSecret}`));
  const [header, , signature] = jws.split('.');
  return `${header ?? ''}..${signature ?? ''}`;
}

export function clusterInfoKubeconfig(serverUrl: string, caPem: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: '',
        cluster: { 'certificate-authority-data': Buffer.from(caPem).toString('base64'), server: serverUrl },
      },
    ],
    contexts: null,
    'current-context': '',
    preferences: {},
    users: null,
  });
}

export class BootstrapControllers {
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribes: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly secrets: ResourceRegistry;
  private readonly configMaps: ResourceRegistry;

  constructor(
    registries: Registries,
    private readonly options: BootstrapControllerOptions,
    private readonly logger: Logger,
  ) {
    const secrets = registries.find('', 'v1', 'secrets');
    const configMaps = registries.find('', 'v1', 'configmaps');
    if (secrets === undefined || configMaps === undefined)
      throw new Error('secrets and configmaps must be registered');
    this.secrets = secrets;
    this.configMaps = configMaps;
  }

  start(): void {
    if (!this.options.cleaner && !this.options.signer) return;
    for (const registry of [this.secrets, this.configMaps]) {
      const sub = registry.cache.subscribe(registry.cache.revision, () => this.kick());
      this.unsubscribes.push(sub.unsubscribe);
    }
    this.timer = setInterval(() => this.kick(), resyncIntervalMs);
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribes) u();
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.running;
  }

  /** Schedules a sync; a sync already running runs once more afterwards. */
  private kick(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.sync();
        } catch (error) {
          this.logger.warn({ err: error }, 'bootstrap token controllers: sync failed; will retry');
        }
      } while (this.again && !this.stopped);
      this.running = undefined;
    })();
  }

  private async sync(): Promise<void> {
    const now = this.options.nowMs();
    const entries = this.secrets.cache.snapshot(`${this.secrets.prefix}kube-system/`).entries;
    const signing: { id: string; secret: string }[] = [];
    for (const { object } of entries) {
      if (!(object.metadata.name ?? '').startsWith(bootstrapSecretPrefix)) continue;
      const token = parseBootstrapSecret(object, this.options.domainPrefix);
      if (typeof token === 'string') continue;
      const expired = token.expiresAtMs !== undefined && token.expiresAtMs <= now;
      if (expired && this.options.cleaner) {
        await this.ignoreNotFound(
          this.secrets.delete('kube-system', object.metadata.name ?? '', {
            dryRun: false,
            preconditions: { uid: object.metadata.uid ?? '' },
          }),
        );
        this.logger.info({ token: token.id }, 'tokencleaner: deleted an expired bootstrap token');
        continue;
      }
      if (!expired && token.signing) signing.push({ id: token.id, secret: token.secret });
    }
    if (this.options.signer) await this.sign(signing);
  }

  private async sign(tokens: readonly { id: string; secret: string }[]): Promise<void> {
    const current = this.configMaps.cache.get(this.configMaps.key('kube-public', 'cluster-info'))?.object;
    const data = { ...((current?.data ?? {}) as Record<string, string>) };
    const kubeconfig = data.kubeconfig ?? clusterInfoKubeconfig(this.options.serverUrl(), this.options.caPem);
    const wanted: Record<string, string> = { ...data, kubeconfig };
    for (const key of Object.keys(wanted)) if (key.startsWith(jwsKeyPrefix)) delete wanted[key];
    for (const t of tokens)
      wanted[`${jwsKeyPrefix}${t.id}`] = await detachedSignature(kubeconfig, t.id, t.secret);
    if (current !== undefined && sameData(data, wanted)) return;
    if (current === undefined) {
      await this.ignoreConflict(
        this.configMaps.create(
          'kube-public',
          { metadata: { name: 'cluster-info' }, data: wanted },
          { dryRun: false },
        ),
      );
      return;
    }
    const updated: ApiObject = { ...current, data: wanted };
    await this.ignoreConflict(
      this.configMaps.update('kube-public', 'cluster-info', updated, { dryRun: false, subresource: '' }),
    );
  }

  private async ignoreNotFound(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (error) {
      if (!(error instanceof ApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')))
        throw error;
    }
  }

  /** A concurrent writer won: the watch event it causes brings the next sync. */
  private async ignoreConflict(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (error) {
      if (!(error instanceof ApiError && (error.reason === 'Conflict' || error.reason === 'AlreadyExists')))
        throw error;
      this.again = true;
    }
  }
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
