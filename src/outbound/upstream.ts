import { Agent, interceptors, type Dispatcher } from 'undici';
import type { Config } from '../config/schema.js';
import { CallError, UpstreamError, UpstreamOverLimit, type FailureReason } from '../errors.js';
import type { UpstreamFailure } from '../messages.js';
import { redact } from '../redaction/redact.js';
import { SECRET_PARAMS, type UpstreamRequest } from '../translate/plan.js';
import { compactDocument, decodeBody, type Page } from '../xml/compact.js';
import { parseXml, XmlSyntaxError } from '../xml/parse.js';
import { childElements, innerText, type XmlElement } from '../xml/tree.js';

/**
 * Talks to the `.cp` upstream: an undici Agent (one keep-alive pool per origin), connect/headers/body
 * timeouts, a response size cap, redirects followed as .NET's HttpWebRequest follows them, and a
 * check that the response is well-formed XML with the expected root before anything is embedded in a
 * legacy reply. Failures are UpstreamErrors with a code; the inbound side words them as the .NET
 * WebException the original would have seen (src/messages.ts, docs/upstream.md §7, §11.8).
 */

export interface UpstreamOutcome {
  readonly path: string;
  /** `cancelled`: the call no longer wanted it (its caller left, or a sibling page failed). */
  readonly outcome: 'ok' | 'cancelled' | FailureReason;
  readonly status: number | null;
  readonly durationMs: number;
  /** The system or undici error code behind a failure (`ECONNREFUSED`, …), for the operators' log. */
  readonly code: string | null;
  /** The legacy call it was made for, as its deprecation hit names it. */
  readonly requestId: string | null;
}

/**
 * What a page cache (src/cache) asks of one fetch beyond the page, and hears of its response. A
 * wrapper of `fetch` passes it on as it is; one that drops it costs the cache its validators and the
 * upstream's Cache-Control, never a wrong page (the request then goes unconditional).
 */
export interface Exchange {
  /**
   * The page the cache holds and its validators: sent as If-None-Match and If-Modified-Since, and a
   * 304 Not Modified is answered with `page` as it is.
   */
  readonly conditional?: { readonly etag: string | null; readonly lastModified: string | null; readonly page: Page };
  /** Hears the caching headers of the response the page came from (the 304's, when it was one). */
  readonly responded?: (caching: ResponseCaching) => void;
}

/** The headers of a response that say how long its page may be kept and how to revalidate it. */
export interface ResponseCaching {
  readonly status: number;
  readonly cacheControl: string | null;
  readonly etag: string | null;
  readonly lastModified: string | null;
  /** Seconds the response already spent in caches on the way (`Age`). */
  readonly ageSeconds: number;
}

export interface Upstream {
  /**
   * `signal` aborts the request; a reason that is a CallError is what the fetch then throws.
   * `requestId` names the legacy call in what is reported of the request; `exchange` is the page
   * cache's.
   */
  fetch(request: UpstreamRequest, signal?: AbortSignal, requestId?: string, exchange?: Exchange): Promise<Page>;
  /** Whether the upstream answers at all (any HTTP status), within the connect timeout. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

/** What carrying out a plan needs of the upstream. */
export type Fetcher = Pick<Upstream, 'fetch'>;

const ERROR_ROOT = 'help';
/** HttpWebRequest.MaximumAutomaticRedirections. */
const MAX_REDIRECTS = 50;

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
/** A kept-alive socket the server closed just as we reused it: safe to retry an idempotent GET. */
const RETRYABLE_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);

export function createUpstream(upstream: Config['upstream'], observe: (outcome: UpstreamOutcome) => void = () => {}): Upstream {
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
    signal: AbortSignal | undefined,
    responded: (status: number) => void,
    exchange: Exchange | undefined,
  ): Promise<Page> {
    const query = new URLSearchParams(request.params as [string, string][]).toString();
    const conditional = exchange?.conditional;
    const {
      statusCode,
      headers: responseHeaders,
      body,
    } = await dispatcher.request({
      origin: base.origin,
      method: 'GET',
      path: `${basePath}${request.path}?${query}`,
      headers: conditional === undefined ? headers : { ...headers, ...conditionalHeaders(conditional) },
      signal,
      // Past the limit, fail as .NET does rather than hand back the last 3xx as a response.
      throwOnMaxRedirect: true,
    } as Dispatcher.RequestOptions);
    responded(statusCode);
    exchange?.responded?.(cachingOf(statusCode, responseHeaders));
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
    async fetch(request, signal, requestId, exchange) {
      const started = performance.now();
      const done = (outcome: UpstreamOutcome['outcome'], status: number | null, code: string | null): void =>
        observe({
          path: request.path,
          outcome,
          status,
          durationMs: Math.round((performance.now() - started) * 1000) / 1000,
          code,
          requestId: requestId ?? null,
        });
      for (let tries = 0; ; tries++) {
        /** The HTTP status of this attempt's response; null while none has come. */
        let status: number | null = null;
        try {
          const result = await attempt(
            request,
            signal,
            (code) => {
              status = code;
            },
            exchange,
          );
          done('ok', status, null);
          return result;
        } catch (err) {
          const code = errorCode(err);
          if (tries < upstream.retries && !signal?.aborted && RETRYABLE_CODES.has(code)) continue;
          const failure = signal?.aborted && signal.reason instanceof CallError ? signal.reason : asUpstreamError(err, base.hostname);
          const cancelled = signal?.aborted === true && failure.reason !== 'upstream_timeout';
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

function conditionalHeaders({ etag, lastModified }: NonNullable<Exchange['conditional']>): Record<string, string> {
  const sent: Record<string, string> = {};
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

/**
 * Status and body in, page or a named failure out. A 2xx page in the canonical subset passes through
 * as bytes (src/xml/compact.ts); anything else is decoded, parsed and checked whole. An upstream error
 * message that echoes one of `secrets` (the appKey sent), in any spelling, or quotes a key parameter
 * or element has it redacted: it goes to legacy clients as a fault. Only a whole token is a secret
 * there, so that a short key does not mangle the words around it.
 */
export function readResponse(
  statusCode: number,
  body: Uint8Array | readonly Uint8Array[],
  expectedRoot: string,
  secrets: readonly string[] = [],
): Page {
  if (statusCode >= 200 && statusCode <= 299) {
    const compact = compactDocument(body, expectedRoot);
    if (compact !== null) return compact;
  }
  let root: XmlElement | undefined;
  try {
    // Positions only serve error texts the client never sees for an upstream response.
    root = parseXml(decodeBody(body), { positions: false });
  } catch (err) {
    if (!(err instanceof XmlSyntaxError)) throw err;
  }
  const echoed = root?.local === ERROR_ROOT ? helpMessage(root) : undefined;
  const message = echoed === undefined ? undefined : redact(echoed, secrets, { wholeTokens: true });
  if (message !== undefined) throw new UpstreamError({ code: 'error_document', status: statusCode, message });
  if (statusCode < 200 || statusCode > 299) throw new UpstreamError({ code: 'status', status: statusCode });
  if (root === undefined) throw new UpstreamError({ code: 'not_xml' });
  if (root.local !== expectedRoot) throw new UpstreamError({ code: 'wrong_root', root: root.name, expected: expectedRoot });
  return root;
}

/** Mashery's error codes for a key over its limits (docs/upstream.md §7.2). */
const MASHERY_LIMITS: Readonly<Record<string, UpstreamOverLimit['limit']>> = {
  ERR_403_DEVELOPER_OVER_QPS: 'qps',
  ERR_403_DEVELOPER_OVER_RATE: 'rate',
};
/**
 * The same, as Mashery's small body says it: the body is exactly one of the gateway's own documents
 * (docs/upstream.md §7.2), but for whitespace around it. Never a substring: the upstream's pages and
 * error documents may echo a caller's text, which could then pause a key for the whole fleet.
 */
const MASHERY_LIMIT_DOCUMENTS: ReadonlyMap<string, UpstreamOverLimit['limit']> = new Map([
  ['<h1>Developer Over Qps</h1>', 'qps'],
  ['<h1>Developer Over Rate</h1>', 'rate'],
]);
/** Longer than any of those documents with room for whitespace: not read. */
const MASHERY_BODY_MAX_BYTES = 4096;

/**
 * Without a `Retry-After`: a QPS limit counts requests per second, so the next second has room (1 s);
 * a rate limit is the plan's quota per day (or hour), spent: ask again once a minute, a request a
 * minute for the fleet, so that a reset is noticed soon without pounding the gateway.
 */
export const DEFAULT_PAUSE_SECONDS: Readonly<Record<UpstreamOverLimit['limit'], number>> = { qps: 1, rate: 60 };
/** A `Retry-After` longer than this is taken as this: the pause is tried again at least once an hour. */
export const MAX_PAUSE_SECONDS = 3600;

/**
 * A 403 that Mashery's own signals say is the appKey over its QPS or rate (its `X-Mashery-Error-Code`,
 * else a body that is exactly its document): the same failure as an UpstreamOverLimit, with the pause
 * it asks for. Any other 403 is returned as it is.
 */
export function overLimit(
  err: UpstreamError,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: readonly Uint8Array[],
): UpstreamError {
  const code = String(headers['x-mashery-error-code'] ?? '')
    .trim()
    .toUpperCase();
  const length = body.reduce((total, chunk) => total + chunk.length, 0);
  const document = code === '' && length <= MASHERY_BODY_MAX_BYTES ? Buffer.concat(body).toString('latin1').trim() : '';
  const limit = MASHERY_LIMITS[code] ?? MASHERY_LIMIT_DOCUMENTS.get(document);
  if (limit === undefined) return err;
  return new UpstreamOverLimit(err.failure, limit, retryAfterSeconds(headers['retry-after']) ?? DEFAULT_PAUSE_SECONDS[limit]);
}

/** `Retry-After` as seconds (a number or an HTTP date), at most MAX_PAUSE_SECONDS; undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return undefined;
  const seconds = /^\d+$/.test(value) ? Number(value) : (Date.parse(value) - now) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(MAX_PAUSE_SECONDS, Math.max(0, seconds));
}

function helpMessage(help: XmlElement): string | undefined {
  const message = childElements(help).find((child) => child.local === 'exception-message');
  const text = message === undefined ? '' : innerText(message).trim();
  return text === '' ? undefined : text;
}

export function errorCode(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCode((err as { cause?: unknown }).cause);
}

/** Certificates the client would not trust, by Node's codes (.NET's TrustFailure). */
const UNTRUSTED_CERTIFICATE =
  /^(?:CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_(?:VERIFY|GET_ISSUER)|ERR_TLS_CERT_ALTNAME_INVALID$)/;

/** The transport failure behind `err`, as .NET's WebExceptionStatus would have classed it. */
export function asUpstreamError(err: unknown, host: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = errorCode(err);
  const name = err instanceof Error ? err.name : '';
  const message = err instanceof Error ? err.message : '';
  const failure = (): UpstreamFailure => {
    if (message === 'max redirects' || message.startsWith('Redirect loop detected')) return { code: 'too_many_redirects' };
    if (TIMEOUT_CODES.has(code)) return { code: 'timeout' };
    if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return { code: 'too_large' };
    // undici's parser names what it could not read only in its message.
    if (name === 'HTTPParserError') {
      return {
        code: 'protocol_violation',
        section: /chunk/i.test(message) ? 'ResponseBody' : /status|Expected HTTP/i.test(message) ? 'ResponseStatusLine' : 'ResponseHeader',
      };
    }
    if (RETRYABLE_CODES.has(code)) return { code: 'connection_closed' };
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { code: 'name_not_resolved', host };
    if (UNTRUSTED_CERTIFICATE.test(code)) return { code: 'tls_untrusted' };
    if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return { code: 'tls_failed' };
    return { code: 'unreachable' };
  };
  return new UpstreamError(failure(), { cause: err });
}
