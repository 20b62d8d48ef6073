import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { scriptCommands, type Shared } from '../redis/shared.js';
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
/** Entries merged or read in one pipeline: a long one would outlast redis.commandTimeoutMs and look like an outage. */
const MERGE_CHUNK = 200;
/** How long Redis remembers a merge was made, so that sending it again counts nothing twice. */
const MERGE_MARKER_MS = 3_600_000;

/** KEYS the folded counter and the merge's marker; ARGV the calls folded. */
const MERGE_FOLDED = `
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ${MERGE_MARKER_MS}) then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
return 1
`;

interface LedgerCommands {
  fleetLedgerMerge(...keysAndArgs: string[]): Promise<number>;
  fleetLedgerFolded(folded: string, marker: string, calls: string): Promise<number>;
}

/** A merge not yet known to be made: its entry (or folded count) and the id that makes it happen once. */
type Unmerged = { readonly id: string; readonly entry: LedgerEntry } | { readonly id: string; readonly folded: number };

/**
 * Merges one entry, once: KEYS entry, index, unnamed set, folded counter, the `other` entry of the
 * same operation and binding, the merge's own marker; ARGV client, configured (1/0), operation,
 * binding, firstSeen, lastSeen, calls, the four outcomes, example at (0: none), example successor,
 * maxEntries. Returns 0 for a merge already made (its reply was lost, and it is sent again).
 */
const MERGE_ENTRY = `
if not redis.call('SET', KEYS[6], '1', 'NX', 'PX', ${MERGE_MARKER_MS}) then return 0 end
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

const commands = scriptCommands<LedgerCommands>({
  fleetLedgerMerge: { keys: 6, lua: MERGE_ENTRY },
  fleetLedgerFolded: { keys: 2, lua: MERGE_FOLDED },
});

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
  /**
   * Merges sent whose outcome is not known (a reply timed out, Redis went away mid-pipeline): sent
   * again, with the same ids, before anything newer. Redis makes each once.
   */
  let unmerged: Unmerged[] = [];
  const instance = randomUUID();
  let batches = 0;
  let flushing: Promise<void> | null = null;

  const send = (pipeline: ReturnType<Redis['pipeline']>, item: Unmerged): void => {
    const marker = shared.key('ledger', 'merged', item.id);
    if ('folded' in item) {
      (pipeline as unknown as LedgerCommands).fleetLedgerFolded(keys.folded, marker, String(item.folded));
      return;
    }
    const { entry } = item;
    (pipeline as unknown as LedgerCommands).fleetLedgerMerge(
      keys.entry(entry.client, entry.operation, entry.binding),
      keys.index,
      keys.unnamed,
      keys.folded,
      keys.entry(FOLDED_CLIENT, entry.operation, entry.binding),
      marker,
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
  };

  /** Sends `items` a chunk at a time; returns those whose merge is not known to be made. */
  const merge = async (redis: Redis, items: readonly Unmerged[]): Promise<Unmerged[]> => {
    commands(redis);
    const left: Unmerged[] = [];
    for (let from = 0; from < items.length; from += MERGE_CHUNK) {
      const chunk = items.slice(from, from + MERGE_CHUNK);
      const pipeline = redis.pipeline();
      for (const item of chunk) send(pipeline, item);
      const results = (await pipeline.exec()) ?? [];
      chunk.forEach((item, index) => {
        if (results[index]?.[0] !== null && results[index]?.[0] !== undefined) left.push(item);
      });
      if (results.length < chunk.length) left.push(...chunk.slice(results.length));
    }
    return left;
  };

  const flush = async (): Promise<void> => {
    // One merge at a time: a slow Redis must not pile merges up behind each other. While Redis is
    // away nothing is sent: the pending ledger keeps counting (bounded), merged when it is back.
    if (flushing !== null) return flushing;
    if (!shared.available() && unmerged.length === 0) return;
    const batch = `${instance}:${++batches}`;
    const fresh: Unmerged[] = pending.entries().map((entry, index) => ({ id: `${batch}:${index}`, entry }));
    if (pending.folded > 0) fresh.push({ id: `${batch}:folded`, folded: pending.folded });
    pending = new Ledger(maxEntries);
    const items = [...unmerged, ...fresh];
    if (items.length === 0) return;
    flushing = shared
      .run(
        'ledger',
        (redis) => merge(redis, items),
        () => items,
      )
      .then((left) => {
        unmerged = left;
        // Never more than a ledger's worth waiting: past it, counted again (the lesser loss is twice).
        if (unmerged.length > maxEntries) {
          for (const item of unmerged) if ('entry' in item) pending.absorb(item.entry);
          unmerged = [];
        }
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
          const [members, folded] = await Promise.all([redis.smembers(keys.index), redis.get(keys.folded)]);
          const hashes: Record<string, string>[] = [];
          // A chunk at a time, as merges are: ten thousand entries in one pipeline outlast a command timeout.
          for (let from = 0; from < members.length; from += MERGE_CHUNK) {
            const pipeline = redis.pipeline();
            for (const member of members.slice(from, from + MERGE_CHUNK)) pipeline.hgetall(member);
            for (const [err, hash] of (await pipeline.exec()) ?? []) {
              if (err !== null) throw err;
              hashes.push(hash as Record<string, string>);
            }
          }
          return { hashes, folded: Number(folded ?? 0) };
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
      for (const item of unmerged) if ('entry' in item) ledger.absorb(item.entry);
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
