import { finished } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config/schema.js';
import { createClientDirectory, type Caller } from '../clients/directory.js';
import { CallRefused, ClientClosedError, LegacyOriginError, UpstreamError, failureReason } from '../errors.js';
import { errorPage, type Answer } from '../inbound/reply.js';
import type { Binding, Read, ServiceRequest } from '../inbound/binding.js';
import { INTERNAL_ERROR, SERVER_TOO_BUSY } from '../messages.js';
import { credentialsOf, type LegacyCall } from '../operations.js';
import { createCallAnswerer } from '../call.js';
import { registerBrownoutGauge } from '../brownouts/gauge.js';
import { scheduleOf } from '../brownouts/schedule.js';
import { createRefuser, refusalAnswer, successorIfTranslated } from '../brownouts/refusal.js';
import type { Fetcher, Upstream } from '../outbound/upstream.js';
import { successorOf, type UpstreamRequest } from '../translate/plan.js';
import { routeName, routeOf } from '../origin/routes.js';
import type { LegacyRoute, RouteName } from '../config/schema.js';
import { redactCallerText } from '../redaction/caller-text.js';
import { send } from './http.js';
import { createLegacyRouting, isLegacyAnswer, type Answered } from '../origin/relay.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Runs one legacy call arriving on `binding` and sends its answer. */
    runCall<W>(binding: Binding<W>, call: ServiceRequest, request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

/** How one call ended: what the binding read (null if reading itself failed), the answer, the error. */
interface Outcome<W> extends Answered {
  readonly read: Read<W> | null;
  /** The path that answered (docs/migration.md §6); absent for a call no route took, which the translation answers. */
  readonly route?: RouteName;
}

export interface CallRunnerOptions {
  readonly config: Config;
  readonly upstream: Upstream;
  /** The time in milliseconds since the epoch, for the brownout schedule. */
  readonly now: () => number;
}

/**
 * The one way a legacy call is run, whatever its binding: shed past `server.maxConcurrentCalls`,
 * read, translate and fetch under a deadline (`upstream.callTimeoutMs`), cancelled when the caller
 * hangs up, write the answer or the error, and record the deprecation hit with the same fields for
 * every binding.
 */
export const callRunnerPlugin = fp<CallRunnerOptions>(
  async (fastify, options) => {
    const { config } = options;
    const { upstream } = options;
    const answerCall = createCallAnswerer(config);
    const identify = createClientDirectory(config.clients, config.deprecation.clientIdKey);
    // Brownouts and sunset (docs/migration.md §5).
    const schedule = scheduleOf(config);
    const refuse = createRefuser(schedule, answerCall.plan, options.now);
    registerBrownoutGauge(fastify.hits.registry, schedule, options.now);
    // Shadow and passthrough (docs/migration.md §6).
    const legacy = createLegacyRouting({ config, upstream, registry: fastify.hits.registry, log: fastify.log });
    fastify.addHook('onClose', async () => legacy.close());
    let callsInFlight = 0;

    const shedAnswer = { ...errorPage(503, SERVER_TOO_BUSY), headers: { 'retry-after': String(config.server.retryAfterSeconds) } };

    /** The deprecation hit of a call, the same fields whatever its binding and outcome. */
    function record(
      request: FastifyRequest,
      outcome: Outcome<unknown>,
      caller: Caller,
      shed: boolean,
      started: number,
      upstreamRequests: number,
      remoteAddress: string | null,
    ): void {
      const { read, answer, failure, successor, route } = outcome;
      const reason = failure === null ? null : failureReason(failure);
      if (reason === 'internal') request.log.error({ err: failure }, 'legacy call failed unexpectedly');
      const operation = read === null ? null : read.ok ? read.call.operation : read.operation;
      const { apiKey, version } = read?.ok ? credentialsOf(read.call) : { apiKey: null, version: null };
      fastify.hits.record({
        requestId: String(request.id),
        operation: operation?.name ?? 'unknown',
        binding: read?.binding ?? 'unknown',
        client: caller.name,
        clientLabel: caller.label,
        clientFingerprint: caller.fingerprint,
        team: caller.team,
        contact: caller.contact,
        legacyVersion: redactCallerText(version, apiKey),
        replacement: operation?.replacement ?? '',
        successor,
        route: route ?? 'translated',
        outcome: shed ? 'shed' : reason === null ? 'ok' : failure instanceof CallRefused ? 'refused' : 'fault',
        reason,
        status: answer.status,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        upstreamRequests,
        remoteAddress: redactCallerText(remoteAddress, apiKey),
        userAgent: redactCallerText(request.headers['user-agent'] ?? null, apiKey),
      });
    }

    /** A binding's read, or null when the binding itself failed (a defect, recorded as such). */
    function readOrNull<W>(binding: Binding<W>, serviceRequest: ServiceRequest): { read: Read<W> | null; failure: unknown } {
      try {
        return { read: binding.read(serviceRequest), failure: null };
      } catch (err) {
        return { read: null, failure: err };
      }
    }

    /** The translated path: plan, fetch, assemble, written by the binding (docs/architecture.md); rejects only on a binding's defect. */
    async function translate<W>(
      binding: Binding<W>,
      call: LegacyCall,
      wire: W,
      fetcher: Fetcher,
      signal: AbortSignal,
    ): Promise<Answered & { readonly answer: Answer }> {
      let successor: string | null = null;
      try {
        const plan = answerCall.plan(call);
        successor = successorOf(plan);
        const page = await answerCall.answerPlan(plan, fetcher, signal);
        return { answer: binding.write(page, call, wire), failure: null, successor };
      } catch (err) {
        return { answer: binding.writeError(err, wire), failure: err, successor };
      }
    }

    /** Sends the answer; one relayed from the legacy origin is awaited to its end, which may still fail it. */
    async function deliver<W>(reply: FastifyReply, outcome: Outcome<W>): Promise<Outcome<W>> {
      const { answer } = outcome;
      if (!isLegacyAnswer(answer)) {
        send(reply, answer);
        return outcome;
      }
      reply.code(answer.status).headers(answer.headers).send(answer.body);
      try {
        await finished(answer.body);
        return outcome;
      } catch (err) {
        // Cut short: by the origin, or by fastify when the caller left.
        return { ...outcome, failure: err instanceof LegacyOriginError ? err : new ClientClosedError() };
      }
    }

    fastify.decorate('runCall', async function runCall<
      W,
    >(binding: Binding<W>, serviceRequest: ServiceRequest, request: FastifyRequest, reply: FastifyReply) {
      const started = performance.now();
      // Read now: once a caller has hung up, its socket no longer knows the address.
      const remoteAddress = request.ip ?? null;
      // Read even a call that is shed (the body is in already, and reading costs no upstream request),
      // so that its hit says who was turned away from what.
      const { read, failure: readFailure } = readOrNull(binding, serviceRequest);
      const caller = identify(read?.ok ? credentialsOf(read.call).apiKey : null, remoteAddress);
      if (callsInFlight >= config.server.maxConcurrentCalls) {
        send(reply, shedAnswer);
        return record(
          request,
          { read, answer: shedAnswer, failure: readFailure, successor: null },
          caller,
          true,
          started,
          0,
          remoteAddress,
        );
      }
      callsInFlight++;
      const cancel = new AbortController();
      const deadline = setTimeout(() => cancel.abort(new UpstreamError({ code: 'timeout' })), config.upstream.callTimeoutMs);
      const onClose = (): void => {
        if (!reply.raw.writableFinished) cancel.abort(new ClientClosedError());
      };
      reply.raw.once('close', onClose);
      let upstreamRequests = 0;
      const counted: Fetcher = {
        fetch: (upstreamRequest: UpstreamRequest, signal?: AbortSignal) => {
          upstreamRequests++;
          return upstream.fetch(upstreamRequest, signal, String(request.id));
        },
      };

      /** Never throws: a binding that fails on its own (a defect) still leaves an answer and a hit. */
      const run = async (): Promise<Outcome<W>> => {
        if (read === null) return { read, answer: errorPage(500, INTERNAL_ERROR), failure: readFailure, successor: null };
        let route: LegacyRoute | null = null;
        try {
          if (!read.ok) return { read, answer: binding.writeError(read.error, read.wire), failure: read.error, successor: null };
          // Brownouts and sunset: refused as the web method's first line would, before translation and upstream requests.
          const refused = refuse(read.call, caller);
          if (refused !== null) {
            return {
              read,
              answer: refusalAnswer(binding.writeError(refused, read.wire), refused),
              failure: refused,
              successor: refused.detail.successor,
            };
          }
          const translatePath = (fetcher: Fetcher, signal: AbortSignal) => translate(binding, read.call, read.wire, fetcher, signal);
          // --- Shadow and passthrough (docs/migration.md §6): a route may hand the call to the legacy origin.
          route = routeOf(config.legacy.routes, read.call.operation.name, caller);
          const answered =
            route === null
              ? await translatePath(counted, cancel.signal)
              : await legacy.answer(route, {
                  call: read.call,
                  binding: read.binding,
                  caller,
                  request: serviceRequest,
                  requestId: String(request.id),
                  userAgent: request.headers['user-agent'],
                  successor: successorIfTranslated(answerCall.plan, read.call),
                  signal: cancel.signal,
                  fetcher: counted,
                  translate: translatePath,
                });
          // ---
          return { read, ...answered, route: routeName(route) };
        } catch (err) {
          return { read, answer: errorPage(500, INTERNAL_ERROR), failure: err, successor: null, route: routeName(route) };
        }
      };
      let outcome: Outcome<W>;
      try {
        outcome = await run();
        // A relayed answer is bounded by legacy.timeoutMs from here, not by the call's deadline.
        clearTimeout(deadline);
        if (outcome.successor !== null) request.successor = outcome.successor;
        outcome = await deliver(reply, outcome);
      } finally {
        clearTimeout(deadline);
        callsInFlight--;
      }
      reply.raw.off('close', onClose);
      record(request, outcome, caller, false, started, upstreamRequests, remoteAddress);
    });
  },
  { name: 'call-runner', dependencies: ['deprecation'], fastify: '5.x' },
);
