// Shared fixtures of the transport tests: certificates from src/pki, a log recorder, bounded waiting.

import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';
import type { NodeId } from '../../src/util/brand.js';
import { nodeId } from '../../src/util/brand.js';
import type { Logger, PeerTlsOptions, TransportLimits } from '../../src/transport/index.js';

/** The message shape the tests send: what the Raft core's messages look like to the transport. */
export interface TestMessage {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly seq: number;
  readonly data?: Uint8Array;
}

export interface PeerCa {
  readonly ca: CertificateAndKey;
  /** Peer TLS material for a node: a peer certificate (server and client auth) for 127.0.0.1 and localhost. */
  tlsFor(name: string): Promise<PeerTlsOptions>;
}

export async function createPeerCa(commonName = 'stoa-peer-ca'): Promise<PeerCa> {
  const ca = await createCertificateAuthority({ commonName });
  return {
    ca,
    async tlsFor(name) {
      const leaf = await issueCertificate(ca, {
        commonName: name,
        dnsNames: ['localhost'],
        ipAddresses: ['127.0.0.1'],
        usage: 'peer',
      });
      return { certPem: leaf.certPem, keyPem: leaf.keyPem, trustedCaPem: ca.certPem };
    },
  };
}

export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: object;
  readonly message: string;
}

export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  debug(fields: object, message: string): void {
    this.lines.push({ level: 'debug', fields, message });
  }
  info(fields: object, message: string): void {
    this.lines.push({ level: 'info', fields, message });
  }
  warn(fields: object, message: string): void {
    this.lines.push({ level: 'warn', fields, message });
  }
  error(fields: object, message: string): void {
    this.lines.push({ level: 'error', fields, message });
  }
  /** Lines whose message or fields mention `text`. */
  matching(text: string): LogLine[] {
    return this.lines.filter((l) => l.message.includes(text) || JSON.stringify(l.fields).includes(text));
  }
}

/** Short timeouts so that reconnects and dead-link detection happen within a test's budget. */
export const fastLimits: Partial<TransportLimits> = {
  reconnectDelayMsMin: 20,
  reconnectDelayMsMax: 200,
  handshakeTimeoutMs: 2000,
  keepaliveIntervalMs: 100,
  keepaliveTimeoutMs: 1000,
};

/** Polls `condition` until it holds; fails with `what` after `timeoutMs` (a bound, not a timing assertion). */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const ids = { a: nodeId(1), b: nodeId(2), c: nodeId(3) } as const;

export const peerUrl = (port: number): string => `https://127.0.0.1:${port}`;
