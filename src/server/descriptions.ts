import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/schema.js';
import { describeService } from '../inbound/description/describe.js';
import { errorPage } from '../inbound/reply.js';
import { INVALID_HOSTNAME } from '../messages.js';
import { send } from '../inbound/send.js';
import { traceDescription } from '../tracing/calls.js';
import type { Tracing } from '../tracing/setup.js';

/** Answers a GET of the service path: WSDL, disco or help (docs/wire.md §7), at the public address of the service (§7.1). */
export type DescriptionServer = (request: FastifyRequest, reply: FastifyReply, servicePath: string, query: string) => void;

export function createDescriptionServer(
  server: Config['server'],
  service: Config['service'],
  profiles: Config['paging']['profiles'],
  tracing: Tracing | null,
): DescriptionServer {
  return (request, reply, servicePath, query) => {
    const base = server.publicBaseUrl ?? requestBase(request.protocol, request.host);
    // Addresses cannot be built from such a Host; HTTP.sys would have refused it before IIS.
    const { kind, reply: described } =
      base === null
        ? { kind: 'not-found' as const, reply: errorPage(400, INVALID_HOSTNAME) }
        : describeService(service, profiles, query, `${base}${servicePath}`);
    if (tracing !== null) traceDescription(tracing, request.method, servicePath, request.headers, kind, described.status);
    send(reply, described);
  };
}

/**
 * Scheme and authority of the request as ASP.NET's Request.Url (a System.Uri) writes them: the host
 * in lower case, a default port left out. `null` for a Host (or trusted X-Forwarded-Host) that is
 * missing or no URL parser accepts.
 */
function requestBase(protocol: string, host: string | undefined): string | null {
  if (host === undefined || host === '') return null;
  try {
    const { origin, pathname, search, username, password } = new URL(`${protocol}://${host}`);
    return pathname === '/' && search === '' && username === '' && password === '' && origin !== 'null' ? origin : null;
  } catch {
    return null;
  }
}
