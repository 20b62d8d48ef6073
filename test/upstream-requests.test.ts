import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { buildApp, type App } from '../src/server/app.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute } from '../src/xml/tree.js';
import { itemIds, range, recordingUpstream } from './support/pages.js';
import type { StubUpstream } from './support/stub-upstream.js';

/**
 * The proxy pointed (as with UPSTREAM_URL) at another server that follows docs/upstream.md: exactly
 * the requests the product decisions describe go out, and exactly the requested windows come back.
 */

const TOTAL = 1000;
let upstream: StubUpstream;
let app: App;
let base: string;

beforeAll(async () => {
  upstream = await recordingUpstream(TOTAL);
  const config = loadConfig({ UPSTREAM_URL: `${upstream.origin}/v3` }, { log: { level: 'silent' } });
  app = await buildApp(config, { logger: pino({ level: 'silent' }) });
  base = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app.fastify.close();
  await upstream.close();
});

beforeEach(() => {
  upstream.requests.length = 0;
});

/** Path and query of every request the upstream got, in arrival order. */
const asked = (): string[] => upstream.requests.map((request) => request.url);

async function get(op: string, query: string): Promise<string> {
  const response = await fetch(`${base}/index.asmx/${op}?${query}`);
  const body = await response.text();
  expect(response.status, body).toBe(200);
  return body;
}

describe('requests sent upstream', () => {
  it('Search', async () => {
    await get('Search', 'query=red+dog&apiKey=K1&version=2.1');
    expect(asked()).toEqual(['/v3/product.search.cp?v=3&appKey=K1&query=red+dog']);
  });

  it('ProductLookup', async () => {
    await get('ProductLookup', 'productNumber=+0042&apiKey=K1');
    expect(asked()).toEqual(['/v3/product.searchForProduct.cp?v=3&appKey=K1&productId=42']);
  });

  it('StoreLookup: every page, first page 0, at the store page size', async () => {
    const result = parseXml(await get('StoreLookup', 'storeId=cybersprocket&apiKey=K1&productTypes=Mug,+White+T-Shirt'));
    expect(asked().sort()).toEqual(
      [0, 1, 2, 3]
        .map(
          (page) =>
            `/v3/product.searchForProductsOfStore.cp?v=3&appKey=K1&storeId=cybersprocket&merchandiseIds=0%2C2&page=${page}&pageSize=256`,
        )
        .sort(),
    );
    expect(itemIds(result)).toEqual(range(0, TOTAL));
    expect(attribute(result, 'resultLength')).toBe(String(TOTAL));
  });

  it('StoreLookupPaged: the page named', async () => {
    const result = parseXml(await get('StoreLookupPaged', 'storeId=s1&pageIndex=3&pageSize=20&productTypes='));
    expect(asked()).toEqual(['/v3/product.searchForProductsOfStore.cp?v=3&storeId=s1&page=3&pageSize=20']);
    expect(itemIds(result)).toEqual(range(60, 80));
  });

  it('AdvancedSearch: one page when one page size covers the window', async () => {
    const result = parseXml(
      await get(
        'AdvancedSearch',
        'query=dog&apiKey=K1&productTypes=-999&startResults=95&maxResults=10&maxProductsPerDesign=1&sort=by-date-desc',
      ),
    );
    expect(asked()).toEqual([
      '/v3/product.search.cp?v=3&appKey=K1&query=dog&merchandiseIds=-999&maxProductsPerDesign=1&sort=by_date_desc' +
        '&pageNumber=7&resultsPerPage=15',
    ]);
    expect(itemIds(result)).toEqual(range(95, 105));
    expect(attribute(result, 'startResult')).toBe('95');
    expect(attribute(result, 'resultLength')).toBe('10');
  });

  it('AdvancedSearch: the fewest pages when none covers it, sliced and concatenated in order', async () => {
    const result = parseXml(await get('AdvancedSearch', 'query=dog&startResults=90&maxResults=250'));
    expect(asked().sort()).toEqual(
      [2, 3, 4].map((page) => `/v3/product.search.cp?v=3&query=dog&pageNumber=${page}&resultsPerPage=85`).sort(),
    );
    expect(itemIds(result)).toEqual(range(90, 340));
    expect(attribute(result, 'resultLength')).toBe('250');
  });

  it('AdvancedSearch: empty form fields are left out, not sent empty', async () => {
    await get('AdvancedSearch', 'query=dog&apiKey=&version=&productTypes=&startResults=&maxResults=&maxProductsPerDesign=&sort=');
    expect(asked()).toEqual(['/v3/product.search.cp?v=3&query=dog']);
  });

  it('AdvancedSearch: a window past the end returns what there is', async () => {
    const result = parseXml(await get('AdvancedSearch', 'query=dog&startResults=990&maxResults=50'));
    expect(itemIds(result)).toEqual(range(990, 1000));
    expect(attribute(result, 'resultLength')).toBe('10');
  });
});
