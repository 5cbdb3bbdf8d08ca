// Prometheus metrics of the peer transport, read from its stats when scraped (nothing is counted twice).

import { Counter, Gauge, type Registry } from 'prom-client';
import type { PeerStats } from './peer-link.js';
import type { TransportStats } from './transport.js';

type CounterField =
  | 'messagesSent'
  | 'bytesSent'
  | 'messagesDropped'
  | 'reconnects'
  | 'connectFailures'
  | 'downReports'
  | 'messagesReceived';
type GaugeField = 'queueMessages' | 'queueBytes';

const counters = {
  messagesSent: ['stoa_peer_sent_messages_total', 'Messages handed to the connection to a peer.'],
  bytesSent: ['stoa_peer_sent_bytes_total', 'Frame bytes written to the connection to a peer.'],
  messagesDropped: [
    'stoa_peer_dropped_messages_total',
    'Messages to a peer dropped: queue full, or larger than a frame.',
  ],
  reconnects: ['stoa_peer_reconnects_total', 'Connections to a peer established after the first one.'],
  connectFailures: ['stoa_peer_connect_failures_total', 'Failed attempts to connect to a peer.'],
  downReports: [
    'stoa_peer_down_reports_total',
    "Times a peer's process was seen gone: its connection lost, then reconnecting refused.",
  ],
  messagesReceived: ['stoa_peer_received_messages_total', 'Messages received from a peer.'],
} as const satisfies Record<CounterField, readonly [string, string]>;

const gauges = {
  queueMessages: ['stoa_peer_queue_messages', 'Messages queued for a peer.'],
  queueBytes: ['stoa_peer_queue_bytes', 'Encoded bytes queued for a peer.'],
} as const satisfies Record<GaugeField, readonly [string, string]>;

/**
 * Where a metric goes: the caller's life cycle decides its help text and whether it is registered (the server
 * declares these as ALPHA, see src/server/metric-lifecycle.ts); a test passes one registry.
 */
export type DeclareMetric = <T extends { readonly name: string; readonly help: string }>(
  options: T,
) => T & { help: string; registers: Registry[] };

/** Registers the transport's metrics, labelled by peer node ID; `stats` is read at each scrape. */
export function registerTransportMetrics(declare: DeclareMetric, stats: () => TransportStats): void {
  const peers = (): [string, PeerStats][] => [...stats().peers].map(([id, s]) => [String(id), s]);
  for (const [field, [name, help]] of Object.entries(counters) as [
    CounterField,
    readonly [string, string],
  ][]) {
    new Counter({
      ...declare({ name, help, labelNames: ['peer'] }),
      collect() {
        this.reset();
        for (const [peer, s] of peers()) this.inc({ peer }, s[field]);
      },
    });
  }
  for (const [field, [name, help]] of Object.entries(gauges) as [GaugeField, readonly [string, string]][]) {
    new Gauge({
      ...declare({ name, help, labelNames: ['peer'] }),
      collect() {
        this.reset();
        for (const [peer, s] of peers()) this.set({ peer }, s[field]);
      },
    });
  }
  new Gauge({
    ...declare({
      name: 'stoa_peer_connected',
      help: 'Whether the connection this node dialled to a peer is up (1) or not (0).',
      labelNames: ['peer'],
    }),
    collect() {
      this.reset();
      for (const [peer, s] of peers()) this.set({ peer }, s.connected ? 1 : 0);
    },
  });
  new Counter({
    ...declare({
      name: 'stoa_peer_dropped_unknown_messages_total',
      help: 'Messages addressed to a node that is not a peer, dropped.',
    }),
    collect() {
      this.reset();
      this.inc(stats().messagesDroppedUnknownPeer);
    },
  });
  new Counter({
    ...declare({
      name: 'stoa_peer_inbound_refused_total',
      help: 'Inbound peer connections refused (TLS, hello) or closed on a protocol error.',
    }),
    collect() {
      this.reset();
      this.inc(stats().inboundRefused);
    },
  });
}
