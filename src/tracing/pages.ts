import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { failureReason } from '../errors.js';
import type { CallTally, Interceptor } from '../outbound/fetch.js';
import { fetchTrace } from './calls.js';
import type { Tracing } from './setup.js';

/**
 * The fetch pipeline's outermost layer while tracing is on: one client span for each page a call
 * asks for, named for its `.cp` endpoint, saying how the page cache served it (`legacy.page.source`).
 * A page served from the cache is a short span; one fetched carries the span's `traceparent` to the
 * upstream, and its status. A fetch under no span (tracing off) passes as it is.
 */
export function tracePages(tracing: Tracing, upstreamHost: string): Interceptor {
  return (next) => async (request, options) => {
    const parent = options.trace;
    if (parent === undefined) return next(request, options);
    const span = tracing.tracer.startSpan(
      `GET ${request.path}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'http.request.method': 'GET', 'url.path': request.path, 'server.address': upstreamHost },
      },
      parent.context,
    );
    const tally: CallTally = {
      upstreamRequest: () => options.tally?.upstreamRequest(),
      page: (source) => {
        span.setAttribute('legacy.page.source', source);
        options.tally?.page(source);
      },
    };
    try {
      return await next(request, { ...options, tally, trace: fetchTrace(tracing, span, trace.setSpan(parent.context, span)) });
    } catch (err) {
      const reason = failureReason(err);
      span.setAttribute('error.type', reason);
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
      throw err;
    } finally {
      span.end();
    }
  };
}
