// The typed request context every filter and handler shares, and the one place responses are written:
// negotiated serialization, gzip when asked, Warning headers, Status bodies for errors.

import { randomUUID } from 'node:crypto';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { encodeCbor } from '../apimachinery/cbor.js';
import { encodeJson, encodeYaml } from '../apimachinery/codec.js';
import { negotiateResponse, type ResponseFormat } from '../apimachinery/negotiation.js';
import { canEncodeProtobuf, encodeObject, protobufMediaType } from '../apimachinery/protobuf.js';
import { statusOf, toApiError, type ApiError } from '../apimachinery/status.js';
import { requestInfo, type RequestInfo } from './requestinfo.js';
import type { UserInfo } from '../auth/user.js';
import type { AuditRecorder } from '../audit/event.js';

export type { UserInfo } from '../auth/user.js';

export interface RequestContext {
  readonly req: Http2ServerRequest;
  readonly res: Http2ServerResponse;
  readonly url: URL;
  readonly query: URLSearchParams;
  readonly info: RequestInfo;
  readonly startMs: number;
  /** Wall-clock time the request arrived, in microseconds since the epoch (audit timestamps). */
  readonly receivedMicros: number;
  /** The request's `Audit-ID` header, or a new UUID: answered as `Audit-ID` and written in audit events. */
  readonly auditId: string;
  user?: UserInfo;
  /** Set by the audit filter when the policy audits this request: handlers report what it logs. */
  audit?: AuditRecorder;
  /** Warning header values (already formatted as `299 - "..."`). */
  readonly warnings: string[];
  /** For logs and metrics: the resource (`pods`) or '' for non-resource requests. */
  metricResource: string;
  /** Whether gzip may be used (feature gate APIResponseCompression). */
  readonly compression: boolean;
  /** Whether CBOR is served (feature gate CBORServingAndStorage): request bodies, responses, watch. */
  readonly cbor: boolean;
  readonly metaGroup: string;
}

/** The context of one request as it arrives: its URL, query and request info parsed once. */
export function newRequestContext(
  req: Http2ServerRequest,
  res: Http2ServerResponse,
  options: { readonly compression: boolean; readonly metaGroup: string; readonly cbor?: boolean },
): RequestContext {
  const url = new URL(req.url, 'https://localhost');
  const auditIdHeader = req.headers['audit-id'];
  return {
    req,
    res,
    url,
    query: url.searchParams,
    info: requestInfo(req.method, url.pathname, url.searchParams),
    startMs: performance.now(),
    receivedMicros: Math.round((performance.timeOrigin + performance.now()) * 1000),
    auditId: typeof auditIdHeader === 'string' && auditIdHeader !== '' ? auditIdHeader : randomUUID(),
    warnings: [],
    metricResource: '',
    compression: options.compression,
    cbor: options.cbor ?? false,
    metaGroup: options.metaGroup,
  };
}

export function warningValue(text: string): string {
  return `299 - ${JSON.stringify(text)}`;
}

function setCommonHeaders(ctx: RequestContext): void {
  if (ctx.warnings.length > 0) ctx.res.setHeader('warning', ctx.warnings);
  ctx.res.setHeader('cache-control', 'no-cache, private');
}

function acceptsGzip(ctx: RequestContext): boolean {
  const header = ctx.req.headers['accept-encoding'];
  return ctx.compression && typeof header === 'string' && /\bgzip\b/.test(header);
}

/** The --group-domain of this server, as the meta group carries it (`meta.k8s.io` → `k8s.io`). */
export function groupDomainOf(ctx: RequestContext): string {
  return ctx.metaGroup.slice('meta.'.length);
}

/** The protobuf negotiation option for a response value: offered when the value's kind has a message. */
export function protobufOption(
  ctx: RequestContext,
  available: boolean,
): { mediaType: string; available: boolean } {
  return { mediaType: protobufMediaType(groupDomainOf(ctx)), available };
}

export function encodeBody(format: ResponseFormat, value: unknown, pretty: boolean): string {
  return format.serialization === 'yaml' ? encodeYaml(value) : encodeJson(value, pretty);
}

function encodeResponse(
  ctx: RequestContext,
  format: ResponseFormat,
  value: unknown,
  pretty: boolean,
): Buffer {
  if (format.serialization === 'protobuf')
    return encodeObject(groupDomainOf(ctx), value as Record<string, unknown>);
  if (format.serialization === 'cbor') return encodeCbor(value);
  return Buffer.from(encodeBody(format, value, pretty));
}

/** Writes a complete response in the negotiated format. `format` defaults to JSON-or-YAML per Accept. */
export function respond(ctx: RequestContext, code: number, value: unknown, format?: ResponseFormat): void {
  const chosen =
    format ??
    (() => {
      try {
        return negotiateResponse(ctx.req.headers.accept, {
          metaGroup: ctx.metaGroup,
          tableAllowed: false,
          protobuf: protobufOption(ctx, canEncodeProtobuf(groupDomainOf(ctx), value)),
          cbor: ctx.cbor,
        });
      } catch {
        return { serialization: 'json', as: 'object', contentType: 'application/json' } as const;
      }
    })();
  const pretty = ctx.query.get('pretty') === 'true' || ctx.query.get('pretty') === '1';
  const text = encodeResponse(ctx, chosen, value, pretty);
  ctx.audit?.responseObject(code, value);
  setCommonHeaders(ctx);
  ctx.res.statusCode = code;
  ctx.res.setHeader('content-type', chosen.contentType);
  const verb = ctx.info.verb;
  if (acceptsGzip(ctx) && (verb === 'get' || verb === 'list') && ctx.req.method !== 'HEAD') {
    const body = gzipSync(text);
    ctx.res.setHeader('content-encoding', 'gzip');
    ctx.res.setHeader('vary', 'Accept-Encoding');
    ctx.res.setHeader('content-length', body.length);
    ctx.res.end(body);
    return;
  }
  const body = text;
  ctx.res.setHeader('content-length', body.length);
  if (ctx.req.method === 'HEAD') ctx.res.end();
  else ctx.res.end(body);
}

export function respondText(
  ctx: RequestContext,
  code: number,
  text: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  ctx.audit?.responseBegins(code);
  setCommonHeaders(ctx);
  ctx.res.statusCode = code;
  ctx.res.setHeader('content-type', contentType);
  ctx.res.setHeader('x-content-type-options', 'nosniff');
  ctx.res.end(text);
}

export function respondError(ctx: RequestContext, error: unknown): ApiError {
  const apiError = toApiError(error);
  if (ctx.res.headersSent) {
    ctx.res.end();
    return apiError;
  }
  const retryAfter = apiError.details?.retryAfterSeconds;
  if (retryAfter !== undefined) ctx.res.setHeader('retry-after', String(retryAfter));
  respond(ctx, apiError.code, statusOf(apiError));
  return apiError;
}
