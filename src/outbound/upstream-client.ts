import { Agent, interceptors, type Dispatcher } from 'undici';
import type { Config } from '../config/schema.js';
import { CallError, UpstreamError, type FailureReason } from '../errors.js';
import { SECRET_PARAMS, type UpstreamRequest } from '../translate/plan.js';
import type { Page } from '../xml/compact.js';
import { asUpstreamError, errorCode, overLimit, RETRYABLE_CODES } from './failures.js';
import type { FetchOptions, FetchPage, ResponseCaching } from './fetch.js';
import { readResponse } from './response.js';

/**
 * Talks to the `.cp` upstream: an undici Agent (one keep-alive pool per origin), connect/headers/body
 * timeouts, a response size cap, redirects followed as .NET's HttpWebRequest follows them, and a
 * check that the response is well-formed XML with the expected root before anything is embedded in a
 * legacy reply. Failures are UpstreamErrors with a code; the inbound side words them as the .NET
 * WebException the original would have seen (src/messages.ts, docs/upstream.md §7, §11.8).
 */

/** What is seen of one upstream request once it is over: the operators' log line and the upstream metrics. */
export interface UpstreamObservation {
  readonly path: string;
  /** `cancelled`: the call no longer wanted it (its caller left, or a sibling page failed). */
  readonly outcome: 'ok' | 'cancelled' | FailureReason;
  readonly status: number | null;
  readonly durationMs: number;
  /** The system or undici error code behind a failure (`ECONNREFUSED`, …), for the operators' log. */
  readonly code: string | null;
  /** The legacy call it was made for, as its deprecation hit names it. */
  readonly requestId: string;
  /** The trace and span of the page it was made for, while tracing is on. */
  readonly traceId?: string;
  readonly spanId?: string;
}

/** The innermost layer of the fetch pipeline (src/outbound/fetch.ts), and what the health probe asks. */
export interface Upstream {
  readonly fetch: FetchPage;
  /** Whether the upstream answers at all (any HTTP status), within the connect timeout. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

/** HttpWebRequest.MaximumAutomaticRedirections. */
const MAX_REDIRECTS = 50;

export function createUpstream(upstream: Config['upstream'], observe: (seen: UpstreamObservation) => void = () => {}): Upstream {
  if (upstream.baseUrl === null) throw new Error('createUpstream needs upstream.baseUrl');
  const base = new URL(upstream.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  // undici drops the authorization header when a redirect leaves the origin.
  const headers: Record<string, string> = { accept: 'text/xml, application/xml', ...basicCredentials(base) };
  const agent = new Agent({
    connections: upstream.connections,
    connectTimeout: upstream.connectTimeoutMs,
    headersTimeout: upstream.headersTimeoutMs,
    bodyTimeout: upstream.bodyTimeoutMs,
    maxResponseSize: upstream.maxResponseBytes,
    keepAliveTimeout: 30_000,
  });
  const dispatcher: Dispatcher = agent.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS }));

  /** `responded` hears the status as soon as the headers are in, before the body is read or checked. */
  async function attempt(
    request: UpstreamRequest,
    { signal, revalidation, trace }: FetchOptions,
    responded: (status: number) => void,
  ): Promise<Page> {
    const query = new URLSearchParams(request.params as [string, string][]).toString();
    const conditional = revalidation?.conditional;
    const sent =
      conditional === undefined && trace === undefined ? headers : { ...headers, ...trace?.headers, ...conditionalHeaders(conditional) };
    const {
      statusCode,
      headers: responseHeaders,
      body,
    } = await dispatcher.request({
      origin: base.origin,
      method: 'GET',
      path: `${basePath}${request.path}?${query}`,
      headers: sent,
      signal,
      // Past the limit, fail as .NET does rather than hand back the last 3xx as a response.
      throwOnMaxRedirect: true,
    } as Dispatcher.RequestOptions);
    responded(statusCode);
    trace?.responded(statusCode);
    revalidation?.responded?.(cachingOf(statusCode, responseHeaders));
    if (statusCode === 304 && conditional !== undefined) {
      await body.dump();
      return conditional.page;
    }
    // Bytes, in the chunks they came in: a canonical page goes into the reply without ever being
    // decoded, and is joined only where it is checked (src/xml/compact.ts).
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    try {
      return readResponse(statusCode, chunks, upstream.answers[request.path].root, secretsOf(request));
    } catch (err) {
      throw statusCode === 403 && err instanceof UpstreamError ? overLimit(err, responseHeaders, chunks) : err;
    }
  }

  return {
    async fetch(request, options) {
      const { requestId, signal, trace } = options;
      const started = performance.now();
      const done = (outcome: UpstreamObservation['outcome'], status: number | null, code: string | null): void =>
        observe({
          path: request.path,
          outcome,
          status,
          durationMs: Math.round((performance.now() - started) * 1000) / 1000,
          code,
          requestId,
          ...(trace === undefined ? {} : { traceId: trace.traceId, spanId: trace.spanId }),
        });
      for (let tries = 0; ; tries++) {
        /** The HTTP status of this attempt's response; null while none has come. */
        let status: number | null = null;
        try {
          const result = await attempt(request, options, (code) => {
            status = code;
          });
          done('ok', status, null);
          return result;
        } catch (err) {
          const code = errorCode(err);
          if (tries < upstream.retries && !signal.aborted && RETRYABLE_CODES.has(code)) continue;
          const failure = signal.aborted && signal.reason instanceof CallError ? signal.reason : asUpstreamError(err, base.hostname);
          const cancelled = signal.aborted && failure.reason !== 'upstream_timeout';
          done(cancelled ? 'cancelled' : failure.reason, status, code === '' ? null : code);
          throw failure;
        }
      }
    },
    async reachable() {
      try {
        const { body } = await agent.request({
          origin: base.origin,
          method: 'HEAD',
          path: basePath === '' ? '/' : basePath,
          headers,
          signal: AbortSignal.timeout(upstream.connectTimeoutMs),
        });
        await body.dump();
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await agent.close();
    },
  };
}

/** Credentials in a configured URL (`https://user:secret@host`) go as HTTP Basic, as .NET sent them. */
export function basicCredentials(url: URL): { authorization?: string } {
  if (url.username === '' && url.password === '') return {};
  return {
    authorization: `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`,
  };
}

function conditionalHeaders(conditional: NonNullable<FetchOptions['revalidation']>['conditional']): Record<string, string> {
  const sent: Record<string, string> = {};
  if (conditional === undefined) return sent;
  const { etag, lastModified } = conditional;
  if (etag !== null) sent['if-none-match'] = etag;
  if (lastModified !== null) sent['if-modified-since'] = lastModified;
  return sent;
}

function cachingOf(status: number, headers: Record<string, string | string[] | undefined>): ResponseCaching {
  const one = (name: string): string | null => {
    const value = headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  };
  const age = Number(one('age') ?? '0');
  return {
    status,
    cacheControl: one('cache-control'),
    etag: one('etag'),
    lastModified: one('last-modified'),
    ageSeconds: Number.isFinite(age) && age > 0 ? Math.floor(age) : 0,
  };
}

function secretsOf(request: UpstreamRequest): string[] {
  return request.params.filter(([name, value]) => SECRET_PARAMS.has(name) && value !== '').map(([, value]) => value);
}
