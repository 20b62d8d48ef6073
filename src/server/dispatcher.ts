import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { NOT_FOUND, errorPage } from '../inbound/reply.js';
import { percentDecode } from '../aspnet/url-decode.js';
import type { Binding } from '../inbound/binding.js';
import { descriptionAccepts } from '../inbound/description/describe.js';
import { REQUEST_FORMAT_UNRECOGNIZED, urlUnexpectedlyEnding } from '../messages.js';
import { requestUrl, send, servicePathOf } from './http.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Dispatches a request under the service path the way the ASMX handler factory does. */
    dispatch(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
  interface FastifyRequest {
    /** The Content-Type header as the client sent it; fastify itself is shown a neutral one. */
    sentContentType: string | undefined;
  }
}

export interface DispatcherOptions {
  readonly servicePath: string;
  /** The call bindings, in the order ASMX asks its protocols. */
  readonly bindings: readonly Binding[];
}

/**
 * The service dispatcher (docs/wire.md §1): every request under the service path goes to the first
 * protocol that takes it, the call bindings first, then the service descriptions; when none takes
 * it, the descriptions' answer decides between 405 and 500. Bodies reach the bindings as bytes.
 */
export const dispatcherPlugin = fp<DispatcherOptions>(
  async (fastify, { servicePath, bindings }) => {
    // Every body reaches the bindings as bytes: SOAP needs them raw (a form post to the SOAP path is a
    // SOAP request that fails to parse), and the HTTP POST protocol reads its form itself.
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    // ASMX reads the Content-Type itself (docs/wire.md §2.5, §3, §6.2), but fastify answers one it
    // cannot parse (`foo`, an empty value) with its own 415, and a QUERY without one with a 400, before
    // any handler runs. So the bindings read the header as sent, and fastify is shown a neutral type
    // that the catch-all parser above reads as bytes like any other.
    fastify.decorateRequest('sentContentType', undefined);
    fastify.addHook('onRequest', async (request) => {
      request.sentContentType = request.headers['content-type'];
      request.raw.headers['content-type'] = 'application/octet-stream';
    });

    async function dispatch(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const url = requestUrl(request.url);
      const requested = servicePathOf(url.pathname, servicePath);
      if (requested === null) return send(reply, NOT_FOUND);
      const pathInfo = url.pathname.slice(requested.length);
      const { method } = request;
      for (const binding of bindings) {
        if (!binding.accepts(method, pathInfo)) continue;
        const header = request.headers.soapaction;
        return fastify.runCall(
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
      // Asked last, the Documentation protocol's answer decides when nothing takes the request.
      const description = descriptionAccepts(method, pathInfo);
      if (description === 'accept') return fastify.serveDescription(request, reply, requested, url.search.slice(1));
      send(
        reply,
        description === 'wrongMethod'
          ? errorPage(405, REQUEST_FORMAT_UNRECOGNIZED)
          : errorPage(500, urlUnexpectedlyEnding(percentDecode(pathInfo))),
      );
    }

    fastify.decorate('dispatch', dispatch);
    fastify.all('/*', dispatch);
    // Methods fastify does not route (PROPFIND, MKCOL, …) would get its JSON 404: dispatch them too,
    // so that they get the ASMX answer to an unknown method (405 or 500, docs/wire.md §1).
    fastify.setNotFoundHandler(dispatch);
  },
  { name: 'dispatcher', dependencies: ['call-runner', 'descriptions', 'deprecation'], fastify: '5.x' },
);
