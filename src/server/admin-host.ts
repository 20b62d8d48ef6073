import { isIP } from 'node:net';
import type { onRequestHookHandler } from 'fastify';
import type { OperatorRefusals } from './operator-refusals.js';

/**
 * The `Host` check of the operator listener (docs/security.md). A page on any site can make
 * a browser send requests to a name its owner points at 127.0.0.1 (DNS rebinding), and read the
 * answers as its own: the browser sends that name as the `Host`. So the listener answers only a `Host`
 * that no such site can be named by: an IP literal, `localhost`, or a name the operator listed in
 * `server.adminHostnames`; anything else, a missing `Host` too, gets 421 and nothing of the data.
 */

export function hostCheck(hostnames: readonly string[], refused: OperatorRefusals): onRequestHookHandler {
  const known: ReadonlySet<string> = new Set(hostnames.map((name) => name.toLowerCase()));
  return async (request, reply) => {
    const { host } = request.headers;
    if (answersTo(host, known)) return;
    refused(request, { reason: 'misdirected', host: host?.slice(0, MAX_SHOWN_HOST) ?? null });
    return reply.code(421).header('content-type', 'text/plain; charset=utf-8').send('Misdirected Request\n');
  };
}

/** Whether `host` (a `Host` header: a name or address, with an optional port) is one the operator listener answers. */
export function answersTo(host: string | undefined, known: ReadonlySet<string>): boolean {
  if (host === undefined) return false;
  const bracketed = /^\[([^\]]*)\](?::\d{1,5})?$/.exec(host);
  if (bracketed !== null) return isIP(bracketed[1]!) === 6;
  const plain = /^([^:[\]]+)(?::\d{1,5})?$/.exec(host);
  if (plain === null) return false;
  const name = plain[1]!.toLowerCase();
  return isIP(name) === 4 || name === 'localhost' || known.has(name);
}

/** A `Host` is shown in the log up to the length of a DNS name: anything longer is no one's name. */
const MAX_SHOWN_HOST = 255;
