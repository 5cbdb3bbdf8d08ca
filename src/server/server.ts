// Composition root of one API server: flags → store, kinds, registries, controllers, handler chain, HTTPS.
// start() resolves once the server listens; close() runs the shutdown sequence (readyz fails, the delay
// passes, listeners close, watches end, the store closes).

import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import { mkdir } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { pino, type Logger } from 'pino';
import { builtinKinds } from '../kinds/index.js';
import { Registries } from '../registry/index.js';
import { Discovery } from '../endpoints/discovery.js';
import { OpenApi } from '../endpoints/openapi.js';
import { Health } from '../endpoints/health.js';
import { router } from '../endpoints/router.js';
import { newRequestContext } from '../endpoints/context.js';
import { buildChain } from '../filters/chain.js';
import {
  buildAuthentication,
  issuerDiscoveryPaths,
  registryLookup,
  withTokenRequest,
} from '../auth/index.js';
import { domainPrefix } from '../apimachinery/kind.js';
import { Authorization } from '../auth/authorization.js';
import { systemClock, type Clock } from '../util/clock.js';
import { Controllers } from '../controllers/index.js';
import { AggregationController, reconcileDefaultRbac } from '../controllers/rbac.js';
import { BootstrapControllers } from '../controllers/bootstrap.js';
import { controllerEnabled } from './authn-flags.js';
import { prepareCredentials, writeAdminKubeconfig } from './certificates.js';
import { parseFeatureGates } from './features.js';
import type { ServeOptions } from './flags.js';
import { Metrics } from './metrics.js';
import { registerReplicaMetrics } from './replica-metrics.js';
import { servedRelease, serverVersion } from './version.js';
import { openServerStore } from './store.js';
import { adminHandler } from '../endpoints/admin.js';
import { ApiError, errors } from '../apimachinery/status.js';
import type { AccessReviewer } from '../auth/access-review.js';
import { ipString, parseCidr } from '../kinds/service/index.js';
import { Auditor } from '../audit/auditor.js';

const http2MaxStreamsPerConnection = 1000;

export interface RunningServer {
  readonly port: number;
  readonly url: string;
  readonly kubeconfigPath: string | undefined;
  readonly logger: Logger;
  /** Graceful shutdown: readyz fails, --shutdown-delay-duration passes, then everything stops. */
  close(): Promise<void>;
}

/** The `kubernetes` Service in `default`: the API server itself, at the first IP of the service range. */
async function ensureKubernetesService(registries: Registries, range: string, port: number): Promise<void> {
  const services = registries.find('', 'v1', 'services');
  if (services === undefined) return;
  const clusterIP = ipString(parseCidr(range).base + 1);
  try {
    await services.create(
      'default',
      {
        metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
        spec: { clusterIP, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }] },
      },
      { dryRun: false },
    );
  } catch (error) {
    if (!(error instanceof ApiError && error.reason === 'AlreadyExists')) throw error;
  }
}

export async function startServer(options: ServeOptions, clock: Clock = systemClock): Promise<RunningServer> {
  const logger = pino({ level: options.logLevel, base: { component: 'apiserver' } }, pino.destination(2));
  const { gates, warnings } = parseFeatureGates(options.featureGates);
  for (const w of warnings) logger.warn(w);
  await Authorization.preflight(options.authorization, {
    groupDomain: options.groupDomain,
    serviceClusterIpRange: options.serviceClusterIpRange,
  });
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const credentials = await prepareCredentials(options);
  // Authentication is configured before the store opens: a bad flag or file stops the start cleanly.
  const bound: { registries?: Registries } = {};
  const authentication = await buildAuthentication({
    flags: options.authentication,
    tokenAuthFile: options.tokenAuthFile,
    clientCaPem: credentials.clientCaPem,
    servingKeyPem: credentials.servingKeyPem,
    objects: registryLookup(() => bound.registries),
    domainPrefix: domainPrefix({ groupDomain: options.groupDomain, serviceClusterIpRange: '' }),
    nowMs: () => clock.nowMs(),
    groupDomain: options.groupDomain,
    warn: (message, error) => logger.warn({ err: error }, message),
  });
  const metrics = new Metrics(options.metrics);
  // A bad audit policy stops the start before the store opens; the log file is opened here too.
  const auditor = await Auditor.create(
    options.audit,
    options.groupDomain,
    (error) => logger.error({ err: error }, 'audit event not written'),
    () => Math.round((performance.timeOrigin + performance.now()) * 1000),
    {
      level: (level) => metrics.auditLevels.inc({ level }),
      event: () => metrics.auditEvents.inc(),
      error: (plugin) => metrics.auditErrors.inc({ plugin }),
      rejected: () => metrics.auditRequestsRejected.inc(),
    },
  );
  const { store: rawStore, replica, engine } = await openServerStore(options, logger);
  const store = metrics.instrument(rawStore);
  if (replica !== undefined) registerReplicaMetrics(metrics.lifecycle, replica);
  const ctx = { groupDomain: options.groupDomain, serviceClusterIpRange: options.serviceClusterIpRange };
  const authenticationGroup = `authentication.${options.groupDomain}`;
  // Access reviews ask the authorizers, which exist only once the registries (built from these kinds) do.
  const late: { reviewer?: AccessReviewer } = {};
  const kinds = withTokenRequest(
    builtinKinds(ctx, () => {
      if (late.reviewer === undefined) throw errors.unavailable('authorization is not ready');
      return late.reviewer;
    }),
    authentication.serviceAccounts,
    authenticationGroup,
  );
  const registries = new Registries(
    kinds,
    store,
    clock,
    options.watchCacheEventsMax,
    gates.enabled('AllowUnsafeMalformedObjectDeletion'),
  );
  bound.registries = registries;
  const health = new Health(
    [
      { name: 'ping', check: async () => {} },
      { name: 'log', check: async () => {} },
      {
        name: 'etcd',
        check: async () => {
          await Promise.race([
            store.status(),
            new Promise((_resolve, reject) =>
              setTimeout(() => reject(new Error('store timeout')), 2000).unref(),
            ),
          ]);
        },
      },
      {
        // A quorum read: a cluster member cut off from its majority is live but not ready.
        name: 'etcd-readiness',
        readyzOnly: true,
        check: async () => {
          await Promise.race([
            store.range({ key: '/registry/health' }, { countOnly: true }),
            new Promise((_resolve, reject) =>
              setTimeout(() => reject(new Error('no quorum read within 2s')), 2000).unref(),
            ),
          ]);
        },
      },
    ],
    ['start-watch-caches', 'bootstrap-default-namespaces', 'start-controllers'],
    options.livezGracePeriodMs,
    () => clock.monotonicMs(),
  );

  await registries.start();
  const authorization = await Authorization.create(options.authorization, {
    registries,
    domain: ctx,
    logger,
  });
  authorization.start();
  authorization.startReload();
  const escalation = authorization.escalation();
  late.reviewer = authorization.reviewer(gates.enabled('AuthorizeWithSelectors'));
  await reconcileDefaultRbac(registries, ctx, logger);
  const aggregation = new AggregationController(registries, ctx, logger);
  aggregation.start();
  health.hookCompleted('start-watch-caches');
  health.hookCompleted('bootstrap-default-namespaces');
  const controllers = new Controllers(registries, logger);
  controllers.start();
  const bootstrapControllers = new BootstrapControllers(
    registries,
    {
      cleaner: controllerEnabled(options.authentication.controllers, 'tokencleaner', false),
      signer: controllerEnabled(options.authentication.controllers, 'bootstrapsigner', false),
      domainPrefix: domainPrefix(ctx),
      serverUrl: () => `https://${options.advertiseAddress ?? options.bindAddress}:${port}`,
      caPem: credentials.generatedCa?.certPem ?? credentials.servingCertPem,
      nowMs: () => clock.nowMs(),
    },
    logger,
  );
  health.hookCompleted('start-controllers');

  let port = options.securePort;
  const metaGroup = `meta.${options.groupDomain}`;
  const activeWatches = new Set<() => void>();
  let requestsInFlight = 0;
  let drained: (() => void) | undefined;
  const app = router({
    registries,
    discovery: new Discovery(options.apiEnablement.servedKinds(kinds)),
    openapi: new OpenApi(
      options.apiEnablement.servedKinds(kinds),
      options.groupDomain,
      serverVersion.gitVersion,
    ),
    served: (group, version, resource) => options.apiEnablement.served(group, version, resource),
    release: servedRelease,
    deprecatedRequested: ({ group, version, resource, subresource, removedRelease }) =>
      metrics.deprecatedApis.set(
        { group, version, resource, subresource, removed_release: removedRelease },
        1,
      ),
    health,
    metricsText: () => metrics.registry.metrics(),
    version: serverVersion,
    serverAddress: () => `${options.advertiseAddress ?? options.bindAddress}:${port}`,
    groupDomain: options.groupDomain,
    ...(options.watchBookmarkIntervalMs === undefined
      ? {}
      : { watchBookmarkIntervalMs: options.watchBookmarkIntervalMs }),
    admission: (user, registry, namespace) => escalation.admissionFor(user, registry, namespace),
    authorizer: authorization.authorizer,
    admin: adminHandler(replica, engine),
    extraPaths: issuerDiscoveryPaths(authentication.serviceAccounts),
    watchHooks: {
      opened: (group, resource) => metrics.watchers.inc({ verb: 'WATCH', group, resource }),
      closed: (group, resource) => metrics.watchers.dec({ verb: 'WATCH', group, resource }),
    },
  });
  const handler = buildChain(app, {
    logger,
    metrics,
    authenticator: authentication.authenticator,
    authorizer: authorization.requestAuthorizer(gates.enabled('AuthorizeWithSelectors')),
    authenticationGroup,
    maxRequestsInflight: options.maxRequestsInflight,
    maxMutatingRequestsInflight: options.maxMutatingRequestsInflight,
    ...(auditor === undefined ? {} : { auditor }),
  });

  const server: Http2SecureServer = createSecureServer(
    {
      allowHTTP1: true,
      cert: credentials.servingCertPem,
      key: credentials.servingKeyPem,
      ca: authentication.tlsClientCaPem,
      requestCert: true,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      // Bounded like kube-apiserver's --http2-max-streams-per-connection (1000): watches share connections.
      settings: { maxConcurrentStreams: http2MaxStreamsPerConnection },
    },
    (req: Http2ServerRequest, res: Http2ServerResponse) => {
      const ctx = newRequestContext(req, res, {
        compression: gates.enabled('APIResponseCompression'),
        cbor: gates.enabled('CBORServingAndStorage'),
        metaGroup,
      });
      if (ctx.info.verb === 'watch') {
        const end = (): void => {
          if (!res.writableEnded) res.end();
        };
        activeWatches.add(end);
        res.on('close', () => activeWatches.delete(end));
      }
      requestsInFlight++;
      handler(ctx)
        .catch((error: unknown) => logger.error({ err: error }, 'unhandled request error'))
        .finally(() => {
          requestsInFlight--;
          if (requestsInFlight === 0) drained?.();
        });
    },
  );
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('sessionError', (error) => logger.debug({ err: error }, 'session error'));
  server.on('tlsClientError', (error) => logger.debug({ err: error }, 'TLS client error'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.securePort, options.bindAddress, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  port = typeof address === 'object' && address !== null ? address.port : options.securePort;
  const host = options.bindAddress === '0.0.0.0' ? '127.0.0.1' : options.bindAddress;
  const url = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const kubeconfigPath = await writeAdminKubeconfig(options.dataDir, url, credentials);
  await ensureKubernetesService(registries, options.serviceClusterIpRange, port);
  bootstrapControllers.start();
  logger.info({ url, port, groupDomain: options.groupDomain }, 'serving');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      health.beginShutdown();
      if (options.shutdownDelayMs > 0) await new Promise((r) => setTimeout(r, options.shutdownDelayMs));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const end of activeWatches) end();
      // Let in-flight requests finish (at most 5 s), then cut what is left (idle keep-alive, HTTP/2 sessions).
      if (requestsInFlight > 0) {
        await Promise.race([
          new Promise<void>((r) => (drained = r)),
          new Promise((r) => setTimeout(r, 5000)),
        ]);
      }
      for (const socket of sockets) socket.destroy();
      await closed;
      controllers.stop();
      aggregation.stop();
      authorization.close();
      await bootstrapControllers.stop();
      authentication.close();
      registries.close();
      await store.close();
      auditor?.close();
      logger.info('stopped');
      logger.flush();
    })();
    return closing;
  };
  return { port, url, kubeconfigPath, logger, close };
}
