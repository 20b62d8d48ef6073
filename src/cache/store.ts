import type { Redis } from 'ioredis';
import { MAX_LOCK_TTL_MS } from '../config/schema.js';
import type { UpstreamPath } from '../operations.js';
import { boundedReads, scriptCommands, type BoundedValue, type Shared } from '../redis/shared.js';
import type { CompactDocument } from '../xml/compact.js';
import { largestEntry, openEntry, sealEntry, type CachedPage } from './entry.js';
import { keepUntil, type Deadlines, type PageCaching } from './freshness.js';
import { RecencyMap } from '../memo/recency.js';

/**
 * Where cached pages are kept: this instance's memory (least recently used evicted first, bounded in
 * bytes) and, when `redis.url` is set, Redis for the fleet, each page for as long as it may still be
 * served, sealed and bounded (src/cache/entry.ts). Keys are already hashes (src/cache/key.ts): nothing
 * here holds an appKey. Redis down or slow is a miss there, never a failure (`Shared.run`); so is a
 * page Redis holds that the fleet did not seal for its key, or that is out of bounds (`Shared.refuse`).
 */

/**
 * `kept`: whether this instance's memory holds the page, so that the replies written from it may be
 * kept with it (src/memo/replies.ts) for as long as it does; a page read from Redis each time is not.
 */
export function pageOf(cached: CachedPage, kept: boolean): CompactDocument {
  if (!kept) return { type: 'compact', bytes: cached.bytes, rootName: cached.rootName };
  let page = keptPages.get(cached);
  if (page === undefined) {
    page = Object.freeze({ type: 'compact', bytes: cached.bytes, rootName: cached.rootName, kept: true });
    keptPages.set(cached, page);
  }
  return page;
}

/** The page of each cached page memory holds, as every call it serves gets it: one object, not two more a hit. */
const keptPages = new WeakMap<CachedPage, CompactDocument>();

/** What a page costs in memory besides its bytes: the entry, its key, its validators. */
const ENTRY_OVERHEAD_BYTES = 256;

const sizeOf = (page: CachedPage): number => page.bytes.length + ENTRY_OVERHEAD_BYTES;

/** The instance's own pages, the least recently used evicted first once `maxBytes` are held. */
export class MemoryPages {
  readonly #pages = new RecencyMap<CachedPage>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#pages.size;
  }

  get(key: string): CachedPage | undefined {
    return this.#pages.get(key);
  }

  /** Whether `page` is the one held under `key`. */
  holds(key: string, page: CachedPage): boolean {
    return this.#pages.peek(key) === page;
  }

  set(key: string, page: CachedPage): void {
    this.delete(key);
    // A page larger than the whole cache is not kept: it would only evict everything else.
    if (sizeOf(page) > this.#maxBytes) return;
    this.#pages.set(key, page);
    this.#bytes += sizeOf(page);
    while (this.#bytes > this.#maxBytes) {
      const oldest = this.#pages.oldest();
      if (oldest === undefined) break;
      this.#pages.delete(oldest[0]);
      this.#bytes -= sizeOf(oldest[1]);
    }
  }

  delete(key: string): void {
    const page = this.#pages.peek(key);
    if (page === undefined) return;
    this.#pages.delete(key);
    this.#bytes -= sizeOf(page);
  }
}

/** How often an instance waiting for another's page looks for it. */
const POLL_INTERVAL_MS = 20;

export interface FleetPages {
  /** The page of `path` Redis holds; null when it holds none (or none it may serve) or cannot be asked. */
  get(key: string, path: UpstreamPath): Promise<CachedPage | null>;
  /** Keeps the page for the fleet until it may no longer be served; resolves once done (or given up). */
  put(key: string, page: CachedPage, now: number): Promise<void>;
  /**
   * Whether this instance is the one to fetch the page (always, when Redis cannot say), holding the
   * fleet's lock on it for `ttlMs` at most.
   */
  lock(key: string, token: string, ttlMs: number): Promise<boolean>;
  unlock(key: string, token: string): Promise<void>;
  /**
   * A page stored after `newerThan` by the instance holding the lock, within `waitMs`; null when none
   * came, the lock went without one (its holder failed or could not keep the page), or Redis cannot say.
   */
  waitFor(key: string, path: UpstreamPath, newerThan: number, waitMs: number, signal: AbortSignal): Promise<CachedPage | null>;
}

/** What a page read back from Redis may be now (src/cache/entry.ts). */
export interface PageBounds {
  /** `upstream.maxResponseBytes`. */
  readonly maxPageBytes: number;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** The deadlines of a page of `path` that came at `storedAt` with `caching`, by the configuration now. */
  readonly deadlines: (path: UpstreamPath, storedAt: number, caching: PageCaching) => Deadlines | null;
}

/**
 * KEYS: the lock. ARGV: this instance's token, the lock's TTL (ms), the longest TTL any instance may
 * hold one for. Takes the lock unless another holds it. A lock held longer than any instance can take
 * one for, or for ever, is not another's: whoever wrote it would have every miss of the page wait for a
 * page that never comes. It is deleted, and said. Not this instance's own TTL: while a change of
 * `cache.lockTtlMs` reaches the fleet, instances hold locks of both. Returns {taken, refused}, each 1 or 0.
 */
const LOCK_SCRIPT = `
local refused = 0
local held = redis.call('PTTL', KEYS[1])
if held == -1 or held > tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1])
  refused = 1
end
local taken = redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
return {taken and 1 or 0, refused}
`;

const commands = scriptCommands<{ pageCacheLock(lock: string, token: string, ttlMs: string, maxTtlMs: string): Promise<[number, number]> }>(
  {
    pageCacheLock: { keys: 1, lua: LOCK_SCRIPT },
  },
);

/** Releases a lock only if it is still this instance's (it may have expired and been taken since). */
const UNLOCK_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

type BoundedMulti = ReturnType<Redis['multi']> & { boundedGetBuffer(key: string, largest: number): ReturnType<Redis['multi']> };

export function fleetPages(shared: Shared, bounds: PageBounds): FleetPages {
  const pageKey = (key: string): string => shared.key('page', key);
  const lockKey = (key: string): string => shared.key('page-lock', key);
  /** The page in `stored`, or null: refused, counted and said (at most once a minute). */
  const largest = largestEntry(bounds.maxPageBytes);
  const read = (key: string, path: UpstreamPath, stored: BoundedValue): CachedPage | null => {
    if (stored === null) return null;
    if (typeof stored === 'number') {
      shared.refuse('cache', 'bounds', pageKey(key));
      return null;
    }
    const opened = openEntry(shared.seal, pageKey(key), stored, {
      maxPageBytes: bounds.maxPageBytes,
      now: bounds.now(),
      deadlines: (storedAt, caching) => bounds.deadlines(path, storedAt, caching),
    });
    if (opened.kind === 'page') return opened.page;
    shared.refuse('cache', opened.reason, pageKey(key));
    return null;
  };
  return {
    async get(key, path) {
      const stored = await shared.run(
        'cache',
        (redis) => boundedReads(redis).boundedGetBuffer(pageKey(key), largest),
        () => null,
      );
      return read(key, path, stored);
    },
    async put(key, page, now) {
      const ttl = keepUntil(page) - now;
      if (ttl <= 0) return;
      const sealed = sealEntry(shared.seal, pageKey(key), page);
      if (sealed === null) return;
      await shared.run(
        'cache',
        (redis) => redis.set(pageKey(key), sealed, 'PX', ttl),
        () => null,
      );
    },
    async lock(key, token, ttlMs) {
      const [taken, refused] = await shared.run(
        'lock',
        (redis) => commands(redis).pageCacheLock(lockKey(key), token, String(ttlMs), String(MAX_LOCK_TTL_MS)),
        () => [1, 0],
      );
      if (refused === 1) shared.refuse('lock', 'bounds', lockKey(key));
      return taken === 1;
    },
    async unlock(key, token) {
      await shared.run(
        'lock',
        (redis) => redis.eval(UNLOCK_SCRIPT, 1, lockKey(key), token),
        () => 0,
      );
    },
    async waitFor(key, path, newerThan, waitMs, signal) {
      const until = performance.now() + waitMs;
      while (performance.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        if (signal.aborted) throw signal.reason;
        const seen = await shared.run(
          'lock',
          async (redis) => {
            // The script's command is defined on the connection, and so on its transactions too.
            const multi = boundedReads(redis).multi() as BoundedMulti;
            const [stored, locked] = (await multi.boundedGetBuffer(pageKey(key), largest).exists(lockKey(key)).exec()) ?? [];
            return { stored: (stored?.[1] as BoundedValue) ?? null, locked: locked?.[1] === 1 };
          },
          () => null,
        );
        if (seen === null) return null;
        const page = read(key, path, seen.stored);
        if (page !== null && page.storedAt > newerThan) return page;
        if (!seen.locked) return null;
      }
      return null;
    },
  };
}
