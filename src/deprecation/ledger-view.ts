import { type Ledger, type LedgerEntry, sortEntries } from './ledger.js';

/**
 * A ledger as `GET /ledger` reads it: sorted and totalled once, so that a page of it costs what it
 * holds, not what the whole ledger holds. Made off the request path, or at most once a while.
 */

export interface LedgerTotals {
  readonly entries: number;
  readonly calls: number;
}

/** Entries largest first, and their totals. */
export interface SortedEntries {
  readonly entries: readonly LedgerEntry[];
  readonly totals: LedgerTotals;
}

export interface LedgerView {
  readonly maxEntries: number;
  readonly folded: number;
  readonly all: SortedEntries;
  /** The same for each client's entries alone. */
  readonly byClient: ReadonlyMap<string, SortedEntries>;
}

export function viewOf(ledger: Ledger): LedgerView {
  return viewOfEntries(ledger.entries(), ledger.maxEntries, ledger.folded);
}

/** The view of `entries`, one per client, operation and binding. */
export function viewOfEntries(entries: LedgerEntry[], maxEntries: number, folded: number): LedgerView {
  const all = sortEntries(entries);
  const byClient = new Map<string, LedgerEntry[]>();
  for (const entry of all) {
    const own = byClient.get(entry.client);
    if (own === undefined) byClient.set(entry.client, [entry]);
    else own.push(entry);
  }
  return {
    maxEntries,
    folded,
    all: sortedOf(all),
    byClient: new Map([...byClient].map(([client, entries]) => [client, sortedOf(entries)])),
  };
}

const sortedOf = (entries: readonly LedgerEntry[]): SortedEntries => ({
  entries,
  totals: { entries: entries.length, calls: entries.reduce((sum, entry) => sum + entry.calls, 0) },
});

/**
 * The view of `ledger`, made again when the one at hand is older than `maxAgeMs`: a ledger that
 * changes with every call would otherwise be sorted for every read.
 */
export function cachedView(ledger: Ledger, maxAgeMs: number): () => LedgerView {
  let made = Number.NEGATIVE_INFINITY;
  let view: LedgerView | null = null;
  return () => {
    const now = performance.now();
    if (view === null || now - made > maxAgeMs) {
      view = viewOf(ledger);
      made = now;
    }
    return view;
  };
}
