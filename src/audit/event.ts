// The audit event (audit.<domain>/v1 Event) of one request, and the recorder the filters and handlers fill it
// through: the request and response objects (by level), the impersonated user, annotations. Field names and
// order, the timestamps' microsecond precision and the legacy one-line format are kube-apiserver 1.32's.

import type { UserInfo } from '../auth/user.js';
import { levelAtLeast, type AuditLevel, type AuditStage, type RequestAuditConfig } from './policy.js';
import { isRecord } from '../util/record.js';

export interface AuditUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

export interface AuditEvent {
  level: AuditLevel;
  auditID: string;
  stage: AuditStage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  /** Microseconds since the epoch (written as RFC 3339 with six fraction digits). */
  requestReceivedMicros: number;
  stageMicros: number;
  annotations?: Record<string, string>;
}

/** `2006-01-02T15:04:05.000000Z`: metav1.MicroTime as kube writes it. */
export function formatMicroTime(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // 2006-01-02T15:04:05.000Z
  const fraction = String(Math.floor(micros) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 19)}.${fraction}Z`;
}

/** RFC 3339 with nanoseconds, trailing zeros dropped (Go's time.RFC3339Nano), for the legacy format. */
function formatRfc3339Nano(micros: number): string {
  const full = formatMicroTime(micros);
  const fraction = full.slice(20, 26).replace(/0+$/, '');
  return `${full.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

function omitEmpty<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0) continue;
    out[k] = v;
  }
  return out as T;
}

/** The event as kube's JSON encoder writes it (field order of audit/v1 Event, empty fields left out). */
export function eventJson(event: AuditEvent, apiVersion: string): Record<string, unknown> {
  return {
    kind: 'Event',
    apiVersion,
    level: event.level,
    auditID: event.auditID,
    stage: event.stage,
    requestURI: event.requestURI,
    verb: event.verb,
    user: omitEmpty(event.user),
    ...(event.impersonatedUser === undefined ? {} : { impersonatedUser: omitEmpty(event.impersonatedUser) }),
    ...(event.sourceIPs === undefined || event.sourceIPs.length === 0 ? {} : { sourceIPs: event.sourceIPs }),
    ...(event.userAgent === undefined || event.userAgent === '' ? {} : { userAgent: event.userAgent }),
    ...(event.objectRef === undefined ? {} : { objectRef: omitEmpty(event.objectRef) }),
    ...(event.responseStatus === undefined ? {} : { responseStatus: event.responseStatus }),
    ...(event.requestObject === undefined ? {} : { requestObject: event.requestObject }),
    ...(event.responseObject === undefined ? {} : { responseObject: event.responseObject }),
    requestReceivedTimestamp: formatMicroTime(event.requestReceivedMicros),
    stageTimestamp: formatMicroTime(event.stageMicros),
    ...(event.annotations === undefined ? {} : { annotations: event.annotations }),
  };
}

function quoted(list: readonly string[]): string {
  return list.map((s) => JSON.stringify(s)).join(',');
}

/** The `legacy` format: one `key="value"` line per event (kube's audit.EventString). */
export function eventLegacyLine(event: AuditEvent): string {
  const user = event.user;
  const username = user.username === undefined || user.username === '' ? '<none>' : user.username;
  const groups =
    username === '<none>' || user.groups === undefined || user.groups.length === 0
      ? '<none>'
      : quoted(user.groups);
  const as = event.impersonatedUser?.username ?? '<self>';
  const asGroups =
    event.impersonatedUser?.groups === undefined ? '<lookup>' : quoted(event.impersonatedUser.groups);
  const namespace =
    event.objectRef?.namespace === undefined || event.objectRef.namespace === ''
      ? '<none>'
      : event.objectRef.namespace;
  const response =
    event.responseStatus?.code === undefined ? '<deferred>' : String(event.responseStatus.code);
  const ip = event.sourceIPs?.[0] ?? '<unknown>';
  const q = JSON.stringify;
  return (
    `${formatRfc3339Nano(event.requestReceivedMicros)} AUDIT: id=${q(event.auditID)} stage=${q(event.stage)} ` +
    `ip=${q(ip)} method=${q(event.verb)} user=${q(username)} groups=${q(groups)} as=${q(as)} ` +
    `asgroups=${q(asGroups)} user-agent=${q(event.userAgent ?? '')} namespace=${q(namespace)} ` +
    `uri=${q(event.requestURI)} response="${response}"`
  );
}

export function auditUserOf(user: UserInfo): AuditUser {
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(user.extra)) extra[k] = [...v];
  return {
    username: user.name,
    ...(user.uid === '' ? {} : { uid: user.uid }),
    groups: [...user.groups],
    ...(Object.keys(extra).length === 0 ? {} : { extra }),
  };
}

function withoutManagedFields(value: unknown): unknown {
  if (!isRecord(value)) return value;
  let out: Record<string, unknown> = value;
  const metadata = value.metadata;
  if (isRecord(metadata) && 'managedFields' in metadata) {
    const { managedFields: _dropped, ...rest } = metadata;
    out = { ...out, metadata: rest };
  }
  if (Array.isArray(value.items)) out = { ...out, items: value.items.map(withoutManagedFields) };
  // A Table's rows carry their objects (includeObject=Object).
  if (value.kind === 'Table' && Array.isArray(value.rows)) {
    out = {
      ...out,
      rows: value.rows.map((row: unknown) =>
        isRecord(row) && row.object !== undefined
          ? { ...row, object: withoutManagedFields(row.object) }
          : row,
      ),
    };
  }
  return out;
}

/** Where a recorder sends an event at a stage (the filter owns the backend and the omitted stages). */
export type StageSink = (stage: AuditStage) => void;

/**
 * The audit state of one audited request. Filters and handlers tell it what they see; the audit filter decides
 * when a stage's event is written. Annotations keep the first value set for a key, as kube's do.
 */
export class AuditRecorder {
  /** Set once a long-running request's ResponseStarted event is out (or the first response code is known). */
  private started = false;

  constructor(
    readonly event: AuditEvent,
    readonly config: RequestAuditConfig,
    /** Long-running requests (watch, proxy) get a ResponseStarted event when their response begins. */
    private readonly longRunningSink: StageSink | undefined,
  ) {}

  get level(): AuditLevel {
    return this.config.level;
  }

  get responseStarted(): boolean {
    return this.started;
  }

  annotate(key: string, value: string): void {
    const annotations = (this.event.annotations ??= {});
    if (annotations[key] === undefined) annotations[key] = value;
  }

  impersonatedUser(user: UserInfo): void {
    this.event.impersonatedUser = auditUserOf(user);
  }

  /** The decoded request body (create, update, delete options, ...): fills objectRef; logged at Request+. */
  requestObject(value: unknown): void {
    if (isRecord(value) && isRecord(value.metadata) && this.event.objectRef !== undefined) {
      const ref = this.event.objectRef;
      const meta = value.metadata;
      const text = (v: unknown): string => (typeof v === 'string' ? v : '');
      if ((ref.namespace ?? '') === '' && text(meta.namespace) !== '') ref.namespace = text(meta.namespace);
      if ((ref.name ?? '') === '' && text(meta.name) !== '') ref.name = text(meta.name);
      if ((ref.uid ?? '') === '' && text(meta.uid) !== '') ref.uid = text(meta.uid);
      if ((ref.resourceVersion ?? '') === '' && text(meta.resourceVersion) !== '')
        ref.resourceVersion = text(meta.resourceVersion);
    }
    if (!levelAtLeast(this.level, 'Request')) return;
    this.event.requestObject = this.config.omitManagedFields ? withoutManagedFields(value) : value;
  }

  /** A patch body, logged as sent (kube's LogRequestPatch). */
  requestPatch(value: unknown): void {
    if (levelAtLeast(this.level, 'Request')) this.event.requestObject = value;
  }

  /** The value a response carries: a Status fills responseStatus; the object is logged at RequestResponse. */
  responseObject(code: number, value: unknown): void {
    if (isRecord(value) && value.kind === 'Status' && typeof value.code === 'number') {
      this.event.responseStatus = {
        metadata: {},
        ...(typeof value.status === 'string' && value.status !== '' ? { status: value.status } : {}),
        ...(typeof value.message === 'string' && value.message !== '' ? { message: value.message } : {}),
        ...(typeof value.reason === 'string' && value.reason !== '' ? { reason: value.reason } : {}),
        // Details are already as Go writes them (statusOf leaves empty fields out).
        ...(value.details === undefined ? {} : { details: value.details }),
        code: value.code,
      };
    }
    if (levelAtLeast(this.level, 'RequestResponse') && isRecord(value) && typeof value.kind === 'string') {
      this.event.responseObject = this.config.omitManagedFields ? withoutManagedFields(value) : value;
    }
    this.responseBegins(code);
  }

  /** The response's status line is written: a long-running request's ResponseStarted event goes out. */
  responseBegins(code: number): void {
    if (this.started) return;
    this.started = true;
    const status = (this.event.responseStatus ??= { metadata: {} });
    status.code = code;
    if (this.longRunningSink !== undefined) this.longRunningSink('ResponseStarted');
  }
}
