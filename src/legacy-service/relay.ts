import { finished } from 'node:stream/promises';
import { type Readable, Transform, pipeline } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import type { Caller } from '../clients/directory.js';
import { CallError, ClientClosedError, LegacyOriginError, UpstreamError, failureReason } from '../errors.js';
import { TEXT_CONTENT_TYPE } from '../aspnet/error-page.js';
import type { Ending, WrittenEnding } from '../inbound/ending.js';
import type { SuccessorPaging } from '../translate/plan.js';
import type { BindingName, ServiceRequest } from '../inbound/binding.js';
import { CACHE_ERROR, isRelayed, type RelayedReply, type Reply } from '../inbound/reply.js';
import { legacyOriginFailed } from '../messages.js';
import type { LegacyCall } from '../operations.js';
import { createShadows, type ShadowedCall, type Side } from './shadows.js';
import type { LegacyRoute } from '../config/schema.js';
import { createLegacyOrigin, forwardedRequest, type LegacyOrigin } from './client.js';
import { startClientSpan } from '../tracing/client-span.js';
import type { Tracing } from '../tracing/setup.js';
import { type FetchOptions, fetchOptionsWith } from '../outbound/fetch.js';

/**
 * The call runner's side of passthrough and shadow routes (docs/migration.md §6): a routed call is
 * answered by the legacy origin as it is, or by one path while the other is called in the background
 * and the two replies compared.
 */

/** The translated path of the call, fetching with `options`: its failures are written by the binding; it rejects only on a defect. */
export type TranslatedPath = (options: FetchOptions) => Promise<WrittenEnding>;

/** What the call path knows of a routed call. */
export interface RoutedCall {
  readonly call: LegacyCall;
  readonly binding: BindingName;
  readonly caller: Caller;
  readonly request: ServiceRequest;
  readonly userAgent: string | undefined;
  /** The call's successor, from its plan, and how its pages make the result. */
  readonly successor: string | null;
  readonly successorPaging: SuccessorPaging | null;
  /** The call's fetch options: its requestId, its deadline and signal (the caller hanging up), its hit's tally. */
  readonly options: FetchOptions;
  readonly translate: TranslatedPath;
}

export interface LegacyRouting {
  serve(route: LegacyRoute, routed: RoutedCall): Promise<Ending>;
  close(): Promise<void>;
}

export interface LegacyRoutingOptions {
  readonly config: Pick<Config, 'legacy' | 'upstream'>;
  readonly registry: Registry;
  readonly log: FastifyBaseLogger;
  /** Tracing (src/tracing): each request to the origin a client span, its traceparent sent; null when off. */
  readonly tracing: Tracing | null;
}

export function createLegacyRouting({ config, registry, log, tracing }: LegacyRoutingOptions): LegacyRouting {
  const shadows = createShadows(config.legacy.maxShadowsInFlight, registry, log);
  // The schema lets routes exist only with an origin (src/config/validate.ts).
  const origin: LegacyOrigin | null = config.legacy.origin === null ? null : createLegacyOrigin(config.legacy);
  const originHost = config.legacy.origin === null ? '' : new URL(config.legacy.origin).hostname;

  /** The call sent on to the origin as the caller sent it, under a client span of its own while tracing is on. */
  async function send(routed: RoutedCall, origin: LegacyOrigin, signal?: AbortSignal): Promise<RelayedReply> {
    const { request } = routed;
    const parent = routed.options.trace;
    const client =
      tracing === null || parent === undefined
        ? null
        : startClientSpan(tracing, parent, `${request.method} legacy origin`, {
            'http.request.method': request.method,
            'url.path': request.path,
            'server.address': originHost,
          });
    try {
      const relayed = await origin.send(forwardedRequest(request, routed.userAgent, client?.trace.headers), signal);
      client?.span.setAttribute('http.response.status_code', relayed.status);
      if (relayed.status >= 500) client?.failed(String(relayed.status));
      else client?.end();
      return relayed;
    } catch (err) {
      client?.failed(failureReason(err));
      throw err;
    }
  }

  /** The origin's reply to the call, or the 502 that says it gave none. */
  async function passthrough(routed: RoutedCall, origin: LegacyOrigin): Promise<Ending> {
    try {
      const relayed = await send(routed, origin, routed.options.signal);
      return {
        reply: relayed,
        failure: relayed.status >= 400 ? new LegacyOriginError({ code: 'status', status: relayed.status }) : null,
        successor: routed.successor,
        successorPaging: routed.successorPaging,
      };
    } catch (err) {
      return { reply: originFailedReply(err), failure: err, successor: routed.successor, successorPaging: routed.successorPaging };
    }
  }

  /** The origin's reply read whole, for a comparison; its own deadline, whatever the caller does. */
  async function originSide(routed: RoutedCall, origin: LegacyOrigin): Promise<Side> {
    try {
      const relayed = await send(routed, origin);
      return { status: relayed.status, body: Buffer.concat(await relayed.body.toArray()).toString('utf8') };
    } catch (err) {
      return failedSide(err);
    }
  }

  /**
   * The translated path in the background, under a deadline of its own (`upstream.callTimeoutMs`):
   * its requests are not the call's, so its hit does not count them.
   */
  async function translatedSide(routed: RoutedCall): Promise<Side> {
    const cancel = new AbortController();
    const { callTimeoutMs } = config.upstream;
    const deadline = setTimeout(() => cancel.abort(new UpstreamError({ code: 'timeout' })), callTimeoutMs);
    try {
      return sideOf(
        await routed.translate(
          fetchOptionsWith(routed.options, { deadline: Date.now() + callTimeoutMs, signal: cancel.signal, tally: null }),
        ),
      );
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Answered by the origin as it is; its bytes are compared with the translated path's once all have passed. */
  async function shadowFromLegacy(routed: RoutedCall, origin: LegacyOrigin): Promise<Ending> {
    const compare = shadows.admit(shadowedCall(routed));
    // Started first: the background path must not wait for the origin's reply.
    const translated = compare === null ? null : translatedSide(routed);
    const ending = await passthrough(routed, origin);
    if (compare === null || translated === null) return ending;
    if (!isRelayed(ending.reply)) {
      compare(translated, Promise.resolve(failedSide(ending.failure)));
      return ending;
    }
    const { status } = ending.reply;
    const { body, collected } = tapped(ending.reply.body);
    compare(
      translated,
      collected.then((bytes) => ({ status, body: bytes.toString('utf8') }), failedSide),
    );
    return { ...ending, reply: { ...ending.reply, body } };
  }

  /** Answered by the translated path; the origin is asked in the background. */
  async function shadowFromTranslated(routed: RoutedCall, origin: LegacyOrigin): Promise<Ending> {
    const compare = shadows.admit(shadowedCall(routed));
    const legacy = compare === null ? null : originSide(routed, origin);
    const ending = routed.translate(routed.options);
    if (compare !== null && legacy !== null) compare(ending.then(sideOf), legacy);
    return ending;
  }

  return {
    async serve(route, routed) {
      if (origin === null) throw new Error('a legacy route without legacy.origin');
      if (route.mode === 'passthrough') return passthrough(routed, origin);
      return route.answerFrom === 'legacy' ? shadowFromLegacy(routed, origin) : shadowFromTranslated(routed, origin);
    },
    close: async () => origin?.close(),
  };
}

function shadowedCall({ call, binding, caller, options }: RoutedCall): ShadowedCall {
  const { requestId, trace } = options;
  return {
    operation: call.operation.name,
    binding,
    client: caller.name,
    requestId,
    trace: trace === undefined ? null : { traceId: trace.traceId, spanId: trace.spanId },
    apiKey: call.credentials.apiKey,
  };
}

function sideOf({ reply, failure }: WrittenEnding): Side {
  // A caller that left cancelled the translated path: its reply is not one.
  const body = typeof reply.body === 'string' ? reply.body : reply.body.toString('utf8');
  return failure instanceof ClientClosedError ? failedSide(failure) : { status: reply.status, body };
}

function failedSide(err: unknown): Side {
  if (err instanceof LegacyOriginError) return { failed: `legacy_origin: ${err.failure.code}` };
  return { failed: err instanceof CallError ? failureReason(err) : 'internal' };
}

/** What the caller of a passthrough gets when the origin gives no reply: the proxy speaks as a gateway. */
function originFailedReply(err: unknown): Reply {
  const code = err instanceof LegacyOriginError ? err.failure.code : failureReason(err);
  return { status: 502, contentType: TEXT_CONTENT_TYPE, body: `${legacyOriginFailed(code)}\r\n`, cacheControl: CACHE_ERROR };
}

/** `body` as it is relayed, and its bytes once all have passed (bounded by `legacy.maxResponseBytes`, which the origin client enforces). */
function tapped(body: Readable): { body: Readable; collected: Promise<Buffer> } {
  const chunks: Buffer[] = [];
  const relay = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done(null, chunk);
    },
  });
  // Its failure reaches `relay`, and through it the caller's reply and `collected`.
  pipeline(body, relay, () => {});
  return { body: relay, collected: finished(relay).then(() => Buffer.concat(chunks)) };
}
