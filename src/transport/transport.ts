// The peer transport: carries the Raft core's messages between nodes over mutual TLS.
//
// Contract:
// - send(messages) never blocks and never throws on a network problem. Each message goes to the queue of the
//   peer named by its `to`; a full queue drops and counts (Raft tolerates loss and retransmits). A connected
//   peer's queue is written to its socket before send() returns, one call's messages as one frame per peer.
// - Messages from this node to one peer arrive in the order they were sent, or not at all (with gaps where a
//   queue overflowed or a connection died).
// - A delivered message comes from an authenticated peer: its TLS certificate is signed by the peer CA, its
//   hello named this cluster and this node, and the message's `from` is the node that said hello.
// - close() ends every socket, timer and the listener, and resolves when they are gone.

import * as net from 'node:net';
import * as tls from 'node:tls';
import { randomInt } from 'node:crypto';
import { assert } from '../util/assert.js';
import type { NodeId } from '../util/brand.js';
import { systemRandom } from '../util/clock.js';
import { Backoff } from './backoff.js';
import {
  FrameDecoder,
  decodeFramePayload,
  encodeControlFrame,
  encodeMessage,
  isPeerMessageShape,
  peerProtocolVersion,
  type PeerMessage,
} from './framing.js';
import {
  defaultTransportLimits,
  silentLogger,
  type Logger,
  type TransportLimits,
  type TransportOptions,
} from './options.js';
import { latencyTraceOn, traceStage } from './latency-trace.js';
import { PeerLink, type PeerStats } from './peer-link.js';

export interface TransportStats {
  readonly peers: ReadonlyMap<NodeId, PeerStats>;
  /** Messages sent to a node that is not a peer (never added, or removed): dropped. */
  readonly messagesDroppedUnknownPeer: number;
  /** Inbound connections refused: TLS failure, bad hello, or protocol error. */
  readonly inboundRefused: number;
}

/** One accepted connection; it only receives messages, and sends keepalives back. */
interface Inbound {
  readonly socket: tls.TLSSocket;
  readonly remote: string;
  peerId: NodeId | undefined;
  handshakeTimer: NodeJS.Timeout | undefined;
  keepaliveTimer: NodeJS.Timeout | undefined;
  closing: boolean;
}

export class PeerTransport<M extends PeerMessage> {
  readonly nodeId: NodeId;
  /** Random per start; peers use it to notice that this node restarted. */
  readonly incarnation = randomInt(1, 2 ** 47);

  private readonly limits: TransportLimits;
  private readonly logger: Logger;
  private readonly secureContext: tls.SecureContext;
  private readonly links = new Map<NodeId, PeerLink>();
  /** Every raw connection the listener holds, authenticated or not, so close() can end them. */
  private readonly rawSockets = new Set<net.Socket>();
  private readonly inbound = new Set<Inbound>();
  /** Links of removed peers still closing; close() waits for them too. */
  private readonly closingLinks = new Set<Promise<void>>();
  private handler: (message: M) => void = () => undefined;
  private peerStateHandler: (peer: NodeId, state: 'down' | 'up') => void = () => undefined;
  private server: tls.Server | undefined;
  private listenAddress: { host: string; port: number } | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private messagesDroppedUnknownPeer = 0;
  private inboundRefused = 0;

  private constructor(private readonly options: TransportOptions) {
    this.nodeId = options.nodeId;
    this.limits = { ...defaultTransportLimits, ...options.limits };
    this.logger = options.logger ?? silentLogger;
    // Parsing the PEMs once here turns bad TLS material into a startup error, not a failure per dial.
    this.secureContext = tls.createSecureContext({
      cert: options.tls.certPem,
      key: options.tls.keyPem,
      ca: options.tls.trustedCaPem,
    });
  }

  /** Creates a transport, listening first when `options.listen` is given. */
  static async create<M extends PeerMessage>(options: TransportOptions): Promise<PeerTransport<M>> {
    const transport = new PeerTransport<M>(options);
    if (options.listen !== undefined) await transport.listen(options.listen.host, options.listen.port);
    return transport;
  }

  /** The bound listen address (the real port when 0 was asked for). */
  get address(): { host: string; port: number } | undefined {
    return this.listenAddress;
  }

  /** Sets the one handler of received messages; it runs synchronously, in arrival order per peer. */
  onMessage(handler: (message: M) => void): void {
    this.handler = handler;
  }

  /**
   * Sets the one handler of peer process state: 'down' when a peer's open connection was lost and redialling
   * it is refused (nothing listens at its address: its process is gone), 'up' when it is connected again.
   */
  onPeerState(handler: (peer: NodeId, state: 'down' | 'up') => void): void {
    this.peerStateHandler = handler;
  }

  addPeer(id: NodeId, url: string): void {
    assert(id !== this.nodeId, 'a node is not its own peer');
    assert(!this.closed, 'addPeer after close');
    const existing = this.links.get(id);
    if (existing !== undefined) {
      if (existing.url === url) return;
      this.removePeer(id);
    }
    const link = new PeerLink(id, url, {
      clusterId: this.options.clusterId,
      nodeId: this.nodeId,
      incarnation: this.incarnation,
      secureContext: this.secureContext,
      limits: this.limits,
      logger: this.logger,
      backoff: new Backoff({
        delayMsMin: this.limits.reconnectDelayMsMin,
        delayMsMax: this.limits.reconnectDelayMsMax,
        random: this.options.random ?? systemRandom,
      }),
      onPeerState: (peer, state) => {
        if (!this.closed && this.links.get(peer) === link) this.peerStateHandler(peer, state);
      },
    });
    this.links.set(id, link);
  }

  /** Forgets a peer: its queue, its dialled connection and its inbound connections end. */
  removePeer(id: NodeId): void {
    const link = this.links.get(id);
    if (link === undefined) return;
    this.links.delete(id);
    const closing = link.close();
    this.closingLinks.add(closing);
    void closing.then(() => this.closingLinks.delete(closing));
    for (const connection of this.inbound) {
      if (connection.peerId === id) this.closeInbound(connection);
    }
  }

  peers(): ReadonlyMap<NodeId, string> {
    return new Map([...this.links].map(([id, link]) => [id, link.url]));
  }

  /** Queues messages to their peers. Never blocks; never throws on a network problem. */
  send(messages: readonly M[]): void {
    if (this.closed) return;
    let only: PeerLink | undefined;
    let touched: Set<PeerLink> | undefined;
    for (const message of messages) {
      const link = this.links.get(message.to);
      if (link === undefined) {
        this.messagesDroppedUnknownPeer += 1;
        continue;
      }
      link.enqueue(encodeMessage(message));
      if (only === undefined) only = link;
      else if (link !== only) (touched ??= new Set([only])).add(link);
    }
    // One call is one batch (a Ready's messages): written now, as one frame per peer, rather than at the end of
    // the event loop's turn, where it would wait behind whatever the caller does next (a Ready's fsync or apply).
    if (touched !== undefined) for (const link of touched) link.flush();
    else only?.flush();
  }

  stats(): TransportStats {
    return {
      peers: new Map([...this.links].map(([id, link]) => [id, link.stats()])),
      messagesDroppedUnknownPeer: this.messagesDroppedUnknownPeer,
      inboundRefused: this.inboundRefused,
    };
  }

  /** Ends every socket, timer and the listener; resolves when all are closed. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    const waits: Promise<void>[] = [...this.closingLinks];
    for (const link of this.links.values()) waits.push(link.close());
    this.links.clear();
    for (const connection of this.inbound) this.closeInbound(connection);
    for (const socket of this.rawSockets) {
      waits.push(
        new Promise((resolve) => (socket.closed ? resolve() : socket.once('close', () => resolve()))),
      );
      socket.destroy();
    }
    const server = this.server;
    if (server !== undefined) {
      waits.push(new Promise((resolve) => server.close(() => resolve())));
    }
    await Promise.all(waits);
  }

  private async listen(host: string, port: number): Promise<void> {
    const server = tls.createServer({
      cert: this.options.tls.certPem,
      key: this.options.tls.keyPem,
      ca: this.options.tls.trustedCaPem,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      handshakeTimeout: this.limits.handshakeTimeoutMs,
    });
    server.maxConnections = this.limits.inboundConnectionsMax;
    server.on('connection', (socket: net.Socket) => {
      this.rawSockets.add(socket);
      socket.once('close', () => this.rawSockets.delete(socket));
    });
    server.on('tlsClientError', (error: Error, socket: tls.TLSSocket) => {
      this.inboundRefused += 1;
      this.logger.warn(
        { remote: `${socket.remoteAddress}:${socket.remotePort}`, reason: error.message },
        'peer connection refused: TLS handshake failed (is its certificate signed by the peer CA?)',
      );
    });
    server.on('secureConnection', (socket: tls.TLSSocket) => this.onInbound(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error: Error) => this.logger.error({ reason: error.message }, 'peer listener error'));
    const address = server.address();
    assert(address !== null && typeof address === 'object');
    this.server = server;
    this.listenAddress = { host: address.address, port: address.port };
  }

  private onInbound(socket: tls.TLSSocket): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    const connection: Inbound = {
      socket,
      remote: `${socket.remoteAddress}:${socket.remotePort}`,
      peerId: undefined,
      handshakeTimer: undefined,
      keepaliveTimer: undefined,
      closing: false,
    };
    this.inbound.add(connection);
    socket.setNoDelay(true);
    socket.once('close', () => {
      this.clearInboundTimers(connection);
      this.inbound.delete(connection);
    });
    socket.on('error', (error: Error) => {
      this.logger.debug(
        { remote: connection.remote, peer: connection.peerId, reason: error.message },
        'peer socket error',
      );
    });
    connection.handshakeTimer = setTimeout(() => {
      if (connection.peerId === undefined) this.refuse(connection, 'no hello within the handshake timeout');
    }, this.limits.handshakeTimeoutMs);
    const decoder = new FrameDecoder(this.limits.frameBytesMax);
    socket.on('data', (chunk: Buffer) => {
      if (connection.closing) return;
      if (latencyTraceOn) traceStage('link.data', chunk.length);
      const error = decoder.push(chunk, (payload) => {
        if (!connection.closing) this.onInboundFrame(connection, payload);
      });
      if (error !== undefined && !connection.closing) this.protocolError(connection, error);
    });
  }

  private onInboundFrame(connection: Inbound, payload: Buffer): void {
    const decoded = decodeFramePayload(payload);
    if (!decoded.ok) {
      this.protocolError(connection, decoded.reason);
      return;
    }
    const frame = decoded.frame;
    if (connection.peerId === undefined) {
      if (frame.type !== 'hello') {
        this.protocolError(connection, `expected hello, got ${frame.type}`);
        return;
      }
      const refusal = this.checkHello(frame);
      if (refusal !== undefined) {
        this.refuse(connection, refusal, frame.from);
        return;
      }
      this.accept(connection, frame.from, frame.incarnation);
      return;
    }
    if (frame.type !== 'batch') {
      this.protocolError(connection, `unexpected ${frame.type} frame on an inbound connection`);
      return;
    }
    const link = this.links.get(connection.peerId);
    if (link === undefined) {
      this.closeInbound(connection);
      return;
    }
    link.framesReceived += 1;
    for (const message of frame.messages) {
      if (!isPeerMessageShape(message) || message.from !== connection.peerId || message.to !== this.nodeId) {
        this.protocolError(
          connection,
          'message without a valid from/to, or not from the authenticated peer to us',
        );
        return;
      }
      link.messagesReceived += 1;
      // The peer is authenticated and runs this code; the Raft core validates the rest of the message.
      this.handler(message as M);
      if (connection.closing || this.closed) return;
    }
  }

  private checkHello(hello: {
    protocolVersion: number;
    clusterId: string;
    from: NodeId;
    to: NodeId;
  }): string | undefined {
    if (hello.protocolVersion !== peerProtocolVersion) {
      return `protocol version ${hello.protocolVersion} is not supported (this node speaks ${peerProtocolVersion})`;
    }
    if (hello.clusterId !== this.options.clusterId) {
      return `cluster ID mismatch: this node is in cluster "${this.options.clusterId}", the peer in "${hello.clusterId}"`;
    }
    if (hello.to !== this.nodeId) {
      return `wrong node: this is node ${this.nodeId}, the peer meant node ${hello.to}`;
    }
    if (!this.links.has(hello.from))
      return `unknown node ${hello.from}: not a member known to node ${this.nodeId}`;
    return undefined;
  }

  private accept(connection: Inbound, peerId: NodeId, incarnation: number): void {
    clearTimeout(connection.handshakeTimer);
    connection.handshakeTimer = undefined;
    connection.peerId = peerId;
    // One inbound connection per peer: a newer one means the older is dead or abandoned by the peer.
    for (const other of this.inbound) {
      if (other !== connection && other.peerId === peerId) this.closeInbound(other);
    }
    connection.socket.write(
      encodeControlFrame({ type: 'welcome', from: this.nodeId, incarnation: this.incarnation }),
    );
    connection.keepaliveTimer = setInterval(() => {
      // A keepalive is only a sign of life: skip it while the socket is backed up.
      if (!connection.socket.writableNeedDrain)
        connection.socket.write(encodeControlFrame({ type: 'keepalive' }));
    }, this.limits.keepaliveIntervalMs);
    this.logger.info({ peer: peerId, remote: connection.remote }, 'peer connected to us');
    this.links.get(peerId)?.peerSeen(incarnation);
  }

  private refuse(connection: Inbound, reason: string, claimedPeer?: NodeId): void {
    this.inboundRefused += 1;
    this.logger.warn(
      { remote: connection.remote, peer: claimedPeer, reason },
      `peer connection refused: ${reason}`,
    );
    connection.closing = true;
    this.clearInboundTimers(connection);
    // Tell the dialler why, then close; the destroy timer bounds how long a peer that never reads can hold it.
    connection.socket.end(encodeControlFrame({ type: 'refusal', reason }));
    const timer = setTimeout(() => connection.socket.destroy(), 1000);
    connection.socket.once('close', () => clearTimeout(timer));
  }

  private protocolError(connection: Inbound, reason: string): void {
    this.inboundRefused += 1;
    this.logger.warn(
      { remote: connection.remote, peer: connection.peerId, reason },
      'peer connection closed: protocol error',
    );
    this.closeInbound(connection);
  }

  private closeInbound(connection: Inbound): void {
    connection.closing = true;
    this.clearInboundTimers(connection);
    connection.socket.destroy();
  }

  private clearInboundTimers(connection: Inbound): void {
    clearTimeout(connection.handshakeTimer);
    clearInterval(connection.keepaliveTimer);
    connection.handshakeTimer = undefined;
    connection.keepaliveTimer = undefined;
  }
}
