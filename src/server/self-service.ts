import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HTML_CONTENT_TYPE } from '../aspnet/error-page.js';
import type { ClientDirectory } from '../clients/directory.js';
import { SELF_SERVICE_PATH } from '../deprecation/headers.js';
import { clientPage, noCallsPage } from '../migration/client-page.js';
import { clientMigration, type MigrationPolicy, NO_CALLS_SEEN, noCallsSeen } from '../migration/clients.js';
import { addressLimit } from './address-limit.js';
import type { LedgerSource } from './ledger-source.js';
import { JSON_CONTENT_TYPE, wantsHtml } from './negotiation.js';

/**
 * `GET /deprecation/status` on the service port (docs/migration.md, "Self-service"): a caller presents
 * its own key, as the legacy HTTP bindings send it (`apiKey` in the query) or as `X-Api-Key`, and reads
 * its own migration: status, calls, the requests that replace them. Nothing about any other caller:
 * the key names the client by its fingerprint or the configured client it belongs to, never by the
 * address it calls from. A key no call was seen with gets the same shape, empty, so that the answer
 * says nothing of which keys exist. Outside the service path, so ASMX's own answers are as they were;
 * with `deprecation.selfService` off, the path is answered as any other outside it.
 */

export interface SelfServiceOptions {
  readonly ledger: LedgerSource;
  /** The directory of the configuration in force. */
  readonly identify: () => ClientDirectory;
  readonly migration: () => MigrationPolicy;
  readonly enabled: () => boolean;
  readonly now: () => number;
  /** How a request is answered while self-service is off: as the service answers any other path. */
  readonly otherwise: (request: FastifyRequest, reply: FastifyReply) => unknown;
}

/** A developer reloading the page now and then is well inside; a script walking keys is not. */
const LIMIT = { burst: 10, perMinute: 30, maxAddresses: 10_000 } as const;

export async function selfServiceRoute(fastify: FastifyInstance, options: SelfServiceOptions): Promise<void> {
  const { ledger, identify, migration, enabled, now, otherwise } = options;
  const limit = addressLimit(LIMIT);
  fastify.get(SELF_SERVICE_PATH, async (request, reply) => {
    if (!enabled()) return otherwise(request, reply);
    // A personal answer, by key: never kept by a cache on the way.
    reply.header('cache-control', 'no-store').header('vary', 'Accept, X-Api-Key');
    const allowed = limit.take(request.ip, performance.now());
    if (!allowed.allowed) {
      reply.header('retry-after', String(allowed.retryAfterSeconds));
      return refusal(reply, 429, 'Too Many Requests', `Too many requests from this address; try again in ${allowed.retryAfterSeconds} s.`);
    }
    const key = presentedKey(request);
    if (typeof key !== 'string') return refusal(reply, 400, 'Bad Request', key.problem);
    const { view } = await ledger();
    const caller = identify()(key, null);
    const holder = { name: caller.name, configured: caller.label === caller.name, team: caller.team, contact: caller.contact };
    const migrated = clientMigration(view, caller.name, migration(), now());
    if (wantsHtml(request))
      return reply.type(HTML_CONTENT_TYPE).send(migrated === null ? noCallsPage(NO_CALLS_SEEN) : clientPage(migrated));
    const answer =
      migrated === null
        ? { ...noCallsSeen(holder), message: NO_CALLS_SEEN }
        : { ...migrated, message: `${migrated.calls} legacy calls seen for this key, the latest at ${migrated.lastSeen}.` };
    return reply.type(JSON_CONTENT_TYPE).send({ version: 1, ...answer });
  });
}

/** The key the request presents, or what is wrong: none, both ways, or more than one. */
function presentedKey(request: FastifyRequest): string | { readonly problem: string } {
  const query = request.query as Readonly<Record<string, unknown>>;
  const inQuery = query.apiKey;
  const inHeader = request.headers['x-api-key'];
  if (Array.isArray(inQuery) || Array.isArray(inHeader)) return { problem: 'Present one key, once.' };
  const given = [inQuery, inHeader].filter((key): key is string => typeof key === 'string' && key !== '');
  if (given.length === 0)
    return { problem: 'Present your key: the apiKey query parameter, as your legacy calls send it, or an X-Api-Key header.' };
  if (given.length === 2 && given[0] !== given[1]) return { problem: 'Present one key, once.' };
  return given[0] as string;
}

function refusal(reply: FastifyReply, statusCode: number, error: string, message: string): FastifyReply {
  return reply.code(statusCode).type(JSON_CONTENT_TYPE).send({ statusCode, error, message });
}
