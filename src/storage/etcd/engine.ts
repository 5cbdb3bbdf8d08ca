// The etcd engine: the storage contract over a real etcd v3 cluster, through the etcd3 client's raw gRPC
// services (KV, Watch, Maintenance), so that every contract field maps one to one onto etcd's.
// Requests are checked locally first (src/storage/validate.ts) so both engines answer bad input alike.
// etcd 3.4 does not report the compacted revision anywhere cheap; `compactRevision()` finds it by bisecting
// with count-only ranges (one key, about log2(revision) requests; one request while it has not moved), used
// for status() and error details.

import {
  Etcd3,
  type ICompare,
  type IKeyValue,
  type IRequestOp,
  type IResponseOp,
  type IWatchResponse,
} from 'etcd3';
import { unreachable } from '../../util/assert.js';
import { revision as toRevision, type Revision } from '../../util/brand.js';
import {
  StorageError,
  type Compare,
  type KeySpan,
  type KeyValue,
  type KVStore,
  type RangeOptions,
  type RangeResult,
  type StoreStatus,
  type TxnOp,
  type TxnOpResult,
  type TxnRequest,
  type TxnResult,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type WatchResponse,
} from '../contract.js';
import { prefixEnd } from '../mvcc/layout.js';
import { checkSpan, checkTxn } from '../validate.js';

export interface EtcdStoreOptions {
  /** Client URLs, e.g. ['http://127.0.0.1:2379']. */
  readonly endpoints: readonly string[];
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
/** A key that no test or user writes; only counted at old revisions, to probe compaction. */
const probeKey = utf8('\0stoa/compaction-probe');

export async function openEtcdStore(options: EtcdStoreOptions): Promise<EtcdStore> {
  const client = new Etcd3({ hosts: [...options.endpoints], dialTimeout: 5000 });
  const store = new EtcdStore(client);
  try {
    await store.currentRevision(); // fail fast when nothing answers
  } catch (error) {
    client.close();
    throw error;
  }
  return store;
}

/** etcd's range as [key, range_end): a key is [key, key\0), a prefix is [max(prefix, startKey), prefixEnd). */
function spanRange(span: KeySpan, startKey: string | undefined): { key: Buffer; range_end: Buffer } {
  const start = startKey !== undefined ? utf8(startKey) : undefined;
  if ('key' in span) {
    const key = utf8(span.key);
    const end = Buffer.concat([key, Buffer.from([0])]);
    return { key: start !== undefined && Buffer.compare(start, key) > 0 ? start : key, range_end: end };
  }
  const prefix = utf8(span.prefix);
  const key = start !== undefined && Buffer.compare(start, prefix) > 0 ? start : prefix;
  // etcd: range_end "\0" means every key >= key.
  return { key: key.length === 0 ? Buffer.from([0]) : key, range_end: prefixEnd(prefix) ?? Buffer.from([0]) };
}

function keyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value ?? Buffer.alloc(0),
    createRevision: toRevision(Number(kv.create_revision)),
    modRevision: toRevision(Number(kv.mod_revision)),
    version: Number(kv.version),
  };
}

const optionalKv = (kv: IKeyValue | null | undefined): KeyValue | undefined =>
  kv === null || kv === undefined ? undefined : keyValue(kv);

const compareResult = { '=': 'Equal', '!=': 'NotEqual', '<': 'Less', '>': 'Greater' } as const;

function compareOf(compare: Compare): ICompare {
  const key = utf8(compare.key);
  switch (compare.target) {
    case 'exists':
      return { key, target: 'Version', result: compare.value ? 'Greater' : 'Equal', version: 0 };
    case 'value':
      return { key, target: 'Value', result: compareResult[compare.op], value: Buffer.from(compare.value) };
    case 'version':
      return { key, target: 'Version', result: compareResult[compare.op], version: compare.value };
    case 'createRevision':
      return { key, target: 'Create', result: compareResult[compare.op], create_revision: compare.value };
    case 'modRevision':
      return { key, target: 'Mod', result: compareResult[compare.op], mod_revision: compare.value };
    default:
      return unreachable(compare);
  }
}

function rangeRequest(
  span: KeySpan,
  options: Omit<RangeOptions, 'serializable'> & { serializable?: boolean },
) {
  return {
    ...spanRange(span, options.startKey),
    limit: options.limit ?? 0,
    revision: options.revision ?? 0,
    count_only: options.countOnly ?? false,
    serializable: options.serializable ?? false,
  };
}

function requestOp(op: TxnOp): IRequestOp {
  switch (op.type) {
    case 'put':
      return {
        request_put: { key: utf8(op.key), value: Buffer.from(op.value), prev_kv: op.prevKv ?? false },
      };
    case 'delete':
      return { request_delete_range: { ...spanRange(op.span, undefined), prev_kv: op.prevKv ?? false } };
    case 'range':
      return { request_range: rangeRequest(op.span, op.options ?? {}) };
    default:
      return unreachable(op);
  }
}

function opResult(op: TxnOp, response: IResponseOp | undefined): TxnOpResult {
  switch (op.type) {
    case 'put': {
      const prevKv = optionalKv(response?.response_put?.prev_kv);
      return prevKv !== undefined ? { type: 'put', prevKv } : { type: 'put' };
    }
    case 'delete': {
      const deleted = response?.response_delete_range;
      return {
        type: 'delete',
        deleted: Number(deleted?.deleted ?? 0),
        prevKvs: (deleted?.prev_kvs ?? []).map(keyValue),
      };
    }
    case 'range': {
      const range = response?.response_range;
      return {
        type: 'range',
        result: {
          kvs: (range?.kvs ?? []).map(keyValue),
          more: range?.more ?? false,
          count: Number(range?.count ?? 0),
        },
      };
    }
    default:
      return unreachable(op);
  }
}

/** etcd's error texts, mapped onto the closed set of codes (anything else: Unavailable). */
function errorCode(message: string): StorageError['code'] {
  if (message.includes('required revision has been compacted')) return 'Compacted';
  if (message.includes('required revision is a future revision')) return 'FutureRevision';
  if (message.includes('duplicate key given in txn request')) return 'DuplicateKey';
  if (message.includes('too many operations in txn request')) return 'TooManyOps';
  if (message.includes('request is too large')) return 'ValueTooLarge';
  if (message.includes('key is not provided')) return 'InvalidArgument';
  return 'Unavailable';
}

interface EtcdWatchStream {
  write(item: unknown): void;
  cancel(): void;
  end(): void;
  on(event: 'data', fn: (item: IWatchResponse) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end', fn: () => void): unknown;
}

export class EtcdStore implements KVStore {
  private closed = false;
  private readonly watches = new Set<EtcdWatch>();
  /** The highest compacted revision seen (0 = none yet); checked with one range before it is trusted. */
  private knownCompactRevision = 0;

  constructor(private readonly client: Etcd3) {}

  /** Turns a client error into a StorageError, with the revision etcd's own error lacks. */
  private async storageError(error: unknown): Promise<StorageError> {
    if (error instanceof StorageError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const code = errorCode(message);
    if (code === 'Compacted') return new StorageError(code, message, await this.compactRevision());
    if (code === 'FutureRevision') return new StorageError(code, message, await this.currentRevision());
    return new StorageError(code, `etcd: ${message}`);
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StorageError('Closed', 'the store is closed');
    try {
      return await run();
    } catch (error) {
      throw await this.storageError(error);
    }
  }

  async currentRevision(): Promise<Revision> {
    const response = await this.call(() => this.client.kv.range({ key: probeKey, count_only: true }));
    return toRevision(Number(response.header.revision));
  }

  /** The compacted revision: the lowest revision a range still answers (0 when nothing was compacted). */
  async compactRevision(): Promise<Revision> {
    const readable = async (revision: number): Promise<boolean> => {
      try {
        await this.client.kv.range({ key: probeKey, count_only: true, revision });
        return true;
      } catch (error) {
        if (errorCode(error instanceof Error ? error.message : String(error)) === 'Compacted') return false;
        throw error;
      }
    };
    try {
      const known = this.knownCompactRevision;
      // Compaction only moves forward: if the last known compacted revision still reads, it is still the one.
      if (known > 0 && (await readable(known))) return toRevision(known);
      if (known === 0 && (await readable(1))) return toRevision(0);
      let low = Math.max(known, 1); // not readable
      let high = Number((await this.client.kv.range({ key: probeKey, count_only: true })).header.revision);
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (await readable(middle)) high = middle;
        else low = middle;
      }
      this.knownCompactRevision = Math.max(this.knownCompactRevision, high);
      return toRevision(high);
    } catch (error) {
      throw new StorageError(
        'Unavailable',
        `etcd: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  async range(span: KeySpan, options: RangeOptions = {}): Promise<RangeResult> {
    checkSpan(span);
    const response = await this.call(() => this.client.kv.range(rangeRequest(span, options)));
    return {
      header: { revision: toRevision(Number(response.header.revision)) },
      kvs: response.kvs.map(keyValue),
      more: response.more,
      count: Number(response.count),
    };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    checkTxn(request);
    const response = await this.call(() =>
      this.client.kv.txn({
        compare: request.compare.map(compareOf),
        success: request.success.map(requestOp),
        failure: request.failure.map(requestOp),
      }),
    );
    const ops = response.succeeded ? request.success : request.failure;
    return {
      header: { revision: toRevision(Number(response.header.revision)) },
      succeeded: response.succeeded,
      responses: ops.map((op, i) => opResult(op, response.responses[i])),
    };
  }

  watch(span: KeySpan, options: WatchOptions, listener: (response: WatchResponse) => void): Watch {
    checkSpan(span);
    const watch = new EtcdWatch(this, span, options, listener);
    if (this.closed) {
      watch.cancel(new StorageError('Closed', 'the store is closed'));
      return watch;
    }
    this.watches.add(watch);
    watch.start(this.client);
    return watch;
  }

  forget(watch: EtcdWatch): void {
    this.watches.delete(watch);
  }

  async compact(revision: Revision): Promise<void> {
    await this.call(() => this.client.kv.compact({ revision, physical: false }));
    this.knownCompactRevision = Math.max(this.knownCompactRevision, revision);
  }

  async status(): Promise<StoreStatus> {
    const status = await this.call(() => this.client.maintenance.status());
    return {
      revision: toRevision(Number(status.header.revision)),
      compactRevision: await this.compactRevision(),
      dbSizeBytes: Number(status.dbSize),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watch of [...this.watches]) watch.cancel(new StorageError('Closed', 'the store is closed'));
    this.client.close();
  }
}

/** One Stoa watch = one etcd watch on its own gRPC stream (so progress responses are unambiguous). */
class EtcdWatch implements Watch {
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  private stream: EtcdWatchStream | undefined;
  private done = false;
  private progressWanted = false;

  constructor(
    private readonly store: EtcdStore,
    private readonly span: KeySpan,
    private readonly options: WatchOptions,
    private readonly listener: (response: WatchResponse) => void,
  ) {
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
  }

  start(client: Etcd3): void {
    client.watchClient
      .watch()
      .then((stream) => {
        const etcdStream = stream as unknown as EtcdWatchStream;
        if (this.done) {
          etcdStream.cancel();
          return;
        }
        this.stream = etcdStream;
        etcdStream.on('data', (response) => this.onResponse(response));
        etcdStream.on('error', (error) => this.fail(error));
        etcdStream.on('end', () => this.fail(new Error('watch stream ended')));
        const after = this.options.afterRevision;
        etcdStream.write({
          create_request: {
            ...spanRange(this.span, undefined),
            ...(after !== undefined ? { start_revision: after + 1 } : {}),
            prev_kv: this.options.prevKv ?? false,
            progress_notify: this.options.progressNotify ?? false,
          },
        });
      })
      .catch((error: unknown) => this.fail(error));
  }

  private fail(error: unknown): void {
    if (this.done) return;
    this.cancel(
      new StorageError(
        'Unavailable',
        `etcd watch: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  }

  private onResponse(response: IWatchResponse): void {
    if (this.done) return;
    if (response.canceled) {
      const compacted = Number(response.compact_revision);
      this.cancel(
        compacted > 0
          ? new StorageError(
              'Compacted',
              `watch below the compacted revision ${compacted}`,
              toRevision(compacted),
            )
          : new StorageError('Unavailable', `etcd canceled the watch: ${response.cancel_reason}`),
      );
      return;
    }
    if (response.created) {
      this.resolveReady();
      if (this.progressWanted) this.requestProgress();
      // etcd 3.4 also reports a compacted start on the created response.
      const compacted = Number(response.compact_revision);
      if (compacted > 0) {
        this.cancel(
          new StorageError(
            'Compacted',
            `watch below the compacted revision ${compacted}`,
            toRevision(compacted),
          ),
        );
      }
      return;
    }
    if (response.events.length > 0) {
      const events: WatchEvent[] = response.events.map((event) => {
        const kv = keyValue(event.kv);
        const prevKv = optionalKv(event.prev_kv);
        const type = event.type === 'Put' ? 'put' : 'delete';
        return prevKv !== undefined ? { type, kv, prevKv } : { type, kv };
      });
      this.listener({ type: 'events', events });
      return;
    }
    this.listener({ type: 'progress', revision: toRevision(Number(response.header.revision)) });
  }

  requestProgress(): void {
    if (this.done) return;
    if (this.stream === undefined) this.progressWanted = true;
    else this.stream.write({ progress_request: {} });
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.store.forget(this);
    this.resolveReady();
    this.stream?.cancel();
  }

  cancel(error: StorageError): void {
    if (this.done) return;
    this.close();
    this.listener({ type: 'canceled', error });
  }
}
