/**
 * How many pages each whole list had when it was last fetched, so that the next call for it can ask
 * for every page at once instead of waiting for the first page's total. A hint, never trusted: the
 * first page's total still decides (src/outbound/execute.ts). Bounded in size and age.
 */
export interface PageCounts {
  get(key: string): number | undefined;
  set(key: string, count: number): void;
}

export function createPageCounts({ maxEntries, maxAgeMs }: { readonly maxEntries: number; readonly maxAgeMs: number }): PageCounts {
  const entries = new Map<string, { readonly count: number; readonly at: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (performance.now() - entry.at > maxAgeMs) {
        entries.delete(key);
        return undefined;
      }
      return entry.count;
    },
    set(key, count) {
      // Re-inserted at the end: the Map's order is the age order, so the oldest goes first.
      entries.delete(key);
      entries.set(key, { count, at: performance.now() });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
  };
}
