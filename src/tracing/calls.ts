import type { IncomingHttpHeaders } from 'node:http';
import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DeprecationHit } from '../deprecation/hits.js';
import type { FetchTrace } from '../outbound/fetch.js';
import type { Tracing } from './setup.js';

/**
 * The server span of one legacy call (docs/operating.md, "Traces"): it continues the caller's trace
 * when the request carries one (`traceparent`, `tracestate`, `baggage`), and is named for its
 * operation once the call has been read. What it says of the call is its hit's, so that a key never
 * gets into a span: the hit holds none. The URL's query is left out for the same reason.
 */

export interface CallTrace {
  /** What the call's fetches go under. */
  readonly fetch: FetchTrace;
  /** Ends the span with what the call's hit says of it, and the fault code its SOAP fault carried. */
  end(hit: DeprecationHit, faultCode: string | undefined): void;
}

const HEADER_GETTER = {
  keys: (carrier: IncomingHttpHeaders) => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string) => carrier[key],
};

export function startCallTrace(tracing: Tracing, method: string, path: string, headers: IncomingHttpHeaders): CallTrace {
  const parent = tracing.propagator.extract(ROOT_CONTEXT, headers, HEADER_GETTER);
  const span = tracing.tracer.startSpan(
    `${method} ${path}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': path } },
    parent,
  );
  return {
    fetch: fetchTrace(tracing, span, trace.setSpan(parent, span)),
    end(hit, faultCode) {
      if (hit.operation !== 'unknown') span.updateName(`${hit.operation} ${hit.binding}`);
      span.setAttributes({
        'http.response.status_code': hit.status,
        'legacy.request_id': hit.requestId,
        'legacy.operation': hit.operation,
        'legacy.binding': hit.binding,
        'legacy.client': hit.clientLabel,
        'legacy.route': hit.route,
        'deprecation.outcome': hit.outcome,
        'deprecation.replacement': hit.replacement,
        'legacy.upstream_requests': hit.upstreamRequests,
      });
      if (hit.reason !== null) span.setAttribute('deprecation.reason', hit.reason);
      if (hit.successor !== null) span.setAttribute('deprecation.successor', hit.successor);
      if (hit.userAgent !== null) span.setAttribute('user_agent.original', hit.userAgent);
      if (faultCode !== undefined) span.setAttribute('legacy.fault_code', faultCode);
      if (hit.outcome === 'fault') span.setStatus({ code: SpanStatusCode.ERROR, message: hit.reason ?? 'fault' });
      span.end();
    },
  };
}

/** A description page (WSDL, disco, help) as a server span of its own, with its kind; it takes no time worth timing apart. */
export function traceDescription(
  tracing: Tracing,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  kind: string,
  status: number,
): void {
  const parent = tracing.propagator.extract(ROOT_CONTEXT, headers, HEADER_GETTER);
  tracing.tracer
    .startSpan(
      `${method} ${path} ${kind}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'url.path': path, 'legacy.description': kind, 'http.response.status_code': status },
      },
      parent,
    )
    .end();
}

/** The trace of a fetch under `span`: its ids, the headers that carry it on, and its events. */
export function fetchTrace(tracing: Tracing, span: Span, context: Context): FetchTrace {
  // Written when a request is sent under it: a page the cache serves sends none.
  let headers: Record<string, string> | undefined;
  const { traceId, spanId } = span.spanContext();
  return {
    context,
    traceId,
    spanId,
    get headers() {
      if (headers === undefined) {
        const written: Record<string, string> = {};
        tracing.outward.inject(context, written, { set: (carrier, key, value) => (carrier[key] = value) });
        headers = written;
      }
      return headers;
    },
    responded: (status) => span.setAttribute('http.response.status_code', status),
    event: (name, attributes) => span.addEvent(name, attributes),
    background(name) {
      const started = tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT, root: true, links: [{ context: span.spanContext() }] });
      return {
        trace: fetchTrace(tracing, started, trace.setSpan(ROOT_CONTEXT, started)),
        end(failure) {
          if (failure !== null) {
            started.setAttribute('error.type', failure);
            started.setStatus({ code: SpanStatusCode.ERROR, message: failure });
          }
          started.end();
        },
      };
    },
  };
}
