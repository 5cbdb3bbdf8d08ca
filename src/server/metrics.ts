// Prometheus metrics (prom-client), one registry per server instance: request counts and latency by verb,
// resource and code; inflight requests; registered watchers; store operation latency.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { KVStore } from '../storage/contract.js';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'apiserver_request_total',
    help: 'Counter of apiserver requests broken out for each verb, group, resource and HTTP response code.',
    labelNames: ['verb', 'group', 'resource', 'subresource', 'code'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'apiserver_request_duration_seconds',
    help: 'Response latency distribution in seconds for each verb, group and resource.',
    labelNames: ['verb', 'group', 'resource', 'subresource'] as const,
    buckets: [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 10, 15, 30, 60],
    registers: [this.registry],
  });
  readonly inflight = new Gauge({
    name: 'apiserver_current_inflight_requests',
    help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
    labelNames: ['request_kind'] as const,
    registers: [this.registry],
  });
  readonly watchers = new Gauge({
    name: 'apiserver_longrunning_requests',
    help: 'Gauge of all active long-running apiserver requests (watches) broken out by verb, group and resource.',
    labelNames: ['verb', 'group', 'resource'] as const,
    registers: [this.registry],
  });
  readonly storeDuration = new Histogram({
    name: 'etcd_request_duration_seconds',
    help: 'Store request latency in seconds for each operation.',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor() {
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
