import { finished } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Admission } from '../call/admission.js';
import { startDeadline } from '../call/deadline.js';
import { hitOf } from '../call/hit.js';
import type { PageCache } from '../cache/page-cache.js';
import type { PageSource } from '../cache/page-source.js';
import type { Outcome } from '../call/outcome.js';
import { planCall } from '../call/plan.js';
import { credentialsRead, readCall } from '../call/read.js';
import { translatedOutcome } from '../call/translated.js';
import type { ClientDirectory } from '../clients/directory.js';
import type { Caller } from '../clients/directory.js';
import type { Config, LegacyRoute, RouteName } from '../config/schema.js';
import type { HitRecorder } from '../deprecation/hits.js';
import { ClientClosedError, LegacyOriginError, UpstreamBusy } from '../errors.js';
import type { Binding, Read, ServiceRequest } from '../inbound/binding.js';
import { errorPage, isRelayed } from '../inbound/reply.js';
import { INTERNAL_ERROR } from '../messages.js';
import type { Refuser } from '../brownouts/refusal.js';
import { refusalReply } from '../brownouts/refusal.js';
import type { OriginRouting } from '../origin/relay.js';
import { routeName, routeOf } from '../origin/routes.js';
import type { PlanFetcher } from '../outbound/execute.js';
import type { Fetcher, Upstream } from '../outbound/upstream.js';
import type { TranslateContext } from '../translate/plan.js';
import { send } from './http.js';

/**
 * One legacy call, from the request a binding takes to its hit: the path of every call, whatever its
 * binding, composed here of the steps in src/call and the modules they name:
 *
 *   read → identify → (shed) → plan once → refuse → route → fetch → assemble → write → send → record
 *
 * Shed past `server.maxConcurrentCalls`; the rest under the call's deadline (`upstream.callTimeoutMs`),
 * cancelled when the caller hangs up. Nothing here throws: a binding that fails on its own (a defect)
 * still leaves the internal error page and a hit.
 */
export type CallServer = <W>(
  binding: Binding<W>,
  serviceRequest: ServiceRequest,
  request: FastifyRequest,
  reply: FastifyReply,
) => Promise<void>;

export interface CallPath {
  readonly config: Config;
  readonly upstream: Upstream;
  readonly identify: ClientDirectory;
  readonly admission: Admission;
  readonly context: TranslateContext;
  readonly fetchPlan: PlanFetcher;
  readonly refuse: Refuser;
  readonly origin: OriginRouting;
  readonly hits: HitRecorder;
  /** The page cache between the call and the upstream; null when `cache.enabled` is off. */
  readonly cache: PageCache | null;
  /** The Link header of a reply whose call has a successor request. */
  readonly linkFor: (successor: string) => string;
}

export function createCallServer(path: CallPath): CallServer {
  const { config, upstream, identify, admission, hits } = path;

  return async function serveCall(binding, serviceRequest, request, reply) {
    const started = performance.now();
    const requestId = String(request.id);
    // Read now: once a caller has hung up, its socket no longer knows the address.
    const remoteAddress = request.ip ?? null;
    // Read even a call that is shed (the body is in already, and reading costs no upstream request),
    // so that its hit says who was turned away from what.
    const { read, failure: readFailure } = readCall(binding, serviceRequest);
    const caller = identify(credentialsRead(read).apiKey, remoteAddress);
    const pages: Record<PageSource, number> = { hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0 };
    const record = (outcome: Outcome, { route, shed, upstreamRequests }: HowServed): void => {
      const hit = hitOf({
        requestId,
        read,
        caller,
        outcome,
        route,
        shed,
        durationMs: performance.now() - started,
        upstreamRequests,
        pages,
        remoteAddress,
        userAgent: request.headers['user-agent'] ?? null,
      });
      if (hit.reason === 'internal') request.log.error({ event: 'call_failed', err: outcome.failure }, 'legacy call failed unexpectedly');
      hits.record(hit);
    };

    if (!admission.enter()) {
      send(reply, admission.shedReply);
      return record(
        { reply: admission.shedReply, failure: readFailure, successor: null },
        { route: 'translated', shed: true, upstreamRequests: 0 },
      );
    }
    const deadline = startDeadline(config.upstream.callTimeoutMs);
    const hangUp = (): void => {
      if (!reply.raw.writableFinished) deadline.hungUp();
    };
    reply.raw.once('close', hangUp);
    let upstreamRequests = 0;
    const counted: Fetcher = {
      fetch: async (upstreamRequest, signal, _requestId, exchange) => {
        upstreamRequests++;
        try {
          return await upstream.fetch(upstreamRequest, signal, requestId, exchange);
        } catch (err) {
          // Shed by the budget before it went out: not an upstream request.
          if (err instanceof UpstreamBusy && !err.requested) upstreamRequests--;
          throw err;
        }
      },
    };
    // Without the cache every page is a miss; with it, the cache says how each was served.
    const served = (result: PageSource): void => {
      pages[result]++;
    };
    const fetcher: Fetcher =
      path.cache === null
        ? {
            fetch: async (upstreamRequest, signal) => {
              const page = await counted.fetch(upstreamRequest, signal);
              served('miss');
              return page;
            },
          }
        : path.cache.fetcher(counted, served);
    let routed: Routed;
    try {
      routed = await route(path, binding, read, readFailure, caller, {
        requestId,
        request: serviceRequest,
        userAgent: request.headers['user-agent'],
        fetcher,
        signal: deadline.signal,
      });
      // A relayed reply is bounded by legacy.timeoutMs from here, not by the call's deadline.
      deadline.clear();
      routed = { ...routed, outcome: await deliver(reply, routed.outcome, path.linkFor) };
    } finally {
      deadline.clear();
      admission.leave();
    }
    reply.raw.off('close', hangUp);
    record(routed.outcome, { route: routeName(routed.route), shed: false, upstreamRequests });
  };
}

/** What the hit says of how a call was served, besides its outcome. */
interface HowServed {
  readonly route: RouteName;
  /** Turned away past `server.maxConcurrentCalls`, before anything else. */
  readonly shed: boolean;
  readonly upstreamRequests: number;
}

/** How a call ended, and the route of `legacy.routes` that took it (null: the translated path). */
interface Routed {
  readonly outcome: Outcome;
  readonly route: LegacyRoute | null;
}

interface Exchange {
  readonly requestId: string;
  readonly request: ServiceRequest;
  readonly userAgent: string | undefined;
  /** The upstream through the page cache, each upstream request counted in the call's hit. */
  readonly fetcher: Fetcher;
  readonly signal: AbortSignal;
}

/** Plan once, refuse, route, then the translated path or the legacy origin. Never rejects. */
async function route<W>(
  path: CallPath,
  binding: Binding<W>,
  read: Read<W> | null,
  readFailure: unknown,
  caller: Caller,
  exchange: Exchange,
): Promise<Routed> {
  if (read === null) return { outcome: { reply: errorPage(500, INTERNAL_ERROR), failure: readFailure, successor: null }, route: null };
  let route: LegacyRoute | null = null;
  try {
    if (!read.ok) return { outcome: { reply: binding.writeError(read.error, read.wire), failure: read.error, successor: null }, route };
    const { call, wire } = read;
    const planned = planCall(call, path.context);
    // Brownouts and sunset: refused as the web method's first line would, before any upstream request.
    const refused = path.refuse(call, caller, planned.successor);
    if (refused !== null) {
      const reply = refusalReply(binding.writeError(refused, wire), refused);
      return { outcome: { reply, failure: refused, successor: planned.successor }, route };
    }
    const translated = (fetcher: Fetcher, signal: AbortSignal) =>
      translatedOutcome(binding, call, wire, planned, path.fetchPlan, fetcher, signal);
    // Shadow and passthrough (docs/migration.md §6): a route may hand the call to the legacy origin.
    route = routeOf(path.config.legacy.routes, call.operation.name, caller);
    if (route === null) return { outcome: await translated(exchange.fetcher, exchange.signal), route };
    const outcome = await path.origin.serve(route, {
      call,
      binding: read.binding,
      caller,
      request: exchange.request,
      requestId: exchange.requestId,
      userAgent: exchange.userAgent,
      successor: planned.successor,
      signal: exchange.signal,
      fetcher: exchange.fetcher,
      translate: translated,
    });
    return { outcome, route };
  } catch (err) {
    return { outcome: { reply: errorPage(500, INTERNAL_ERROR), failure: err, successor: null }, route };
  }
}

/** Sends the reply, with the call's own Link; one relayed from the legacy origin is awaited to its end, which may still fail it. */
async function deliver(reply: FastifyReply, outcome: Outcome, linkFor: (successor: string) => string): Promise<Outcome> {
  if (outcome.successor !== null) reply.header('link', linkFor(outcome.successor));
  const sent = outcome.reply;
  if (!isRelayed(sent)) {
    send(reply, sent);
    return outcome;
  }
  reply.code(sent.status).headers(sent.headers).send(sent.body);
  try {
    await finished(sent.body);
    return outcome;
  } catch (err) {
    // Cut short: by the origin, or by fastify when the caller left.
    return { ...outcome, failure: err instanceof LegacyOriginError ? err : new ClientClosedError() };
  }
}
