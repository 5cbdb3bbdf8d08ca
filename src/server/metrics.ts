// Prometheus metrics (prom-client), one registry per server instance: request counts and latency by verb,
// resource and code; inflight requests; registered watchers; store operation latency. Each metric is declared
// with kube-apiserver's stability level under the metric life cycle (metric-lifecycle.ts).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { KVStore } from '../storage/contract.js';
import { servedRelease } from './version.js';
import { MetricLifecycle, type MetricLifecycleFlags, type ReleaseVersion } from './metric-lifecycle.js';

export class Metrics {
  readonly registry = new Registry();
  readonly lifecycle: MetricLifecycle;
  readonly requests: Counter<'verb' | 'group' | 'resource' | 'subresource' | 'code'>;
  readonly requestDuration: Histogram<'verb' | 'group' | 'resource' | 'subresource'>;
  readonly inflight: Gauge<'request_kind'>;
  readonly watchers: Gauge<'verb' | 'group' | 'resource'>;
  readonly storeDuration: Histogram<'operation'>;
  readonly deprecatedApis: Gauge<'group' | 'version' | 'resource' | 'subresource' | 'removed_release'>;
  /** kube-apiserver's audit metrics (all ALPHA). */
  readonly auditEvents: Counter;
  readonly auditErrors: Counter<'plugin'>;
  readonly auditLevels: Counter<'level'>;
  readonly auditRequestsRejected: Counter;

  constructor(flags: MetricLifecycleFlags = {}, release: ReleaseVersion = servedRelease) {
    this.lifecycle = new MetricLifecycle(this.registry, release, flags);
    const stable = { stabilityLevel: 'STABLE' } as const;
    this.requests = new Counter(
      this.lifecycle.declare(
        {
          name: 'apiserver_request_total',
          help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
          labelNames: ['verb', 'group', 'resource', 'subresource', 'code'] as const,
        },
        stable,
      ),
    );
    this.requestDuration = new Histogram(
      this.lifecycle.declare(
        {
          name: 'apiserver_request_duration_seconds',
          help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
          labelNames: ['verb', 'group', 'resource', 'subresource'] as const,
          buckets: [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 10, 15, 30, 60],
        },
        stable,
      ),
    );
    this.inflight = new Gauge(
      this.lifecycle.declare(
        {
          name: 'apiserver_current_inflight_requests',
          help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
          labelNames: ['request_kind'] as const,
        },
        stable,
      ),
    );
    this.watchers = new Gauge(
      this.lifecycle.declare(
        {
          name: 'apiserver_longrunning_requests',
          help: 'Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
          labelNames: ['verb', 'group', 'resource'] as const,
        },
        stable,
      ),
    );
    this.storeDuration = new Histogram(
      this.lifecycle.declare(
        {
          name: 'etcd_request_duration_seconds',
          help: 'Etcd request latency in seconds for each operation and object type.',
          labelNames: ['operation'] as const,
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
        },
        { stabilityLevel: 'ALPHA' },
      ),
    );
    this.deprecatedApis = new Gauge(
      this.lifecycle.declare(
        {
          name: 'apiserver_requested_deprecated_apis',
          help: 'Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.',
          labelNames: ['group', 'version', 'resource', 'subresource', 'removed_release'] as const,
        },
        stable,
      ),
    );
    const alpha = { stabilityLevel: 'ALPHA' } as const;
    this.auditEvents = new Counter(
      this.lifecycle.declare(
        {
          name: 'apiserver_audit_event_total',
          help: 'Counter of audit events generated and sent to the audit backend.',
        },
        alpha,
      ),
    );
    this.auditErrors = new Counter(
      this.lifecycle.declare(
        {
          name: 'apiserver_audit_error_total',
          help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
          labelNames: ['plugin'] as const,
        },
        alpha,
      ),
    );
    this.auditLevels = new Counter(
      this.lifecycle.declare(
        {
          name: 'apiserver_audit_level_total',
          help: 'Counter of policy levels for audit events (1 per request).',
          labelNames: ['level'] as const,
        },
        alpha,
      ),
    );
    this.auditRequestsRejected = new Counter(
      this.lifecycle.declare(
        {
          name: 'apiserver_audit_requests_rejected_total',
          help: 'Counter of apiserver requests rejected due to an error in audit logging backend.',
        },
        alpha,
      ),
    );
    // Process and runtime metrics, like the Go client's process_* and go_*: outside the life cycle, as there.
    collectDefaultMetrics({ register: this.registry });
  }

  /** The store with every range, txn and compact timed. */
  instrument(store: KVStore): KVStore {
    const time = <T>(operation: string, run: () => Promise<T>): Promise<T> => {
      const end = this.storeDuration.startTimer({ operation });
      return run().finally(() => end());
    };
    return {
      range: (span, options) => time('range', () => store.range(span, options)),
      txn: (request) => time('txn', () => store.txn(request)),
      watch: (span, options, listener) => store.watch(span, options, listener),
      compact: (rev) => time('compact', () => store.compact(rev)),
      status: () => time('status', () => store.status()),
      close: () => store.close(),
    };
  }
}
