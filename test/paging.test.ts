import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FetchOptions } from '../src/outbound/fetch.js';
import type { LegacyCall } from '../src/operations.js';
import { findOperation, legacyCall } from '../src/operations.js';
import { createCallAnswerer } from './support/call.js';
import { treeOf } from '../src/xml/compact.js';
import { planPages } from '../src/translate/paging.js';
import { listKey, targetOf, type AllPagesPlan, type UpstreamRequest } from '../src/translate/plan.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute } from '../src/xml/tree.js';
import { testConfig } from './support/config.js';
import { SEARCH_PAGES, STORE_PAGES, itemIds, pageDocument, pagedUpstream, range } from './support/pages.js';

/** Fewest pages of one size ≤ max covering the window, found by trying every size and page. */
function bruteForceMinimum(offset: number, count: number, max: number): number {
  const last = offset + Math.max(count, 1) - 1;
  let best = Infinity;
  for (let size = 1; size <= max; size++) {
    let pages = 0;
    for (let page = 0; page * size <= last; page++) if ((page + 1) * size > offset) pages++;
    best = Math.min(best, pages);
  }
  return best;
}

describe('planPages', () => {
  it.each([
    // offset, count, max → size, first page (0-based), pages
    { offset: 0, count: 10, max: 100, size: 10, first: 0, pages: 1 },
    { offset: 20, count: 10, max: 100, size: 10, first: 2, pages: 1 },
    { offset: 5, count: 10, max: 100, size: 15, first: 0, pages: 1 },
    { offset: 95, count: 10, max: 100, size: 15, first: 6, pages: 1 },
    { offset: 0, count: 100, max: 100, size: 100, first: 0, pages: 1 },
    { offset: 0, count: 250, max: 100, size: 84, first: 0, pages: 3 },
    { offset: 99, count: 151, max: 100, size: 84, first: 1, pages: 2 },
    { offset: 0, count: 0, max: 100, size: 1, first: 0, pages: 1 },
    { offset: 7, count: 1, max: 100, size: 1, first: 7, pages: 1 },
    { offset: 300, count: 256, max: 256, size: 139, first: 2, pages: 2 },
  ])('window [$offset, +$count) with max $max → $pages page(s) of $size from page $first', ({ offset, count, max, size, first, pages }) => {
    const run = planPages({ offset, count }, max);
    expect(run.pageCount).toBe(pages);
    expect(run.firstPage).toBe(first);
    expect(run.pageSize).toBe(size);
    // The chosen pages really cover the window.
    expect(run.firstPage * run.pageSize).toBeLessThanOrEqual(offset);
    expect((run.firstPage + run.pageCount) * run.pageSize).toBeGreaterThanOrEqual(offset + Math.max(count, 1));
  });

  it('one request whenever a single page size up to the maximum covers the window, else the fewest', () => {
    fc.assert(
      fc.property(fc.nat(5000), fc.nat(600), fc.integer({ min: 1, max: 300 }), (offset, count, max) => {
        const run = planPages({ offset, count }, max);
        expect(run.pageSize).toBeLessThanOrEqual(max);
        expect(run.firstPage * run.pageSize).toBeLessThanOrEqual(offset);
        expect((run.firstPage + run.pageCount) * run.pageSize).toBeGreaterThanOrEqual(offset + Math.max(count, 1));
        expect(run.pageCount).toBe(bruteForceMinimum(offset, count, max));
        expect(run.pageCount).toBeLessThanOrEqual(Math.ceil(Math.max(count, 1) / max) + 1);
      }),
      { numRuns: 300 },
    );
  });
});

const advancedSearch = findOperation('AdvancedSearch')!;
const storeLookupPaged = findOperation('StoreLookupPaged')!;

function advancedSearchCall(startResults: string | null, maxResults: string | null): LegacyCall {
  return legacyCall(advancedSearch, { query: 'dog', startResults, maxResults });
}

describe('AdvancedSearch windows, end to end through the planner and assembler', () => {
  const profile = SEARCH_PAGES;

  it('returns exactly the ideal slice with the minimum number of upstream requests', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(400),
        fc.nat(300),
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 0, max: 500 }),
        async (start, max, maxPageSize, total) => {
          const config = testConfig({
            paging: { profiles: { '/product.search.cp': { maxPageSize } } },
            upstream: { maxPagesPerCall: 10_000 },
          });
          const upstream = pagedUpstream(total, profile);
          const result = treeOf(await createCallAnswerer(config)(advancedSearchCall(String(start), String(max)), upstream));
          const expected = range(start, Math.min(total, start + max));
          expect(itemIds(result)).toEqual(expected);
          expect(attribute(result, 'startResult')).toBe(String(start));
          expect(attribute(result, 'resultLength')).toBe(String(expected.length));
          expect(attribute(result, 'totalDesigns')).toBe(String(total));
          expect(upstream.requests).toHaveLength(bruteForceMinimum(start, max, maxPageSize));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('asks for pages the way the endpoint counts them', async () => {
    const upstream = pagedUpstream(1000, profile);
    await createCallAnswerer(testConfig())(advancedSearchCall('150', '150'), upstream);
    expect(upstream.requests.map((r) => r.params.filter(([k]) => k === 'pageNumber' || k === 'resultsPerPage'))).toEqual([
      [
        ['pageNumber', '3'],
        ['resultsPerPage', '75'],
      ],
      [
        ['pageNumber', '4'],
        ['resultsPerPage', '75'],
      ],
    ]);
  });

  it('reads startResults as a page index when so configured', async () => {
    const config = testConfig({ paging: { startResults: 'page' } });
    const upstream = pagedUpstream(1000, profile);
    const result = treeOf(await createCallAnswerer(config)(advancedSearchCall('2', '20'), upstream));
    expect(itemIds(result)).toEqual(range(40, 60));
    expect(upstream.requests).toHaveLength(1);
  });

  it('leaves paging to the upstream when neither startResults nor maxResults is given', async () => {
    const upstream = pagedUpstream(1000, profile);
    await createCallAnswerer(testConfig())(advancedSearchCall(null, ''), upstream);
    expect(upstream.requests[0]?.params.map(([k]) => k)).toEqual(['v', 'appKey', 'query']);
  });

  it('refuses a window that needs more pages than one call may fetch', async () => {
    const config = testConfig({ upstream: { maxPagesPerCall: 3 } });
    const call = createCallAnswerer(config)(advancedSearchCall('0', '1000'), pagedUpstream(5000, profile));
    await expect(call).rejects.toMatchObject({ reason: 'page_cap', clientFault: true });
  });

  it.each(['abc', '-1', '1.5', '99999999999'])('refuses startResults %j with a clear client error', async (value) => {
    const call = createCallAnswerer(testConfig())(advancedSearchCall(value, '10'), pagedUpstream(10, profile));
    await expect(call).rejects.toThrow(`Invalid value '${value}' for startResults: expected a whole number from 0 to 999999999.`);
  });
});

describe('StoreLookupPaged', () => {
  const profile = STORE_PAGES;
  const call = (pageIndex: number, pageSize: number): LegacyCall =>
    legacyCall(storeLookupPaged, { storeId: 'cybersprocket', pageIndex, pageSize });

  it('fetches exactly the page named, legacy base 0', async () => {
    const upstream = pagedUpstream(1000, profile);
    const result = treeOf(await createCallAnswerer(testConfig())(call(3, 25), upstream));
    expect(itemIds(result)).toEqual(range(75, 100));
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]?.params).toContainEqual(['page', '3']);
    expect(upstream.requests[0]?.params).toContainEqual(['pageSize', '25']);
  });

  it('counts pageIndex from 1 when so configured', async () => {
    const upstream = pagedUpstream(1000, profile);
    const result = treeOf(await createCallAnswerer(testConfig({ paging: { legacyPageIndexBase: 1 } }))(call(1, 10), upstream));
    expect(itemIds(result)).toEqual(range(0, 10));
  });

  it('covers a page larger than the profile maximum with several upstream pages', async () => {
    const upstream = pagedUpstream(2000, profile);
    const result = treeOf(await createCallAnswerer(testConfig())(call(1, 300), upstream));
    expect(itemIds(result)).toEqual(range(300, 600));
    expect(upstream.requests).toHaveLength(bruteForceMinimum(300, 300, 256));
  });

  it.each([
    [-1, 10, 'pageIndex must be 0 or greater; got -1.'],
    [0, 0, 'pageSize must be 1 or greater; got 0.'],
  ])('refuses pageIndex %i, pageSize %i', async (pageIndex, pageSize, message) => {
    await expect(createCallAnswerer(testConfig())(call(pageIndex, pageSize), pagedUpstream(10, profile))).rejects.toThrow(message);
  });
});

describe('StoreLookup', () => {
  const profile = STORE_PAGES;
  const call: LegacyCall = legacyCall(findOperation('StoreLookup')!, { storeId: 'cybersprocket' });

  it.each([0, 1, 255, 256, 257, 700])('returns all %i items of the store in order', async (total) => {
    const upstream = pagedUpstream(total, profile);
    const result = treeOf(await createCallAnswerer(testConfig())(call, upstream));
    expect(itemIds(result)).toEqual(range(0, total));
    expect(attribute(result, 'resultLength')).toBe(String(total));
    expect(attribute(result, 'startResult')).toBe('0');
    expect(upstream.requests).toHaveLength(Math.max(1, Math.ceil(total / 256)));
  });

  it('never fetches more than maxConcurrentPages at once', async () => {
    const config = testConfig({ upstream: { maxConcurrentPages: 2 } });
    const inner = pagedUpstream(256 * 8, profile);
    let inFlight = 0;
    let peak = 0;
    const upstream = {
      async fetch(request: Parameters<typeof inner.fetch>[0], options: FetchOptions) {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return inner.fetch(request, options);
      },
    };
    const result = treeOf(await createCallAnswerer(config)(call, upstream));
    expect(itemIds(result)).toHaveLength(256 * 8);
    expect(peak).toBe(2);
  });

  it('answers a clear fault past the page cap instead of a truncated result', async () => {
    const config = testConfig({ upstream: { maxPagesPerCall: 2 } });
    await expect(createCallAnswerer(config)(call, pagedUpstream(256 * 2 + 1, profile))).rejects.toThrow(
      'The store has 513 designs, which take 3 upstream pages of 256; one StoreLookup fetches at most 2 pages. Use StoreLookupPaged.',
    );
  });
});

describe('windows a translator asks for', () => {
  const config = testConfig();
  const context = { upstream: config.upstream, paging: config.paging, mapping: config.mapping, captions: new Map<string, number>() };

  it.each([
    [{ offset: -5, count: 10 }, 'The requested window of 10 items from item -5 is not a range of items.'],
    [{ offset: 0, count: -1 }, 'The requested window of -1 items from item 0 is not a range of items.'],
    [{ offset: 1.5, count: 2 }, 'The requested window of 2 items from item 1.5 is not a range of items.'],
  ])('%j is refused, not answered with an empty result', (window, message) => {
    expect(() => targetOf('/product.search.cp', null, context).window(window, [])).toThrow(message);
  });
});

describe('StoreLookup round trips', () => {
  const call: LegacyCall = legacyCall(findOperation('StoreLookup')!, { storeId: 'cybersprocket' });
  const config = testConfig({ paging: { storeLookupPageSize: 10 } });

  /**
   * A store of `total()` items whose pages each take a while; records which pages were asked for
   * together (`waves`) and in which order (`asked`).
   */
  function slowStore(total: () => number, refusePastEnd = false) {
    const waves: number[][] = [];
    const asked: number[] = [];
    let inFlight: number[] = [];
    return {
      waves,
      asked,
      async fetch(request: UpstreamRequest, { signal }: FetchOptions) {
        const page = Number(new Map(request.params).get('page'));
        asked.push(page);
        if (inFlight.length === 0) {
          inFlight = [];
          waves.push(inFlight);
        }
        inFlight.push(page);
        waves[waves.length - 1] = [...inFlight];
        try {
          await sleep(15, undefined, { signal });
        } finally {
          inFlight = inFlight.filter((p) => p !== page);
        }
        if (refusePastEnd && page * 10 >= total()) throw new Error(`page ${page} is past the end`);
        return parseXml(pageDocument(total(), new Map(request.params), STORE_PAGES));
      },
    };
  }

  it('a store of 10 pages costs two round trips: the first page, then the other nine at once', async () => {
    const store = slowStore(() => 100);
    const result = treeOf(await createCallAnswerer(config)(call, store));
    expect(itemIds(result)).toEqual(range(0, 100));
    expect(store.waves).toEqual([[0], range(1, 10)]);
  });

  it('asks for every page at once when the store was seen in a recent call', async () => {
    const answer = createCallAnswerer(config);
    await answer(
      call,
      slowStore(() => 100),
    );
    const store = slowStore(() => 100);
    expect(itemIds(treeOf(await answer(call, store)))).toEqual(range(0, 100));
    expect(store.waves).toEqual([range(0, 10)]);
  });

  it.each([
    ['grew', 100, 130, [range(0, 10), range(10, 13)]],
    ['shrank', 100, 55, [range(0, 10)]],
  ])('a store that %s since is still answered whole, never truncated or padded', async (_change, before, after, waves) => {
    const answer = createCallAnswerer(config);
    await answer(
      call,
      slowStore(() => before),
    );
    const store = slowStore(() => after);
    expect(itemIds(treeOf(await answer(call, store)))).toEqual(range(0, after));
    expect(store.waves).toEqual(waves);
  });

  it('a store that shrank, with an upstream that refuses pages past its end, is fetched the usual way', async () => {
    const answer = createCallAnswerer(config);
    await answer(
      call,
      slowStore(() => 100),
    );
    const store = slowStore(() => 35, true);
    expect(itemIds(treeOf(await answer(call, store)))).toEqual(range(0, 35));
    // All ten at once; once one is refused, the first page alone, then the rest it names.
    expect(store.asked).toEqual([...range(0, 10), 0, 1, 2, 3]);
  });
});

describe('the name of a whole list (listKey), for the page counts shared by the fleet', () => {
  it('is its request escaped as a query is: no storeId names another list', () => {
    const list = (params: readonly (readonly [string, string])[]): AllPagesPlan =>
      ({ kind: 'allPages', base: { path: '/product.searchForProductsOfStore.cp', params }, pageSize: 10 }) as unknown as AllPagesPlan;
    expect(listKey(list([['storeId', 'x&merchandiseIds=0']]))).not.toBe(
      listKey(
        list([
          ['storeId', 'x'],
          ['merchandiseIds', '0'],
        ]),
      ),
    );
    expect(listKey(list([['storeId', 'x']]))).toBe(listKey(list([['storeId', 'x']])));
  });
});
