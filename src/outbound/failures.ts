import { UpstreamError, UpstreamOverLimit } from '../errors.js';
import type { UpstreamFailure } from '../messages.js';

/**
 * What a failed upstream request was, as .NET would have classed it (its WebExceptionStatus), and
 * Mashery's answer to a key over its limits (docs/upstream.md §7).
 */

export const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
/** A kept-alive socket the server closed just as we reused it: safe to retry an idempotent GET. */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);

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
