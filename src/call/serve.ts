import { finished } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Admission } from './admission.js';
import { startDeadline, type Deadline } from './deadline.js';
import { hitOf, traceIds } from './hit.js';
import { type CallTally, type FetchOptions, type FetchPage, type FetchTrace, fetchOptionsOf, type PageSource } from '../outbound/fetch.js';
import { startCallTrace } from '../tracing/calls.js';
import type { Tracing } from '../tracing/setup.js';
import type { Ending } from '../inbound/ending.js';
import { callPlanner, type Planned } from './plan.js';
import { credentialsRead, readCall } from './read.js';
import { translatedEnding } from './translated.js';
import type { ClientDirectory } from '../clients/directory.js';
import type { Caller } from '../clients/directory.js';
import { recognizeStack } from '../clients/stack.js';
import type { Config, LegacyRoute, RouteName } from '../config/schema.js';
import type { HitRecorder } from '../deprecation/hits.js';
import { ClientClosedError, LegacyOriginError } from '../errors.js';
import type { Binding, Read, ServiceRequest } from '../inbound/binding.js';
import { errorPage, isRelayed, type RelayedReply } from '../inbound/reply.js';
import { INTERNAL_ERROR } from '../messages.js';
import type { Refuser } from '../brownouts/refusal.js';
import { refusalReply } from '../brownouts/refusal.js';
import type { LegacyRouting } from '../legacy-service/relay.js';
import type { LegacyCall } from '../operations.js';
import { routeName, routeOf } from '../legacy-service/routes.js';
import type { PlanFetcher } from '../outbound/execute.js';
import type { TranslateContext } from '../translate/plan.js';
import { send } from '../inbound/send.js';

/**
 * One legacy call, from the request a binding takes to its hit: the path of every call, whatever its
 * binding, composed here of the steps in src/call and the modules they name:
 *
 *   read → identify → (shed) → plan once → refuse → route → fetch → assemble → write → send → record
 *
 * Shed past `server.maxConcurrentCalls`; the rest under the call's deadline (`upstream.callTimeoutMs`),
 * cancelled when the caller hangs up. Nothing here throws: a binding that fails on its own (a defect)
 * still leaves the internal error page and a hit. It resolves once the reply is decided and the hit
 * recorded; the reply goes out at the end of the turn (src/inbound/send.ts), so a fastify handler that
 * calls it returns nothing, or the reply, for fastify to wait for.
 */
export type CallServer = <W>(
  binding: Binding<W>,
  serviceRequest: ServiceRequest,
  request: FastifyRequest,
  reply: FastifyReply,
) => Promise<void>;

export interface CallSteps {
  readonly config: Config;
  readonly identify: ClientDirectory;
  readonly admission: Admission;
  readonly context: TranslateContext;
  readonly fetchPlan: PlanFetcher;
  /** The fetch pipeline (src/outbound/fetch.ts), composed once by the app: the page cache, the budget, the upstream. */
  readonly fetchPage: FetchPage;
  readonly refuse: Refuser;
  readonly legacy: LegacyRouting;
  readonly hits: HitRecorder;
  /** Tracing (src/tracing); null when it is off. */
  readonly tracing: Tracing | null;
  /** The Link header of a reply whose call has a successor request. */
  readonly linkFor: (successor: string) => string;
}

export function createCallServer(steps: CallSteps): CallServer {
  const { config, identify, admission, hits } = steps;
  const plan = callPlanner(steps.context);

  return async function serveCall(binding, serviceRequest, request, reply) {
    const started = performance.now();
    const requestId = String(request.id);
    // Read now: once a caller has hung up, its socket no longer knows the address.
    const remoteAddress = request.ip ?? null;
    // Read even a call that is shed (the body is in already, and reading costs no upstream request),
    // so that its hit says who was turned away from what.
    const { read, failure: readFailure } = readCall(binding, serviceRequest);
    const traced = steps.tracing === null ? null : startCallTrace(steps.tracing, request.method, serviceRequest.path, request.headers);
    const caller = identify(credentialsRead(read).apiKey, remoteAddress);
    let upstreamRequests = 0;
    const pages: Record<PageSource, number> = { hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0 };
    const tally: CallTally = {
      upstreamRequest: () => {
        upstreamRequests++;
      },
      page: (source) => {
        pages[source]++;
      },
    };
    const record = (ending: Ending, route: RouteName, shed: boolean): void => {
      const hit = hitOf({
        requestId,
        read,
        caller,
        ending,
        route,
        shed,
        durationMs: performance.now() - started,
        upstreamRequests,
        pages,
        remoteAddress,
        userAgent: request.headers['user-agent'] ?? null,
        stack: recognizeStack({ headers: request.headers, soap: read?.binding === 'soap11' || read?.binding === 'soap12' }),
        trace: traced?.fetch ?? null,
      });
      if (hit.reason === 'internal') {
        request.log.error({ event: 'call_failed', err: ending.failure, requestId, ...traceIds(hit) }, 'legacy call failed unexpectedly');
      }
      hits.record(hit);
      traced?.end(hit, 'faultCode' in ending.reply ? ending.reply.faultCode : undefined);
    };

    if (!admission.enter()) {
      send(reply, admission.shedReply);
      return record({ reply: admission.shedReply, failure: readFailure, successor: null }, 'translated', true);
    }
    const deadline = startDeadline(config.upstream.callTimeoutMs);
    const hangUp = (): void => {
      if (!reply.raw.writableFinished) deadline.hungUp();
    };
    reply.raw.once('close', hangUp);
    let routed: Routed;
    try {
      routed = await route(steps, plan, binding, read, readFailure, caller, {
        requestId,
        request: serviceRequest,
        userAgent: request.headers['user-agent'],
        deadline,
        tally,
        trace: traced?.fetch,
      });
      // A relayed reply is bounded by legacy.timeoutMs from here, not by the call's deadline.
      deadline.clear();
      const { ending } = routed;
      if (ending.successor !== null) reply.header('link', steps.linkFor(ending.successor));
      // Not awaited when decided whole: a cache hit's call is then one turn of the microtask queue shorter.
      if (isRelayed(ending.reply)) routed = { ...routed, ending: await relay(reply, ending, ending.reply) };
      else send(reply, ending.reply);
    } finally {
      deadline.clear();
      admission.leave();
    }
    reply.raw.off('close', hangUp);
    record(routed.ending, routeName(routed.route), false);
  };
}

/** How a call ended, and the route of `legacy.routes` that took it (null: the translated path). */
interface Routed {
  readonly ending: Ending;
  readonly route: LegacyRoute | null;
}

/** What the call path knows of a call before it is planned: what its fetches are made with, once it is. */
interface CallContext {
  readonly requestId: string;
  readonly request: ServiceRequest;
  readonly userAgent: string | undefined;
  readonly deadline: Deadline;
  readonly tally: CallTally;
  readonly trace: FetchTrace | undefined;
}

/** Plan once, refuse, route, then the translated path or the legacy origin. Never rejects. */
async function route<W>(
  steps: CallSteps,
  plan: (call: LegacyCall) => Planned,
  binding: Binding<W>,
  read: Read<W> | null,
  readFailure: unknown,
  caller: Caller,
  context: CallContext,
): Promise<Routed> {
  if (read === null) return { ending: { reply: errorPage(500, INTERNAL_ERROR), failure: readFailure, successor: null }, route: null };
  let route: LegacyRoute | null = null;
  try {
    if (!read.ok) return { ending: { reply: binding.writeError(read.error, read.wire), failure: read.error, successor: null }, route };
    const { call, wire } = read;
    const planned = plan(call);
    // Brownouts and sunset: refused as the web method's first line would, before any upstream request.
    const refused = steps.refuse(call, caller, planned.successor);
    if (refused !== null) {
      const reply = refusalReply(binding.writeError(refused, wire), refused);
      return {
        ending: { reply, failure: refused, successor: planned.successor, successorPaging: planned.paging },
        route,
      };
    }
    // The one options object of every fetch of the call, whichever path makes it.
    const options = fetchOptionsOf(
      {
        requestId: context.requestId,
        appKey: 'plan' in planned ? planned.plan.appKey : null,
        deadline: context.deadline.at,
        tally: context.tally,
        trace: context.trace,
      },
      context.deadline,
    );
    const translated = (fetchOptions: FetchOptions) =>
      translatedEnding(binding, call, wire, planned, steps.fetchPlan, steps.fetchPage, fetchOptions);
    // Shadow and passthrough (docs/migration.md §6): a route may hand the call to the legacy origin.
    route = routeOf(steps.config.legacy.routes, call.operation.name, caller);
    if (route === null) return { ending: await translated(options), route };
    const ending = await steps.legacy.serve(route, {
      call,
      binding: read.binding,
      caller,
      request: context.request,
      userAgent: context.userAgent,
      successor: planned.successor,
      successorPaging: planned.paging,
      options,
      translate: translated,
    });
    return { ending, route };
  } catch (err) {
    return { ending: { reply: errorPage(500, INTERNAL_ERROR), failure: err, successor: null }, route };
  }
}

/** Relays the legacy origin's reply, awaited to its end, which may still fail it. */
async function relay(reply: FastifyReply, ending: Ending, sent: RelayedReply): Promise<Ending> {
  reply.code(sent.status).headers(sent.headers).send(sent.body);
  try {
    await finished(sent.body);
    return ending;
  } catch (err) {
    // Cut short: by the origin, or by fastify when the caller left.
    return { ...ending, failure: err instanceof LegacyOriginError ? err : new ClientClosedError() };
  }
}
