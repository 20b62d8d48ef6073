import type { Redis } from 'ioredis';
import { scriptCommands, type Shared } from '../redis/shared.js';

/**
 * The appKeys the upstream refused lately, by their keyed hash (Shared.hashOf): in this instance's
 * memory, and with `redis.url` in the fleet's, so that every instance stops serving shared pages to a
 * key once one of them saw it refused. Redis holds one sorted set, each hash scored with when it is
 * forgotten; each instance reads it once a second while `active` (every other use of the memory is
 * synchronous, and so free on the path of a call). A hash is no secret and is not sealed: a hash put
 * there by anything but the fleet only makes that key's calls go to the upstream, which checks them;
 * a date further than `memoryMs` ahead is taken at that bound, and said.
 */
export interface RefusedKeys {
  has(hash: string): boolean;
  /** Remembered for `memoryMs`, here and for the fleet. */
  add(hash: string): void;
  /** The upstream took the key again: forgotten, here and (when this instance remembered it) for the fleet. */
  delete(hash: string): void;
  readonly size: number;
  close(): void;
}

export interface RefusedKeysOptions {
  readonly shared: Shared;
  /** How long a refused key is remembered: read each time, a reload may change it. */
  readonly memoryMs: () => number;
  /** Whether anything asks (pages are shared across keys): only then is the fleet's set read. */
  readonly active: () => boolean;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

/** Keys remembered at most: one who sends made-up keys must not fill the memory. */
const MAX_REFUSED_KEYS = 10_000;
/** How often the fleet's set is read. */
const SYNC_INTERVAL_MS = 1000;

/** A member is a keyed hash (Shared.hashOf): 64 hex digits. */
const HASH_LENGTH = 64;

/**
 * KEYS the set; ARGV now, the most members read, a member's length. Drops the members past their
 * date, and gives {members and scores, how many were dropped for their length}: a member of another
 * length is no hash of the fleet's and is dropped inside Redis, never sent (ten thousand of a
 * megabyte each would be read by every instance once a second).
 */
const READ_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local listed = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out, dropped = {}, 0
for i = 1, #listed, 2 do
  if #listed[i] == tonumber(ARGV[3]) then
    out[#out + 1] = listed[i]
    out[#out + 1] = listed[i + 1]
  else
    redis.call('ZREM', KEYS[1], listed[i])
    dropped = dropped + 1
  end
end
return {out, dropped}
`;

const commands = scriptCommands<{
  refusedKeysRead(set: string, now: string, most: string, length: string): Promise<[string[], number]>;
}>({ refusedKeysRead: { keys: 1, lua: READ_SCRIPT } });

interface Remembered {
  /** Epoch milliseconds. */
  readonly until: number;
  /** Learnt from the fleet's set, and so forgotten once the set no longer holds it. */
  readonly fromFleet: boolean;
}

export function createRefusedKeys({ shared, memoryMs, active, now }: RefusedKeysOptions): RefusedKeys {
  /** The oldest first. */
  const remembered = new Map<string, Remembered>();
  const setKey = shared.key('refused-keys');

  const keep = (hash: string, entry: Remembered): void => {
    remembered.delete(hash);
    remembered.set(hash, entry);
    if (remembered.size > MAX_REFUSED_KEYS) remembered.delete(remembered.keys().next().value as string);
  };

  const sync = async (): Promise<void> => {
    const at = now();
    const latest = at + memoryMs();
    const read = await shared.run(
      'cache',
      (redis) => commands(redis).refusedKeysRead(setKey, String(at), String(MAX_REFUSED_KEYS), String(HASH_LENGTH)),
      () => null,
    );
    if (read === null) return;
    const [listed, dropped] = read;
    if (dropped > 0) shared.refuse('cache', 'bounds', setKey);
    const fleet = new Set<string>();
    for (let i = 0; i + 1 < listed.length; i += 2) {
      const hash = listed[i] as string;
      const until = Number(listed[i + 1]);
      if (until > latest) shared.refuse('cache', 'bounds', setKey);
      fleet.add(hash);
      const own = remembered.get(hash);
      if (own === undefined || own.fromFleet) keep(hash, { until: Math.min(until, latest), fromFleet: true });
    }
    for (const [hash, entry] of remembered) if (entry.fromFleet && !fleet.has(hash)) remembered.delete(hash);
  };

  const timer = shared.configured
    ? setInterval(() => {
        if (active()) void sync();
      }, SYNC_INTERVAL_MS)
    : null;
  timer?.unref();

  const write = (command: (redis: Redis) => Promise<unknown>): void => {
    void shared.run('cache', command, () => null);
  };

  return {
    has(hash) {
      const entry = remembered.get(hash);
      if (entry === undefined) return false;
      if (entry.until > now()) return true;
      remembered.delete(hash);
      return false;
    },
    add(hash) {
      const until = now() + memoryMs();
      keep(hash, { until, fromFleet: false });
      if (!shared.configured) return;
      write((redis) =>
        redis
          .multi()
          .zadd(setKey, until, hash)
          .zremrangebyrank(setKey, 0, -MAX_REFUSED_KEYS - 1)
          .pexpire(setKey, memoryMs())
          .exec(),
      );
    },
    delete(hash) {
      if (!remembered.delete(hash) || !shared.configured) return;
      write((redis) => redis.zrem(setKey, hash));
    },
    get size() {
      return remembered.size;
    },
    close() {
      if (timer !== null) clearInterval(timer);
    },
  };
}
