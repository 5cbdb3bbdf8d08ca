// The metric life cycle of kube-apiserver (spec 3.5, component-base/metrics): every metric is declared with a
// stability level that prefixes its help text (`[STABLE] ...`); a deprecated metric's help also says since
// when (`[ALPHA] (Deprecated since 1.29.0) ...`) and it stays registered; three minor releases after its
// deprecated version it is hidden (not registered) unless `--show-hidden-metrics-for-version` names the
// previous minor release; `--disabled-metrics` hides metrics by name and wins over showing hidden ones.
// Meta metrics count what was registered, hidden and disabled.

import { Counter, type Registry } from 'prom-client';
import { unreachable } from '../util/assert.js';
import { FlagError } from './flag-error.js';

export type StabilityLevel = 'INTERNAL' | 'ALPHA' | 'BETA' | 'STABLE';

export interface Lifecycle {
  readonly stabilityLevel: StabilityLevel;
  /** `major.minor.patch`: the release in which the metric was deprecated. */
  readonly deprecatedVersion?: string;
}

export interface MetricLifecycleFlags {
  /** `--show-hidden-metrics-for-version`: only the previous minor release (`1.31` for 1.32) is accepted. */
  readonly showHiddenMetricsForVersion?: string;
  /** `--disabled-metrics`: fully qualified names of metrics not to register. */
  readonly disabledMetrics?: readonly string[];
}

export interface ReleaseVersion {
  readonly major: number;
  readonly minor: number;
}

/** Minor releases after its deprecated version at which a metric is hidden (spec 3.5: "current minus 3"). */
export const hiddenAfterMinorReleases = 3;

/** kube-apiserver's check of the flag: the previous minor release or nothing. */
export function validateShowHiddenMetricsVersion(current: ReleaseVersion, value: string): void {
  if (value === '') return;
  const valid = `${current.major}.${current.minor - 1}`;
  if (value !== valid) {
    throw new FlagError(
      `--show-hidden-metrics-for-version must be omitted or have the value '${valid}'. ` +
        'Only the previous minor version is meaningful, other values are not allowed.',
    );
  }
}

/** The metric names `--disabled-metrics` takes: comma-separated, repeatable. */
export function parseDisabledMetrics(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

function parseVersion(text: string): { major: number; minor: number; patch: number } {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text);
  if (m === null)
    throw new Error(`metric deprecated version ${JSON.stringify(text)} is not major.minor.patch`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

export type MetricState = 'registered' | 'hidden' | 'disabled';

/** What becomes of a metric with this life cycle in this release. */
export function metricState(
  name: string,
  life: Lifecycle,
  current: ReleaseVersion,
  flags: MetricLifecycleFlags,
): { state: MetricState; deprecated: boolean } {
  if (flags.disabledMetrics?.includes(name) === true) return { state: 'disabled', deprecated: false };
  if (life.deprecatedVersion === undefined) return { state: 'registered', deprecated: false };
  const deprecated = parseVersion(life.deprecatedVersion);
  const releasesSince =
    deprecated.major === current.major
      ? current.minor - deprecated.minor
      : current.major > deprecated.major
        ? Infinity
        : -1;
  if (releasesSince < 0) return { state: 'registered', deprecated: false };
  const showHidden = (flags.showHiddenMetricsForVersion ?? '') !== '';
  if (releasesSince >= hiddenAfterMinorReleases && !showHidden) return { state: 'hidden', deprecated: true };
  return { state: 'registered', deprecated: true };
}

/** The help text as exposed: stability level first, then the deprecation notice. */
export function annotatedHelp(help: string, life: Lifecycle, deprecated: boolean): string {
  const withDeprecation = deprecated ? `(Deprecated since ${life.deprecatedVersion ?? ''}) ${help}` : help;
  return `[${life.stabilityLevel}] ${withDeprecation}`;
}

/**
 * Declares metrics in one registry under the life-cycle rules. `declare` returns prom-client options: the
 * annotated help, and `registers` holding the registry, or nothing for a hidden or disabled metric (which then
 * still works for the code that updates it, but is not exposed).
 */
export class MetricLifecycle {
  private readonly registered: Counter<'stability_level' | 'deprecated_version'>;
  private readonly hidden: Counter;
  /** Metrics declared before the meta counters existed (the meta counters themselves), counted once they do. */
  private uncounted: { state: MetricState; life: Lifecycle }[] | undefined = [];

  constructor(
    private readonly registry: Registry,
    private readonly current: ReleaseVersion,
    private readonly flags: MetricLifecycleFlags = {},
  ) {
    validateShowHiddenMetricsVersion(current, flags.showHiddenMetricsForVersion ?? '');
    const meta = { stabilityLevel: 'BETA' } as const;
    this.registered = new Counter(
      this.declare(
        {
          name: 'registered_metrics_total',
          help: 'The count of registered metrics broken by stability level and deprecation version.',
          labelNames: ['stability_level', 'deprecated_version'] as const,
        },
        meta,
      ),
    );
    const disabled = new Counter(
      this.declare({ name: 'disabled_metrics_total', help: 'The count of disabled metrics.' }, meta),
    );
    this.hidden = new Counter(
      this.declare({ name: 'hidden_metrics_total', help: 'The count of hidden metrics.' }, meta),
    );
    // As kube-apiserver: one per name given to --disabled-metrics.
    disabled.inc(flags.disabledMetrics?.length ?? 0);
    const uncounted = this.uncounted ?? [];
    this.uncounted = undefined;
    for (const { state, life } of uncounted) this.count(state, life);
  }

  declare<T extends { readonly name: string; readonly help: string }>(
    options: T,
    life: Lifecycle,
  ): T & { help: string; registers: Registry[] } {
    const { state, deprecated } = metricState(options.name, life, this.current, this.flags);
    if (this.uncounted === undefined) this.count(state, life);
    else this.uncounted.push({ state, life });
    return {
      ...options,
      help: annotatedHelp(options.help, life, deprecated),
      registers: state === 'registered' ? [this.registry] : [],
    };
  }

  private count(state: MetricState, life: Lifecycle): void {
    switch (state) {
      case 'registered':
        this.registered.inc({
          stability_level: life.stabilityLevel,
          deprecated_version: life.deprecatedVersion ?? '',
        });
        return;
      case 'hidden':
        this.hidden.inc();
        return;
      case 'disabled':
        return;
      default:
        unreachable(state);
    }
  }
}
