import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { lazyChildLogger } from '../log/loggers.js';
import { registerBrownoutGauge } from '../brownouts/gauge.js';
import { createBudget } from '../budget/budget.js';
import { createRefuser } from '../brownouts/refusal.js';
import { scheduleOf, type Schedule } from '../brownouts/schedule.js';
import { createPageCache, type PageCache } from '../cache/page-cache.js';
import { createAdmission } from '../call/admission.js';
import { type ClientDirectory, createClientDirectory } from '../clients/directory.js';
import { clientFingerprint } from '../clients/fingerprint.js';
import { isLoopback } from '../config/loopback.js';
import { reloaded, type Reloaded } from '../config/reload.js';
import { OPERATOR_DATA_PATHS, type Config } from '../config/schema.js';
import { deprecationSignals } from '../deprecation/headers.js';
import { createFleetLedger } from '../deprecation/fleet-ledger.js';
import { createHitRecorder, type HitRecorder } from '../deprecation/hits.js';
import { createRegistry } from '../metrics/registry.js';
import { callBindings } from '../inbound/bindings.js';
import { errorPage, type Reply } from '../inbound/reply.js';
import { BAD_REQUEST, INTERNAL_ERROR, MAX_REQUEST_LENGTH, REQUEST_FORMAT_UNRECOGNIZED } from '../messages.js';
import { createLegacyRouting } from '../legacy-service/relay.js';
import { createShared, type Shared } from '../redis/shared.js';
import { createPlanFetcher } from '../outbound/execute.js';
import { composeFetch, countRequests } from '../outbound/fetch.js';
import { createUpstream, type Upstream } from '../outbound/upstream-client.js';
import { createUpstreamHealth } from '../outbound/upstream-health.js';
import { translateContext } from '../translate/plan.js';
import { registerTracingMetrics } from '../tracing/metrics.js';
import { tracePages } from '../tracing/pages.js';
import type { Tracing } from '../tracing/setup.js';
import { loadCompactPass } from '../xml/compact.js';
import { hostCheck } from './admin-host.js';
import { createDescriptionServer } from './descriptions.js';
import { createDispatcher } from './dispatcher.js';
import { createHealth, type Health } from './health.js';
import { send } from '../inbound/send.js';
import { targetReader } from './http.js';
import { operatorDataRoutes, probeRoutes } from './operator.js';
import { ledgerSource } from './ledger-source.js';
import { selfServiceRoute } from './self-service.js';
import { type MigrationPolicy, migrationPolicyOf } from '../migration/clients.js';
import { createOperatorRefusals } from './operator-refusals.js';
import { operatorGuard } from './operator-token.js';
import { createCallServer, type CallServer } from '../call/serve.js';
import { createReloader, reloadRoute, type Reloader } from './reload.js';
import { createSignalAdder, type SignalAdder } from './signals.js';

/**
 * The HTTP front (docs/architecture.md): fastify with one catch-all route, the service dispatcher,
 * which hands a call to its binding and the call path (src/call/serve.ts) and a description
 * request to the descriptions; the deprecation signals on every reply from the service path; the
 * probes; and the operator listener with `/metrics` and `/ledger`. Everything here is made once.
 */

export interface AppDependencies {
  /** Defaults to an undici pool for `config.upstream`, closed with the app. */
  readonly upstream?: Upstream;
  readonly logger?: FastifyBaseLogger;
  /** The deprecation hits' own channel; when not given, `logger`'s destination, in the proxy's line format (src/deprecation/hits.ts). */
  readonly hitLogger?: FastifyBaseLogger;
  /** The clock of the brownout schedule and of the page cache; `Date.now` when not given. */
  readonly now?: () => number;
  /** Reads the configuration again for a reload (`POST /reload`, `App.reloadFromSource`); the one given when not. */
  readonly configSource?: () => Config;
  /** Tracing (src/tracing), when the OpenTelemetry variables turn it on; null or absent, nothing is traced. */
  readonly tracing?: Tracing | null;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly hits: HitRecorder;
  /** The app's metrics, which the operator listener's `/metrics` serves. */
  readonly registry: Registry;
  /**
   * The operator listener (`server.adminPort`): probes, `/metrics`, `/ledger` and `/reload`, for the
   * `Host` values it answers to; null when the port is null.
   */
  readonly admin: FastifyInstance | null;
  /** Readiness: ready once `fastify` and `admin` listen, until draining. */
  readonly health: Health;
  /** The path of one call, as the dispatcher takes it (for a binding of the caller's own, such as a test's). */
  readonly serveCall: CallServer;
  /** Reads the configuration from `configSource` and applies it, or refuses it (src/server/reload.ts). */
  readonly reloadFromSource: Reloader;
}

/** fastify's own errors that a request can cause, by code, as ASP.NET would have answered them. */
const FASTIFY_ERROR_REPLIES: Readonly<Record<string, Reply>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: errorPage(413, MAX_REQUEST_LENGTH),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: errorPage(400, REQUEST_FORMAT_UNRECOGNIZED),
};

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<App> {
  loadCompactPass();
  const { servicePath, trustProxy } = config.server;
  const targetOf = targetReader(servicePath);
  /** The configuration new calls get, and what the call path made of it (below). */
  let running = config;
  let configured: Configured;
  const addSignals: SignalAdder = (request, reply) => configured.addSignals(request, reply);
  const fastify = Fastify({
    loggerInstance: deps.logger ?? pino({ level: config.log.level }),
    bodyLimit: config.server.bodyLimitBytes,
    requestTimeout: config.server.requestTimeoutMs,
    // Node enforces the request timeout (headers and body alike: a body declared but not sent, a
    // stalled chunk, a trickle) only when it checks its connections, every 30 s by default: check
    // often enough that the configured time is the time.
    http: {
      headersTimeout: config.server.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.server.requestTimeoutMs / 4)),
    },
    // A number of proxies becomes fastify's hop test (`i < n`, as fastify does for a number, which its
    // types do not list): the address is then the one the nearest proxy saw.
    trustProxy: typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
    return503OnClosing: true,
    // Unique across instances and restarts: the id ties a hit to the lines about its upstream requests.
    genReqId: () => randomUUID(),
    childLoggerFactory: lazyChildLogger,
    // Request URLs carry apiKey in the query string: the deprecation hit is the request log.
    logController: new LogController({ disableRequestLogging: true }),
    // A malformed %-escape in the path makes the router give up (FST_ERR_BAD_URL) before any hook.
    // ASP.NET keeps such an escape as written (HttpUtility.UrlDecode), so the request is dispatched
    // like any other: `/index.asmx/%ZZ` names the method `%ZZ`. No hook runs on this path, so the
    // deprecation headers and the sent Content-Type are taken here. The body is not read: a SOAP
    // request (no PathInfo, not a GET) cannot be served without it; elsewhere it does not matter, since
    // a method name with a malformed escape names none.
    frameworkErrors: (_error, request, reply) => {
      addSignals(request, reply);
      request.sentContentType = request.headers['content-type'];
      const target = targetOf(request);
      const soapEndpoint = target.servicePath?.length === target.pathname.length;
      if (soapEndpoint && request.method !== 'GET') return send(reply, errorPage(400, BAD_REQUEST));
      dispatch(request, reply);
    },
  });

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error.code === undefined ? undefined : FASTIFY_ERROR_REPLIES[error.code];
    // fastify marks a request body that broke off (the client hung up while sending it) 400.
    const broken = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500;
    if (!known && !broken) request.log.error({ event: 'unhandled_error', err: error }, 'unhandled error');
    send(reply, known ?? errorPage(broken ? (error.statusCode as number) : 500, broken ? REQUEST_FORMAT_UNRECOGNIZED : INTERNAL_ERROR));
  });
  // Hooks with `done`, not async: an async hook costs every call a promise and a turn of the microtask queue.
  fastify.addHook('onSend', (request, reply, _payload, done) => {
    addSignals(request, reply);
    done();
  });
  readBodiesAsBytes(fastify);

  const registry = createRegistry((deps.tracing ?? null) !== null);
  const shared = createShared(config.redis, registry, fastify.log, config.redis.secret ?? config.deprecation.clientIdKey);
  const fleetLedger = createFleetLedger(shared, { retentionDays: config.deprecation.ledgerRetentionDays });
  const hits = createHitRecorder(registry, fastify.log, deps.hitLogger, fleetLedger, (deps.tracing ?? null) !== null);
  fastify.addHook('onClose', async () => {
    hits.close();
    // What the fleet's ledger has not merged yet goes before the connection.
    await fleetLedger?.close();
    await shared.close();
  });
  const upstreamHealth = createUpstreamHealth({
    probe: () => upstream.reachable(),
    intervalMs: config.upstream.healthCheckIntervalMs,
    registry,
  });
  const upstream =
    deps.upstream ??
    createUpstream(config.upstream, (seen) => {
      hits.observeUpstream(seen);
      upstreamHealth.observe(seen);
    });
  fastify.addHook('onClose', async () => {
    upstreamHealth.close();
    if (!deps.upstream) await upstream.close();
  });
  const budget = createBudget({
    settings: () => running.upstream.budget,
    shared,
    registry,
    log: fastify.log,
    fingerprintOf: (appKey) => clientFingerprint(appKey, config.deprecation.clientIdKey),
  });
  const now = deps.now ?? Date.now;
  // Made whether or not cache.enabled is on, so that a reload may turn it on; while it is off, the cache passes every page on.
  const cache = pageCache(fastify, () => running, { shared, registry, now });
  // The fetch pipeline, the one way to the upstream, listed from the upstream outward: each request
  // counted in its call's hit as it goes out, after room in its appKey's budget (upstream.budget),
  // and only for a page the cache cannot serve. A background refresh goes through the layers inside the cache.
  const tracing = deps.tracing ?? null;
  const fetchPage = composeFetch(
    upstream.fetch,
    countRequests,
    budget,
    cache.intercept,
    ...(tracing === null ? [] : [tracePages(tracing, new URL(config.upstream.baseUrl ?? 'http://upstream').hostname)]),
  );
  if (tracing !== null) registerTracingMetrics(registry, tracing);

  // Made once: what holds connections, counts or memory. What a configuration reload may change is
  // made anew for each configuration (`configuredFor`); a call keeps the one it started with.
  const admission = createAdmission(config.server.maxConcurrentCalls, config.server.retryAfterSeconds);
  const fetchPlan = createPlanFetcher(config.upstream.maxConcurrentPages, shared);
  const legacy = legacyRouting(fastify, config, registry, tracing);
  registerBrownoutGauge(registry, () => configured.schedule, now);
  const configuredFor = (current: Config): Configured => {
    const schedule = scheduleOf(current);
    const identify = createClientDirectory(current.clients, current.deprecation.clientIdKey);
    return {
      schedule,
      identify,
      serveCall: createCallServer({
        config: current,
        fetchPage,
        identify,
        admission,
        context: translateContext(current),
        fetchPlan,
        refuse: createRefuser(schedule, now),
        legacy,
        hits,
        tracing,
        linkFor: deprecationSignals(current).linkFor,
      }),
      addSignals: createSignalAdder(current, targetOf),
    };
  };
  configured = configuredFor(config);
  const serveCall: CallServer = (binding, serviceRequest, request, reply) => configured.serveCall(binding, serviceRequest, request, reply);
  const reload = (next: Config): Reloaded => {
    const applied = reloaded(running, next);
    running = applied.config;
    configured = configuredFor(running);
    return applied;
  };
  const reloadFromSource = createReloader(deps.configSource ?? (() => config), reload, fastify.log);
  const serveDescription = createDescriptionServer(config.server, config.service, config.paging.profiles, tracing);
  const dispatch = createDispatcher(targetOf, callBindings(config.service), serveCall, serveDescription);

  const admin =
    config.server.adminPort === null
      ? null
      : Fastify({
          loggerInstance: fastify.log,
          logController: new LogController({ disableRequestLogging: true }),
          return503OnClosing: true,
        });
  const health = createHealth(
    admin === null ? [SERVICE_LISTENER] : [SERVICE_LISTENER, OPERATOR_LISTENER],
    upstreamHealth,
    config.server.readinessFollowsUpstream,
  );
  fastify.addHook('onListen', async () => {
    health.listening(SERVICE_LISTENER);
    upstreamHealth.start();
  });
  // Before the catch-all route, which would otherwise take these paths.
  const { host, adminHost, adminToken, adminHostnames } = config.server;
  const migration = (): MigrationPolicy => migrationPolicyOf(running);
  const refused = createOperatorRefusals(registry);
  await fastify.register(probeRoutes, { health, upstream: null });
  const ledger = ledgerSource(hits, fleetLedger);
  await fastify.register(selfServiceRoute, {
    ledger,
    identify: () => configured.identify,
    migration,
    enabled: () => running.deprecation.selfService,
    now,
    otherwise: dispatch,
  });
  await fastify.register(operatorDataRoutes, {
    registry,
    ledger,
    paths: config.server.operatorOnServicePort,
    guard: operatorGuard({ token: adminToken, loopback: isLoopback(host), refused }),
    migration,
    now,
  });
  if (admin !== null) {
    const guard = operatorGuard({ token: adminToken, loopback: isLoopback(adminHost), refused });
    admin.addHook('onRequest', hostCheck(adminHostnames, refused));
    admin.addHook('onListen', async () => health.listening(OPERATOR_LISTENER));
    await admin.register(probeRoutes, { health, upstream: upstreamHealth });
    await admin.register(operatorDataRoutes, { registry, ledger, paths: OPERATOR_DATA_PATHS, guard, migration, now });
    await admin.register(reloadRoute, { reload: reloadFromSource, guard });
    fastify.addHook('onClose', async () => admin.close());
  }
  fastify.all('/*', dispatch);
  // Methods fastify does not route (PROPFIND, MKCOL, …) would get its JSON 404: dispatch them too,
  // so that they get the ASMX answer to an unknown method (405 or 500, docs/wire.md §1).
  fastify.setNotFoundHandler(dispatch);
  return { fastify, hits, registry, admin, health, serveCall, reloadFromSource };
}

/**
 * Every body reaches the bindings as bytes: SOAP needs them raw (a form post to the SOAP path is a
 * SOAP request that fails to parse), and the HTTP POST protocol reads its form itself. ASMX reads the
 * Content-Type itself (docs/wire.md §2.5, §3, §6.2), but fastify answers one it cannot parse (`foo`,
 * an empty value) with its own 415, and a QUERY without one with a 400, before any handler runs. So
 * the bindings read the header as sent, and fastify is shown a neutral type that the catch-all parser
 * reads as bytes like any other.
 */
function readBodiesAsBytes(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  fastify.decorateRequest('sentContentType', undefined);
  fastify.decorateRequest('serviceTarget', undefined);
  fastify.addHook('onRequest', (request, _reply, done) => {
    request.sentContentType = request.headers['content-type'];
    request.raw.headers['content-type'] = 'application/octet-stream';
    done();
  });
}

/** Shadow and passthrough (docs/migration.md §6), closed with the app. */
function legacyRouting(fastify: FastifyInstance, config: Config, registry: Registry, tracing: Tracing | null) {
  const legacy = createLegacyRouting({ config, registry, log: fastify.log, tracing });
  fastify.addHook('onClose', async () => legacy.close());
  return legacy;
}

/** The page cache (docs/operating.md), closed with the app. */
function pageCache(
  fastify: FastifyInstance,
  settings: () => Config,
  { shared, registry, now }: { shared: Shared; registry: Registry; now: () => number },
): PageCache {
  const cache = createPageCache({ settings, shared, registry, log: fastify.log, now });
  fastify.addHook('onClose', async () => cache.close());
  return cache;
}

/** What is made of one configuration (the call path, its schedule, its signals): a reload makes it anew (`configuredFor`). */
interface Configured {
  /** The brownouts and sunset its refusals follow, which the brownout gauge reads too. */
  readonly schedule: Schedule;
  readonly serveCall: CallServer;
  readonly addSignals: SignalAdder;
  /** Who a key names (the callers' self-service asks too). */
  readonly identify: ClientDirectory;
}

const SERVICE_LISTENER = 'service';
const OPERATOR_LISTENER = 'operator';
