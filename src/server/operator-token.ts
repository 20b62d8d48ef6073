import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { OperatorRefusals } from './operator-refusals.js';

/**
 * Who may read `/ledger` and `POST /reload` (docs/security.md): with `server.adminToken`,
 * whoever sends `Authorization: Bearer <token>`, on every listener that has them; without one, anyone
 * who reaches a loopback operator listener, and no one when the listener is beyond loopback (an
 * address written down without a token: refused rather than served to the network).
 */

export interface OperatorAccess {
  /** `server.adminToken`. */
  readonly token: string | null;
  /** Whether the listener the routes are on is reachable from this machine only. */
  readonly loopback: boolean;
  readonly refused: OperatorRefusals;
}

export function operatorGuard({ token, loopback, refused }: OperatorAccess): onRequestHookHandler {
  const refuse = refuser(refused);
  if (token !== null) return bearerCheck(token, refuse);
  // Reachable from this machine only: the Host check (admin-host.ts) keeps browsers' pages out.
  if (loopback) return async () => {};
  return async (request, reply) =>
    refuse(request, reply, 403, 'no_token_configured', {
      message: `${request.routeOptions.url} needs server.adminToken (ADMIN_TOKEN or ADMIN_TOKEN_FILE) on a listener beyond loopback.`,
    });
}

/**
 * The token compared in constant time: both sides are hashed with a key of this process first, so
 * that the comparison is of two digests of one length, whatever the length or the prefix sent.
 */
function bearerCheck(token: string, refuse: Refuse): onRequestHookHandler {
  // A KeyObject: Node 24 imports a key given as bytes anew for every HMAC (src/redis/seal.ts, subkey).
  const key = createSecretKey(randomBytes(32));
  const digest = (text: string): Buffer => createHmac('sha256', key).update(text).digest();
  const expected = digest(token);
  return async (request, reply) => {
    const sent = BEARER.exec(request.headers.authorization ?? '')?.[1];
    if (sent === undefined) {
      return refuse(request, reply, 401, 'missing_token', {
        challenge: CHALLENGE,
        message: 'Authorization: Bearer <server.adminToken> is required.',
      });
    }
    if (timingSafeEqual(digest(sent), expected)) return;
    return refuse(request, reply, 401, 'wrong_token', {
      challenge: `${CHALLENGE}, error="invalid_token"`,
      message: 'The bearer token is not server.adminToken.',
    });
  };
}

/** `Bearer` in any case (RFC 9110 §11.1), one token. */
const BEARER = /^Bearer +(\S+) *$/i;
const CHALLENGE = 'Bearer realm="catalog-proxy operator"';

type Refuse = (
  request: FastifyRequest,
  reply: FastifyReply,
  status: 401 | 403,
  reason: string,
  answer: { readonly challenge?: string; readonly message: string },
) => FastifyReply;

/** Refused with a small JSON body, counted and said without the header: the token sent may be nearly the right one. */
function refuser(refused: OperatorRefusals): Refuse {
  return (request, reply, status, reason, { challenge, message }) => {
    refused(request, { reason, path: request.routeOptions.url });
    if (challenge !== undefined) reply.header('www-authenticate', challenge);
    return reply.code(status).send({ status: 'refused', message });
  };
}
