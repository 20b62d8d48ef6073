import { setMaxListeners } from 'node:events';
import { assembleAll, assembleWindow, totalItems } from '../translate/assemble.js';
import { listKey, listPages, pageCount, type AllPagesPlan, type Plan, type UpstreamRequest } from '../translate/plan.js';
import { releasePage, type Page } from '../xml/compact.js';
import { UpstreamBusy } from '../errors.js';
import type { Shared } from '../redis/shared.js';
import { createPageCounts, sharePageCounts, type PageCounts } from './page-counts.js';
import { type FetchOptions, type FetchPage, fetchOptionsWith } from './fetch.js';

/**
 * Carries out a plan: fetches its pages with bounded concurrency and hands them to the pure
 * assemblers. Every rule about what to fetch and how to put it together is in src/translate.
 */

export interface ExecuteLimits {
  /** Upstream requests of one call in flight at once (`upstream.maxConcurrentPages`). */
  readonly maxConcurrentPages: number;
  /** Page counts of whole lists seen recently; without it, each list starts from its first page. */
  readonly pageCounts?: PageCounts;
}

/**
 * Carries out a plan through `fetch`, each page with the call's `options` (whose signal cancels every
 * request of the call): the result of the call, or the error the web method would have thrown.
 */
export type PlanFetcher = (plan: Plan, fetch: FetchPage, options: FetchOptions) => Promise<Page>;

/** Lists remembered: a minute is long enough for a client paging through stores, short enough to follow a catalog. */
const PAGE_COUNT_MEMORY = { maxEntries: 10_000, maxAgeMs: 60_000 };

/**
 * `executePlan` with the service's limits and one memory of list lengths for all its calls: the
 * fleet's when `shared` has Redis (`redis.url`), this instance's otherwise and while Redis is away.
 */
export function createPlanFetcher(maxConcurrentPages: number, shared?: Shared): PlanFetcher {
  const local = createPageCounts(PAGE_COUNT_MEMORY);
  const pageCounts = shared === undefined ? local : sharePageCounts(shared, local, PAGE_COUNT_MEMORY.maxAgeMs);
  return (plan, fetch, options) => executePlan(plan, fetch, options, { maxConcurrentPages, pageCounts });
}

export function executePlan(plan: Plan, fetch: FetchPage, options: FetchOptions, limits: ExecuteLimits): Promise<Page> {
  switch (plan.kind) {
    // The page's own promise, not one an async function would wrap it in: a cached page is then a
    // turn of the microtask queue from its call, not three.
    case 'single':
      return fetch(plan.request, options);
    case 'window':
      return fetchAll(plan.requests, fetch, options, limits).then((pages) =>
        released(pages, assembleWindow(pages, plan.window, plan.run, plan.shape)),
      );
    case 'allPages':
      return fetchList(plan, fetch, options, limits).then((pages) => released(pages, assembleAll(pages, plan.pageSize, plan.shape)));
  }
}

/** `assembled`, once the pages it was made of are given back (src/xml/pool.ts): it holds copies of what it took. */
function released(pages: readonly Page[], assembled: Page): Page {
  for (const page of pages) releasePage(page);
  return assembled;
}

/**
 * Every page of a whole list. Its first page's total says how many there are; when a recent call
 * saw the list, all the pages it had are asked for at once, then any the total says are missing,
 * and any beyond the total are dropped. A list not seen before costs what it always did.
 */
async function fetchList(plan: AllPagesPlan, fetch: FetchPage, options: FetchOptions, limits: ExecuteLimits): Promise<Page[]> {
  const key = listKey(plan);
  const known = (await limits.pageCounts?.get(key, plan.maxPages)) ?? 1;
  let pages: Page[] | null = null;
  if (known > 1) {
    try {
      pages = await fetchAll(listPages(plan, 0, known), fetch, options, limits);
    } catch (err) {
      // A page past a list that shrank may be refused: go the way a list not seen before goes
      // (but not past the upstream budget, which would only refuse again).
      if (options.signal.aborted || err instanceof UpstreamBusy) throw err;
    }
  }
  pages ??= [await fetch(plan.first, options)];
  const needed = pageCount(plan, totalItems(pages[0] as Page, plan.shape));
  // Remembered while the rest of the list is fetched (a shared memory answers later; it never rejects).
  const remembered = limits.pageCounts?.set(key, needed);
  if (needed <= pages.length) {
    await remembered;
    return pages.slice(0, needed);
  }
  const [rest] = await Promise.all([fetchAll(listPages(plan, pages.length, needed), fetch, options, limits), remembered]);
  return [...pages, ...rest];
}

/**
 * Fetches every request, at most `maxConcurrentPages` at a time, pages in request order. The first
 * failure cancels the requests still running and keeps the rest from starting.
 */
async function fetchAll(
  requests: readonly UpstreamRequest[],
  fetch: FetchPage,
  options: FetchOptions,
  { maxConcurrentPages }: ExecuteLimits,
): Promise<Page[]> {
  if (requests.length === 0) return [];
  const failed = new AbortController();
  const combined = AbortSignal.any([options.signal, failed.signal]);
  const each = fetchOptionsWith(options, { signal: combined });
  // undici listens on it for each request in flight and again for its body: up to twice
  // `maxConcurrentPages` at once is expected, not a leak.
  setMaxListeners(2 * maxConcurrentPages + 2, combined);
  const results: Page[] = new Array(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length && !combined.aborted) {
      const index = next++;
      try {
        results[index] = await fetch(requests[index] as UpstreamRequest, each);
      } catch (err) {
        failed.abort(err);
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(maxConcurrentPages, requests.length) }, worker));
  if (combined.aborted) throw combined.reason;
  return results;
}
