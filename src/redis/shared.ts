import { createHmac } from 'node:crypto';
import { Redis, ReplyError, type RedisOptions } from 'ioredis';
import { Counter, Gauge, type Registry } from 'prom-client';
import { PROCESS_KEY } from '../clients/process-key.js';
import { onceEvery } from '../log/once-every.js';
import { hostPort } from '../config/host-port.js';
import type { Config } from '../config/schema.js';
import { createSeal, subkey, type Seal } from './seal.js';

/**
 * The fleet's shared state (docs/fleet.md): one Redis connection for the page cache, the budget, the
 * page counts and the ledger, with the rule every user of it follows: Redis down or slow never fails a
 * call. Each use names what the instance does on its own instead (`fallback`); the first failure of an
 * outage is said once in the log and `redis_up` drops to 0, and sharing resumes by itself when Redis
 * answers again (ioredis reconnects with a backoff). With Redis Sentinel (`redis.sentinels`) the
 * connection follows the master the sentinels name through a failover, which is an outage like any
 * other until the new master answers, and a master at a new address is counted and said.
 */

/** What a user of the shared state needs: Redis when it can be had, and what happens when it cannot. */
export interface Shared {
  /** Whether Redis is configured at all; when not, every `run` takes its fallback and says nothing. */
  readonly configured: boolean;
  /** Whether the last command worked (and Redis is connected): a user may skip Redis while it is not. */
  available(): boolean;
  /**
   * `command` against Redis within `redis.commandTimeoutMs`; on any failure (not connected, an error,
   * too slow), `fallback`, and the outage is reported. `use` names the purpose in the metric.
   */
  run<T>(use: SharedUse, command: (redis: Redis) => Promise<T>, fallback: () => T): Promise<T>;
  /** A key of this fleet: `redis.keyPrefix` before `parts` joined with `:`. */
  key(...parts: readonly string[]): string;
  /**
   * `text` (an appKey, a request that holds one) as a key part no one can check a guess against:
   * an HMAC with the fleet's secret, which every instance shares; the process's own key without one.
   */
  hashOf(text: string): string;
  /** Seals what is written to Redis and opens what is read back, with the same secret (src/redis/seal.ts). */
  readonly seal: Seal;
  /**
   * A value read back from Redis that is not used: not sealed by this fleet (`forged`), or outside
   * what the configuration allows now (`bounds`). Counted, and said at most once a minute.
   */
  refuse(use: SharedUse, reason: RefusedValue, key: string): void;
  /**
   * The value sealed in `stored`, read back from `key` with `boundedGetBuffer`: null when there is
   * none, or when it is refused (larger than the read allowed, or not sealed by this fleet for `key`).
   */
  open(use: SharedUse, key: string, stored: BoundedValue): Buffer | null;
  close(): Promise<void>;
}

export type SharedUse = 'cache' | 'lock' | 'budget' | 'pageCounts' | 'ledger';

/** Why a value read back from Redis was not used: see `Shared.refuse`. */
export type RefusedValue = 'forged' | 'bounds';

export interface SharedLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/**
 * Lua scripts as commands of a connection, defined on it once and then sent by their hash (EVALSHA),
 * not as text every time. `C` types the commands.
 */
export function scriptCommands<C>(
  scripts: Readonly<Record<string, { readonly keys: number; readonly lua: string }>>,
): (redis: Redis) => Redis & C {
  const defined = new WeakSet<Redis>();
  return (redis) => {
    if (!defined.has(redis)) {
      for (const [name, { keys, lua }] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: keys, lua });
      defined.add(redis);
    }
    return redis as Redis & C;
  };
}

/**
 * GET of a value read back bounded: KEYS the value; ARGV its largest length. Gives the value, nothing
 * (false: no such key), or, for a value too large or not a string, its length (-1: not a string), so
 * that a value Redis holds is refused inside Redis and never sent: read whole, a large one outlasts
 * `redis.commandTimeoutMs` and the instance takes Redis for down.
 */
const BOUNDED_GET = `
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return false end
if kind ~= 'string' then return -1 end
local length = redis.call('STRLEN', KEYS[1])
if length > tonumber(ARGV[1]) then return length end
return redis.call('GET', KEYS[1])
`;

/** What `boundedGetBuffer` gives: the value, null (none), or the length of one refused unread (-1: not a string). */
export type BoundedValue = Buffer | null | number;

export const boundedReads = scriptCommands<{ boundedGetBuffer(key: string, largest: number): Promise<BoundedValue> }>({
  boundedGet: { keys: 1, lua: BOUNDED_GET },
});

const TRIAL_INTERVAL_MS = 1000;

/** Reconnection backoff: quick at first, then every two seconds for as long as Redis is away. */
const reconnectDelayMs = (attempt: number): number => Math.min(50 * 2 ** attempt, 2000);

type SentinelKey = 'sentinels' | 'masterName' | 'password' | 'sentinelPassword' | 'tls';

/** What `createShared` reads of `redis`: the keys of Redis Sentinel may be left out (one Redis, by its URL). */
export type SharedSettings = Omit<Config['redis'], 'secret' | SentinelKey> & Partial<Pick<Config['redis'], SentinelKey>>;

/**
 * The options of the one connection: one Redis by `redis.url` (given to ioredis beside these), or the
 * master that `redis.sentinels` name. Either way a command fails at once while the connection is down,
 * so that the caller's fallback answers: nothing waits in a queue for a Redis that may be away a while.
 */
export function connectionOptions(config: SharedSettings): RedisOptions {
  const options: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: config.connectTimeoutMs,
    commandTimeout: config.commandTimeoutMs,
    retryStrategy: reconnectDelayMs,
  };
  const sentinels = (config.sentinels ?? []).flatMap((sentinel) => hostPort(sentinel) ?? []);
  if (sentinels.length === 0) return options;
  const tls = config.tls === true ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {};
  return {
    ...options,
    ...tls,
    sentinels,
    name: config.masterName ?? '',
    role: 'master',
    ...(config.password ? { password: config.password } : {}),
    ...(config.sentinelPassword ? { sentinelPassword: config.sentinelPassword } : {}),
    // Asking a sentinel for the master is part of connecting, and is given as long.
    sentinelCommandTimeout: config.connectTimeoutMs,
    sentinelRetryStrategy: reconnectDelayMs,
    // Not ioredis's failover detector: it drops the connection on any +switch-master a sentinel
    // publishes, for any master the sentinels watch (another group's failover too), and each sentinel
    // publishes its own as it learns of the switch. A dead master closes the connection by itself; a
    // live one the sentinels demote answers READONLY (below).
    failoverDetector: false,
    // A master demoted to a replica answers writes with READONLY: leave it at once for the one the
    // sentinels name now. The command itself fails (its use falls back), as every command does while
    // the connection is down: resent (2), it would meet a closed connection and no offline queue.
    reconnectOnError: (err) => err.message.includes('READONLY'),
  };
}

/** `host:port` of the connection's far end (an IPv6 address in brackets); null for a Unix socket or none. */
function remoteOf(redis: Redis): string | null {
  // Typed as always there, it is not before the first connection.
  const stream = redis.stream as Redis['stream'] | undefined;
  const remoteAddress = stream?.remoteAddress;
  const remotePort = stream?.remotePort;
  if (remoteAddress === undefined || remotePort === undefined) return null;
  return remoteAddress.includes(':') ? `[${remoteAddress}]:${remotePort}` : `${remoteAddress}:${remotePort}`;
}

/**
 * `secret` is the fleet's (`redis.secret`, else `deprecation.clientIdKey`); without one, the process's
 * own, which no other instance can read: each then keeps to values it wrote itself.
 */
export function createShared(config: SharedSettings, registry: Registry, log: SharedLog, secret: string | null = null): Shared {
  const key = secret ?? PROCESS_KEY;
  // Not the seal's key, nor the fingerprints': a hash shows in Redis's key names (src/redis/seal.ts, subkey).
  const hashKey = subkey(key, 'key-hash');
  const hashOf = (text: string): string => createHmac('sha256', hashKey).update(text).digest('hex');
  const seal = createSeal(key);
  const refuse = refuser(registry, log);
  const fallbacks = new Counter({
    name: 'redis_fallbacks_total',
    help: 'Uses of the shared state that Redis could not serve (down, slow or failing), so this instance used its own state instead.',
    labelNames: ['use'],
    registers: [registry],
  });
  if (config.url === null && (config.sentinels ?? []).length === 0) return unshared(config.keyPrefix, hashOf, seal, refuse);

  let up = false;
  /** Whether an outage has been said (so that a recovery is said too). */
  let said = false;
  /** When a command last tried Redis during an outage of commands on a live connection. */
  let lastTrial = 0;
  new Gauge({
    name: 'redis_up',
    help:
      'Whether Redis (redis.url, or the master redis.sentinels name) answered the last command (1) or this instance is on its ' +
      'own state (0).',
    registers: [registry],
    collect() {
      this.set(up ? 1 : 0);
    },
  });
  const masterChanges = new Counter({
    name: 'redis_master_changes_total',
    help: 'Connections to a Redis master at another address than the one before: failovers this instance followed.',
    registers: [registry],
  });
  const options = connectionOptions(config);
  const redis = config.url === null ? new Redis(options) : new Redis(config.url, options);
  /** `host:port` of the master last connected to. */
  let master: string | null = null;
  const wentDown = (err: unknown): void => {
    if (!up && said) return;
    up = false;
    said = true;
    log.warn(
      { event: 'redis_unavailable', err: { code: errorCode(err), message: errorMessage(err) } },
      'Redis is unavailable: this instance uses its own cache, budget, page counts and ledger until it is back',
    );
  };
  const cameBack = (): void => {
    if (up) return;
    if (said) log.info({ event: 'redis_recovered' }, 'Redis is back: the fleet shares its state again');
    up = true;
  };
  redis.on('ready', () => {
    const now = remoteOf(redis);
    if (master !== null && now !== null && now !== master) {
      masterChanges.inc();
      log.info(
        { event: 'redis_master_changed', from: master, to: now },
        `Redis's master is now ${now} (it was ${master}): the fleet's state is shared there`,
      );
    }
    master = now ?? master;
    cameBack();
  });
  // ioredis emits an error for every failed reconnection attempt; the outage is said once.
  redis.on('error', wentDown);
  redis.on('close', () => {
    if (up) wentDown(new Error('connection closed'));
  });

  return {
    configured: true,
    available: () => up,
    async run(use, command, fallback) {
      // Commands that timed out on a connection still open: one command a second tries Redis again.
      const trial = !up && redis.status === 'ready' && performance.now() - lastTrial >= TRIAL_INTERVAL_MS;
      if (!up && !trial) {
        fallbacks.inc({ use });
        return fallback();
      }
      if (trial) lastTrial = performance.now();
      try {
        const result = await command(redis);
        cameBack();
        return result;
      } catch (err) {
        fallbacks.inc({ use });
        // Redis answered, refusing this command (a bad argument, a script's error): that use fails,
        // Redis is not down, and the other uses keep sharing.
        if (err instanceof ReplyError) return fallback();
        wentDown(err);
        return fallback();
      }
    },
    key: (...parts) => config.keyPrefix + parts.join(':'),
    hashOf,
    seal,
    refuse,
    open: opener(seal, refuse),
    async close() {
      redis.disconnect(false);
    },
  };
}

function unshared(keyPrefix: string, hashOf: (text: string) => string, seal: Seal, refuse: Shared['refuse']): Shared {
  return {
    configured: false,
    available: () => false,
    run: async (_use, _command, fallback) => fallback(),
    key: (...parts) => keyPrefix + parts.join(':'),
    hashOf,
    seal,
    refuse,
    open: opener(seal, refuse),
    close: async () => {},
  };
}

function opener(seal: Seal, refuse: Shared['refuse']): Shared['open'] {
  return (use, key, stored) => {
    if (stored === null) return null;
    if (typeof stored === 'number') {
      refuse(use, 'bounds', key);
      return null;
    }
    const value = seal.open(key, stored);
    if (value === null) refuse(use, 'forged', key);
    return value;
  };
}

/** How often a refused value is said in the log: one who writes to Redis must not flood it. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

function refuser(registry: Registry, log: SharedLog): Shared['refuse'] {
  const refused = new Counter({
    name: 'redis_values_refused_total',
    help:
      'Values read back from Redis and not used: not sealed by this fleet (forged, altered or moved), or outside what the ' +
      'configuration allows (bounds).',
    labelNames: ['use', 'reason'],
    registers: [registry],
  });
  const sayNow = onceEvery(REFUSAL_LOG_INTERVAL_MS);
  return (use, reason, key) => {
    refused.inc({ use, reason });
    if (sayNow() === null) return;
    log.warn(
      { event: 'redis_value_refused', use, reason, key },
      `A value read from Redis was refused (${reason}): it was not used. Something other than this fleet writes to Redis, or instances ` +
        `hold different secrets.`,
    );
  };
}

function errorCode(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}

/** ioredis's messages name the host and port, never the URL's password; the URL itself is never logged. */
function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
