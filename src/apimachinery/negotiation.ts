// Content negotiation: which representation a response uses (Accept), how a request body is read (Content-Type).

import { applyPatchCborMediaType, cborMediaType } from './cbor.js';
import { errors } from './status.js';

export type Serialization = 'json' | 'yaml' | 'protobuf' | 'cbor';

/** What the client gets: an encoding and, for resources, either the object itself or its Table form. */
export interface ResponseFormat {
  readonly serialization: Serialization;
  readonly as: 'object' | 'Table' | 'PartialObjectMetadata' | 'APIGroupDiscoveryList';
  /** The media type to put in Content-Type. */
  readonly contentType: string;
}

interface MediaRange {
  readonly type: string;
  readonly subtype: string;
  readonly params: ReadonlyMap<string, string>;
  readonly q: number;
}

export function parseMediaType(text: string): MediaRange | undefined {
  const [essence = '', ...paramTexts] = text.split(';');
  const [type, subtype] = essence.trim().toLowerCase().split('/');
  if (type === undefined || subtype === undefined || type === '' || subtype === '') return undefined;
  const params = new Map<string, string>();
  let q = 1;
  for (const p of paramTexts) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    const name = p.slice(0, eq).trim().toLowerCase();
    const value = p
      .slice(eq + 1)
      .trim()
      .replace(/^"|"$/g, '');
    if (name === 'q') q = Number(value);
    else params.set(name, value);
  }
  return { type, subtype, params, q: Number.isFinite(q) ? q : 0 };
}

export function parseAccept(header: string | undefined): MediaRange[] {
  if (header === undefined || header.trim() === '') return [];
  const ranges = header
    .split(',')
    .map(parseMediaType)
    .filter((r): r is MediaRange => r !== undefined && r.q > 0);
  // Stable sort by q, so that equal weights keep the client's order.
  return ranges
    .map((r, i) => ({ r, i }))
    .sort((a, b) => b.r.q - a.r.q || a.i - b.i)
    .map(({ r }) => r);
}

export const acceptedMediaTypes = ['application/json', 'application/yaml'] as const;

function serializationOf(
  range: MediaRange,
  protobufMediaType: string | undefined,
  cbor: boolean,
): Serialization | undefined {
  if (range.type === '*' && range.subtype === '*') return 'json';
  if (range.type !== 'application') return undefined;
  if (protobufMediaType !== undefined && `application/${range.subtype}` === protobufMediaType)
    return 'protobuf';
  switch (range.subtype) {
    case '*':
    case 'json':
      return 'json';
    case 'yaml':
      return 'yaml';
    case 'cbor':
      return cbor ? 'cbor' : undefined;
    default:
      return undefined;
  }
}

export interface NegotiationOptions {
  /** The meta group (`meta.svc.io`, or `meta.k8s.io` with --group-domain=k8s.io). */
  readonly metaGroup: string;
  /** Whether the endpoint can answer with a Table (resource get and list). */
  readonly tableAllowed: boolean;
  readonly discoveryGroup?: string;
  /**
   * The protobuf media type (it follows --group-domain) and whether this response has a protobuf form (the kind
   * has a message). Unavailable: a protobuf range is skipped for the client's next choice, or 406 if none.
   */
  readonly protobuf?: { readonly mediaType: string; readonly available: boolean };
  /** Whether `application/cbor` is served (feature gate CBORServingAndStorage). */
  readonly cbor?: boolean;
}

/** The media types a 406 lists: the ones this response could have had. */
function acceptableTypes(options: NegotiationOptions): string[] {
  return [
    ...acceptedMediaTypes,
    ...(options.protobuf?.available === true ? [options.protobuf.mediaType] : []),
    ...(options.cbor === true ? [cborMediaType] : []),
  ];
}

/**
 * The metadata-only view a range asks for (`as=PartialObjectMetadata[List];g=<meta group>;v=v1`, what client-go's
 * metadata informers send), when it may be served: wherever Table is.
 */
function metadataView(
  range: MediaRange,
  options: NegotiationOptions,
): 'PartialObjectMetadata' | 'PartialObjectMetadataList' | undefined {
  const as = range.params.get('as');
  if (as !== 'PartialObjectMetadata' && as !== 'PartialObjectMetadataList') return undefined;
  if (!options.tableAllowed || range.params.get('g') !== options.metaGroup || range.params.get('v') !== 'v1')
    return undefined;
  return as;
}

/** Picks the first acceptable media range; none acceptable is 406. An absent Accept means JSON. */
export function negotiateResponse(accept: string | undefined, options: NegotiationOptions): ResponseFormat {
  const ranges = parseAccept(accept);
  if (ranges.length === 0) return { serialization: 'json', as: 'object', contentType: 'application/json' };
  const protobufType = options.protobuf?.mediaType;
  for (const range of ranges) {
    const serialization = serializationOf(range, protobufType, options.cbor === true);
    if (serialization === undefined) continue;
    const as = range.params.get('as');
    if (serialization === 'cbor') {
      if (as === undefined) return { serialization, as: 'object', contentType: cborMediaType };
      // kube-apiserver 1.32 serves the metadata views in CBOR, but not Table (its endpoint restrictions omit it).
      const view = metadataView(range, options);
      if (view === undefined) continue;
      return {
        serialization,
        as: 'PartialObjectMetadata',
        contentType: `${cborMediaType};as=${view};g=${options.metaGroup};v=v1`,
      };
    }
    if (serialization === 'protobuf') {
      const mediaType = protobufType ?? '';
      if (as === undefined) {
        if (options.protobuf?.available !== true) continue;
        if (range.params.get('stream') === 'watch')
          return { serialization, as: 'object', contentType: `${mediaType};stream=watch` };
        return { serialization, as: 'object', contentType: mediaType };
      }
      // The metadata views have meta/v1 messages (client-go's metadata informers ask for them); Table stays JSON.
      const view = metadataView(range, options);
      if (view === undefined) continue;
      return {
        serialization,
        as: 'PartialObjectMetadata',
        contentType: `${mediaType};as=${view};g=${options.metaGroup};v=v1`,
      };
    }
    const contentType = serialization === 'json' ? 'application/json' : 'application/yaml';
    if (as === undefined) return { serialization, as: 'object', contentType };
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') {
      const view = metadataView(range, options);
      if (view === undefined) continue;
      return {
        serialization,
        as: 'PartialObjectMetadata',
        contentType: `${contentType};as=${view};v=v1;g=${options.metaGroup}`,
      };
    }
    if (as === 'Table') {
      const group = range.params.get('g');
      const version = range.params.get('v');
      if (!options.tableAllowed || group !== options.metaGroup || (version !== 'v1' && version !== 'v1beta1'))
        continue;
      return { serialization, as: 'Table', contentType: `${contentType};as=Table;v=${version};g=${group}` };
    }
    if (as === 'APIGroupDiscoveryList' && options.discoveryGroup !== undefined) {
      if (range.params.get('g') !== options.discoveryGroup || range.params.get('v') !== 'v2') continue;
      return {
        serialization,
        as: 'APIGroupDiscoveryList',
        contentType: `${contentType};g=${options.discoveryGroup};v=v2;as=APIGroupDiscoveryList`,
      };
    }
    // Other transformations (PartialObjectMetadata, ...) are not served: the client's next choice applies.
  }
  throw errors.notAcceptable(acceptableTypes(options));
}

export type BodyType =
  | 'json'
  | 'yaml'
  | 'protobuf'
  | 'cbor'
  | 'merge-patch'
  | 'json-patch'
  | 'strategic-merge-patch'
  | 'apply-patch'
  | 'apply-patch-cbor';

export interface BodyOptions {
  /** The protobuf media type of this server (--group-domain), when the body's kind has a protobuf form. */
  readonly protobufMediaType?: string | undefined;
  /** Whether CBOR bodies are read (feature gate CBORServingAndStorage); off, they are 415 like any unknown type. */
  readonly cbor?: boolean;
}

/** The body type of a request; `allowed` lists the types the verb takes, others are 415. */
export function negotiateBody(
  contentType: string | undefined,
  allowed: readonly BodyType[],
  options: BodyOptions = {},
): BodyType {
  const range = parseMediaType(contentType ?? 'application/json');
  const essence = range === undefined ? '' : `${range.type}/${range.subtype}`;
  const protobufMediaType = options.protobufMediaType;
  const byEssence: Record<string, BodyType> = {
    ...(protobufMediaType === undefined ? {} : { [protobufMediaType]: 'protobuf' as const }),
    'application/json': 'json',
    'application/yaml': 'yaml',
    ...(options.cbor === true ? { [cborMediaType]: 'cbor' as const } : {}),
    'application/merge-patch+json': 'merge-patch',
    'application/json-patch+json': 'json-patch',
    'application/strategic-merge-patch+json': 'strategic-merge-patch',
    'application/apply-patch+yaml': 'apply-patch',
    ...(options.cbor === true ? { [applyPatchCborMediaType]: 'apply-patch-cbor' as const } : {}),
  };
  const type = byEssence[essence];
  if (type === undefined || !allowed.includes(type)) {
    const names = Object.entries(byEssence)
      .filter(([, t]) => allowed.includes(t))
      .map(([name]) => name);
    throw errors.unsupportedMediaType(essence, names);
  }
  return type;
}
