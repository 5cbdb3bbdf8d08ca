// Watch streaming (spec 6): synthetic ADDED events when the start asks for state, then every change from the
// watch cache, filtered by namespace and selectors (an object that stops matching is DELETED for this watcher,
// one that starts matching is ADDED), BOOKMARKs when asked, ERROR with a Status, and a bounded buffer per
// watcher: a watcher that cannot keep up is closed (it resumes from its last resourceVersion) instead of
// stalling the others.

import { constants as http2constants } from 'node:http2';
import type { ResponseFormat } from '../apimachinery/negotiation.js';
import type { ApiObject } from '../apimachinery/meta.js';
import type { Selector } from '../apimachinery/selectors.js';
import { errors, statusOf, type ApiError } from '../apimachinery/status.js';
import { toTable } from '../apimachinery/table.js';
import type { ResourceRegistry } from '../registry/store.js';
import { revision, type Revision } from '../util/brand.js';
import type { CacheEvent } from '../watchcache/cache.js';
import { cborSequenceMediaType, encodeCborWatchEvent } from '../apimachinery/cbor.js';
import { encodeWatchFrame } from '../apimachinery/protobuf.js';
import { encodeBody, groupDomainOf, type RequestContext } from './context.js';

export const watchLimits = {
  /** Events a watcher may have queued behind a connection that is not draining, before it is cut off. */
  watcherPendingEventsMax: 10_000,
  /** Bytes of events queued behind a connection that is not draining (beyond the socket's own buffers). */
  watcherPendingBytesMax: 4 * 1024 * 1024,
  /** Without timeoutSeconds a watch ends after this long (kube-apiserver: 30 to 60 minutes). */
  watchDefaultTimeoutMs: 30 * 60_000,
} as const;

export interface WatchRequest {
  readonly namespace: string;
  readonly labelSelector: Selector;
  readonly fieldSelector: Selector;
  readonly resourceVersion: string | undefined;
  readonly resourceVersionMatch: string | undefined;
  readonly allowWatchBookmarks: boolean;
  readonly sendInitialEvents: boolean | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly format: ResponseFormat;
  readonly initialEventsAnnotation: string;
  /** Periodic bookmarks (when asked for) this often: limits.apiWatchBookmarkIntervalMs unless a test shortens it. */
  readonly bookmarkIntervalMs: number;
}

export interface WatchHooks {
  readonly opened: (group: string, resource: string) => void;
  readonly closed: (group: string, resource: string) => void;
}

type Start = { kind: 'state'; consistent: boolean; atLeast: Revision } | { kind: 'from'; revision: Revision };

function startOf(request: WatchRequest): Start {
  const rvText = request.resourceVersion ?? '';
  if (request.sendInitialEvents === true && request.resourceVersionMatch !== 'NotOlderThan') {
    throw errors.badRequest(
      'sendInitialEvents: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    );
  }
  if (request.sendInitialEvents === undefined && request.resourceVersionMatch !== undefined) {
    throw errors.badRequest(
      'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
  }
  if (request.resourceVersionMatch !== undefined && request.resourceVersionMatch !== 'NotOlderThan') {
    throw errors.badRequest(
      `resourceVersionMatch: Unsupported value: "${request.resourceVersionMatch}": supported values: "NotOlderThan"`,
    );
  }
  if (rvText !== '' && !/^\d+$/.test(rvText))
    throw errors.badRequest(`Invalid value: "${rvText}": resourceVersion must be an unsigned integer`);
  const rv = rvText === '' ? undefined : revision(Number(rvText));
  if (request.sendInitialEvents === true)
    return { kind: 'state', consistent: rv === undefined, atLeast: rv ?? revision(0) };
  if (request.sendInitialEvents === false && rv !== undefined && rv > 0)
    return { kind: 'from', revision: rv };
  if (rv === undefined) return { kind: 'state', consistent: true, atLeast: revision(0) };
  if (rv === 0) return { kind: 'state', consistent: false, atLeast: revision(0) };
  return { kind: 'from', revision: rv };
}

/** The one name a field selector pins (`metadata.name=X`, or a watch on one object by name), if any. */
function pinnedName(fieldSelector: Selector): string | undefined {
  for (const r of fieldSelector) {
    if (r.key === 'metadata.name' && r.op === 'in' && r.values.length === 1) return r.values[0];
  }
  return undefined;
}

export async function serveWatch(
  ctx: RequestContext,
  registry: ResourceRegistry,
  request: WatchRequest,
  hooks: WatchHooks,
): Promise<void> {
  const start = startOf(request);
  const cache = registry.cache;
  // A corrupt object in the resource: kube-apiserver's cacher cannot list it and stays re-initializing, so
  // watches are refused with 429 until the object is repaired or unsafely deleted (spec 3.2).
  if (cache.hasCorrupt(registry.prefix)) throw errors.storageReinitializing();
  let atLeast = start.kind === 'from' ? start.revision : start.atLeast;
  if (start.kind === 'state' && start.consistent) atLeast = await registry.currentRevision();
  if (atLeast > cache.revision) await registry.waitForCache(atLeast);

  const prefix =
    registry.decl.namespaced && request.namespace !== ''
      ? `${registry.prefix}${request.namespace}/`
      : registry.prefix;
  const selects = (o: ApiObject): boolean =>
    registry.selects(o, request.labelSelector, request.fieldSelector);
  const pretty = false;
  const asTable = request.format.as === 'Table';
  const encodeObject = (object: ApiObject): unknown =>
    request.format.as === 'PartialObjectMetadata'
      ? { kind: 'PartialObjectMetadata', apiVersion: `${ctx.metaGroup}/v1`, metadata: object.metadata }
      : asTable
        ? toTable(registry.decl, [object], {
            metaGroup: ctx.metaGroup,
            version: 'v1',
            includeObject: 'Object',
          })
        : object;
  const protobuf = request.format.serialization === 'protobuf';
  const cbor = request.format.serialization === 'cbor';
  const groupDomain = groupDomainOf(ctx);
  // One event: a JSON line, (protobuf) a length-prefixed frame holding a WatchEvent in the envelope, or (CBOR)
  // one self-delimiting data item of a CBOR sequence.
  const line = (type: string, object: unknown): string | Buffer => {
    if (protobuf)
      return encodeWatchFrame(groupDomain, registry.apiVersion, type, object as Record<string, unknown>);
    if (cbor) return encodeCborWatchEvent(type, object);
    const text = encodeBody({ ...request.format, serialization: 'json' }, { type, object }, pretty);
    return text.endsWith('\n') ? text : `${text}\n`;
  };
  const bookmark = (rv: Revision, annotations?: Record<string, string>): string | Buffer =>
    line('BOOKMARK', {
      kind: registry.decl.kind,
      apiVersion: registry.apiVersion,
      metadata: { resourceVersion: String(rv), ...(annotations === undefined ? {} : { annotations }) },
    });

  // Below the window: the stream opens and carries one ERROR (as kube-apiserver's watch cache answers).
  let tooOld: ApiError | undefined;
  if (start.kind === 'from' && start.revision < cache.oldestRevision) {
    tooOld = errors.resourceExpired(
      `too old resource version: ${start.revision} (${cache.oldestRevision + 1})`,
    );
  }

  const res = ctx.res;
  res.statusCode = 200;
  // Events are JSON documents; the media type says which view (object, Table, PartialObjectMetadata).
  res.setHeader(
    'content-type',
    protobuf
      ? `${request.format.contentType.split(';')[0] ?? ''};stream=watch`
      : cbor
        ? // Asked for application/cbor (one data item), kube-apiserver answers with the sequence type.
          cborSequenceMediaType
        : request.format.serialization === 'json'
          ? request.format.contentType
          : 'application/json',
  );
  res.setHeader('cache-control', 'no-cache, private');
  if (ctx.warnings.length > 0) res.setHeader('warning', ctx.warnings);
  ctx.audit?.responseBegins(200);
  res.writeHead(200);
  // HTTP/2 sends the headers on writeHead; HTTP/1.1 needs flushHeaders, or a quiet watch would look hung.
  (res as unknown as { flushHeaders?: () => void }).flushHeaders?.();
  if (tooOld !== undefined) {
    res.end(line('ERROR', statusOf(tooOld)));
    return;
  }

  hooks.opened(registry.decl.group, registry.decl.plural);
  let pending = 0;
  let pendingBytes = 0;
  let closed = false;
  let lastRevision: Revision = revision(0);
  const timers: NodeJS.Timeout[] = [];
  let unsubscribe = (): void => {};
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const close = (final?: string | Buffer, cut = false): void => {
    if (closed) return;
    closed = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    hooks.closed(registry.decl.group, registry.decl.plural);
    if (!res.writableEnded && !cut) {
      if (final === undefined) res.end();
      else res.end(final);
    }
    resolveDone();
  };
  const cutOff = (): void => {
    close(undefined, true);
    const stream = (res as unknown as { stream?: { close(code: number): void } }).stream;
    if (stream !== undefined) stream.close(http2constants.NGHTTP2_CANCEL);
    else (res as unknown as { destroy(): void }).destroy();
  };
  const send = (text: string | Buffer): void => {
    if (closed) return;
    if (
      pending >= watchLimits.watcherPendingEventsMax ||
      pendingBytes >= watchLimits.watcherPendingBytesMax
    ) {
      // Too slow: cut it off rather than buffer without bound (the queued events are dropped with the
      // connection's stream); the client resumes from its last resourceVersion.
      cutOff();
      return;
    }
    if (!res.write(text)) {
      pending++;
      pendingBytes += text.length;
      if (pending === 1) {
        res.once('drain', () => {
          pending = 0;
          pendingBytes = 0;
        });
      }
    } else if (pending > 0) {
      pending++;
      pendingBytes += text.length;
    }
  };
  const deliver = (events: readonly CacheEvent<ApiObject>[]): void => {
    for (const e of events) {
      if (!e.key.startsWith(prefix)) continue;
      const now = e.type === 'DELETED' ? false : selects(e.object);
      const before = e.previous !== undefined && e.type !== 'ADDED' ? selects(e.previous) : false;
      if (e.type === 'DELETED') {
        if (selects(e.object) || before) send(line('DELETED', encodeObject(e.object)));
      } else if (now && before) send(line('MODIFIED', encodeObject(e.object)));
      else if (now) send(line('ADDED', encodeObject(e.object)));
      else if (before) send(line('DELETED', encodeObject(e.object)));
      lastRevision = e.revision;
    }
  };

  ctx.req.on('close', () => close());
  res.on('close', () => close());

  // Snapshot and subscription happen in one synchronous step: nothing is missed or repeated.
  if (start.kind === 'state') {
    // A watch pinned to one object's key reads that key, not a sorted copy of the whole resource (1,000 such
    // watchers on 10,000 objects would otherwise copy and sort 10,000,000 entries).
    const name = pinnedName(request.fieldSelector);
    const pinned = name !== undefined && (!registry.decl.namespaced || request.namespace !== '');
    const entry = pinned ? cache.get(`${prefix}${name}`) : undefined;
    const snapshot = pinned
      ? { revision: cache.revision, entries: entry === undefined ? [] : [entry] }
      : cache.snapshot(prefix);
    const sub = cache.subscribe(
      snapshot.revision,
      (events, rv) => {
        deliver(events);
        if (rv > lastRevision) lastRevision = rv;
      },
      () => close(),
    );
    unsubscribe = sub.unsubscribe;
    for (const entry of snapshot.entries)
      if (selects(entry.object)) send(line('ADDED', encodeObject(entry.object)));
    lastRevision = snapshot.revision;
    if (request.sendInitialEvents === true && request.allowWatchBookmarks) {
      send(bookmark(snapshot.revision, { [request.initialEventsAnnotation]: 'true' }));
    }
    deliver(sub.replay);
  } else {
    const sub = cache.subscribe(
      start.revision,
      (events, rv) => {
        deliver(events);
        if (rv > lastRevision) lastRevision = rv;
      },
      () => close(),
    );
    unsubscribe = sub.unsubscribe;
    lastRevision = start.revision;
    deliver(sub.replay);
  }

  // timeoutSeconds unset or 0: the server's default (kube-apiserver treats 0 as unset too).
  const timeoutMs =
    request.timeoutSeconds !== undefined && request.timeoutSeconds > 0
      ? request.timeoutSeconds * 1000
      : watchLimits.watchDefaultTimeoutMs;
  timers.push(
    setTimeout(
      () =>
        close(
          request.allowWatchBookmarks
            ? bookmark(lastRevision > cache.revision ? lastRevision : cache.revision)
            : undefined,
        ),
      timeoutMs,
    ),
  );
  if (request.allowWatchBookmarks) {
    const tick = (): void => {
      send(bookmark(cache.revision > lastRevision ? cache.revision : lastRevision));
      timers.push(setTimeout(tick, request.bookmarkIntervalMs));
    };
    timers.push(setTimeout(tick, request.bookmarkIntervalMs));
  }
  await done;
}
