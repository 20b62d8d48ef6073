import type { FastifyReply, FastifyRequest } from 'fastify';
import { percentDecode } from '../aspnet/url-decode.js';
import type { Binding } from '../inbound/binding.js';
import { descriptionAccepts } from '../inbound/description/describe.js';
import { NOT_FOUND, errorPage } from '../inbound/reply.js';
import { INTERNAL_ERROR, REQUEST_FORMAT_UNRECOGNIZED, urlUnexpectedlyEnding } from '../messages.js';
import type { DescriptionServer } from './descriptions.js';
import type { RequestTarget } from './http.js';
import { send } from '../inbound/send.js';
import type { CallServer } from '../call/serve.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Content-Type header as the client sent it; fastify itself is shown a neutral one (src/server/app.ts). */
    sentContentType: string | undefined;
  }
}

/**
 * Every request under the service path, and every other one too (a 404): a fastify handler that
 * returns nothing, since it sends its reply itself (src/inbound/send.ts, at the end of the turn). It
 * never throws: a failure it did not expect is logged and answered with the internal error page.
 */
export type Dispatcher = (request: FastifyRequest, reply: FastifyReply) => void;

/**
 * The service dispatcher (docs/wire.md §1): every request under the service path goes to the first
 * protocol that takes it, the call bindings (in the order ASMX asks its protocols) first, then the
 * service descriptions; when none takes it, the descriptions' reply decides between 405 and 500.
 */
export function createDispatcher(
  targetOf: (request: FastifyRequest) => RequestTarget,
  bindings: readonly Binding[],
  serveCall: CallServer,
  serveDescription: DescriptionServer,
): Dispatcher {
  const route = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = targetOf(request);
    const requested = url.servicePath;
    if (requested === null) return send(reply, NOT_FOUND);
    const pathInfo = url.pathname.slice(requested.length);
    const { method } = request;
    for (const binding of bindings) {
      if (!binding.accepts(method, pathInfo)) continue;
      const header = request.headers.soapaction;
      return serveCall(
        binding,
        {
          method,
          path: url.pathname,
          pathInfo,
          query: url.search.slice(1),
          contentType: request.sentContentType,
          soapAction: Array.isArray(header) ? header.join(',') : header,
          body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
        },
        request,
        reply,
      );
    }
    // Asked last, the Documentation protocol's reply decides when nothing takes the request.
    const description = descriptionAccepts(method, pathInfo);
    if (description === 'accept') return serveDescription(request, reply, requested, url.search.slice(1));
    send(
      reply,
      description === 'wrongMethod'
        ? errorPage(405, REQUEST_FORMAT_UNRECOGNIZED)
        : errorPage(500, urlUnexpectedlyEnding(percentDecode(pathInfo))),
    );
  };
  return (request, reply) => {
    route(request, reply).catch((err: unknown) => {
      send(reply, errorPage(500, INTERNAL_ERROR));
      request.log.error({ event: 'dispatch_failed', err }, 'dispatch failed');
    });
  };
}
