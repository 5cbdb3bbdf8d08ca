// API errors: a closed set of reasons, each with its HTTP code, turned into a Kubernetes-shaped Status in one place.
// Messages follow kube-apiserver 1.32's wording, so clients that match on them (kubectl does) keep working.

import { StorageError } from '../storage/contract.js';
import { unreachable } from '../util/assert.js';

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'TooManyRequests'
  | 'InternalError'
  | 'StorageReadError'
  | 'ServiceUnavailable'
  | 'Timeout'
  /** kube-apiserver's StatusReasonUnknown (""): an error that was never turned into a Status (sent without a reason). */
  | 'Unknown';

/** The one place where a reason becomes an HTTP code. */
export const statusCodeOfReason = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  StorageReadError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
  Unknown: 500,
} as const satisfies Record<StatusReason, number>;

export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly uid?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

/** A resource as kube-apiserver names it in messages: `pods`, `deployments.apps`. */
export interface GroupResource {
  readonly group: string;
  readonly resource: string;
}

export function groupResourceString(gr: GroupResource): string {
  return gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }
  get code(): number {
    return statusCodeOfReason[this.reason];
  }
}

export interface Status {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Success' | 'Failure';
  readonly message?: string;
  readonly reason?: StatusReason;
  readonly details?: StatusDetails;
  readonly code: number;
}

export function statusOf(error: ApiError): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: error.message,
    ...(error.reason === 'Unknown' ? {} : { reason: error.reason }),
    ...(error.details === undefined ? {} : { details: wireDetails(error.details) }),
    code: error.code,
  };
}

/**
 * Details as Go writes them: every field is omitempty, so a core-group resource's empty `group` (or an empty
 * name, kind, uid or cause list) is left out, while the details object itself stays (`"details":{}`).
 */
function wireDetails(details: StatusDetails): StatusDetails {
  const { name, group, kind, uid, causes, retryAfterSeconds } = details;
  return {
    ...(name === undefined || name === '' ? {} : { name }),
    ...(group === undefined || group === '' ? {} : { group }),
    ...(kind === undefined || kind === '' ? {} : { kind }),
    ...(uid === undefined || uid === '' ? {} : { uid }),
    ...(causes === undefined || causes.length === 0
      ? {}
      : {
          causes: causes.map(({ reason, message, field }) => ({
            ...(reason === undefined || reason === '' ? {} : { reason }),
            ...(message === undefined || message === '' ? {} : { message }),
            ...(field === undefined || field === '' ? {} : { field }),
          })),
        }),
    ...(retryAfterSeconds === undefined || retryAfterSeconds === 0 ? {} : { retryAfterSeconds }),
  };
}

export function successStatus(details?: StatusDetails): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    ...(details === undefined ? {} : { details }),
    code: 200,
  };
}

/** The first 30 bytes of a body for an error message: as text if it looks like JSON, else in hex. */
function summarizeBody(body: Uint8Array): string {
  const bytes = Buffer.from(body);
  if (bytes.length === 0) return '<empty>';
  const head = bytes.subarray(0, 30);
  const more = bytes.length > 30 ? ' ...' : '';
  return bytes[0] === 0x7b ? `${head.toString('utf8')}${more}` : `${head.toString('hex')}${more}`;
}

// Constructors, one per situation, worded as kube-apiserver words them.

export const errors = {
  notFound: (gr: GroupResource, name: string) =>
    new ApiError('NotFound', `${groupResourceString(gr)} "${name}" not found`, {
      name,
      group: gr.group,
      kind: gr.resource,
    }),
  pathNotFound: () => new ApiError('NotFound', 'the server could not find the requested resource', {}),
  alreadyExists: (gr: GroupResource, name: string) =>
    new ApiError('AlreadyExists', `${groupResourceString(gr)} "${name}" already exists`, {
      name,
      group: gr.group,
      kind: gr.resource,
    }),
  conflict: (gr: GroupResource, name: string, why: string) =>
    new ApiError(
      'Conflict',
      `Operation cannot be fulfilled on ${groupResourceString(gr)} "${name}": ${why}`,
      {
        name,
        group: gr.group,
        kind: gr.resource,
      },
    ),
  staleUpdate: (gr: GroupResource, name: string) =>
    errors.conflict(
      gr,
      name,
      'the object has been modified; please apply your changes to the latest version and try again',
    ),
  invalid: (group: string, kind: string, name: string, causes: readonly FieldError[]) => {
    const parts = causes.map(fieldErrorString);
    const summary = parts.length === 1 ? (parts[0] ?? '') : `[${parts.join(', ')}]`;
    return new ApiError(
      'Invalid',
      `${kind}${group === '' ? '' : `.${group}`} "${name}" is invalid: ${summary}`,
      {
        name,
        group,
        kind,
        causes: causes.map((c) => ({ reason: c.type, message: fieldErrorDetail(c), field: c.field })),
      },
    );
  },
  badRequest: (message: string, causes?: readonly StatusCause[]) =>
    new ApiError('BadRequest', message, causes === undefined ? undefined : { causes }),
  unauthorized: () => new ApiError('Unauthorized', 'Unauthorized'),
  /** Authorization said no: `pods "x" is forbidden: User "u" cannot get resource "pods/log" in ...[: reason]`. */
  forbidden: (
    user: string,
    verb: string,
    gr: GroupResource,
    namespace: string,
    name: string,
    subresource = '',
    reason = '',
  ) => {
    const subject = name === '' ? groupResourceString(gr) : `${groupResourceString(gr)} "${name}"`;
    const scope = namespace === '' ? 'at the cluster scope' : `in the namespace "${namespace}"`;
    const resource = subresource === '' ? gr.resource : `${gr.resource}/${subresource}`;
    const why = reason === '' ? '' : `: ${reason}`;
    return new ApiError(
      'Forbidden',
      `${subject} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "${gr.group}" ${scope}${why}`,
      { ...(name === '' ? {} : { name }), group: gr.group, kind: gr.resource },
    );
  },
  forbiddenPath: (user: string, verb: string, path: string, reason = '') =>
    new ApiError(
      'Forbidden',
      `forbidden: User "${user}" cannot ${verb} path "${path}"${reason === '' ? '' : `: ${reason}`}`,
      {},
    ),
  /** A write refused by an admission step (escalation checks): `roles.G "x" is forbidden: <message>`. */
  forbiddenWrite: (gr: GroupResource, name: string, message: string) =>
    new ApiError('Forbidden', `${groupResourceString(gr)} "${name}" is forbidden: ${message}`, {
      name,
      group: gr.group,
      kind: gr.resource,
    }),
  namespaceTerminating: (gr: GroupResource, name: string, namespace: string) =>
    new ApiError(
      'Forbidden',
      `${groupResourceString(gr)} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      {
        name,
        group: gr.group,
        kind: gr.resource,
        causes: [
          {
            reason: 'NamespaceTerminating',
            message: `namespace ${namespace} is being terminated`,
            field: 'metadata.namespace',
          },
        ],
      },
    ),
  methodNotAllowed: () =>
    new ApiError('MethodNotAllowed', 'the server does not allow this method on the requested resource', {}),
  notAcceptable: (accepted: readonly string[]) =>
    new ApiError('NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`),
  unsupportedMediaType: (contentType: string, accepted: readonly string[]) =>
    new ApiError(
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
      { causes: [{ reason: 'UnexpectedServerResponse', message: contentType }] },
    ),
  /** A body whose type could not be read at all (kube-apiserver's decode error without a kind). */
  unrecognizedBody: (expectedKind: string, reason: string, body: Uint8Array) =>
    new ApiError(
      'BadRequest',
      `the object provided is unrecognized (must be of type ${expectedKind}): ${reason} (${summarizeBody(body)})`,
    ),
  /** A body whose type was read but whose content could not be decoded into the expected kind. */
  undecodableObject: (kind: string, version: string, expectedKind: string, reason: string) =>
    new ApiError(
      'BadRequest',
      `${kind} in version "${version}" cannot be handled as a ${expectedKind}: ${reason}`,
    ),
  tooLarge: (limitBytes: number) =>
    new ApiError('RequestEntityTooLarge', `Request entity too large: limit is ${limitBytes}`),
  /** Too large in another sense than bytes (kube-apiserver's NewRequestEntityTooLargeError). */
  entityTooLarge: (message: string) =>
    new ApiError('RequestEntityTooLarge', `Request entity too large: ${message}`),
  /** A JSON patch that does not apply (a failed `test`, a missing path): 422 with the library's words as the cause. */
  patchNotApplicable: (message: string) =>
    new ApiError('Invalid', 'the server rejected our request due to an error in our request', {
      causes: [{ reason: 'UnexpectedServerResponse', message }],
    }),
  /** Server-side apply conflicts: one cause per field, `conflict with "manager" ...`. */
  applyConflict: (message: string, causes: readonly StatusCause[]) =>
    new ApiError('Conflict', message, { causes }),
  tooManyRequests: () =>
    new ApiError('TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds: 1 }),
  /** A resourceVersion below what is retained (watch, list, exact read). */
  resourceExpired: (message: string) => new ApiError('Expired', message),
  gone: (message: string) => new ApiError('Gone', message),
  continueExpired: () =>
    new ApiError(
      'Expired',
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    ),
  tooLargeResourceVersion: (requested: number, current: number) =>
    new ApiError('Timeout', `Too large resource version: ${requested}, current: ${current}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    }),
  internal: (message: string) =>
    new ApiError('InternalError', `Internal error occurred: ${message}`, {
      causes: [{ message }],
    }),
  unavailable: (message: string) => new ApiError('ServiceUnavailable', message, { retryAfterSeconds: 1 }),
  /** A watch of a resource whose cache cannot hold its current state (kube's cacher while it re-initializes). */
  storageReinitializing: () =>
    new ApiError('TooManyRequests', 'storage is (re)initializing', { retryAfterSeconds: 1 }),
  /**
   * A stored object that cannot be decoded, read with AllowUnsafeMalformedObjectDeletion on: the storage layer's
   * corrupt-object error (code 7) inside an internal error, as kube-apiserver 1.32 words it.
   */
  corruptObject: (key: string, modRevision: number, detail: string) =>
    errors.internal(
      `StorageError: corrupt object, Code: 7, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: ${corruptObjectDetail(modRevision, detail)}`,
    ),
  /** An unsafe delete of an object that reads fine (or does not exist): kube's Invalid, kind = the resource. */
  unsafeDeleteOfReadable: (gr: GroupResource, name: string) =>
    errors.invalid(gr.group, gr.resource, name, [
      {
        type: 'FieldValueInvalid',
        field: 'ignoreStoreReadErrorWithClusterBreakingPotential',
        value: true,
        detail: 'is exclusively used to delete corrupt object(s), try again by removing this option',
      },
    ]),
  /** The same with the gate off: the decoder's own error, never made a Status (500 without a reason). */
  undecodableObject500: (detail: string) => new ApiError('Unknown', detail),
  /**
   * A list that met undecodable objects (gate on): one cause per object (its key), at most `corruptCausesMax`,
   * then a `FieldValueTooMany` cause; kube-apiserver's StorageReadError.
   */
  storeReadError: (
    gr: GroupResource,
    corrupt: readonly { key: string; modRevision: number; detail: string }[],
    truncated: boolean,
  ) =>
    new ApiError(
      'StorageReadError',
      `failed to read one or more ${groupResourceString(gr)} from the storage`,
      {
        name: 'list',
        group: gr.group,
        kind: gr.resource,
        causes: [
          ...corrupt.map((c) => ({
            reason: 'UnexpectedServerResponse',
            field: c.key,
            message: `StorageError: corrupt object, Code: 7, Key: ${c.key}, ResourceVersion: 0, AdditionalErrorMsg: ${corruptObjectDetail(c.modRevision, c.detail)}`,
          })),
          ...(truncated
            ? [{ reason: 'FieldValueTooMany', message: 'too many errors, the list is truncated' }]
            : []),
        ],
      },
    ),
  timeout: (message: string) => new ApiError('Timeout', message, {}),
  /** 503 without Retry-After (kube's NewServiceUnavailable): a proxy target that cannot be resolved or reached. */
  serviceUnavailable: (message: string) => new ApiError('ServiceUnavailable', message),
  /** A 403 whose attributes carry a sub-resource: the subject names the resource, the reason `resource/sub`. */
  forbiddenSubresource: (
    user: string,
    verb: string,
    gr: GroupResource,
    subresource: string,
    namespace: string,
    name: string,
  ) => {
    const subject = name === '' ? groupResourceString(gr) : `${groupResourceString(gr)} "${name}"`;
    const scope = namespace === '' ? 'at the cluster scope' : `in the namespace "${namespace}"`;
    const resource = subresource === '' ? gr.resource : `${gr.resource}/${subresource}`;
    return new ApiError(
      'Forbidden',
      `${subject} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "${gr.group}" ${scope}`,
      { ...(name === '' ? {} : { name }), group: gr.group, kind: gr.resource },
    );
  },
};

/** How many undecodable objects a list names before it stops (kube-apiserver 1.32: 100). */
export const corruptCausesMax = 100;

function corruptObjectDetail(modRevision: number, detail: string): string {
  return `object not decodable revision=${modRevision}: ${detail}`;
}

// Field errors (k8s.io/apimachinery/pkg/util/validation/field): the causes of an Invalid error.

export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueDuplicate'
  | 'FieldValueTooLong'
  | 'FieldValueTypeInvalid';

export interface FieldError {
  readonly type: FieldErrorType;
  readonly field: string;
  readonly value?: unknown;
  readonly detail?: string;
}

function fieldErrorTitle(type: FieldErrorType): string {
  switch (type) {
    case 'FieldValueRequired':
      return 'Required value';
    case 'FieldValueInvalid':
      return 'Invalid value';
    case 'FieldValueNotSupported':
      return 'Unsupported value';
    case 'FieldValueForbidden':
      return 'Forbidden';
    case 'FieldValueDuplicate':
      return 'Duplicate value';
    case 'FieldValueTooLong':
      return 'Too long';
    case 'FieldValueTypeInvalid':
      return 'Invalid value';
    default:
      return unreachable(type);
  }
}

function showValue(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : JSON.stringify(value);
}

function fieldErrorDetail(e: FieldError): string {
  const withValue =
    e.type === 'FieldValueInvalid' ||
    e.type === 'FieldValueNotSupported' ||
    e.type === 'FieldValueDuplicate' ||
    e.type === 'FieldValueTypeInvalid';
  const head =
    withValue && e.value !== undefined
      ? `${fieldErrorTitle(e.type)}: ${showValue(e.value)}`
      : fieldErrorTitle(e.type);
  return e.detail === undefined ? head : `${head}: ${e.detail}`;
}

function fieldErrorString(e: FieldError): string {
  return `${e.field}: ${fieldErrorDetail(e)}`;
}

/** Maps a storage error to the API error kube-apiserver would answer with. */
export function apiErrorOfStorage(error: StorageError): ApiError {
  switch (error.code) {
    case 'Compacted':
      return errors.resourceExpired(
        `The resourceVersion for the provided list is too old. (compacted at ${error.revision ?? 0})`,
      );
    case 'FutureRevision':
      return errors.timeout(`Too large resource version, current: ${error.revision ?? 0}`);
    case 'KeyTooLarge':
    case 'ValueTooLarge':
      return new ApiError('RequestEntityTooLarge', `Request entity too large: ${error.message}`);
    case 'TooManyOps':
    case 'DuplicateKey':
    case 'InvalidArgument':
      return errors.badRequest(error.message);
    case 'Unavailable':
    case 'WatchOverflow':
    case 'Closed':
      return errors.unavailable(error.message);
    case 'UnsupportedFormat':
    case 'Corrupt':
      return errors.internal(error.message);
    default:
      return unreachable(error.code);
  }
}

/** Any thrown value as an ApiError: API errors pass, storage errors map, the rest is an internal error. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StorageError) return apiErrorOfStorage(error);
  return errors.internal(error instanceof Error ? error.message : String(error));
}
