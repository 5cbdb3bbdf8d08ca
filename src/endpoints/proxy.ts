// The `proxy` sub-resources of pods, services and nodes: resolve the target (a pod's IP, a ready address of the
// service's Endpoints, a node's kubelet) as kube-apiserver does, and stream the HTTP request and its response.

import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { errors } from '../apimachinery/status.js';
import type { ResourceRegistry } from '../registry/store.js';
import type { RequestContext } from './context.js';
import type { RequestInfo } from './requestinfo.js';

type ResourceInfo = Extract<RequestInfo, { isResourceRequest: true }>;

/** Core resources with a `proxy` sub-resource, and the options kind discovery names for it. */
export const proxyKinds: ReadonlyMap<string, string> = new Map([
  ['pods', 'PodProxyOptions'],
  ['services', 'ServiceProxyOptions'],
  ['nodes', 'NodeProxyOptions'],
]);

/** The verbs discovery lists for each proxy sub-resource (as kube-apiserver does). */
export const proxyVerbs = ['create', 'delete', 'get', 'patch', 'update'] as const;

/** Until the target answers with its headers. */
const responseHeaderTimeoutMs = 30_000;
/** A proxied connection idle this long (no bytes either way) is closed. */
const idleTimeoutMs = 120_000;

/** Hop-by-hop headers: never forwarded in either direction. */
const droppedResponseHeaders = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Request headers never forwarded: hop-by-hop, and the client's credentials (as kube-apiserver strips them). */
const droppedRequestHeaders = new Set([...droppedResponseHeaders, 'host', 'authorization', 'http2-settings']);

export function isProxyRequest(info: ResourceInfo): boolean {
  return info.group === '' && info.subresource === 'proxy' && proxyKinds.has(info.resource);
}

interface Target {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: string;
}

/** kube's SplitSchemeNamePort: `name`, `name:port`, `scheme:name:port` with scheme '', http or https. */
function splitSchemeNamePort(id: string): { scheme: string; name: string; port: string } | undefined {
  const parts = id.split(':');
  let scheme = '';
  let name: string;
  let port = '';
  if (parts.length === 1) name = parts[0] ?? '';
  else if (parts.length === 2) [name, port] = [parts[0] ?? '', parts[1] ?? ''];
  else if (parts.length === 3) [scheme, name, port] = [parts[0] ?? '', parts[1] ?? '', parts[2] ?? ''];
  else return undefined;
  if (name === '' || (scheme !== '' && scheme !== 'http' && scheme !== 'https')) return undefined;
  return { scheme, name, port };
}

/**
 * Addresses kube-apiserver refuses to proxy to (unspecified, link-local, multicast). Loopback is allowed here,
 * unlike kube-apiserver: a Stoa cluster's workloads are local processes.
 */
function proxyable(ip: string): boolean {
  if (isIP(ip) === 0) return false;
  if (ip === '0.0.0.0' || ip === '::') return false;
  if (ip.startsWith('169.254.') || /^fe[89ab]/i.test(ip)) return false;
  const first = Number(ip.split('.')[0]);
  if (isIP(ip) === 4 && first >= 224) return false;
  if (isIP(ip) === 6 && /^ff/i.test(ip)) return false;
  return true;
}

type Json = Record<string, unknown>;

function record(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function array(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(record) : [];
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}

function pick<T>(items: readonly T[], seed: number, index: number): T | undefined {
  return items.length === 0 ? undefined : items[(seed + index) % items.length];
}

async function serviceTarget(
  registry: ResourceRegistry,
  endpoints: ResourceRegistry | undefined,
  namespace: string,
  id: string,
): Promise<Target> {
  const parsed = splitSchemeNamePort(id);
  if (parsed === undefined) throw errors.badRequest(`invalid service request "${id}"`);
  let portName = parsed.port;
  if (/^\d+$/.test(portName)) {
    const service = await registry.get(namespace, parsed.name, undefined);
    const ports = array(record(service.spec).ports);
    const match = ports.find((p) => str(p.port) === portName);
    if (match === undefined)
      throw errors.serviceUnavailable(`no service port ${portName} found for service "${parsed.name}"`);
    portName = str(match.name);
  }
  if (endpoints === undefined) throw errors.serviceUnavailable(`no endpoints available for service "${id}"`);
  const eps = await endpoints.get(namespace, parsed.name, undefined);
  const subsets = array((eps as Json).subsets);
  if (subsets.length === 0)
    throw errors.serviceUnavailable(`no endpoints available for service "${parsed.name}"`);
  const seed = Math.floor(Math.random() * subsets.length);
  for (let s = 0; s < subsets.length; s++) {
    const subset = pick(subsets, seed, s) ?? {};
    const addresses = array(subset.addresses).filter((a) => proxyable(str(a.ip)));
    if (addresses.length === 0) continue;
    const port = array(subset.ports).find((p) => str(p.name) === portName);
    if (port === undefined) continue;
    const address = pick(addresses, Math.floor(Math.random() * addresses.length), 0) ?? {};
    return {
      scheme: parsed.scheme === 'https' ? 'https' : 'http',
      host: str(address.ip),
      port: str(port.port),
    };
  }
  throw errors.serviceUnavailable(`no endpoints available for service "${id}"`);
}

async function podTarget(registry: ResourceRegistry, namespace: string, id: string): Promise<Target> {
  const parsed = splitSchemeNamePort(id);
  if (parsed === undefined) throw errors.badRequest(`invalid pod request "${id}"`);
  const pod = await registry.get(namespace, parsed.name, undefined);
  let port = parsed.port;
  if (port === '') {
    for (const container of array(record(pod.spec).containers)) {
      const first = array(container.ports)[0];
      if (first !== undefined) {
        port = str(first.containerPort);
        break;
      }
    }
  }
  const ip = str(record(pod.status).podIP);
  if (!proxyable(ip)) throw errors.badRequest('address not allowed');
  return { scheme: parsed.scheme === 'https' ? 'https' : 'http', host: ip, port };
}

async function nodeTarget(registry: ResourceRegistry, id: string): Promise<Target> {
  const parsed = splitSchemeNamePort(id);
  if (parsed === undefined) throw errors.badRequest(`invalid node request "${id}"`);
  const node = await registry.get('', parsed.name, undefined);
  const status = record(node.status);
  const addresses = array(status.addresses);
  const address = addresses.find((a) => a.type === 'InternalIP') ?? addresses[0];
  const host = str(address?.address);
  if (host === '') throw errors.badRequest(`node ${parsed.name} has no valid hostname and/or IP address`);
  const kubeletPort = str(record(record(status.daemonEndpoints).kubeletEndpoint).Port);
  if (parsed.port === '' || parsed.port === kubeletPort) {
    // The kubelet speaks HTTPS unless the request names plain HTTP.
    return { scheme: parsed.scheme === 'http' ? 'http' : 'https', host, port: kubeletPort || '10250' };
  }
  return { scheme: parsed.scheme === 'https' ? 'https' : 'http', host, port: parsed.port };
}

/** The path after `.../NAME/proxy` in the raw request path ('' when none, so '/proxy' and '/proxy/' differ). */
function remainderOf(ctx: RequestContext, info: ResourceInfo): string {
  // '', api|apis, [group,] version, [namespaces, NS,] resource, name, proxy, then the remainder.
  const segments = ctx.url.pathname.split('/');
  const prefix = 1 + (info.apiPrefix === 'api' ? 2 : 3) + (info.namespace === '' ? 0 : 2) + 3;
  return segments.length <= prefix ? '' : `/${segments.slice(prefix).join('/')}`;
}

function forwardedHeaders(ctx: RequestContext, target: Target): OutgoingHttpHeaders {
  const incoming: IncomingHttpHeaders = ctx.req.headers;
  const connectionNamed = new Set(
    str(incoming.connection)
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== ''),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    const lower = name.toLowerCase();
    if (value === undefined || lower.startsWith(':')) continue;
    if (droppedRequestHeaders.has(lower) || connectionNamed.has(lower)) continue;
    if (lower.startsWith('impersonate-') || lower.startsWith('x-remote-')) continue;
    out[lower] = value;
  }
  const isV6 = isIP(target.host) === 6;
  out.host = `${isV6 ? `[${target.host}]` : target.host}${target.port === '' ? '' : `:${target.port}`}`;
  const client = ctx.req.socket.remoteAddress ?? '';
  if (client !== '') {
    const prior = str(incoming['x-forwarded-for']);
    out['x-forwarded-for'] = prior === '' ? client : `${prior}, ${client}`;
  }
  return out;
}

/** Serves `pods|services|nodes/NAME/proxy[/PATH]`: forwards the request to the resolved target and streams back. */
export async function serveProxy(
  ctx: RequestContext,
  registry: ResourceRegistry,
  info: ResourceInfo,
  endpoints: ResourceRegistry | undefined,
): Promise<void> {
  if (info.name === '') throw errors.pathNotFound();
  const namespace = registry.decl.namespaced ? info.namespace : '';
  if (registry.decl.namespaced ? namespace === '' : info.namespace !== '') throw errors.pathNotFound();
  let target: Target;
  switch (info.resource) {
    case 'services':
      target = await serviceTarget(registry, endpoints, namespace, info.name);
      break;
    case 'pods':
      target = await podTarget(registry, namespace, info.name);
      break;
    default:
      target = await nodeTarget(registry, info.name);
  }
  const remainder = remainderOf(ctx, info);
  const search = ctx.url.search;
  // An empty path is redirected to the same path with a trailing slash (as kube-apiserver does).
  if (remainder === '') {
    ctx.res.writeHead(301, { location: `${ctx.url.pathname}/${search}` });
    ctx.res.end();
    return;
  }
  const method = ctx.req.method ?? 'GET';
  const request = target.scheme === 'https' ? httpsRequest : httpRequest;
  const upstream = request({
    method,
    host: target.host,
    ...(target.port === '' ? {} : { port: Number(target.port) }),
    path: `${remainder}${search}`,
    headers: forwardedHeaders(ctx, target),
    timeout: idleTimeoutMs,
    // Pods and kubelets are not verified (kube-apiserver without --kubelet-certificate-authority).
    ...(target.scheme === 'https' ? { rejectUnauthorized: false } : {}),
  });
  const responded = new Promise<IncomingMessage>((resolve, reject) => {
    const timer = setTimeout(() => {
      upstream.destroy(new Error(`timeout awaiting response headers after ${responseHeaderTimeoutMs} ms`));
    }, responseHeaderTimeoutMs);
    upstream.once('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    upstream.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  upstream.on('timeout', () => upstream.destroy(new Error('proxied connection idle')));
  // The request body streams to the target; a client gone early ends the proxied request too.
  const sent = pipeline(ctx.req, upstream).catch((error: unknown) => {
    upstream.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  let response: IncomingMessage;
  try {
    response = await responded;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw errors.serviceUnavailable(`error trying to reach ${info.resource.slice(0, -1)}: ${message}`);
  }
  const headers: OutgoingHttpHeaders = {};
  const connectionNamed = new Set(
    str(response.headers.connection)
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  );
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || droppedResponseHeaders.has(name) || connectionNamed.has(name)) continue;
    headers[name] = value;
  }
  ctx.audit?.responseBegins(response.statusCode ?? 502);
  ctx.res.writeHead(response.statusCode ?? 502, headers);
  try {
    await pipeline(response, ctx.res);
  } catch {
    // The client or the target went away mid-stream: both sides are closed by pipeline.
    upstream.destroy();
  }
  await sent;
}
