// The bench-only KV RPC between the bench client and bench/kv-node.ts: length-prefixed msgpack frames (the peer
// transport's framing) over one loopback TCP connection per client and member, requests multiplexed by id.
//
//   request   [id, method, argument]            method: range | txn | watch | unwatch | progress | status | replica
//   response  [id, 0, result]                   (for watch: once the watch is registered)
//             [id, 1, {code, message, revision}] a StorageError
//             [id, 2, WatchResponse]            a watch's stream; a canceled response ends it
//
// Writes made in one tick are corked into one syscall on both sides (as gRPC batches its frames).
import { connect, type Socket } from 'node:net';
import { Packr } from 'msgpackr';
import { FrameDecoder, frameHeaderBytes } from '../src/transport/framing.js';
import {
  StorageError,
  type KVStore,
  type KeySpan,
  type RangeOptions,
  type RangeResult,
  type StorageErrorCode,
  type StoreStatus,
  type TxnRequest,
  type TxnResult,
  type Watch,
  type WatchOptions,
  type WatchResponse,
} from '../src/storage/contract.js';
import type { Revision } from '../src/util/brand.js';

export type Method = 'range' | 'txn' | 'watch' | 'unwatch' | 'progress' | 'status' | 'replica' | 'compact';
export type Request = [id: number, method: Method, argument: unknown];
export type Reply = [id: number, kind: 0 | 1 | 2, body: unknown];

export const frameBytesMax = 64 * 1024 * 1024;
const packr = new Packr({ useRecords: false, moreTypes: false });

export function encodeFrame(message: unknown): Buffer {
  return framePayloads([packr.pack(message)]);
}

/** Frames (header + payload) of the payloads, in one buffer: one copy of each payload. */
function framePayloads(payloads: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const p of payloads) total += frameHeaderBytes + p.length;
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const p of payloads) {
    at = out.writeUInt32BE(p.length, at);
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const decodePayload = (payload: Buffer): unknown => packr.unpack(payload);

/**
 * Sends frames on a socket: the messages of one tick are encoded as they come and written together, as one
 * buffer in one `write` (as gRPC writes the frames of one flush together), at the end of the tick.
 */
export class CorkedWriter {
  private pending: Uint8Array[] = [];
  constructor(private readonly socket: Socket) {}
  send(message: unknown): void {
    if (this.socket.destroyed) return;
    if (this.pending.length === 0) process.nextTick(() => this.flush());
    // msgpackr never reuses the bytes of a returned encoding, so they can wait for the flush.
    this.pending.push(packr.pack(message));
  }
  private flush(): void {
    const payloads = this.pending;
    this.pending = [];
    if (!this.socket.destroyed && payloads.length > 0) this.socket.write(framePayloads(payloads));
  }
}

export interface WireError {
  readonly code: StorageErrorCode;
  readonly message: string;
  readonly revision?: number;
}

export function toWireError(error: unknown): WireError {
  if (error instanceof StorageError) {
    return {
      code: error.code,
      message: error.message,
      ...(error.revision !== undefined ? { revision: error.revision } : {}),
    };
  }
  return { code: 'Unavailable', message: error instanceof Error ? error.message : String(error) };
}

export const fromWireError = (e: WireError): StorageError =>
  new StorageError(e.code, e.message, e.revision as Revision | undefined);

/** What kv-node says about its Raft state (a subset of ReplicaStatus). */
export interface NodeStatus {
  readonly role: string;
  readonly leader: string | null;
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  /** Times this member's transport saw its leader's process go and it campaigned early (since it started). */
  readonly leaderDownHints: number;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** A KVStore over one kv-node. Reconnects lazily: a request after a broken connection dials again. */
export class RemoteStore implements KVStore {
  private socket: Socket | undefined;
  private writer: CorkedWriter | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly watchers = new Map<number, (response: WatchResponse) => void>();
  private closed = false;

  constructor(
    readonly host: string,
    readonly port: number,
  ) {}

  private connection(): CorkedWriter {
    if (this.closed) throw new StorageError('Closed', 'the client is closed');
    if (this.socket !== undefined && !this.socket.destroyed && this.writer !== undefined) return this.writer;
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    const decoder = new FrameDecoder(frameBytesMax);
    socket.on('data', (chunk: Buffer) => {
      const broken = decoder.push(chunk, (payload) => this.onReply(decodePayload(payload) as Reply));
      if (broken !== undefined) socket.destroy(new Error(broken));
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      const error = new StorageError('Unavailable', `connection to ${this.host}:${this.port} closed`);
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(error);
      }
      for (const [id, listener] of this.watchers) {
        this.watchers.delete(id);
        listener({ type: 'canceled', error });
      }
    });
    this.socket = socket;
    this.writer = new CorkedWriter(socket);
    return this.writer;
  }

  private onReply([id, kind, body]: Reply): void {
    if (kind === 2) {
      const listener = this.watchers.get(id);
      if (listener === undefined) return;
      const response = body as WatchResponse;
      if (response.type === 'canceled') {
        this.watchers.delete(id);
        listener({ type: 'canceled', error: fromWireError((body as { error: WireError }).error) });
      } else listener(response);
      return;
    }
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    if (kind === 0) p.resolve(body);
    else p.reject(fromWireError(body as WireError));
  }

  call<T>(method: Method, argument: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const writer = this.connection();
      const id = this.nextId++;
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      writer.send([id, method, argument] satisfies Request);
    });
  }

  range(span: KeySpan, options: RangeOptions = {}): Promise<RangeResult> {
    return this.call('range', { span, options });
  }

  txn(request: TxnRequest): Promise<TxnResult> {
    return this.call('txn', request);
  }

  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    const writer = this.connection();
    const id = this.nextId++;
    let open = true;
    this.watchers.set(id, (response) => {
      if (open) listener(response);
    });
    const ready = new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve: () => resolve(), reject });
    });
    writer.send([id, 'watch', { span, options }] satisfies Request);
    return {
      ready,
      requestProgress: () => this.writer?.send([this.nextId++, 'progress', id] satisfies Request),
      close: () => {
        if (!open) return;
        open = false;
        this.watchers.delete(id);
        this.writer?.send([this.nextId++, 'unwatch', id] satisfies Request);
      },
    };
  }

  compact(revision: Revision): Promise<void> {
    return this.call('compact', revision);
  }

  status(): Promise<StoreStatus> {
    return this.call('status', null);
  }

  nodeStatus(): Promise<NodeStatus> {
    return this.call('replica', null);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.socket?.destroy();
  }
}

/** A KVStore over several kv-nodes: each request goes to a member picked by `pick` (watches: the first). */
export class RemotePool implements KVStore {
  constructor(
    private readonly members: readonly RemoteStore[],
    private readonly pick: () => number,
  ) {}
  private any(): RemoteStore {
    return this.members[this.pick() % this.members.length]!;
  }
  range(span: KeySpan, options?: RangeOptions): Promise<RangeResult> {
    return this.any().range(span, options);
  }
  txn(request: TxnRequest): Promise<TxnResult> {
    return this.any().txn(request);
  }
  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    return this.members[0]!.watch(span, options, listener);
  }
  compact(revision: Revision): Promise<void> {
    return this.any().compact(revision);
  }
  status(): Promise<StoreStatus> {
    return this.any().status();
  }
  async close(): Promise<void> {
    await Promise.all(this.members.map((m) => m.close()));
  }
}
