import type { FastifyReply } from 'fastify';
import type { Reply } from './reply.js';
import { giveBack, isLent } from '../xml/pool.js';

/** A reply decided whole, written to the caller through fastify. */
export function send(to: FastifyReply, reply: Reply): void {
  to.code(reply.status).header('content-type', reply.contentType).header('cache-control', reply.cacheControl);
  if (reply.headers) to.headers(reply.headers);
  // Bytes the pool lent (src/xml/pool.ts) go back once written to the socket: not before, node writes
  // from them. A reply kept with its cached page (src/memo/replies.ts) is not lent: no listener for it.
  const { body } = reply;
  if (typeof body !== 'string' && isLent(body)) to.raw.once('finish', () => giveBack(body));
  to.send(body);
}
