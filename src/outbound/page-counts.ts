import { SEAL_BYTES } from '../redis/seal.js';
import { boundedReads, type BoundedValue, type Shared } from '../redis/shared.js';

/** A count's digits at most: no call fetches more than 10,000 pages (upstream.maxPagesPerCall). */
const MAX_COUNT_DIGITS = 16;

/**
 * How many pages each whole list had when it was last fetched, so that the next call for it can ask
 * for every page at once instead of waiting for the first page's total. A hint, never trusted: the
 * first page's total still decides (src/outbound/execute.ts). Bounded in size and age. Kept by this
 * instance (`createPageCounts`) or by the fleet in Redis (`sharePageCounts`), which may answer later.
 */
export interface PageCounts {
  /** The count remembered for `key`; none above `most` (`plan.maxPages`), which no call could have seen. */
  get(key: string, most: number): number | undefined | Promise<number | undefined>;
  set(key: string, count: number): void | Promise<void>;
}

/** The memory of one instance, answering at once. */
export interface LocalPageCounts extends PageCounts {
  get(key: string, most: number): number | undefined;
  set(key: string, count: number): void;
}

export function createPageCounts({ maxEntries, maxAgeMs }: { readonly maxEntries: number; readonly maxAgeMs: number }): LocalPageCounts {
  const entries = new Map<string, { readonly count: number; readonly at: number }>();
  return {
    get(key, most) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (performance.now() - entry.at > maxAgeMs) {
        entries.delete(key);
        return undefined;
      }
      return entry.count <= most ? entry.count : undefined;
    },
    set(key, count) {
      // Re-inserted at the end: the Map's order is the age order, so the oldest goes first.
      entries.delete(key);
      entries.set(key, { count, at: performance.now() });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
  };
}

/**
 * The fleet's memory of page counts in Redis (`redis.url`), each for `maxAgeMs`, with this instance's
 * own (`local`) written too and answering whenever Redis cannot (src/redis/shared.ts). A list's key
 * holds its appKey: Redis gets a hash of it (Shared.hashOf). A count is sealed (Shared.seal): one not
 * sealed by the fleet for its key, or not a whole number of pages a call may fetch, is refused and
 * this instance's own answers; a forged count would have a call ask the upstream for that many pages.
 * Neither method ever rejects.
 */
export function sharePageCounts(shared: Shared, local: LocalPageCounts, maxAgeMs: number): PageCounts {
  if (!shared.configured) return local;
  const redisKey = (key: string): string => shared.key('pages', shared.hashOf(key));
  /** The count sealed in `stored`, or undefined (refused) when it is not the fleet's or out of bounds. */
  const countIn = (key: string, stored: BoundedValue, most: number): number | undefined => {
    const opened = shared.open('pageCounts', key, stored);
    if (opened === null) return undefined;
    const count = Number(opened.toString('latin1'));
    if (Number.isSafeInteger(count) && count > 0 && count <= most) return count;
    shared.refuse('pageCounts', 'bounds', key);
    return undefined;
  };
  return {
    get: (key, most) =>
      shared.run(
        'pageCounts',
        async (redis) => {
          const at = redisKey(key);
          // A count is a few digits: a larger value, or another type, is refused inside Redis, unsent.
          const stored = await boundedReads(redis).boundedGetBuffer(at, SEAL_BYTES + MAX_COUNT_DIGITS);
          return countIn(at, stored, most) ?? local.get(key, most);
        },
        () => local.get(key, most),
      ),
    async set(key, count) {
      local.set(key, count);
      await shared.run(
        'pageCounts',
        async (redis) => {
          const at = redisKey(key);
          await redis.set(at, shared.seal.close(at, Buffer.from(String(count), 'latin1')), 'PX', maxAgeMs);
        },
        () => undefined,
      );
    },
  };
}
