import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Config } from '../config/schema.js';
import { OPERATOR_DATA_PATHS } from '../config/schema.js';
import { deprecationPlugin } from '../deprecation/plugin.js';
import type { HitRecorder } from '../deprecation/hits.js';
import { errorPage, type Answer } from '../inbound/reply.js';
import { callBindings } from '../inbound/bindings.js';
import { BAD_REQUEST, INTERNAL_ERROR, MAX_REQUEST_LENGTH, REQUEST_FORMAT_UNRECOGNIZED } from '../messages.js';
import { createUpstream, type Upstream } from '../outbound/upstream.js';
import { createUpstreamHealth } from '../outbound/upstream-health.js';
import { loadCompactPass } from '../xml/compact.js';
import { callRunnerPlugin } from './call-runner.js';
import { descriptionsPlugin } from './descriptions.js';
import { dispatcherPlugin } from './dispatcher.js';
import { createHealth, type Health } from './health.js';
import { operatorDataRoutes, probeRoutes } from './operator.js';
import { requestUrl, send, servicePathOf } from './http.js';

/**
 * The HTTP front: fastify with four plugins (docs/architecture.md): deprecation signals and metrics,
 * the call runner, the service descriptions, and the service dispatcher that routes every request
 * under the service path the way ASMX did.
 */

export interface AppDependencies {
  /** Defaults to an undici pool for `config.upstream`, closed with the app. */
  readonly upstream?: Upstream;
  readonly logger?: FastifyBaseLogger;
  /** The deprecation hits' own channel; `logger` when not given. */
  readonly hitLogger?: FastifyBaseLogger;
  /** The clock of the brownout schedule; `Date.now` when not given. */
  readonly now?: () => number;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly hits: HitRecorder;
  /** The operator listener (`server.adminPort`): probes, `/metrics` and `/ledger`; null when the port is null. */
  readonly admin: FastifyInstance | null;
  /** Readiness: ready once `fastify` and `admin` listen, until draining. */
  readonly health: Health;
}

/** fastify's own errors that a request can cause, by code, as ASP.NET would have answered them. */
const FASTIFY_ERROR_ANSWERS: Readonly<Record<string, Answer>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: errorPage(413, MAX_REQUEST_LENGTH),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: errorPage(400, REQUEST_FORMAT_UNRECOGNIZED),
};

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<App> {
  loadCompactPass();
  const servicePath = config.server.servicePath;
  const { trustProxy } = config.server;
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
    // Request URLs carry apiKey in the query string: the deprecation hit is the request log.
    logController: new LogController({ disableRequestLogging: true }),
    // A malformed %-escape in the path makes the router give up (FST_ERR_BAD_URL) before any hook.
    // ASP.NET keeps such an escape as written (HttpUtility.UrlDecode), so the request is dispatched
    // like any other: `/index.asmx/%ZZ` names the method `%ZZ`. No hook runs on this path, so the
    // deprecation headers and the sent Content-Type are taken here. The body is not read: a SOAP
    // request (no PathInfo, not a GET) cannot be served without it; elsewhere it does not matter, since
    // a method name with a malformed escape names none.
    frameworkErrors: (_error, request, reply) => {
      fastify.addDeprecationHeaders(request, reply);
      request.sentContentType = request.headers['content-type'];
      const path = requestUrl(request.url).pathname;
      const soapEndpoint = servicePathOf(path, servicePath)?.length === path.length;
      if (soapEndpoint && request.method !== 'GET') return send(reply, errorPage(400, BAD_REQUEST));
      fastify.dispatch(request, reply).catch((err: unknown) => {
        request.log.error({ err }, 'dispatch failed');
        if (!reply.sent) send(reply, errorPage(500, INTERNAL_ERROR));
      });
    },
  });

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error.code === undefined ? undefined : FASTIFY_ERROR_ANSWERS[error.code];
    // fastify marks a request body that broke off (the client hung up while sending it) 400.
    const broken = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500;
    if (!known && !broken) request.log.error({ err: error }, 'unhandled error');
    send(reply, known ?? errorPage(broken ? (error.statusCode as number) : 500, broken ? REQUEST_FORMAT_UNRECOGNIZED : INTERNAL_ERROR));
  });

  await fastify.register(deprecationPlugin, { config, servicePath, ...(deps.hitLogger ? { hitLogger: deps.hitLogger } : {}) });
  const { hits } = fastify;
  const upstreamHealth = createUpstreamHealth({
    probe: () => upstream.reachable(),
    intervalMs: config.upstream.healthCheckIntervalMs,
    registry: hits.registry,
  });
  const upstream =
    deps.upstream ??
    createUpstream(config.upstream, (outcome) => {
      hits.observeUpstream(outcome);
      upstreamHealth.observe(outcome);
    });
  fastify.addHook('onClose', async () => {
    upstreamHealth.close();
    if (!deps.upstream) await upstream.close();
  });
  await fastify.register(callRunnerPlugin, { config, upstream, now: deps.now ?? Date.now });
  await fastify.register(descriptionsPlugin, { server: config.server, service: config.service, profiles: config.paging.profiles });

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
  // Registered before the dispatcher, whose catch-all route would otherwise take these paths.
  await fastify.register(probeRoutes, { health, upstream: null });
  await fastify.register(operatorDataRoutes, { hits, paths: config.server.operatorOnServicePort });
  if (admin !== null) {
    admin.addHook('onListen', async () => health.listening(OPERATOR_LISTENER));
    await admin.register(probeRoutes, { health, upstream: upstreamHealth });
    await admin.register(operatorDataRoutes, { hits, paths: OPERATOR_DATA_PATHS });
    fastify.addHook('onClose', async () => admin.close());
  }
  await fastify.register(dispatcherPlugin, { servicePath, bindings: callBindings(config.service) });
  return { fastify, hits, admin, health };
}

const SERVICE_LISTENER = 'service';
const OPERATOR_LISTENER = 'operator';
