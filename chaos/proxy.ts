// A fault-injecting TCP proxy for one directed peer link: it listens on a loopback port, forwards every
// connection to the target, and applies the fault currently set, which can change at any time.
//
// What each fault means at the TCP level (a proxy cannot drop packets inside a TCP stream: TCP would
// retransmit them, and dropping bytes would corrupt the stream):
// - pass: bytes are forwarded as they come.
// - partition: nothing is forwarded in either direction, on existing and new connections. Bytes are held, not
//   dropped (the proxy stops reading, so TCP backpressure reaches the sender), as a real network partition
//   stalls TCP streams while the kernel retransmits. New connections are accepted but get no answer (a
//   blackhole, not a refusal). An endpoint that closes is not reported to the other side until heal. On heal,
//   held bytes flow on, unless an endpoint gave up on the connection (then the other side sees it close).
// - delay: each chunk is forwarded delayMs plus a random [0, jitterMs) later; order within a stream is kept
//   (a chunk never overtakes an earlier one, as in TCP).
// - loss: each forwarded chunk, with the given probability, makes the proxy reset the connection (RST) instead:
//   what is in flight on it is lost, and the endpoints must reconnect. This is how loss shows through TCP when
//   retransmissions fail; partial loss that TCP repairs shows as delay.
// Randomness (jitter, loss) is seeded, so a chaos run replays its fault decisions.

import * as net from 'node:net';
import { assert, unreachable } from '../src/util/assert.js';
import type { Random } from '../src/util/clock.js';

export type LinkFault =
  | { readonly kind: 'pass' }
  | { readonly kind: 'partition' }
  | { readonly kind: 'delay'; readonly delayMs: number; readonly jitterMs: number }
  | { readonly kind: 'loss'; readonly probability: number };

export interface FaultProxyOptions {
  readonly target: { readonly host: string; readonly port: number };
  /** Default 127.0.0.1, port 0 (any free port). */
  readonly listen?: { readonly host: string; readonly port: number };
  readonly random: Random;
  /** Bytes held per direction of one connection (delayed or partitioned) before the proxy stops reading. */
  readonly heldBytesMax?: number;
}

export interface FaultProxyStats {
  readonly connectionsAccepted: number;
  readonly connectionsOpen: number;
  /** Connections reset by the loss fault. */
  readonly connectionsReset: number;
  readonly bytesForwarded: number;
}

const heldBytesMaxDefault = 1024 * 1024;

/** One direction of one proxied connection: reads `source`, holds chunks as the fault says, writes `dest`. */
class Pipe {
  private readonly held: { chunk: Buffer; dueMs: number }[] = [];
  private heldBytes = 0;
  private lastDueMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private destBlocked = false;
  private sourceEnded = false;

  constructor(
    private readonly source: net.Socket,
    private readonly dest: net.Socket,
    private readonly proxy: FaultProxy,
    private readonly connection: Connection,
  ) {
    source.on('data', (chunk: Buffer) => this.onChunk(chunk));
    source.on('end', () => {
      this.sourceEnded = true;
      this.pump();
    });
    dest.on('drain', () => {
      this.destBlocked = false;
      this.pump();
    });
  }

  private onChunk(chunk: Buffer): void {
    const fault = this.proxy.fault;
    if (fault.kind === 'loss' && this.proxy.random.next() < fault.probability) {
      this.connection.reset();
      return;
    }
    const now = performance.now();
    let dueMs = now;
    if (fault.kind === 'delay') dueMs = now + fault.delayMs + this.proxy.random.next() * fault.jitterMs;
    // Never before an earlier chunk: TCP delivers in order.
    dueMs = Math.max(dueMs, this.lastDueMs);
    this.lastDueMs = dueMs;
    this.held.push({ chunk, dueMs });
    this.heldBytes += chunk.length;
    this.pump();
  }

  /** Forwards what is due, and sets the source's flow: paused while partitioned or holding too much. */
  pump(): void {
    if (this.connection.closed) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    const partitioned = this.proxy.fault.kind === 'partition';
    if (!partitioned) {
      const now = performance.now();
      while (!this.destBlocked && this.held.length > 0) {
        const head = this.held[0];
        assert(head !== undefined);
        if (head.dueMs > now) {
          this.timer = setTimeout(() => this.pump(), Math.ceil(head.dueMs - now));
          break;
        }
        this.held.shift();
        this.heldBytes -= head.chunk.length;
        this.proxy.countForwarded(head.chunk.length);
        if (!this.dest.write(head.chunk)) this.destBlocked = true;
      }
      if (this.sourceEnded && this.held.length === 0 && !this.dest.writableEnded) this.dest.end();
    }
    if (partitioned || this.heldBytes > this.proxy.heldBytesMax) this.source.pause();
    else this.source.resume();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

class Connection {
  closed = false;
  /** An endpoint closed or failed while partitioned: the other one must not learn it before heal. */
  private endpointGone = false;
  private readonly pipes: Pipe[];

  constructor(
    private readonly client: net.Socket,
    private readonly upstream: net.Socket,
    private readonly proxy: FaultProxy,
  ) {
    this.pipes = [new Pipe(client, upstream, proxy, this), new Pipe(upstream, client, proxy, this)];
    // Once one side is closed there is nobody to forward to; but across a partition the news cannot travel.
    const gone = (): void => {
      if (this.proxy.fault.kind === 'partition') this.endpointGone = true;
      else this.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', gone);
      socket.on('close', gone);
    }
  }

  /** Applies a new fault to held bytes and paused sources. */
  refresh(): void {
    if (this.endpointGone && this.proxy.fault.kind !== 'partition') {
      this.destroy();
      return;
    }
    for (const pipe of this.pipes) pipe.pump();
  }

  reset(): void {
    if (this.closed) return;
    this.proxy.countReset();
    this.client.resetAndDestroy();
    this.upstream.resetAndDestroy();
    this.destroy();
  }

  destroy(): void {
    if (!this.closed) {
      this.closed = true;
      for (const pipe of this.pipes) pipe.stop();
    }
    this.client.destroy();
    this.upstream.destroy();
  }

  whenClosed(): Promise<void> {
    const closed = (socket: net.Socket): Promise<void> =>
      socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
    return Promise.all([closed(this.client), closed(this.upstream)]).then(() => undefined);
  }
}

export class FaultProxy {
  readonly random: Random;
  readonly heldBytesMax: number;
  private currentFault: LinkFault = { kind: 'pass' };
  private readonly connections = new Set<Connection>();
  private connectionsAccepted = 0;
  private connectionsReset = 0;
  private bytesForwarded = 0;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: net.Server,
    private readonly options: FaultProxyOptions,
  ) {
    this.random = options.random;
    this.heldBytesMax = options.heldBytesMax ?? heldBytesMaxDefault;
  }

  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true });
    const proxy = new FaultProxy(server, options);
    server.on('connection', (client: net.Socket) => proxy.onConnection(client));
    const listen = options.listen ?? { host: '127.0.0.1', port: 0 };
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: listen.host, port: listen.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return proxy;
  }

  get port(): number {
    const address = this.server.address();
    assert(address !== null && typeof address === 'object');
    return address.port;
  }

  get host(): string {
    return this.options.listen?.host ?? '127.0.0.1';
  }

  get fault(): LinkFault {
    return this.currentFault;
  }

  setFault(fault: LinkFault): void {
    switch (fault.kind) {
      case 'pass':
      case 'partition':
        break;
      case 'delay':
        assert(fault.delayMs >= 0 && fault.jitterMs >= 0, 'delay and jitter must be >= 0');
        break;
      case 'loss':
        assert(fault.probability >= 0 && fault.probability <= 1, 'loss probability must be in [0, 1]');
        break;
      default:
        unreachable(fault);
    }
    this.currentFault = fault;
    for (const connection of this.connections) connection.refresh();
  }

  heal(): void {
    this.setFault({ kind: 'pass' });
  }

  stats(): FaultProxyStats {
    return {
      connectionsAccepted: this.connectionsAccepted,
      connectionsOpen: this.connections.size,
      connectionsReset: this.connectionsReset,
      bytesForwarded: this.bytesForwarded,
    };
  }

  countForwarded(bytes: number): void {
    this.bytesForwarded += bytes;
  }

  countReset(): void {
    this.connectionsReset += 1;
  }

  /** Stops listening and ends every proxied connection; resolves when all sockets are closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const waits: Promise<void>[] = [new Promise((resolve) => this.server.close(() => resolve()))];
      for (const connection of this.connections) {
        connection.destroy();
        waits.push(connection.whenClosed());
      }
      await Promise.all(waits);
      this.connections.clear();
    })();
    return this.closing;
  }

  private onConnection(client: net.Socket): void {
    if (this.closing !== undefined) {
      client.destroy();
      return;
    }
    this.connectionsAccepted += 1;
    client.setNoDelay(true);
    const upstream = net.connect({
      host: this.options.target.host,
      port: this.options.target.port,
      allowHalfOpen: true,
    });
    upstream.setNoDelay(true);
    const connection = new Connection(client, upstream, this);
    this.connections.add(connection);
    void connection.whenClosed().then(() => this.connections.delete(connection));
    connection.refresh();
  }
}
