import type { FastifyBaseLogger, FastifyInstance, onRequestHookHandler } from 'fastify';
import { ConfigError } from '../config/problems.js';
import type { Reloaded } from '../config/reload.js';
import type { Config } from '../config/schema.js';

/**
 * Reloading the configuration without a restart (docs/fleet.md): SIGHUP, or `POST /reload` on the
 * operator listener. The configuration is read again as at start (file and environment); a valid one
 * applies to the calls that start from then on, calls in flight finish on the one they began with,
 * and what only a restart applies is named in the log and the reply. An invalid one is refused, said
 * in the log, and the running configuration is kept.
 */

export type ReloadOutcome =
  | { readonly status: 'reloaded'; readonly restartNeeded: readonly string[] }
  | { readonly status: 'refused'; readonly message: string };

export type Reloader = () => ReloadOutcome;

export function createReloader(source: () => Config, apply: (next: Config) => Reloaded, log: FastifyBaseLogger): Reloader {
  return () => {
    let restartNeeded: readonly string[];
    try {
      ({ restartNeeded } = apply(source()));
    } catch (err) {
      // A ConfigError's text names the key and never quotes a secret; anything else is not shown.
      const message = err instanceof ConfigError ? err.message : 'The configuration could not be read.';
      log.error({ event: 'config_reload_refused', error: message }, `${message} The running configuration is kept.`);
      return { status: 'refused', message };
    }
    if (restartNeeded.length === 0) log.info({ event: 'config_reloaded', restartNeeded }, 'Configuration reloaded: new calls use it');
    else
      log.warn(
        { event: 'config_reloaded', restartNeeded },
        `Configuration reloaded: new calls use it, but ${restartNeeded.join(', ')} ${restartNeeded.length === 1 ? 'takes' : 'take'} ` +
          `effect only after a restart`,
      );
    return { status: 'reloaded', restartNeeded };
  };
}

/**
 * `POST /reload`, for the operator listener only: what a legacy caller must never be able to do. Not
 * from a browser either: a page could send a simple cross-origin POST to an operator port on
 * localhost, and a browser always says its Origin there; curl and tools do not. `guard` first: who
 * may reload at all (src/server/operator-token.ts).
 */
export async function reloadRoute(
  fastify: FastifyInstance,
  { reload, guard }: { readonly reload: Reloader; readonly guard: onRequestHookHandler },
): Promise<void> {
  fastify.post('/reload', { onRequest: guard }, async (request, reply) => {
    if (request.headers.origin !== undefined) {
      return reply.code(403).send({ status: 'refused', message: 'POST /reload is not taken from a browser (it sent an Origin header).' });
    }
    const outcome = reload();
    return reply.code(outcome.status === 'reloaded' ? 200 : 400).send(outcome);
  });
}
