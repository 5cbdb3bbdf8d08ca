// Dispatch after the filters: non-resource paths (health, metrics, version, discovery, OpenAPI) and resources.

import { negotiateResponse } from '../apimachinery/negotiation.js';
import { errors } from '../apimachinery/status.js';
import type { Registries } from '../registry/index.js';
import type { Handler } from '../filters/handler.js';
import { deprecationWarning } from '../apimachinery/kind.js';
import { groupDomainOf, respond, respondText, warningValue, type RequestContext } from './context.js';
import type { Discovery } from './discovery.js';
import type { Health, HealthEndpoint } from './health.js';
import type { OpenApi } from './openapi.js';
import { serveResource, type ResourceDeps } from './resource.js';
import { adminPrefix } from './admin.js';
import { isProxyRequest, serveProxy } from './proxy.js';

export interface RouterDeps extends ResourceDeps {
  readonly registries: Registries;
  readonly discovery: Discovery;
  readonly openapi: OpenApi;
  readonly health: Health;
  readonly metricsText: () => Promise<string>;
  readonly version: Record<string, string>;
  readonly serverAddress: () => string;
  /** Fixed non-resource GET paths served by other parts (the service account issuer's discovery documents). */
  readonly extraPaths?: ReadonlyMap<string, Handler>;
  /** /stoa/admin/v1/...: cluster administration (src/endpoints/admin.ts). */
  readonly admin?: Handler;
  /** Whether --runtime-config serves this group, version and resource (default: everything). */
  readonly served?: (group: string, version: string, resource: string) => boolean;
  /** The release this server follows: a version deprecated at or before it is answered with a warning. */
  readonly release: { readonly major: number; readonly minor: number };
  /** Told of every request to a deprecated version (the `apiserver_requested_deprecated_apis` gauge). */
  readonly deprecatedRequested?: (request: DeprecatedRequest) => void;
}

export interface DeprecatedRequest {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly subresource: string;
  /** `major.minor` of the release that stops serving it, or ''. */
  readonly removedRelease: string;
}

const healthEndpoints = new Set<string>(['healthz', 'livez', 'readyz']);

function aggregatedRequested(ctx: RequestContext, discoveryGroup: string): boolean {
  try {
    return (
      negotiateResponse(ctx.req.headers.accept, {
        metaGroup: ctx.metaGroup,
        tableAllowed: false,
        discoveryGroup,
      }).as === 'APIGroupDiscoveryList'
    );
  } catch {
    return false;
  }
}

export function router(deps: RouterDeps): Handler {
  const discoveryGroup = `apidiscovery.${deps.groupDomain}`;
  return async (ctx) => {
    const info = ctx.info;
    if (info.isResourceRequest && info.resource !== '') {
      ctx.metricResource = info.resource;
      const registry = deps.registries.find(info.group, info.version, info.resource);
      if (registry === undefined || deps.served?.(info.group, info.version, info.resource) === false) {
        throw errors.pathNotFound();
      }
      const deprecated = deprecationWarning(registry.decl, info.version, deps.release);
      if (deprecated !== undefined) {
        ctx.warnings.push(warningValue(deprecated.message));
        // kube-apiserver's audit annotations of a deprecated version (`k8s.io/...` with --group-domain=k8s.io).
        ctx.audit?.annotate(`${groupDomainOf(ctx)}/deprecated`, 'true');
        if (deprecated.removedRelease !== '')
          ctx.audit?.annotate(`${groupDomainOf(ctx)}/removed-release`, deprecated.removedRelease);
        deps.deprecatedRequested?.({
          group: info.group,
          version: info.version,
          resource: info.resource,
          subresource: info.subresource,
          removedRelease: deprecated.removedRelease,
        });
      }
      if (isProxyRequest(info)) {
        await serveProxy(ctx, registry, info, deps.registries.find('', 'v1', 'endpoints'));
        return;
      }
      await serveResource(ctx, registry, info, deps);
      return;
    }
    if (
      deps.admin !== undefined &&
      (ctx.url.pathname === adminPrefix || ctx.url.pathname.startsWith(`${adminPrefix}/`))
    ) {
      await deps.admin(ctx);
      return;
    }
    const method = ctx.req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed();
    const path = ctx.url.pathname.replace(/\/+$/, '') || '/';
    const extra = deps.extraPaths?.get(path);
    if (extra !== undefined) {
      await extra(ctx);
      return;
    }
    const parts = path.split('/').filter((p) => p !== '');
    const first = parts[0] ?? '';
    if (healthEndpoints.has(first) && parts.length <= 2) {
      const result = await deps.health.serve(first as HealthEndpoint, parts[1] ?? '', ctx.query);
      respondText(ctx, result.code, result.body);
      return;
    }
    if (path === '/metrics') {
      respondText(ctx, 200, await deps.metricsText(), 'text/plain; version=0.0.4; charset=utf-8');
      return;
    }
    if (path === '/version') {
      respond(ctx, 200, deps.version);
      return;
    }
    if (path === '/api' || path === '/apis') {
      if (aggregatedRequested(ctx, discoveryGroup)) {
        const format = negotiateResponse(ctx.req.headers.accept, {
          metaGroup: ctx.metaGroup,
          tableAllowed: false,
          discoveryGroup,
        });
        respond(ctx, 200, deps.discovery.aggregated(discoveryGroup, path === '/api'), format);
      } else {
        respond(
          ctx,
          200,
          path === '/api' ? deps.discovery.apiVersions(deps.serverAddress()) : deps.discovery.apiGroupList(),
        );
      }
      return;
    }
    if (first === 'api' && parts.length === 2) {
      const doc = deps.discovery.resourceList('', parts[1] ?? '');
      if (doc === undefined) throw errors.pathNotFound();
      respond(ctx, 200, doc);
      return;
    }
    if (first === 'apis' && (parts.length === 2 || parts.length === 3)) {
      const doc =
        parts.length === 2
          ? deps.discovery.apiGroup(parts[1] ?? '')
          : deps.discovery.resourceList(parts[1] ?? '', parts[2] ?? '');
      if (doc === undefined) throw errors.pathNotFound();
      respond(ctx, 200, doc);
      return;
    }
    if (path === '/openapi/v2') {
      respond(ctx, 200, deps.openapi.v2(), {
        serialization: 'json',
        as: 'object',
        contentType: 'application/json',
      });
      return;
    }
    if (path === '/openapi/v3') {
      respond(ctx, 200, deps.openapi.v3Index(), {
        serialization: 'json',
        as: 'object',
        contentType: 'application/json',
      });
      return;
    }
    if (first === 'openapi' && parts[1] === 'v3') {
      const doc = deps.openapi.v3Document(parts.slice(2).join('/'));
      if (doc === undefined) throw errors.pathNotFound();
      respondText(ctx, 200, doc, 'application/json');
      return;
    }
    throw errors.pathNotFound();
  };
}
