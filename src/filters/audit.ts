// The audit filters, as kube-apiserver's: withAuditInit answers every request's Audit-ID header; withAudit (after
// authentication, before impersonation) evaluates the policy with the authenticated user and writes the stages'
// events (RequestReceived, ResponseStarted for long-running requests, ResponseComplete, or Panic);
// withFailedAuthenticationAudit (around authentication) writes the one ResponseStarted event of a 401.

import { isIP } from 'node:net';
import { ApiError } from '../apimachinery/status.js';
import { AuditRecorder, auditUserOf, type AuditEvent } from '../audit/event.js';
import type { Auditor } from '../audit/auditor.js';
import type { AuditLevel, AuditStage } from '../audit/policy.js';
import { AssertionError } from '../util/assert.js';
import { tlsSocketOf } from '../auth/client-cert.js';
import { anonymousUser } from '../auth/user.js';
import type { Attributes } from '../auth/authorizer.js';
import { respondError, respondText, type RequestContext } from '../endpoints/context.js';
import { isProxyRequest } from '../endpoints/proxy.js';
import { requestAttributes } from './authorization.js';
import type { Handler } from './handler.js';

const userAgentLengthMax = 1024;

export function withAuditInit(next: Handler): Handler {
  return async (ctx) => {
    ctx.res.setHeader('audit-id', ctx.auditId);
    await next(ctx);
  };
}

/** kube's utilnet.SourceIPs: X-Forwarded-For, then X-Real-Ip, then the peer, each once. */
function sourceIPs(ctx: RequestContext): string[] {
  const out: string[] = [];
  const add = (ip: string): void => {
    const trimmed = ip.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
    if (isIP(trimmed) !== 0 && !out.includes(trimmed)) out.push(trimmed);
  };
  const forwarded = ctx.req.headers['x-forwarded-for'];
  if (typeof forwarded === 'string') forwarded.split(',').forEach(add);
  const realIp = ctx.req.headers['x-real-ip'];
  if (typeof realIp === 'string') add(realIp);
  add(ctx.req.socket.remoteAddress ?? '');
  return out;
}

function userAgentOf(ctx: RequestContext): string {
  const agent = ctx.req.headers['user-agent'] ?? '';
  return agent.length > userAgentLengthMax ? `${agent.slice(0, userAgentLengthMax)}...TRUNCATED` : agent;
}

function newEvent(ctx: RequestContext, attributes: Attributes, level: AuditLevel): AuditEvent {
  return {
    level,
    auditID: ctx.auditId,
    stage: 'RequestReceived',
    requestURI: `${ctx.url.pathname}${ctx.url.search}`,
    verb: attributes.verb,
    user: {},
    sourceIPs: sourceIPs(ctx),
    userAgent: userAgentOf(ctx),
    ...(attributes.isResourceRequest
      ? {
          objectRef: {
            resource: attributes.resource,
            namespace: attributes.namespace,
            name: attributes.name,
            apiGroup: attributes.apiGroup,
            apiVersion: attributes.apiVersion,
            subresource: attributes.subresource,
          },
        }
      : {}),
    requestReceivedMicros: ctx.receivedMicros,
    stageMicros: ctx.receivedMicros,
  };
}

/** kube's responsewriters.InternalError body: `Internal Server Error: "URI": reason`, HTML-escaped. */
function internalErrorText(requestURI: string, reason: string): string {
  const escapes: Record<string, string> = {
    '&': '&amp;',
    '<': '&lt;',
    '>': '&gt;',
    '"': '&#34;',
    "'": '&#39;',
  };
  const text = `Internal Server Error: ${JSON.stringify(requestURI)}: ${reason}`;
  return `${text.replace(/[&<>"']/g, (c) => escapes[c] ?? c)}\n`;
}

/** kube's long-running requests here: watches and proxies; they get a ResponseStarted event. */
function isLongRunning(ctx: RequestContext): boolean {
  const info = ctx.info;
  return info.isResourceRequest && (info.verb === 'watch' || isProxyRequest(info));
}

/** A programming error (kube's panic): the event's stage is Panic. */
function isPanic(error: unknown): boolean {
  return (
    error instanceof AssertionError ||
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError
  );
}

export function withAudit(next: Handler, auditor: Auditor): Handler {
  return async (ctx) => {
    const user = ctx.user ?? anonymousUser;
    const attributes = requestAttributes(ctx, user);
    const config = auditor.evaluate(attributes);
    if (config.level === 'None') {
      await next(ctx);
      return;
    }
    const event = newEvent(ctx, attributes, config.level);
    event.user = auditUserOf(user);
    const emit = (stage: AuditStage): void => {
      auditor.emit(event, stage, config.omitStages);
    };
    const recorder = new AuditRecorder(event, config, isLongRunning(ctx) ? emit : undefined);
    ctx.audit = recorder;
    if (!auditor.emit(event, 'RequestReceived', config.omitStages)) {
      // blocking-strict: kube answers with its plain-text internal error, not a Status.
      auditor.observer.rejected();
      delete ctx.audit;
      respondText(ctx, 500, internalErrorText(event.requestURI, 'failed to store audit event'));
      return;
    }
    let failure: { error: unknown } | undefined;
    try {
      await next(ctx);
    } catch (error) {
      failure = { error };
    }
    if (failure !== undefined && isPanic(failure.error)) {
      respondError(ctx, failure.error);
      const message = failure.error instanceof Error ? failure.error.message : String(failure.error);
      event.responseStatus = {
        metadata: {},
        status: 'Failure',
        message: `APIServer panic'd: ${message}`,
        reason: 'InternalError',
        code: 500,
      };
      auditor.emit(event, 'Panic', config.omitStages);
      throw failure.error;
    }
    // Errors are answered here, so that the event carries their Status; the outer filter logs them.
    if (failure !== undefined) respondError(ctx, failure.error);
    if (!recorder.responseStarted) {
      if (ctx.res.headersSent) {
        recorder.responseBegins(ctx.res.statusCode);
      } else {
        // Nothing was written: kube fakes a success status, and for long-running requests a start.
        event.responseStatus = {
          metadata: {},
          status: 'Success',
          message: 'Connection closed early',
          code: 200,
        };
        if (isLongRunning(ctx)) auditor.emit(event, 'ResponseStarted', config.omitStages);
      }
    }
    auditor.emit(event, 'ResponseComplete', config.omitStages);
    if (failure !== undefined) throw failure.error;
  };
}

/** kube's message for a failed authentication: the credentials the request tried. */
function attemptedMethods(ctx: RequestContext): string {
  const methods: string[] = [];
  const authorization = (ctx.req.headers.authorization ?? '').trim();
  const parts = authorization.split(' ');
  if (/^basic$/i.test(parts[0] ?? '') && parts.length > 1) methods.push('basic');
  if (parts.length > 1 && (parts[0] ?? '').toLowerCase() === 'bearer') methods.push('bearer');
  if ((ctx.query.get('access_token') ?? '').trim() !== '') methods.push('access_token');
  if (tlsSocketOf(ctx.req)?.getPeerX509Certificate() !== undefined) methods.push('x509');
  return methods.length > 0
    ? `Authentication failed, attempted: ${methods.join(', ')}`
    : 'Authentication failed, no credentials provided';
}

export function withFailedAuthenticationAudit(next: Handler, auditor: Auditor): Handler {
  return async (ctx) => {
    try {
      await next(ctx);
    } catch (error) {
      // Only authentication's own 401 (it sets ctx.user before anything else runs).
      if (ctx.user !== undefined || !(error instanceof ApiError) || error.code !== 401) throw error;
      const attributes = requestAttributes(ctx, anonymousUser);
      const config = auditor.evaluate({ ...attributes, user: undefined });
      if (config.level === 'None') throw error;
      const event = newEvent(ctx, attributes, config.level);
      event.responseStatus = { metadata: {}, message: attemptedMethods(ctx), code: 401 };
      // As kube 1.32: the 401's Status is logged as the response (it replaces the message above), and the
      // event goes out when the response begins, as for a long-running request.
      ctx.audit = new AuditRecorder(event, config, (stage) => auditor.emit(event, stage, config.omitStages));
      respondError(ctx, error);
      throw error;
    }
  };
}
