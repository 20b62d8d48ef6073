import { ConfigError } from './problems.js';
import type { Config } from './schema.js';
import { validateConfig, type Json } from './validate.js';

/**
 * What a configuration reload (SIGHUP, or `POST /reload` on the operator listener) may change while
 * the proxy runs, pure: the new configuration in, the one new calls get out, with every setting that
 * only a restart applies held at its running value and named. Listeners, connection pools, the shared
 * state's connection, the log, the service's description and the memory sizes are made once, at
 * start: the callers, brownouts, routes, cache freshness, budget and the translation's settings are
 * read per call, so a reload reaches them (docs/fleet.md, Reloading the configuration).
 */

/** Settings read when the proxy starts, as dotted paths: a section, or one key of it. */
export const RESTART_ONLY: readonly string[] = [
  'server',
  'service',
  'paging',
  'redis',
  'log',
  'demo',
  'upstream.baseUrl',
  'upstream.connections',
  'upstream.connectTimeoutMs',
  'upstream.headersTimeoutMs',
  'upstream.bodyTimeoutMs',
  'upstream.maxResponseBytes',
  'upstream.retries',
  'upstream.maxConcurrentPages',
  'upstream.healthCheckIntervalMs',
  'upstream.answers',
  'legacy.origin',
  'legacy.timeoutMs',
  'legacy.connections',
  'legacy.maxResponseBytes',
  'legacy.maxShadowsInFlight',
  'deprecation.clientIdKey',
  'deprecation.ledgerRetentionDays',
  'cache.maxBytes',
];

export interface Reloaded {
  /** The configuration new calls get: `next`, but what needs a restart as it runs now. */
  readonly config: Config;
  /** The settings `next` changes that only a restart applies, as dotted paths; kept as they are. */
  readonly restartNeeded: readonly string[];
}

/**
 * Throws a ConfigError when what new calls would get breaks a rule of the configuration: `next` was
 * valid, but a setting kept as it runs may not go with the new ones (routes that need a
 * `legacy.origin` the reload could not add; clients known by address with `server.trustProxy` on).
 */
export function reloaded(running: Config, next: Config): Reloaded {
  const restartNeeded: string[] = [];
  let config = next;
  for (const path of RESTART_ONLY) {
    const keys = path.split('.');
    const kept = valueAt(running, keys);
    if (JSON.stringify(valueAt(next, keys)) === JSON.stringify(kept)) continue;
    restartNeeded.push(path);
    config = withValueAt(config, keys, kept);
  }
  if (restartNeeded.length > 0) {
    try {
      validateConfig(config as unknown as Json);
    } catch (err) {
      if (err instanceof ConfigError) err.message += ` (with ${restartNeeded.join(', ')} as it runs until a restart)`;
      throw err;
    }
  }
  return { config, restartNeeded };
}

function valueAt(config: unknown, keys: readonly string[]): unknown {
  return keys.reduce<unknown>((value, key) => (value as Readonly<Record<string, unknown>>)[key], config);
}

function withValueAt<T>(config: T, [key, ...rest]: readonly string[], value: unknown): T {
  if (key === undefined) return value as T;
  const object = config as Readonly<Record<string, unknown>>;
  return { ...object, [key]: withValueAt(object[key], rest, value) } as T;
}
