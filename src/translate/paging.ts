import type { Config } from '../config/schema.js';
import { TranslationError } from '../errors.js';
import { present, type ItemWindow } from '../operations.js';

/**
 * Paging arithmetic: which upstream pages answer an item window `[offset, offset + count)`.
 *
 * Upstream pages all have one size `s`; page `k` (0-based) holds items `[k·s, (k+1)·s)`. The plan
 * picks the size up to the profile maximum that covers the window with the fewest pages (one
 * request whenever some size can), and among those the one that fetches the fewest items.
 */

export interface PageRun {
  readonly pageSize: number;
  /** 0-based index of the first page (the profile's first page number is added when requesting). */
  readonly firstPage: number;
  readonly pageCount: number;
}

/** Pages of size `size` that a window touches. */
function pagesFor(window: ItemWindow, size: number): { first: number; count: number } {
  const last = window.offset + Math.max(window.count, 1) - 1;
  const first = Math.floor(window.offset / size);
  return { first, count: Math.floor(last / size) - first + 1 };
}

export function planPages(window: ItemWindow, maxPageSize: number): PageRun {
  let best: PageRun | undefined;
  for (let size = 1; size <= maxPageSize; size++) {
    const { first, count } = pagesFor(window, size);
    if (best === undefined || count < best.pageCount || (count === best.pageCount && count * size < best.pageCount * best.pageSize)) {
      best = { pageSize: size, firstPage: first, pageCount: count };
    }
  }
  if (best === undefined) throw new RangeError(`maxPageSize must be at least 1, got ${maxPageSize}`);
  return best;
}

/** Where the window starts inside the concatenation of the run's pages. */
export function sliceStart(window: ItemWindow, run: PageRun): number {
  return window.offset - run.firstPage * run.pageSize;
}

// --- Legacy windows (docs/upstream.md §11.3) ----------------------------------------------------

type PagingConfig = Pick<Config['paging'], 'legacyPageIndexBase' | 'startResults' | 'defaultMaxResults'>;

/** StoreLookupPaged's `pageIndex`/`pageSize` as an item window; the index counts from the configured base. */
export function legacyPageWindow(pageIndex: number, pageSize: number, paging: PagingConfig): ItemWindow {
  const base = paging.legacyPageIndexBase;
  if (pageIndex < base) throw new TranslationError({ code: 'page_index_below_base', pageIndex, base });
  if (pageSize < 1) throw new TranslationError({ code: 'page_size_below_one', pageSize });
  return { offset: (pageIndex - base) * pageSize, count: pageSize };
}

/**
 * AdvancedSearch's `startResults`/`maxResults` as an item window: an item offset (or, configured so,
 * a page index of `maxResults` items). `null` when the call names neither.
 */
export function itemWindow(startResults: string | null, maxResults: string | null, paging: PagingConfig): ItemWindow | null {
  const start = nonNegativeInteger('startResults', startResults);
  const max = nonNegativeInteger('maxResults', maxResults);
  if (start === null && max === null) return null;
  const count = max ?? paging.defaultMaxResults;
  return { offset: paging.startResults === 'page' ? (start ?? 0) * count : (start ?? 0), count };
}

/** A legacy paging value: a whole number ≥ 0, written the way a form sends it; empty is absent. */
function nonNegativeInteger(name: string, value: string | null): number | null {
  const text = present(value);
  if (text === null) return null;
  if (!/^\s*\+?\d{1,9}\s*$/.test(text)) throw new TranslationError({ code: 'invalid_paging_value', name, value: text });
  return Number(text);
}
