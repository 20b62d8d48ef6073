import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { createClientDirectory, type Caller } from '../deprecation/clients.js';
import { CallRefused, ClientClosedError, UpstreamError, failureReason } from '../errors.js';
import { errorPage, type Answer } from '../inbound/answer.js';
import type { Binding, Read, ServiceRequest } from '../inbound/binding.js';
import { INTERNAL_ERROR, SERVER_TOO_BUSY } from '../messages.js';
import { credentialsOf } from '../operations.js';
import { createCallAnswerer } from '../call.js';
import { registerBrownoutGauge } from '../migration/brownout-metrics.js';
import { scheduleOf } from '../migration/brownouts.js';
import { createRefuser, refusalAnswer } from '../migration/refusals.js';
import type { Fetcher, Upstream } from '../outbound/upstream.js';
import { successorOf, type UpstreamRequest } from '../translate/plan.js';
import { send } from './http.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Runs one legacy call arriving on `binding` and sends its answer. */
    runCall<W>(binding: Binding<W>, call: ServiceRequest, request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

/** How one call ended: what the binding read (null if reading itself failed), the answer, the error. */
interface Outcome<W> {
  readonly read: Read<W> | null;
  readonly answer: Answer;
  readonly failure: unknown;
  /** The `.cp` request that replaces the call (`successorOf`); null when it was not translated. */
  readonly successor: string | null;
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
    let callsInFlight = 0;

    const shedAnswer = { ...errorPage(503, SERVER_TOO_BUSY), headers: { 'retry-after': String(config.server.retryAfterSeconds) } };

    /** The deprecation hit of a call, the same fields whatever its binding and outcome. */
    function record(request: FastifyRequest, outcome: Outcome<unknown>, caller: Caller, shed: boolean, started: number, upstreamRequests: number, remoteAddress: string | null): void {
      const { read, answer, failure, successor } = outcome;
      const reason = failure === null ? null : failureReason(failure);
      if (reason === 'internal') request.log.error({ err: failure }, 'legacy call failed unexpectedly');
      const operation = read === null ? null : read.ok ? read.call.operation : read.operation;
      const version = read?.ok ? credentialsOf(read.call).version : null;
      fastify.hits.record({
        requestId: String(request.id),
        operation: operation?.name ?? 'unknown',
        binding: read?.binding ?? 'unknown',
        client: caller.name,
        clientLabel: caller.label,
        clientFingerprint: caller.fingerprint,
        team: caller.team,
        contact: caller.contact,
        legacyVersion: version,
        replacement: operation?.replacement ?? '',
        successor,
        outcome: shed ? 'shed' : reason === null ? 'ok' : failure instanceof CallRefused ? 'refused' : 'fault',
        reason,
        status: answer.status,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        upstreamRequests,
        remoteAddress,
        userAgent: request.headers['user-agent'] ?? null,
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

    fastify.decorate('runCall', async function runCall<W>(binding: Binding<W>, serviceRequest: ServiceRequest, request: FastifyRequest, reply: FastifyReply) {
      const started = performance.now();
      // Read now: once a caller has hung up, its socket no longer knows the address.
      const remoteAddress = request.ip ?? null;
      // Read even a call that is shed (the body is in already, and reading costs no upstream request),
      // so that its hit says who was turned away from what.
      const { read, failure: readFailure } = readOrNull(binding, serviceRequest);
      const caller = identify(read?.ok ? credentialsOf(read.call).apiKey : null, remoteAddress);
      if (callsInFlight >= config.server.maxConcurrentCalls) {
        send(reply, shedAnswer);
        return record(request, { read, answer: shedAnswer, failure: readFailure, successor: null }, caller, true, started, 0, remoteAddress);
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
        let successor: string | null = null;
        try {
          if (!read.ok) return { read, answer: binding.writeError(read.error, read.wire), failure: read.error, successor };
          // Brownouts and sunset: refused as the web method's first line would, before translation and upstream requests.
          const refused = refuse(read.call, caller);
          if (refused !== null) {
            request.successor = refused.detail.successor;
            return { read, answer: refusalAnswer(binding.writeError(refused, read.wire), refused), failure: refused, successor: refused.detail.successor };
          }
          try {
            const plan = answerCall.plan(read.call);
            successor = successorOf(plan);
            if (successor !== null) request.successor = successor;
            const page = await answerCall.answerPlan(plan, counted, cancel.signal);
            return { read, answer: binding.write(page, read.call, read.wire), failure: null, successor };
          } catch (err) {
            return { read, answer: binding.writeError(err, read.wire), failure: err, successor };
          }
        } catch (err) {
          return { read, answer: errorPage(500, INTERNAL_ERROR), failure: err, successor };
        }
      };
      let outcome: Outcome<W>;
      try {
        outcome = await run();
      } finally {
        clearTimeout(deadline);
        callsInFlight--;
      }
      send(reply, outcome.answer);
      reply.raw.off('close', onClose);
      record(request, outcome, caller, false, started, upstreamRequests, remoteAddress);
    });
  },
  { name: 'call-runner', dependencies: ['deprecation'], fastify: '5.x' },
);
