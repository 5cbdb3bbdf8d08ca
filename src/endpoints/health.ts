// Health endpoints (spec 4.5): /healthz, /livez, /readyz, each check on its own path, `verbose`, `exclude`.
// During --livez-grace-period, livez counts unfinished start-up hooks as healthy; after shutdown begins, readyz
// fails its `shutdown` check first (for --shutdown-delay-duration) while livez stays healthy.

export interface HealthCheck {
  readonly name: string;
  readonly check: () => Promise<void>;
  /** Only part of /readyz (as kube-apiserver's etcd-readiness): failing it takes the server out of rotation. */
  readonly readyzOnly?: boolean;
}

export type HealthEndpoint = 'healthz' | 'livez' | 'readyz';

export interface HealthResult {
  readonly code: number;
  readonly body: string;
}

export class Health {
  private readonly hooksDone = new Set<string>();
  private shuttingDown = false;
  private readonly startedMs: number;

  constructor(
    private readonly base: readonly HealthCheck[],
    private readonly hookNames: readonly string[],
    private readonly livezGracePeriodMs: number,
    private readonly nowMs: () => number,
  ) {
    this.startedMs = nowMs();
  }

  hookCompleted(name: string): void {
    this.hooksDone.add(name);
  }

  beginShutdown(): void {
    this.shuttingDown = true;
  }

  private checks(endpoint: HealthEndpoint): HealthCheck[] {
    const inGrace = endpoint === 'livez' && this.nowMs() - this.startedMs < this.livezGracePeriodMs;
    const hooks = this.hookNames.map((name) => ({
      name: `poststarthook/${name}`,
      check: async () => {
        if (!this.hooksDone.has(name) && !inGrace) throw new Error('not finished');
      },
    }));
    const base = this.base.filter((check) => check.readyzOnly !== true || endpoint === 'readyz');
    const out: HealthCheck[] = [...base, ...hooks];
    if (endpoint === 'readyz') {
      out.push({
        name: 'shutdown',
        check: async () => {
          if (this.shuttingDown) throw new Error('process is shutting down');
        },
      });
    }
    return out;
  }

  async serve(endpoint: HealthEndpoint, checkName: string, query: URLSearchParams): Promise<HealthResult> {
    const checks = this.checks(endpoint);
    if (checkName !== '') {
      const check = checks.find((c) => c.name === checkName);
      if (check === undefined) return { code: 404, body: '404 page not found\n' };
      try {
        await check.check();
        return { code: 200, body: 'ok' };
      } catch {
        return { code: 500, body: `internal server error: ${check.name} check failed\n` };
      }
    }
    const excluded = new Set(query.getAll('exclude'));
    const verbose = query.has('verbose') && query.get('verbose') !== 'false';
    const lines: string[] = [];
    let failed = false;
    for (const check of checks) {
      if (excluded.has(check.name)) {
        lines.push(`[+]${check.name} excluded: ok`);
        excluded.delete(check.name);
        continue;
      }
      try {
        await check.check();
        lines.push(`[+]${check.name} ok`);
      } catch {
        failed = true;
        lines.push(`[-]${check.name} failed: reason withheld`);
      }
    }
    if (excluded.size > 0) {
      lines.push(
        `warn: some health checks cannot be excluded: no matches for ${[...excluded].map((e) => `"${e}"`).join(',')}`,
      );
    }
    if (failed) return { code: 500, body: `${lines.join('\n')}\n${endpoint} check failed\n` };
    if (!verbose) return { code: 200, body: 'ok' };
    return { code: 200, body: `${lines.join('\n')}\n${endpoint} check passed\n` };
  }
}
