// Configuration of the peer transport: TLS material, limits, logger, randomness.

import type { NodeId } from '../util/brand.js';
import type { Random } from '../util/clock.js';
import { limits } from '../util/limits.js';

/** PEM contents (not paths) of this node's peer certificate, its key, and the CA that signs every peer. */
export interface PeerTlsOptions {
  readonly certPem: string;
  readonly keyPem: string;
  readonly trustedCaPem: string;
}

/** The subset of pino's logger the transport uses; pino's Logger satisfies it. */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface TransportLimits {
  readonly frameBytesMax: number;
  readonly queueMessagesMax: number;
  readonly queueBytesMax: number;
  readonly reconnectDelayMsMin: number;
  readonly reconnectDelayMsMax: number;
  readonly handshakeTimeoutMs: number;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly inboundConnectionsMax: number;
}

export const defaultTransportLimits: TransportLimits = {
  frameBytesMax: limits.peerFrameBytesMax,
  queueMessagesMax: limits.peerQueueMessagesMax,
  queueBytesMax: limits.peerQueueBytesMax,
  reconnectDelayMsMin: limits.peerReconnectDelayMsMin,
  reconnectDelayMsMax: limits.peerReconnectDelayMsMax,
  handshakeTimeoutMs: limits.peerHandshakeTimeoutMs,
  keepaliveIntervalMs: limits.peerKeepaliveIntervalMs,
  keepaliveTimeoutMs: limits.peerKeepaliveTimeoutMs,
  inboundConnectionsMax: limits.peerInboundConnectionsMax,
};

export interface TransportOptions {
  /** Every member of one cluster has the same ID; a peer presenting another one is refused. */
  readonly clusterId: string;
  readonly nodeId: NodeId;
  readonly tls: PeerTlsOptions;
  /** Where to accept peer connections (port 0: any free port). Omitted: this transport only dials. */
  readonly listen?: { readonly host: string; readonly port: number };
  readonly logger?: Logger;
  /** Jitter of reconnect delays (seeded in tests and chaos runs). */
  readonly random?: Random;
  /** Overrides of the defaults from src/util/limits.ts (tests shorten timeouts and queues). */
  readonly limits?: Partial<TransportLimits>;
}
