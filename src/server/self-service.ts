import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HTML_CONTENT_TYPE } from '../aspnet/error-page.js';
import type { ClientDirectory } from '../clients/directory.js';
import { SELF_SERVICE_PATH } from '../deprecation/headers.js';
import { clientPage, noCallsPage } from '../migration/client-page.js';
import { clientMigration, type MigrationPolicy, NO_CALLS_SEEN, noCallsSeen, withoutRequests } from '../migration/clients.js';
import { queryCollection } from '../aspnet/url-decode.js';
import { addressGroup, addressLimit } from './address-limit.js';
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
  readonly otherwise: (request: FastifyRequest, reply: FastifyReply) => void;
}

/** A developer reloading the page now and then is well inside; a script walking keys is not. */
const LIMIT = { burst: 10, perMinute: 30, maxAddresses: 10_000 } as const;

export async function selfServiceRoute(fastify: FastifyInstance, options: SelfServiceOptions): Promise<void> {
  const { ledger, identify, migration, enabled, now, otherwise } = options;
  const limit = addressLimit(LIMIT);
  fastify.get(SELF_SERVICE_PATH, async (request, reply) => {
    if (!enabled()) {
      otherwise(request, reply);
      // Returned, fastify waits for the reply `otherwise` sends rather than send one of its own.
      return reply;
    }
    // A personal answer, by key: never kept by a cache on the way.
    reply.header('cache-control', 'no-store').header('vary', 'Accept, X-Api-Key');
    const allowed = limit.take(addressGroup(request.ip), performance.now());
    if (!allowed.allowed) {
      reply.header('retry-after', String(allowed.retryAfterSeconds));
      return refusal(reply, 429, 'Too Many Requests', `Too many requests from this address; try again in ${allowed.retryAfterSeconds} s.`);
    }
    const key = presentedKey(request);
    if (typeof key !== 'string') return refusal(reply, 400, 'Bad Request', key.problem);
    const { view } = await ledger();
    const caller = identify()(key, null);
    const policy = migration();
    const found = clientMigration(view, caller.name, policy, now());
    // A client the table also names by its addresses holds the calls of whoever called from them, key or
    // not: its key holder is shown their counts, not the requests (their parameters) they made.
    const migrated = found !== null && policy.cards.get(found.client)?.byAddress === true ? withoutRequests(found) : found;
    if (wantsHtml(request))
      return reply.type(HTML_CONTENT_TYPE).send(migrated === null ? noCallsPage(NO_CALLS_SEEN) : clientPage(migrated));
    // A key of no call gets the answer of any key never seen: not its configured name nor card, which
    // would tell that the key is one of the table's.
    const answer =
      migrated === null
        ? { ...noCallsSeen(caller.fingerprint), message: NO_CALLS_SEEN }
        : {
            ...migrated,
            message:
              `${migrated.calls} legacy calls seen for ${migrated.client}, the client this key belongs to, ` +
              `the latest at ${migrated.lastSeen}.`,
          };
    return reply.type(JSON_CONTENT_TYPE).send({ version: 1, ...answer });
  });
}

/**
 * The key the request presents, or what is wrong: none, or two that differ. The query is read as the
 * legacy HTTP bindings read it (ASP.NET's QueryString: `apikey` in any case, `%uXXXX`, a repeated name
 * comma-joined), so that a key names the caller its legacy calls were counted under.
 */
function presentedKey(request: FastifyRequest): string | { readonly problem: string } {
  const at = request.url.indexOf('?');
  const inQuery = at < 0 ? undefined : queryCollection(request.url.slice(at + 1))('apiKey');
  const inHeader = request.headers['x-api-key'];
  const given = [inQuery, inHeader].filter((key): key is string => typeof key === 'string' && key !== '');
  if (given.length === 0)
    return { problem: 'Present your key: the apiKey query parameter, as your legacy calls send it, or an X-Api-Key header.' };
  if (given.length === 2 && given[0] !== given[1]) return { problem: 'Present one key, once.' };
  return given[0] as string;
}

function refusal(reply: FastifyReply, statusCode: number, error: string, message: string): FastifyReply {
  return reply.code(statusCode).type(JSON_CONTENT_TYPE).send({ statusCode, error, message });
}
