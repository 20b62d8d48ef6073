import type { FastifyReply } from 'fastify';
import type { Reply } from '../inbound/reply.js';
import { giveBack } from '../xml/pool.js';

/** What the fastify plugins of the HTTP front share: sending a reply, reading the request target. */

export function send(to: FastifyReply, reply: Reply): void {
  to.code(reply.status).header('content-type', reply.contentType).header('cache-control', reply.cacheControl);
  if (reply.headers) to.headers(reply.headers);
  // Bytes the pool lent (src/xml/pool.ts) go back once written to the socket: not before, node writes from them.
  const { body } = reply;
  if (typeof body !== 'string') to.raw.once('finish', () => giveBack(body));
  to.send(body);
}

/** What the front reads of a request target: its path and its query string (with the `?`, or empty). */
export interface RequestTarget {
  readonly pathname: string;
  readonly search: string;
}

/** Targets already read: a call reads its own up to three times, and most calls send the same one. */
const targets = new Map<string, RequestTarget>();
const MAX_TARGETS = 256;
/** Longer targets are read each time: the memory holds at most MAX_TARGETS of this length. */
const MAX_TARGET_LENGTH = 1024;

/**
 * The request target's path and query, the path normalised as IIS does (`.` and `..` segments
 * resolved). A target no URL parser accepts (an absolute form such as `http://[x`) is outside the
 * service.
 */
export function requestTarget(target: string): RequestTarget {
  let read = targets.get(target);
  if (read === undefined) {
    const { pathname, search } = parsedTarget(target);
    read = { pathname, search };
    if (target.length > MAX_TARGET_LENGTH) return read;
    // Query strings vary without end (HTTP GET calls): the memory is dropped whole when full.
    if (targets.size === MAX_TARGETS) targets.clear();
    targets.set(target, read);
  }
  return read;
}

function parsedTarget(target: string): URL {
  try {
    return new URL(target, 'http://localhost');
  } catch {
    return new URL('http://localhost/');
  }
}

/** The service path as the request spelled it (IIS matches it in any case), or null if not ours. */
export function servicePathOf(pathname: string, servicePath: string): string | null {
  const lower = pathname.toLowerCase();
  const path = servicePath.toLowerCase();
  if (lower === path || lower.startsWith(`${path}/`)) return pathname.slice(0, path.length);
  return null;
}
