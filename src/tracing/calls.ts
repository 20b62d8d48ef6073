import type { IncomingHttpHeaders } from 'node:http';
import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DeprecationHit } from '../deprecation/hits.js';
import type { BackgroundTrace, FetchTrace } from '../outbound/fetch.js';
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
  const parent = callerContext(tracing, headers);
  const span = tracing.tracer.startSpan(
    `${method} ${path}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': path } },
    parent,
  );
  return {
    fetch: new SpanFetchTrace(tracing, span, parent),
    end(hit, faultCode) {
      if (hit.operation !== 'unknown') span.updateName(`${hit.operation} ${hit.binding}`);
      // One call of setAttributes: the SDK checks each value, and once is less than four times.
      const attributes: Attributes = {
        'http.response.status_code': hit.status,
        'legacy.request_id': hit.requestId,
        'legacy.operation': hit.operation,
        'legacy.binding': hit.binding,
        'legacy.client': hit.clientLabel,
        'legacy.route': hit.route,
        'deprecation.outcome': hit.outcome,
        'deprecation.replacement': hit.replacement,
        'legacy.upstream_requests': hit.upstreamRequests,
      };
      if (hit.reason !== null) attributes['deprecation.reason'] = hit.reason;
      if (hit.successor !== null) attributes['deprecation.successor'] = hit.successor;
      if (hit.userAgent !== null) attributes['user_agent.original'] = hit.userAgent;
      if (faultCode !== undefined) attributes['legacy.fault_code'] = faultCode;
      span.setAttributes(attributes);
      if (hit.outcome === 'fault') span.setStatus({ code: SpanStatusCode.ERROR, message: hit.reason ?? 'fault' });
      span.end();
    },
  };
}

/**
 * The caller's trace, when its request carries one. Both propagators (OTEL_PROPAGATORS) read nothing
 * but `traceparent` (with its `tracestate`) and `baggage`: a request with neither, most of them, has
 * no trace to read, and is not searched for one.
 */
function callerContext(tracing: Tracing, headers: IncomingHttpHeaders): Context {
  if (headers.traceparent === undefined && headers.baggage === undefined) return ROOT_CONTEXT;
  return tracing.propagator.extract(ROOT_CONTEXT, headers, HEADER_GETTER);
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
  const parent = callerContext(tracing, headers);
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

/** A setter for `inject`, made once. */
const HEADER_SETTER = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/**
 * The trace of a fetch under `span` (started under `parent`): its ids, the headers that carry it on,
 * and its events. The context holding the span and the headers are made when first asked for: a page
 * the cache serves needs neither. A class, not an object literal with getters and closures: one is
 * made for every span, and V8 makes a class's instances several times faster.
 */
export class SpanFetchTrace implements FetchTrace {
  readonly traceId: string;
  readonly spanId: string;
  readonly #tracing: Tracing;
  readonly #span: Span;
  readonly #parent: Context;
  #context: Context | undefined;
  #headers: Record<string, string> | undefined;

  constructor(tracing: Tracing, span: Span, parent: Context) {
    this.#tracing = tracing;
    this.#span = span;
    this.#parent = parent;
    const { traceId, spanId } = span.spanContext();
    this.traceId = traceId;
    this.spanId = spanId;
  }

  get context(): Context {
    this.#context ??= trace.setSpan(this.#parent, this.#span);
    return this.#context;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      this.#headers = {};
      this.#tracing.outward.inject(this.context, this.#headers, HEADER_SETTER);
    }
    return this.#headers;
  }

  responded(status: number): void {
    this.#span.setAttribute('http.response.status_code', status);
  }

  event(name: string, attributes: Readonly<Record<string, string | number>>): void {
    this.#span.addEvent(name, attributes);
  }

  background(name: string): BackgroundTrace {
    const started = this.#tracing.tracer.startSpan(name, {
      kind: SpanKind.CLIENT,
      root: true,
      links: [{ context: this.#span.spanContext() }],
    });
    return {
      trace: new SpanFetchTrace(this.#tracing, started, ROOT_CONTEXT),
      end(failure) {
        if (failure !== null) {
          started.setAttribute('error.type', failure);
          started.setStatus({ code: SpanStatusCode.ERROR, message: failure });
        }
        started.end();
      },
    };
  }
}
