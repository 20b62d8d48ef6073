import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { deprecationHeaders } from './deprecation/headers.js';
import { clientFingerprint, createHitRecorder, type HitRecorder } from './deprecation/hits.js';
import { CACHE_ERROR, errorPage, type Answer, type CallOutcome } from './inbound/answer.js';
import { describeService } from './inbound/discovery.js';
import { answerHttp } from './inbound/http-call.js';
import { answerSoap, type Answerer } from './inbound/soap-call.js';
import { TEXT_CONTENT_TYPE } from './inbound/text-response.js';
import { percentDecode } from './inbound/url-decode.js';
import { OperationError } from './errors.js';
import { findOperation, stringArg } from './operations.js';
import { TIMED_OUT, createUpstreamClient, type UpstreamClient } from './outbound/client.js';
import { createProxy } from './proxy.js';
import type { UpstreamRequest } from './translate/plan.js';

/**
 * The HTTP front: dispatches every request under the service path the way the ASMX handler factory
 * does (asmx-wire.md §1), runs the call, writes the answer in the binding's own form, and records
 * the deprecation hit.
 */

export interface AppDependencies {
  /** Defaults to an undici client of `config.upstream`, closed with the app. */
  readonly client?: UpstreamClient;
  readonly logger?: FastifyBaseLogger;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly hits: HitRecorder;
}

export function buildApp(config: Config, deps: AppDependencies): App {
  const fastify = Fastify({
    loggerInstance: deps.logger ?? pino({ level: config.log.level }),
    bodyLimit: config.server.bodyLimitBytes,
    requestTimeout: config.server.requestTimeoutMs,
    trustProxy: config.server.trustProxy,
    return503OnClosing: true,
    // Request URLs carry apiKey in the query string: the deprecation hit is the request log.
    logController: new LogController({ disableRequestLogging: true }),
    // A malformed %-escape in the path makes the router give up (FST_ERR_BAD_URL) with a JSON 400 of
    // its own, before any hook. ASP.NET keeps such an escape as written (HttpUtility.UrlDecode), so
    // the request is dispatched like any other: `/index.asmx/%ZZ` names the method `%ZZ`. No hook
    // runs on this path, so the deprecation headers are added here.
    // The body is not read on this path: a SOAP request (no PathInfo, not a GET) cannot be served from
    // it. Elsewhere the body does not matter, since a method name with a malformed escape names none.
    frameworkErrors: (_error, request, reply) => {
      addDeprecationHeaders(request, reply);
      const path = requestUrl(request.url).pathname;
      const soapEndpoint = servicePathOf(path, servicePath)?.length === path.length;
      if (soapEndpoint && request.method !== 'GET') return send(reply, errorPage(400, 'Bad Request'));
      dispatch(request, reply).catch((err: unknown) => {
        request.log.error({ err }, 'dispatch failed');
        if (!reply.sent) send(reply, errorPage(500, 'An internal error occurred.'));
      });
    },
  });
  const hits = createHitRecorder(fastify.log);
  const upstream = deps.client ?? createUpstreamClient(config.upstream, hits.observeUpstream);
  fastify.addHook('onClose', async () => {
    if (!deps.client) await upstream.close();
  });
  const proxy = createProxy(config);
  const extraHeaders = deprecationHeaders(config.deprecation);
  const servicePath = config.server.servicePath.toLowerCase();
  const { namespace } = config.service;

  // Every body reaches the handlers as bytes: SOAP needs them raw (a form post to the SOAP path is a
  // SOAP request that fails to parse), and the HTTP POST protocol reads its form itself.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // ASMX reads the Content-Type itself (asmx-wire.md §2.5, §3, §6.2), but fastify answers one it cannot
  // parse (`foo`, an empty value) with its own 415, and a QUERY without one with a 400, before any
  // handler runs. So the handlers read the header as sent, and fastify is shown a neutral type that
  // the catch-all parser above reads as bytes like any other.
  const sentContentTypes = new WeakMap<FastifyRequest['raw'], string | undefined>();
  fastify.addHook('onRequest', async (request) => {
    sentContentTypes.set(request.raw, request.headers['content-type']);
    request.raw.headers['content-type'] = 'application/octet-stream';
  });
  const contentTypeOf = (request: FastifyRequest): string | undefined =>
    sentContentTypes.has(request.raw) ? sentContentTypes.get(request.raw) : request.headers['content-type'];

  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/metrics', async (_req, reply) => {
    reply.header('content-type', hits.registry.contentType);
    return hits.registry.metrics();
  });

  // The same path test as the dispatcher's (after URL normalisation: `/x/../index.asmx` is served),
  // so that every answer from the service carries the headers.
  fastify.addHook('onSend', async (request, reply) => addDeprecationHeaders(request, reply));
  function addDeprecationHeaders(request: FastifyRequest, reply: FastifyReply): void {
    if (servicePathOf(requestUrl(request.url).pathname, servicePath) !== null) reply.headers(extraHeaders);
  }

  fastify.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error }, 'unhandled error');
    send(reply, errorPage(status, status === 413 ? 'Maximum request length exceeded.' : 'Request format is unrecognized.'));
  });

  fastify.all('/*', dispatch);
  // Methods fastify does not route (PROPFIND, MKCOL, …) would get its JSON 404: dispatch them too,
  // so that they get the ASMX answer to an unknown method (405 or 500, §1).
  fastify.setNotFoundHandler(dispatch);

  /** asmx-wire.md §1: which protocol takes the request, by PathInfo and method. */
  async function dispatch(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const url = requestUrl(request.url);
    const requestedServicePath = servicePathOf(url.pathname, servicePath);
    if (requestedServicePath === null) {
      return send(reply, { status: 404, contentType: TEXT_CONTENT_TYPE, body: 'Not Found\r\n', cacheControl: CACHE_ERROR });
    }
    const pathInfo = url.pathname.slice(requestedServicePath.length);
    const method = request.method;
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const onUnexpected = (err: unknown): void => request.log.error({ err }, 'operation failed unexpectedly');

    if (pathInfo === '') {
      if (method === 'POST') {
        const header = request.headers.soapaction;
        const soapAction = Array.isArray(header) ? header.join(',') : header;
        return serveCall(request, reply, (answer) => answerSoap({ contentType: contentTypeOf(request), soapAction, body }, namespace, answer, onUnexpected));
      }
      if (method === 'GET') {
        const base = config.server.publicBaseUrl ?? requestBase(request.protocol, request.host);
        // Addresses cannot be built from such a Host; HTTP.sys would have refused it before IIS.
        if (base === null) return send(reply, errorPage(400, 'Bad Request - Invalid Hostname'));
        return send(reply, describeService(config.service, url.search.slice(1), `${base}${requestedServicePath}`));
      }
      return send(reply, errorPage(405, 'Request format is unrecognized.'));
    }
    if (pathInfo.length >= 2 && (method === 'GET' || method === 'POST')) {
      const call = { method, name: percentDecode(pathInfo.slice(1)), query: url.search.slice(1), contentType: contentTypeOf(request), body } as const;
      return serveCall(request, reply, (answer) => answerHttp(call, config.service.httpOptionalParameters, answer, onUnexpected));
    }
    return send(reply, errorPage(500, `Request format is unrecognized for URL unexpectedly ending in '${percentDecode(pathInfo)}'.`));
  }

  let callsInFlight = 0;

  /**
   * Runs one legacy call under a deadline (`upstream.callTimeoutMs`), cancelled when the client goes
   * away, sends its answer, and records the deprecation hit. Past `server.maxConcurrentCalls` the call
   * is shed with ASP.NET's "Server Too Busy" instead of queueing without bound.
   */
  async function serveCall(request: FastifyRequest, reply: FastifyReply, run: (answer: Answerer) => Promise<CallOutcome>): Promise<void> {
    if (callsInFlight >= config.server.maxConcurrentCalls) {
      hits.shed();
      return send(reply, errorPage(503, 'Server Too Busy'));
    }
    callsInFlight++;
    const started = performance.now();
    // Read now: once a caller has hung up, its socket no longer knows the address.
    const remoteAddress = request.ip ?? null;
    const cancel = new AbortController();
    const deadline = setTimeout(() => cancel.abort(new OperationError(TIMED_OUT, 'upstream_timeout')), config.upstream.callTimeoutMs);
    const onClose = (): void => {
      if (!reply.raw.writableFinished) cancel.abort(new OperationError('The client closed the connection.', 'client_closed'));
    };
    reply.raw.once('close', onClose);
    let upstreamRequests = 0;
    const counted = {
      fetch: (upstreamRequest: UpstreamRequest, signal?: AbortSignal) => {
        upstreamRequests++;
        return upstream.fetch(upstreamRequest, signal);
      },
    };
    let outcome: CallOutcome;
    try {
      outcome = await run((call) => proxy.answer(call, counted, cancel.signal));
    } finally {
      clearTimeout(deadline);
      callsInFlight--;
    }
    send(reply, outcome.answer);
    reply.raw.off('close', onClose);
    const apiKey = outcome.call === null ? null : stringArg(outcome.call, 'apiKey');
    hits.record({
      operation: outcome.operation,
      binding: outcome.binding,
      client: clientFingerprint(apiKey, config.deprecation.clientIdKey),
      legacyVersion: outcome.call === null ? null : stringArg(outcome.call, 'version'),
      replacement: findOperation(outcome.operation)?.replacement ?? '',
      outcome: outcome.failure === null ? 'ok' : 'fault',
      reason: outcome.failure,
      status: outcome.answer.status,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      upstreamRequests,
      remoteAddress,
      userAgent: request.headers['user-agent'] ?? null,
    });
  }

  return { fastify, hits };
}

function send(reply: FastifyReply, answer: Answer): void {
  reply.code(answer.status).header('content-type', answer.contentType).header('cache-control', answer.cacheControl).send(answer.body);
}

/**
 * The request target as a URL; the path normalised as IIS does (`.` and `..` segments resolved).
 * A target no URL parser accepts (an absolute form such as `http://[x`) is outside the service.
 */
function requestUrl(target: string): URL {
  try {
    return new URL(target, 'http://localhost');
  } catch {
    return new URL('http://localhost/');
  }
}

/**
 * Scheme and authority of the request (§7.1) as ASP.NET's Request.Url (a System.Uri) writes them: the
 * host in lower case, a default port left out. `null` for a Host (or trusted X-Forwarded-Host) that
 * is missing or no URL parser accepts.
 */
function requestBase(protocol: string, host: string | undefined): string | null {
  if (host === undefined || host === '') return null;
  try {
    const { origin, pathname, search, username, password } = new URL(`${protocol}://${host}`);
    return pathname === '/' && search === '' && username === '' && password === '' && origin !== 'null' ? origin : null;
  } catch {
    return null;
  }
}

/** The service path as the request spelled it (IIS matches it in any case), or null if not ours. */
function servicePathOf(pathname: string, servicePath: string): string | null {
  const lower = pathname.toLowerCase();
  if (lower === servicePath || lower.startsWith(`${servicePath}/`)) return pathname.slice(0, servicePath.length);
  return null;
}
