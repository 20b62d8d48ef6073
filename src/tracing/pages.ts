import { failureReason } from '../errors.js';
import { fetchOptionsWith, type CallTally, type Interceptor } from '../outbound/fetch.js';
import { startClientSpan } from './client-span.js';
import type { Tracing } from './setup.js';

/**
 * The fetch pipeline's outermost layer while tracing is on: one client span for each page a call
 * asks for, named for its `.cp` endpoint, saying how the page cache served it (`legacy.page.source`).
 * A page served from the cache is a short span; one fetched carries the span's `traceparent` to the
 * upstream, and its status. A fetch under no span (tracing off) passes as it is.
 */
export function tracePages(tracing: Tracing, upstreamHost: string): Interceptor {
  return (next) => async (request, options) => {
    if (options.trace === undefined) return next(request, options);
    const client = startClientSpan(tracing, options.trace, `GET ${request.path}`, {
      'http.request.method': 'GET',
      'url.path': request.path,
      'server.address': upstreamHost,
    });
    const tally: CallTally = {
      upstreamRequest: () => options.tally?.upstreamRequest(),
      page: (source) => {
        client.span.setAttribute('legacy.page.source', source);
        options.tally?.page(source);
      },
    };
    try {
      const page = await next(request, fetchOptionsWith(options, { tally, trace: client.trace }));
      client.end();
      return page;
    } catch (err) {
      client.failed(failureReason(err));
      throw err;
    }
  };
}
