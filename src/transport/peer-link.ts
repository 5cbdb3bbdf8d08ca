// One outbound link to one peer: its bounded queue, the connection this node dials, reconnects, and stats.
//
// Messages to a peer travel only over the connection this node dialled (inbound connections only receive),
// so the order of messages from this node to that peer is the order of send(). The link owns its socket and
// timers; close() ends them all.

import * as tls from 'node:tls';
import { assert, unreachable } from '../util/assert.js';
import type { NodeId } from '../util/brand.js';
import { Backoff } from './backoff.js';
import {
  FrameDecoder,
  fittingPrefix,
  decodeFramePayload,
  encodeBatchFrame,
  encodeControlFrame,
  messageBytesMax,
  peerProtocolVersion,
} from './framing.js';
import type { Logger, TransportLimits } from './options.js';
import { latencyTraceOn, traceStage } from './latency-trace.js';

export interface PeerStats {
  readonly url: string;
  /** The dialled connection is open (handshake done). */
  readonly connected: boolean;
  /** Messages handed to the socket (a connection that dies afterwards may still lose them). */
  readonly messagesSent: number;
  readonly framesSent: number;
  readonly bytesSent: number;
  /** Messages dropped: queue full (in messages or bytes), or a single message larger than a frame. */
  readonly messagesDropped: number;
  /** Connections established (handshake done) after the first one. */
  readonly reconnects: number;
  /** Dial attempts that failed (refused, TLS error, timeout, refusal by the peer). */
  readonly connectFailures: number;
  /** Times the peer's process was reported gone: an open connection lost, then a redial refused (ECONNREFUSED). */
  readonly downReports: number;
  /** Reported gone, and not connected again since. */
  readonly down: boolean;
  readonly queueMessages: number;
  readonly queueBytes: number;
  /** Messages received from this peer on its inbound connection. */
  readonly messagesReceived: number;
  readonly framesReceived: number;
}

export interface PeerLinkContext {
  readonly clusterId: string;
  readonly nodeId: NodeId;
  readonly incarnation: number;
  readonly secureContext: tls.SecureContext;
  readonly limits: TransportLimits;
  readonly logger: Logger;
  readonly backoff: Backoff;
  /**
   * The peer's process is gone ('down': the open connection was lost and a redial was refused, so nothing
   * listens at its address any more) or back ('up': connected again after 'down'). Called once per change.
   */
  readonly onPeerState: (peer: NodeId, state: 'down' | 'up') => void;
}

type Phase = 'waiting' | 'connecting' | 'open' | 'closed';

export function parsePeerUrl(url: string): { host: string; port: number } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`invalid peer URL "${url}"`);
  }
  if (parsed.protocol !== 'https:')
    throw new Error(`peer URL "${url}" must use https (peers talk mutual TLS)`);
  const port = Number(parsed.port);
  if (parsed.port === '' || !Number.isInteger(port) || port <= 0) {
    throw new Error(`peer URL "${url}" needs an explicit port`);
  }
  // URL keeps IPv6 hosts in brackets; sockets want them bare.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

export class PeerLink {
  readonly host: string;
  readonly port: number;

  private phase: Phase = 'waiting';
  private socket: tls.TLSSocket | undefined;
  private socketClosed: Promise<void> = Promise.resolve();
  /** Bumped for every new socket, so events of an abandoned socket are ignored. */
  private generation = 0;
  private blocked = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private handshakeTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleCheck: NodeJS.Immediate | undefined;
  private lastHeardMs = 0;
  private flushImmediate: NodeJS.Immediate | undefined;
  private lastError = '';
  /** The `code` of the socket's last error (e.g. ECONNREFUSED), or ''. */
  private lastErrorCode = '';
  /** The last connection attempt after an open connection was lost has not succeeded yet. */
  private lostOpen = false;
  private downReported = false;
  private downReports = 0;
  private consecutiveFailures = 0;
  private everConnected = false;
  /** Incarnation of the peer process this link's open connection reaches. */
  private peerIncarnation: number | undefined;

  // invariant: queueBytes is the sum of queue[i].length; queue.length <= queueMessagesMax; queueBytes <= queueBytesMax
  private queue: Uint8Array[] = [];
  private queueBytes = 0;

  private messagesSent = 0;
  private framesSent = 0;
  private bytesSent = 0;
  private messagesDropped = 0;
  private reconnects = 0;
  private connectFailures = 0;
  messagesReceived = 0;
  framesReceived = 0;

  constructor(
    readonly peerId: NodeId,
    readonly url: string,
    private readonly context: PeerLinkContext,
  ) {
    const { host, port } = parsePeerUrl(url);
    this.host = host;
    this.port = port;
    this.connect();
  }

  /** Queues one encoded message; drops and counts it when the queue is full. Never blocks, never throws. */
  enqueue(encoded: Uint8Array): void {
    if (this.phase === 'closed') return;
    const { queueMessagesMax, queueBytesMax, frameBytesMax } = this.context.limits;
    if (encoded.length > messageBytesMax(frameBytesMax)) {
      this.messagesDropped += 1;
      this.context.logger.warn(
        { peer: this.peerId, messageBytes: encoded.length, frameBytesMax },
        'peer message larger than the frame limit dropped',
      );
      return;
    }
    if (this.queue.length >= queueMessagesMax || this.queueBytes + encoded.length > queueBytesMax) {
      this.messagesDropped += 1;
      return;
    }
    this.queue.push(encoded);
    this.queueBytes += encoded.length;
    this.scheduleFlush();
  }

  stats(): PeerStats {
    return {
      url: this.url,
      connected: this.phase === 'open',
      messagesSent: this.messagesSent,
      framesSent: this.framesSent,
      bytesSent: this.bytesSent,
      messagesDropped: this.messagesDropped,
      reconnects: this.reconnects,
      connectFailures: this.connectFailures,
      downReports: this.downReports,
      down: this.downReported,
      queueMessages: this.queue.length,
      queueBytes: this.queueBytes,
      messagesReceived: this.messagesReceived,
      framesReceived: this.framesReceived,
    };
  }

  /**
   * The peer dialled us with `incarnation`: it is up. A link waiting to redial dials now; a link connected to
   * an older incarnation of the peer is talking to a dead process (its socket may not know yet), so it redials.
   */
  peerSeen(incarnation: number): void {
    if (this.phase === 'waiting') {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
      this.connect();
    } else if (this.phase === 'open' && this.peerIncarnation !== incarnation) {
      this.fail('peer restarted (new incarnation seen on its inbound connection)');
    }
  }

  /** Ends the socket and every timer; resolves once the socket is closed. Queued messages are discarded. */
  async close(): Promise<void> {
    if (this.phase !== 'closed') {
      this.phase = 'closed';
      clearTimeout(this.reconnectTimer);
      this.clearConnectionTimers();
      if (this.flushImmediate !== undefined) clearImmediate(this.flushImmediate);
      this.flushImmediate = undefined;
      this.socket?.destroy();
      this.socket = undefined;
      this.queue = [];
      this.queueBytes = 0;
    }
    await this.socketClosed;
  }

  private connect(): void {
    assert(this.phase === 'waiting' && this.socket === undefined);
    this.phase = 'connecting';
    this.generation += 1;
    const generation = this.generation;
    const { limits, secureContext } = this.context;
    const socket = tls.connect({
      host: this.host,
      port: this.port,
      secureContext,
      minVersion: 'TLSv1.2',
    });
    this.socket = socket;
    this.socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    const live = (): boolean => generation === this.generation && this.phase !== 'closed';
    socket.setNoDelay(true);
    this.handshakeTimer = setTimeout(() => {
      if (live()) this.fail(`handshake not done within ${limits.handshakeTimeoutMs} ms`);
    }, limits.handshakeTimeoutMs);
    socket.once('secureConnect', () => {
      if (!live()) return;
      socket.write(
        encodeControlFrame({
          type: 'hello',
          protocolVersion: peerProtocolVersion,
          clusterId: this.context.clusterId,
          from: this.context.nodeId,
          to: this.peerId,
          incarnation: this.context.incarnation,
        }),
      );
    });
    const decoder = new FrameDecoder(limits.frameBytesMax);
    socket.on('data', (chunk: Buffer) => {
      if (!live()) return;
      this.lastHeardMs = performance.now();
      this.idleTimer?.refresh();
      const error = decoder.push(chunk, (payload) => {
        if (live()) this.onFrame(payload);
      });
      if (error !== undefined && live()) this.fail(`protocol error: ${error}`);
    });
    socket.on('drain', () => {
      if (!live()) return;
      this.blocked = false;
      this.scheduleFlush();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.lastError = error.message;
      this.lastErrorCode = error.code ?? '';
    });
    socket.once('close', () => {
      if (live()) this.fail(this.lastError === '' ? 'connection closed by peer' : this.lastError);
    });
  }

  private onFrame(payload: Buffer): void {
    const decoded = decodeFramePayload(payload);
    if (!decoded.ok) {
      this.fail(`protocol error: ${decoded.reason}`);
      return;
    }
    const frame = decoded.frame;
    switch (frame.type) {
      case 'welcome':
        if (this.phase !== 'connecting' || frame.from !== this.peerId) {
          this.fail(`protocol error: unexpected welcome from node ${frame.from}`);
          return;
        }
        this.onOpen(frame.incarnation);
        return;
      case 'refusal':
        this.context.logger.warn(
          { peer: this.peerId, url: this.url, reason: frame.reason },
          'peer refused our connection',
        );
        this.lastError = `refused by peer: ${frame.reason}`;
        this.fail(this.lastError, true);
        return;
      case 'keepalive':
        return;
      case 'hello':
      case 'batch':
        this.fail(`protocol error: unexpected ${frame.type} frame on a dialled connection`);
        return;
      default:
        unreachable(frame);
    }
  }

  private onOpen(incarnation: number): void {
    const { limits, logger, backoff } = this.context;
    clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
    this.phase = 'open';
    this.peerIncarnation = incarnation;
    this.lastError = '';
    backoff.reset();
    if (this.everConnected) this.reconnects += 1;
    this.everConnected = true;
    logger.info(
      { peer: this.peerId, url: this.url, failuresBefore: this.consecutiveFailures },
      'peer connection established',
    );
    this.consecutiveFailures = 0;
    this.lostOpen = false;
    if (this.downReported) {
      this.downReported = false;
      logger.info({ peer: this.peerId, url: this.url }, 'peer is back');
      this.context.onPeerState(this.peerId, 'up');
    }
    this.lastHeardMs = performance.now();
    this.idleTimer = setTimeout(() => this.checkIdle(), limits.keepaliveTimeoutMs);
    this.scheduleFlush();
  }

  /**
   * The idle timer fired. If this process was stalled (GC, a long synchronous task), keepalives may be waiting
   * unread in the socket: timers run before I/O in an event loop turn, so decide only after the next I/O phase.
   */
  private checkIdle(): void {
    if (this.idleCheck !== undefined) return;
    this.idleCheck = setImmediate(() => {
      this.idleCheck = undefined;
      if (this.phase !== 'open') return;
      const silentMs = performance.now() - this.lastHeardMs;
      const { keepaliveTimeoutMs } = this.context.limits;
      if (silentMs >= keepaliveTimeoutMs) this.fail(`no data from peer for ${Math.round(silentMs)} ms`);
      else this.idleTimer?.refresh();
    });
  }

  /** Abandons the current connection (attempt) and schedules a redial with backoff. */
  private fail(reason: string, alreadyLogged = false): void {
    assert(this.phase === 'connecting' || this.phase === 'open');
    const wasOpen = this.phase === 'open';
    this.clearConnectionTimers();
    this.socket?.destroy();
    this.socket = undefined;
    this.blocked = false;
    this.peerIncarnation = undefined;
    this.phase = 'waiting';
    this.generation += 1;
    if (!wasOpen) this.connectFailures += 1;
    this.consecutiveFailures += 1;
    const refused = !wasOpen && this.lastErrorCode === 'ECONNREFUSED';
    if (wasOpen) this.lostOpen = true;
    else if (refused && this.lostOpen && !this.downReported) {
      // A lost connection and then a refused dial: the kernel answers for a port nobody listens on, so the
      // peer's process is gone (killed, crashed, stopped), not slow or cut off (a partition or a paused process
      // times out instead, and a TLS or protocol failure is not a refusal).
      this.downReported = true;
      this.downReports += 1;
      this.context.logger.warn(
        { peer: this.peerId, url: this.url },
        'peer process is gone: connection lost and reconnect refused',
      );
      this.context.onPeerState(this.peerId, 'down');
    }
    const delayMs = this.context.backoff.nextDelayMs();
    const fields = { peer: this.peerId, url: this.url, reason, retryInMs: delayMs };
    // The first failure is worth a warning; a peer that stays down would otherwise log on every attempt.
    if (alreadyLogged) {
      // logged by the caller
    } else if (wasOpen) this.context.logger.warn(fields, 'peer connection lost');
    else if (this.consecutiveFailures === 1) this.context.logger.warn(fields, 'peer connection failed');
    else this.context.logger.debug(fields, 'peer connection failed again');
    this.lastError = '';
    this.lastErrorCode = '';
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.phase === 'waiting') this.connect();
    }, delayMs);
  }

  private clearConnectionTimers(): void {
    clearTimeout(this.handshakeTimer);
    clearTimeout(this.idleTimer);
    if (this.idleCheck !== undefined) clearImmediate(this.idleCheck);
    this.handshakeTimer = undefined;
    this.idleTimer = undefined;
    this.idleCheck = undefined;
  }

  private scheduleFlush(): void {
    if (
      this.phase !== 'open' ||
      this.blocked ||
      this.flushImmediate !== undefined ||
      this.queue.length === 0
    ) {
      return;
    }
    // Deferred to the end of this turn of the event loop: every send() of the turn goes out in one frame.
    this.flushImmediate = setImmediate(() => {
      this.flushImmediate = undefined;
      this.flush();
    });
  }

  /**
   * Writes queued messages as frames until the queue is empty or the socket asks us to wait for 'drain'. Called
   * at the end of the turn after enqueue() (so a turn's sends share a frame), or at once by the transport.
   */
  flush(): void {
    if (this.flushImmediate !== undefined) {
      clearImmediate(this.flushImmediate);
      this.flushImmediate = undefined;
    }
    const { frameBytesMax } = this.context.limits;
    while (this.phase === 'open' && !this.blocked && this.queue.length > 0 && this.socket !== undefined) {
      // The longest prefix of the queue that fits one frame.
      const { count, bytes } = fittingPrefix(this.queue, 0, frameBytesMax);
      const batch = this.queue.splice(0, count);
      this.queueBytes -= bytes;
      const frame = encodeBatchFrame(batch);
      assert(frame.length - 4 <= frameBytesMax, 'batch frame over the limit');
      this.messagesSent += count;
      this.framesSent += 1;
      this.bytesSent += frame.length;
      if (latencyTraceOn) traceStage('link.write', frame.length);
      if (!this.socket.write(frame)) this.blocked = true;
    }
  }
}
