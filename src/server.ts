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

  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/metrics', async (_req, reply) => {
    reply.header('content-type', hits.registry.contentType);
    return hits.registry.metrics();
  });

  fastify.addHook('onSend', async (request, reply) => {
    if (servicePathOf(request.url, servicePath) !== null) reply.headers(extraHeaders);
  });

  fastify.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error }, 'unhandled error');
    send(reply, { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(status === 413 ? 'Maximum request length exceeded.' : 'Request format is unrecognized.'), cacheControl: CACHE_ERROR });
  });

  fastify.all('/*', async (request, reply) => {
    const url = new URL(request.url, 'http://localhost');
    const requestedServicePath = servicePathOf(url.pathname, servicePath);
    if (requestedServicePath === null) {
      return send(reply, { status: 404, contentType: TEXT_CONTENT_TYPE, body: 'Not Found\r\n', cacheControl: CACHE_ERROR });
    }
    const pathInfo = url.pathname.slice(requestedServicePath.length);
    const method = request.method;
    const publicUrl = `${config.server.publicBaseUrl ?? `${request.protocol}://${request.host}`}${requestedServicePath}`;

    if (pathInfo === '') {
      if (method === 'POST') return serveCall(request, reply, soapBinding(request));
      if (method === 'GET') return send(reply, describe(url.search.slice(1), publicUrl, requestedServicePath));
      return send(reply, unrecognized(405, 'Request format is unrecognized.'));
    }
    if (pathInfo.length >= 2 && (method === 'GET' || method === 'POST')) {
      return serveCall(request, reply, httpBinding(request, method, safeDecode(pathInfo.slice(1)), url));
    }
    return send(reply, unrecognized(500, `Request format is unrecognized for URL unexpectedly ending in '${pathInfo}'.`));
  });

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
    const contentType = request.headers['content-type'];
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
            : readForm(request.headers['content-type'], Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0));
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

  function describe(query: string, publicUrl: string, requestPath: string): Answer {
    const xml = (body: string): Answer => ({ status: 200, contentType: XML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS });
    const html = (body: string): Answer => ({ status: 200, contentType: HTML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS });
    const notFound = (text: string): Answer => ({ status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody([text]), cacheControl: CACHE_ERROR });
    const pairs = parseRawQuery(query);
    for (const [key, value] of pairs) {
      const name = (key ?? value).toLowerCase();
      if (key === null && name === 'wsdl') return xml(renderWsdl(config.service, publicUrl));
      if (key === null && name === 'disco') return xml(renderDisco(config.service, publicUrl));
      if (key !== null && name === 'wsdl') return value === '' ? xml(renderWsdl(config.service, publicUrl)) : notFound(WSDL_NOT_FOUND);
      if (key !== null && name === 'schema') return notFound(SCHEMA_NOT_FOUND);
    }
    const opName = pairs.find(([key]) => key?.toLowerCase() === 'op')?.[1];
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

/** The service path as the request spelled it (IIS matches it in any case), or null if not ours. */
function servicePathOf(path: string, servicePath: string): string | null {
  const pathname = path.split('?')[0] as string;
  const lower = pathname.toLowerCase();
  if (lower === servicePath || lower.startsWith(`${servicePath}/`)) return pathname.slice(0, servicePath.length);
  return null;
}

/** ASP.NET's query collection: a part without `=` is a value with no name. */
function parseRawQuery(query: string): [string | null, string][] {
  if (query === '') return [];
  return query.split('&').map((part) => {
    const eq = part.indexOf('=');
    return eq < 0 ? [null, safeDecode(part)] : [safeDecode(part.slice(0, eq)), safeDecode(part.slice(eq + 1))];
  });
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
