import { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import type { Config } from '../config/schema.js';
import { ClientClosedError, LegacyOriginError } from '../errors.js';
import type { ServiceRequest } from '../inbound/binding.js';
import type { RelayedReply } from '../inbound/reply.js';
import { asUpstreamError } from '../outbound/failures.js';
import { basicCredentials } from '../outbound/upstream-client.js';

/**
 * The old ASMX service itself (`legacy.origin`), for passthrough and shadow routes (docs/migration.md
 * §6): a call goes to it as it came, and its reply comes back as it is. An Agent of its own, so that
 * the old service's connections and limits stay apart from the upstream's.
 */

/** A call as it goes to the origin. */
export interface LegacyRequest {
  readonly method: string;
  /** Path and query below the origin (`/index.asmx/Search?query=dog`). */
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  /** null for a GET, which has none. */
  readonly body: Buffer | null;
}

export interface LegacyOrigin {
  /**
   * Sends `request`; `signal` (the caller hanging up, the call's deadline) cancels it. Rejects with a
   * LegacyOriginError, or with the ClientClosedError the signal carries. `legacy.timeoutMs` bounds the
   * whole exchange.
   */
  send(request: LegacyRequest, signal?: AbortSignal): Promise<RelayedReply>;
  close(): Promise<void>;
}

/**
 * What a reply brings back besides its status and body: how to read the body and whether to cache
 * it. Content-Length is not: the body is relayed as it arrives.
 */
const RELAYED_HEADERS = ['content-type', 'cache-control'] as const;

/**
 * The call as ASMX reads it: method, path, query, body, and the headers it looks at (Content-Type,
 * SOAPAction) with the User-Agent the old service's logs know the caller by. No other header: not Host
 * (the origin's own), not hop-by-hop ones, not the caller's cookies or credentials.
 */
export function forwardedRequest(
  request: ServiceRequest,
  userAgent: string | undefined,
  traceHeaders: Readonly<Record<string, string>> = {},
): LegacyRequest {
  const named: [string, string | undefined][] = [
    ['content-type', request.contentType],
    ['soapaction', request.soapAction],
    ['user-agent', userAgent],
    ...Object.entries(traceHeaders),
  ];
  return {
    method: request.method,
    // The path the dispatcher matched, `.` and `..` resolved: a caller reaches nothing at the origin outside the service.
    target: request.query === '' ? request.path : `${request.path}?${request.query}`,
    headers: Object.fromEntries(named.filter((header): header is [string, string] => header[1] !== undefined)),
    body: request.method === 'GET' ? null : request.body,
  };
}

export function createLegacyOrigin(legacy: Config['legacy']): LegacyOrigin {
  if (legacy.origin === null) throw new Error('createLegacyOrigin needs legacy.origin');
  const base = new URL(legacy.origin);
  const basePath = base.pathname.replace(/\/+$/, '');
  const credentials = basicCredentials(base);
  const agent = new Agent({
    connections: legacy.connections,
    connectTimeout: legacy.timeoutMs,
    headersTimeout: legacy.timeoutMs,
    bodyTimeout: legacy.timeoutMs,
    maxResponseSize: legacy.maxResponseBytes,
    keepAliveTimeout: 30_000,
  });

  return {
    async send(request, signal) {
      const deadline = AbortSignal.timeout(legacy.timeoutMs);
      const failed = (err: unknown): Error => {
        // Besides the caller hanging up, what aborts `signal` is the call's own deadline.
        if (signal?.aborted)
          return signal.reason instanceof ClientClosedError ? signal.reason : new LegacyOriginError({ code: 'timeout' }, { cause: err });
        if (err instanceof LegacyOriginError) return err;
        if (deadline.aborted) return new LegacyOriginError({ code: 'timeout' }, { cause: err });
        return new LegacyOriginError(asUpstreamError(err, base.hostname).failure, { cause: err });
      };
      try {
        const response = await agent.request({
          origin: base.origin,
          method: request.method as Dispatcher.HttpMethod,
          path: `${basePath}${request.target}`,
          headers: { ...request.headers, ...credentials },
          body: request.body,
          signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
        });
        // undici counts the bytes as they come; a declared length over the limit fails before any is relayed.
        if (Number(response.headers['content-length']) > legacy.maxResponseBytes) {
          response.body.destroy();
          throw new LegacyOriginError({ code: 'too_large' });
        }
        return {
          status: response.statusCode,
          headers: relayedHeaders(response.headers),
          body: await withFirstBytes(response.body, failed),
        };
      } catch (err) {
        throw failed(err);
      }
    },
    close: () => agent.close(),
  };
}

function relayedHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const relayed: Record<string, string> = {};
  for (const name of RELAYED_HEADERS) {
    const value = headers[name];
    if (value !== undefined) relayed[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return relayed;
}

/**
 * `body` once its first chunk (or its end) is in: until then a failure is still a clean error answer;
 * after it, the status is on its way and a failure can only cut the reply short.
 */
async function withFirstBytes(body: Readable, failed: (err: unknown) => Error): Promise<Readable> {
  const chunks: AsyncIterator<Buffer> = body[Symbol.asyncIterator]();
  const first = await chunks.next();
  async function* all(): AsyncGenerator<Buffer> {
    try {
      if (first.done) return;
      yield first.value;
      // Returning early (the caller left) returns `chunks` too, which destroys the origin's body.
      yield* { [Symbol.asyncIterator]: () => chunks };
    } catch (err) {
      throw failed(err);
    }
  }
  return Readable.from(all(), { objectMode: false });
}
