import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { clientFingerprint, createHitRecorder, type Binding, type HitRecorder } from './deprecation/hits.js';
import { deprecationHeaders } from './deprecation/headers.js';
import { HttpBindingError, OperationError, SoapFault, type SoapVersion } from './errors.js';
import { renderDisco } from './inbound/disco.js';
import { renderMethodNotFound, renderOperationHelp, renderServiceHelp } from './inbound/help.js';
import { bindHttpParameters, findHttpOperation, readForm } from './inbound/http-binding.js';
import { readSoapRequest } from './inbound/soap-request.js';
import { faultEnvelope, soapContentType, successEnvelope } from './inbound/soap-response.js';
import { HTML_CONTENT_TYPE, TEXT_CONTENT_TYPE, httpErrorBody, runtimeErrorPage } from './inbound/text-response.js';
import { SCHEMA_NOT_FOUND, WSDL_NOT_FOUND, renderWsdl } from './inbound/wsdl.js';
import { findOperation, stringArg, type LegacyCall } from './operations.js';
import { createUpstreamClient, type UpstreamClient } from './outbound/client.js';
import { createProxy, type Fetcher } from './proxy.js';
import { writeXmlDocument } from './xml/write.js';

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

const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
const CACHE_SUCCESS = 'private, max-age=0';
const CACHE_ERROR = 'private';

/** What a handler decided to send; written in one place so nothing half-written goes out. */
interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  readonly cacheControl: string;
}

interface CallOutcome {
  readonly binding: Binding;
  readonly answer: Answer;
  readonly operation: string;
  readonly call: LegacyCall | null;
  readonly failure: string | null;
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
    frameworkErrors: (_error, request, reply) => {
      addDeprecationHeaders(request, reply);
      void dispatch(request, reply);
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
    send(reply, { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(status === 413 ? 'Maximum request length exceeded.' : 'Request format is unrecognized.'), cacheControl: CACHE_ERROR });
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
    const publicUrl = `${config.server.publicBaseUrl ?? requestBase(request.protocol, request.host)}${requestedServicePath}`;

    if (pathInfo === '') {
      if (method === 'POST') return serveCall(request, reply, soapBinding(request));
      if (method === 'GET') return send(reply, describe(url.search.slice(1), publicUrl, requestedServicePath));
      return send(reply, unrecognized(405, 'Request format is unrecognized.'));
    }
    if (pathInfo.length >= 2 && (method === 'GET' || method === 'POST')) {
      return serveCall(request, reply, httpBinding(request, method, percentDecode(pathInfo.slice(1)), url));
    }
    return send(reply, unrecognized(500, `Request format is unrecognized for URL unexpectedly ending in '${percentDecode(pathInfo)}'.`));
  }

  type Run = (client: Fetcher) => Promise<CallOutcome>;

  async function serveCall(request: FastifyRequest, reply: FastifyReply, run: Run): Promise<void> {
    const started = performance.now();
    let upstreamRequests = 0;
    const outcome = await run({
      fetch: (upstreamRequest) => {
        upstreamRequests++;
        return upstream.fetch(upstreamRequest);
      },
    });
    send(reply, outcome.answer);
    const apiKey = outcome.call === null ? null : stringArg(outcome.call, 'apiKey');
    hits.record({
      operation: outcome.operation,
      binding: outcome.binding,
      client: clientFingerprint(apiKey),
      legacyVersion: outcome.call === null ? null : stringArg(outcome.call, 'version'),
      replacement: findOperation(outcome.operation)?.replacement ?? '',
      outcome: outcome.failure === null ? 'ok' : 'fault',
      reason: outcome.failure,
      status: outcome.answer.status,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      upstreamRequests,
      remoteAddress: request.ip,
      userAgent: request.headers['user-agent'] ?? null,
    });
  }

  function soapBinding(request: FastifyRequest): Run {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const header = request.headers.soapaction;
    const soapAction = Array.isArray(header) ? header.join(',') : header;
    const contentType = contentTypeOf(request);
    return async (client) => {
      let version: SoapVersion = soapAction === undefined ? '1.2' : '1.1';
      let call: LegacyCall | null = null;
      try {
        const read = readSoapRequest({ contentType, soapAction, body }, namespace);
        version = read.version;
        call = read.call;
        const result = await proxy.answer(read.call, client);
        return {
          binding: soapBindingName(version),
          answer: { status: 200, contentType: soapContentType(version), body: successEnvelope(version, namespace, read.call.operation, result), cacheControl: CACHE_SUCCESS },
          operation: read.call.operation.name,
          call,
          failure: null,
        };
      } catch (err) {
        const fault = asSoapFault(err, version);
        if (!(err instanceof SoapFault || err instanceof OperationError)) request.log.error({ err }, 'operation failed unexpectedly');
        const body = fault.status === 500 ? faultEnvelope(fault.version, fault.code, fault.chain) : '';
        return {
          binding: soapBindingName(fault.version),
          answer: { status: fault.status, contentType: soapContentType(fault.version), body, cacheControl: CACHE_ERROR },
          operation: call?.operation.name ?? 'unknown',
          call,
          failure: err instanceof OperationError ? err.reason : 'bad_request',
        };
      }
    };
  }

  function httpBinding(request: FastifyRequest, method: 'GET' | 'POST', name: string, url: URL): Run {
    const binding: Binding = method === 'GET' ? 'httpGet' : 'httpPost';
    return async (client) => {
      let call: LegacyCall | null = null;
      try {
        const op = findHttpOperation(name);
        const pairs =
          method === 'GET'
            ? url.searchParams
            : readForm(contentTypeOf(request), Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0));
        call = bindHttpParameters(op, pairs, config.service.httpOptionalParameters);
        const result = await proxy.answer(call, client);
        return {
          binding,
          answer: { status: 200, contentType: XML_CONTENT_TYPE, body: writeXmlDocument(result, { indent: true }), cacheControl: CACHE_SUCCESS },
          operation: op.name,
          call,
          failure: null,
        };
      } catch (err) {
        if (!(err instanceof HttpBindingError || err instanceof OperationError)) request.log.error({ err }, 'operation failed unexpectedly');
        const chain = err instanceof HttpBindingError || err instanceof OperationError ? err.chain : [INTERNAL_ERROR];
        return {
          binding,
          answer: { status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody(chain), cacheControl: CACHE_ERROR },
          operation: call?.operation.name ?? findOperation(name)?.name ?? 'unknown',
          call,
          failure: err instanceof OperationError ? err.reason : 'bad_request',
        };
      }
    };
  }

  /**
   * A GET with no PathInfo: the Discovery protocol if it accepts (§1 row 4), else the help page.
   * Discovery looks at `schema`, then `wsdl` (any value, even empty, names an extra document, and this
   * service has none), then the nameless value (RS/DiscoveryServerProtocol.cs `WriteReturns`).
   */
  function describe(query: string, publicUrl: string, requestPath: string): Answer {
    const xml = (body: string): Answer => ({ status: 200, contentType: XML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS });
    const html = (body: string): Answer => ({ status: 200, contentType: HTML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS });
    const notFound = (text: string): Answer => ({ status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody([text]), cacheControl: CACHE_ERROR });
    const get = queryCollection(query);
    if (get('schema') !== undefined) return notFound(SCHEMA_NOT_FOUND);
    if (get('wsdl') !== undefined) return notFound(WSDL_NOT_FOUND);
    const nameless = get(null)?.toLowerCase();
    if (nameless === 'wsdl') return xml(renderWsdl(config.service, publicUrl));
    if (nameless === 'disco') return xml(renderDisco(config.service, publicUrl));
    const opName = get('op');
    if (opName === undefined) return html(renderServiceHelp(config.service, publicUrl));
    const op = findOperation(opName);
    return html(op ? renderOperationHelp(config.service, publicUrl, op, requestPath) : renderMethodNotFound(config.service, publicUrl, opName));
  }

  return { fastify, hits };
}

const INTERNAL_ERROR = 'An internal error occurred.';

function asSoapFault(err: unknown, version: SoapVersion): SoapFault {
  if (err instanceof SoapFault) return err;
  if (err instanceof OperationError) {
    return err.clientFault ? new SoapFault('Client', err.chain, version) : new SoapFault('Server', ['Server was unable to process request.', ...err.chain], version);
  }
  return new SoapFault('Server', ['Server was unable to process request.', INTERNAL_ERROR], version);
}

function soapBindingName(version: SoapVersion): Binding {
  return version === '1.1' ? 'soap11' : 'soap12';
}

function unrecognized(status: 405 | 500, message: string): Answer {
  return { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(message), cacheControl: CACHE_ERROR };
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
 * host in lower case, a default port left out. An authority no URL parser accepts is kept as sent.
 */
function requestBase(protocol: string, host: string): string {
  const base = `${protocol}://${host}`;
  try {
    return new URL(base).origin;
  } catch {
    return base;
  }
}

/** The service path as the request spelled it (IIS matches it in any case), or null if not ours. */
function servicePathOf(pathname: string, servicePath: string): string | null {
  const lower = pathname.toLowerCase();
  if (lower === servicePath || lower.startsWith(`${servicePath}/`)) return pathname.slice(0, servicePath.length);
  return null;
}

/**
 * ASP.NET's QueryString (HttpValueCollection): a part without `=` is a value with no name (key null),
 * names match in any case, and a repeated name reads as its values comma-joined, so `?wsdl&wsdl`
 * has the nameless value `wsdl,wsdl`. Undefined: no such name.
 */
function queryCollection(query: string): (name: string | null) => string | undefined {
  const values = new Map<string | null, string[]>();
  if (query !== '') {
    for (const part of query.split('&')) {
      const eq = part.indexOf('=');
      const name = eq < 0 ? null : urlDecode(part.slice(0, eq)).toLowerCase();
      const value = urlDecode(eq < 0 ? part : part.slice(eq + 1));
      values.set(name, [...(values.get(name) ?? []), value]);
    }
  }
  return (name) => values.get(name === null ? null : name.toLowerCase())?.join(',');
}

/** Non-fatal, as .NET's decoder: bytes that are not UTF-8 become U+FFFD. */
const UTF8 = new TextDecoder('utf-8');

/** %XX escapes as UTF-8 bytes; a malformed escape stays as written (HttpUtility.UrlDecode). */
function percentDecode(text: string): string {
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => UTF8.decode(Buffer.from(run.replace(/%/g, ''), 'hex')));
}

/** A query-string part: as a path, and `+` is a space. */
function urlDecode(text: string): string {
  return percentDecode(text.replace(/\+/g, ' '));
}
