import type { FastifyReply } from 'fastify';
import type { Reply } from './reply.js';
import { giveBack, isLent } from '../xml/pool.js';
import { writeGathered } from '../log/line-stream.js';

/**
 * A reply decided whole, written to the caller through fastify at the end of this turn of the event
 * loop (docs/performance.md, "Replies written together"). Its status and headers are set now.
 */
export function send(to: FastifyReply, reply: Reply): void {
  // The first reply decided for a request is the one it gets: a later one (a failure caught after the
  // reply was decided) would otherwise write its status and headers over the first's.
  if (decided.has(to)) return;
  decided.add(to);
  to.code(reply.status).header('content-type', reply.contentType).header('cache-control', reply.cacheControl);
  if (reply.headers) to.headers(reply.headers);
  // Bytes the pool lent (src/xml/pool.ts) go back once written to the socket: not before, node writes
  // from them. A reply kept with its cached page (src/memo/replies.ts) is not lent: no listener for it.
  const { body } = reply;
  if (typeof body !== 'string' && isLent(body)) to.raw.once('finish', () => giveBack(body));
  if (waiting.length === 0) setImmediate(writeWaiting);
  waiting.push({ to, body });
}

/**
 * The replies decided since the last write. They are written together once the turn's I/O callbacks
 * have run (setImmediate), rather than each as its call ends: on a loaded instance one turn decides
 * several, and the peer reading them (a load balancer, a client on the same host) is then woken once
 * for all of them rather than once each. A wake-up across cores cost more CPU than the rest of a
 * cached call's write (docs/performance.md).
 */
let waiting: { readonly to: FastifyReply; readonly body: Reply['body'] }[] = [];

/** Replies decided and not yet written. */
const decided = new WeakSet<FastifyReply>();

function writeWaiting(): void {
  // The turn's hit lines first: a caller holding its reply finds its call's line written.
  writeGathered();
  const replies = waiting;
  waiting = [];
  for (const { to, body } of replies) {
    // Written from here on: a failure fastify meets writing it (an onSend hook's) goes to the error
    // handler, whose reply must then be taken.
    decided.delete(to);
    try {
      // A defect: a handler that let fastify answer for it (an async one resolving to nothing, which
      // fastify answers empty), or a reply decided for a request already answered.
      if (to.sent) to.log.error({ event: 'send_failed' }, 'reply decided for a request already answered');
      else to.send(body);
    } catch (err) {
      // fastify answers its own failures; one it throws must not keep the rest of the turn's replies
      // from their callers, nor leave this caller waiting.
      to.raw.destroy();
      to.log.error({ event: 'send_failed', err }, 'reply could not be written');
    }
  }
}
