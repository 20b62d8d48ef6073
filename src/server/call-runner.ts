import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { clientFingerprint } from '../deprecation/hits.js';
import { ClientClosedError, UpstreamError, failureReason } from '../errors.js';
import { errorPage, type Answer } from '../inbound/answer.js';
import type { Binding, ServiceRequest } from '../inbound/binding.js';
import { SERVER_TOO_BUSY } from '../messages.js';
import { callerOf } from '../operations.js';
import { createCallAnswerer } from '../call.js';
import { createUpstream, type Fetcher, type Upstream } from '../outbound/upstream.js';
import type { UpstreamRequest } from '../translate/plan.js';
import { send } from './http.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Runs one legacy call arriving on `binding` and sends its answer. */
    runCall<W>(binding: Binding<W>, call: ServiceRequest, request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

export interface CallRunnerOptions {
  readonly config: Config;
  /** Defaults to an undici pool for `config.upstream`, closed with the app. */
  readonly upstream?: Upstream;
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
    const upstream = options.upstream ?? createUpstream(config.upstream, fastify.hits.observeUpstream);
    if (!options.upstream) fastify.addHook('onClose', async () => upstream.close());
    const answerCall = createCallAnswerer(config);
    let callsInFlight = 0;

    fastify.decorate('runCall', async function runCall<W>(binding: Binding<W>, serviceRequest: ServiceRequest, request: FastifyRequest, reply: FastifyReply) {
      if (callsInFlight >= config.server.maxConcurrentCalls) {
        fastify.hits.shed();
        return send(reply, errorPage(503, SERVER_TOO_BUSY));
      }
      callsInFlight++;
      const started = performance.now();
      // Read now: once a caller has hung up, its socket no longer knows the address.
      const remoteAddress = request.ip ?? null;
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
          return upstream.fetch(upstreamRequest, signal);
        },
      };

      const read = binding.read(serviceRequest);
      let answer: Answer;
      let failure: unknown = null;
      try {
        if (!read.ok) throw read.error;
        answer = binding.write(await answerCall(read.call, counted, cancel.signal), read.call, read.wire);
      } catch (err) {
        failure = err;
        answer = binding.writeError(err, read.wire);
      } finally {
        clearTimeout(deadline);
        callsInFlight--;
      }
      send(reply, answer);
      reply.raw.off('close', onClose);

      const reason = failure === null ? null : failureReason(failure);
      if (reason === 'internal') request.log.error({ err: failure }, 'legacy call failed unexpectedly');
      const operation = read.ok ? read.call.operation : read.operation;
      const caller = read.ok ? callerOf(read.call) : { apiKey: null, version: null };
      fastify.hits.record({
        operation: operation?.name ?? 'unknown',
        binding: read.binding,
        client: clientFingerprint(caller.apiKey, config.deprecation.clientIdKey),
        legacyVersion: caller.version,
        replacement: operation?.replacement ?? '',
        outcome: reason === null ? 'ok' : 'fault',
        reason,
        status: answer.status,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        upstreamRequests,
        remoteAddress,
        userAgent: request.headers['user-agent'] ?? null,
      });
    });
  },
  { name: 'call-runner', dependencies: ['deprecation'], fastify: '5.x' },
);
