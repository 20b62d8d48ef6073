import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config/schema.js';
import { requestUrl, servicePathOf } from '../server/http.js';
import { deprecationSignals } from './headers.js';
import { createHitRecorder, type HitRecorder } from './hits.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `.cp` request that replaces the call (set by the call runner), for its `successor-version` link. */
    successor: string | null;
  }
  interface FastifyInstance {
    /** The deprecation hit log and the metrics. */
    readonly hits: HitRecorder;
    /** Adds Deprecation, Sunset and Link to an answer from the service path (docs/wire.md §9). */
    addDeprecationHeaders(request: FastifyRequest, reply: FastifyReply): void;
  }
}

export interface DeprecationOptions {
  readonly config: Pick<Config, 'deprecation' | 'upstream'>;
  readonly servicePath: string;
  /** Where the hits go; the app's own logger when not given. */
  readonly hitLogger?: FastifyBaseLogger;
}

/**
 * Deprecation signals and metrics: the hit recorder every call reports to (its registry is what
 * `/metrics` serves, src/server/operator.ts), and the headers on every answer from the service path.
 */
export const deprecationPlugin = fp<DeprecationOptions>(
  async (fastify, { config, servicePath, hitLogger }) => {
    const hits = createHitRecorder(fastify.log, hitLogger);
    const { headers, linkFor } = deprecationSignals(config);
    fastify.decorateRequest('successor', null);
    fastify.decorate('hits', hits);
    fastify.addHook('onClose', async () => hits.close());
    // The same path test as the dispatcher's (after URL normalisation: `/x/../index.asmx` is served),
    // so that every answer from the service carries the headers.
    fastify.decorate('addDeprecationHeaders', (request: FastifyRequest, reply: FastifyReply) => {
      if (servicePathOf(requestUrl(request.url).pathname, servicePath) === null) return;
      reply.headers(headers);
      // Not `!== null`: a request the router refused (a path it cannot decode) has no decorations.
      if (typeof request.successor === 'string') reply.header('link', linkFor(request.successor));
    });
    fastify.addHook('onSend', async (request, reply) => fastify.addDeprecationHeaders(request, reply));
  },
  { name: 'deprecation', fastify: '5.x' },
);
