import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/schema.js';
import { deprecationSignals } from '../deprecation/headers.js';
import type { RequestTarget } from './http.js';

/**
 * Deprecation, Sunset and Link on every reply from the service path (docs/wire.md §9), fastify's own
 * replies too: run as the reply goes out. A call's own Link, which names its successor request, is set
 * where its reply is sent (src/call/serve.ts) and left as it is here.
 */
export type SignalAdder = (request: FastifyRequest, reply: FastifyReply) => void;

export function createSignalAdder(
  config: Pick<Config, 'deprecation' | 'upstream' | 'server'>,
  targetOf: (request: FastifyRequest) => RequestTarget,
): SignalAdder {
  const { headers } = deprecationSignals(config);
  const { link, ...always } = headers;
  return (request, reply) => {
    // The dispatcher's decision (after URL normalisation: `/x/../index.asmx` is served).
    if (targetOf(request).servicePath === null) return;
    reply.headers(always);
    if (link !== undefined && !reply.hasHeader('link')) reply.header('link', link);
  };
}
