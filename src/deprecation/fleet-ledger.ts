import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Shared } from '../redis/shared.js';
import { DEFAULT_MAX_ENTRIES, FOLDED_CLIENT, Ledger, OUTCOMES, type LedgerEntry, type LedgerHit } from './ledger.js';

/**
 * The fleet's ledger in Redis (docs/fleet.md), so that `GET /ledger` on any instance shows who calls
 * what across all of them. Each instance counts its calls in a ledger of its own that is not yet
 * written (`pending`) and merges it into Redis once a second, entry by entry, in one script each: a
 * call is never a Redis round trip. While Redis is away the pending ledger keeps counting (bounded as
 * every ledger is) and is merged when Redis is back, so no call is lost from the fleet's count;
 * reading falls back to the instance's own ledger, and `/ledger` says which it shows.
 *
 * In Redis: a hash per entry (client × operation × binding, keyed by a hash of the three), a set of
 * them, a set of the unnamed callers' entries (capped as a live ledger is: past `maxEntries`, new
 * unnamed callers are counted under `other`) and the count of folded calls.
 */

export interface FleetLedger {
  add(hit: LedgerHit, at: number): void;
  /** The fleet's ledger, calls not yet merged included; null when Redis cannot be read. */
  read(): Promise<Ledger | null>;
  /** Merges what is pending now (also done every `flushIntervalMs`). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface FleetLedgerOptions {
  readonly maxEntries?: number;
  readonly flushIntervalMs?: number;
}

const FLUSH_INTERVAL_MS = 1000;

/**
 * Merges one entry: KEYS entry, index, unnamed set, folded counter, the `other` entry of the same
 * operation and binding; ARGV client, configured (1/0), operation, binding, firstSeen, lastSeen,
 * calls, the four outcomes, example at (0: none), example successor, maxEntries.
 */
const MERGE_ENTRY = `
local key = KEYS[1]
local client = ARGV[1]
if redis.call('EXISTS', key) == 0 then
  if ARGV[2] == '0' and client ~= '${FOLDED_CLIENT}' then
    if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[14]) then
      redis.call('INCRBY', KEYS[4], ARGV[7])
      key = KEYS[5]
      client = '${FOLDED_CLIENT}'
    else
      redis.call('SADD', KEYS[3], key)
    end
  end
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'client', client, 'configured', client == ARGV[1] and ARGV[2] or '0', 'operation', ARGV[3], 'binding', ARGV[4],
      'firstSeen', ARGV[5], 'lastSeen', ARGV[6], 'calls', 0, 'ok', 0, 'fault', 0, 'shed', 0, 'refused', 0, 'exampleAt', 0)
    redis.call('SADD', KEYS[2], key)
  end
end
if tonumber(redis.call('HGET', key, 'firstSeen')) > tonumber(ARGV[5]) then redis.call('HSET', key, 'firstSeen', ARGV[5]) end
if tonumber(redis.call('HGET', key, 'lastSeen')) < tonumber(ARGV[6]) then redis.call('HSET', key, 'lastSeen', ARGV[6]) end
redis.call('HINCRBY', key, 'calls', ARGV[7])
redis.call('HINCRBY', key, 'ok', ARGV[8])
redis.call('HINCRBY', key, 'fault', ARGV[9])
redis.call('HINCRBY', key, 'shed', ARGV[10])
redis.call('HINCRBY', key, 'refused', ARGV[11])
if tonumber(ARGV[12]) > 0 and tonumber(ARGV[12]) >= tonumber(redis.call('HGET', key, 'exampleAt')) then
  redis.call('HSET', key, 'exampleAt', ARGV[12], 'example', ARGV[13])
end
return 1
`;

export function createFleetLedger(shared: Shared, options: FleetLedgerOptions = {}): FleetLedger | null {
  if (!shared.configured) return null;
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const keys = {
    index: shared.key('ledger', 'index'),
    unnamed: shared.key('ledger', 'unnamed'),
    folded: shared.key('ledger', 'folded'),
    entry: (client: string, operation: string, binding: string): string =>
      shared.key('ledger', 'entry', createHash('sha256').update(`${client}\u0000${operation}\u0000${binding}`).digest('hex').slice(0, 32)),
  };
  let pending = new Ledger(maxEntries);
  let flushing: Promise<void> | null = null;

  const merge = async (redis: Redis, entries: readonly LedgerEntry[]): Promise<void> => {
    const pipeline = redis.pipeline();
    for (const entry of entries) {
      pipeline.eval(
        MERGE_ENTRY,
        5,
        keys.entry(entry.client, entry.operation, entry.binding),
        keys.index,
        keys.unnamed,
        keys.folded,
        keys.entry(FOLDED_CLIENT, entry.operation, entry.binding),
        entry.client,
        entry.configured ? '1' : '0',
        entry.operation,
        entry.binding,
        String(entry.firstSeen),
        String(entry.lastSeen),
        String(entry.calls),
        ...OUTCOMES.map((outcome) => String(entry.outcomes[outcome])),
        String(entry.example?.at ?? 0),
        entry.example?.successor ?? '',
        String(maxEntries),
      );
    }
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([err]) => err !== null);
    if (failed) throw failed[0];
  };

  const flush = async (): Promise<void> => {
    // One merge at a time: a slow Redis must not pile merges up behind each other.
    if (flushing !== null) return flushing;
    const entries = pending.entries();
    if (entries.length === 0) return;
    const folded = pending.folded;
    pending = new Ledger(maxEntries);
    flushing = shared
      .run(
        'ledger',
        async (redis) => {
          await merge(redis, entries);
          if (folded > 0) await redis.incrby(keys.folded, folded);
          return true;
        },
        () => false,
      )
      .then((merged) => {
        // Not merged (Redis away): counted again with what came since, merged when Redis is back.
        // A merge cut short may have counted some entries already: counted twice is the lesser loss.
        if (!merged) for (const entry of entries) pending.absorb(entry);
      })
      .finally(() => {
        flushing = null;
      });
    return flushing;
  };

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    add(hit, at) {
      pending.add(hit, at);
    },
    flush,
    async read() {
      const stored = await shared.run(
        'ledger',
        async (redis) => {
          const members = await redis.smembers(keys.index);
          const pipeline = redis.pipeline();
          for (const member of members) pipeline.hgetall(member);
          const [results, folded] = await Promise.all([pipeline.exec(), redis.get(keys.folded)]);
          return { hashes: (results ?? []).map(([, hash]) => hash as Record<string, string>), folded: Number(folded ?? 0) };
        },
        () => null,
      );
      if (stored === null) return null;
      const ledger = new Ledger(maxEntries, stored.folded + pending.folded);
      for (const hash of stored.hashes) {
        const entry = entryOf(hash);
        if (entry !== null) ledger.absorb(entry);
      }
      for (const entry of pending.entries()) ledger.absorb(entry);
      return ledger;
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

/** An entry as the script stored it; null for a hash that is not one (gone between the two reads). */
function entryOf(hash: Record<string, string>): LedgerEntry | null {
  const { client, operation, binding } = hash;
  if (client === undefined || operation === undefined || binding === undefined) return null;
  const number = (field: string): number => Number(hash[field] ?? 0);
  const exampleAt = number('exampleAt');
  return {
    client,
    configured: hash.configured === '1',
    operation,
    binding,
    firstSeen: number('firstSeen'),
    lastSeen: number('lastSeen'),
    calls: number('calls'),
    outcomes: { ok: number('ok'), fault: number('fault'), shed: number('shed'), refused: number('refused') },
    example: exampleAt > 0 && hash.example !== undefined ? { at: exampleAt, successor: hash.example } : null,
  };
}
