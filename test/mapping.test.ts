import { describe, expect, it } from 'vitest';
import { findOperation, legacyCall, type LegacyCall } from '../src/operations.js';
import { captionIndex, merchandiseIds, upstreamAppKey, upstreamSort } from '../src/translate/mapping.js';
import { planOf, translateContext } from '../src/translate/plan.js';
import { testConfig } from './support/config.js';
import { UNKNOWN_PRODUCT_TYPE_HOVERCRAFT } from './support/wire.js';

const config = testConfig();
const captions = captionIndex(config.mapping.merchandise);

describe('productTypes → merchandiseIds (docs/upstream.md §11.4)', () => {
  it.each([
    ['2', '2'],
    ['69,72,73', '69,72,73'],
    ['69 72 73', '69,72,73'],
    [' 69 , 72 ', '69,72'],
    ['-999', '-999'],
    ['-2,-3', '-2,-3'],
    ['Mug', '0'],
    ['mug, large mug', '0,1'],
    ['White T-Shirt', '2'],
    ['WHITE T-SHIRT,3', '2,3'],
    ['Ornament (Round)', '124'],
    ["Women's T-Shirt", '89'],
    ['Mug Mousepad', '0,3'],
    ['-Mug', '-0'],
    ['Stein', '11'],
  ])('%j → %j', (productTypes, expected) => {
    expect(merchandiseIds(productTypes, captions)).toBe(expected);
  });

  it.each([null, '', '   ', ','])('%j is absent: no merchandiseIds sent', (productTypes) => {
    expect(merchandiseIds(productTypes, captions)).toBeNull();
  });

  it('an unknown name is a client error that names it', () => {
    expect(() => merchandiseIds('Mug, Hovercraft', captions)).toThrow(UNKNOWN_PRODUCT_TYPE_HOVERCRAFT);
    try {
      merchandiseIds('Hovercraft', captions);
    } catch (err) {
      expect(err).toMatchObject({ reason: 'client_input', clientFault: true });
    }
  });

  it('the caption table is configuration', () => {
    const custom = captionIndex({ '900': 'Hovercraft' });
    expect(merchandiseIds('hovercraft', custom)).toBe('900');
    expect(() => merchandiseIds('Mug', custom)).toThrow("Unknown product type 'Mug'.");
  });
});

describe('sort (docs/upstream.md §11.5)', () => {
  const table = config.mapping.sort;
  it.each([
    ['by_score_desc', 'by_score_desc'],
    ['by-date-desc', 'by_date_desc'],
    ['by_date_desc', 'by_date_desc'],
    ['relevance', 'relevance'],
    ['by-price-asc', 'by-price-asc'],
  ])('%j → %j', (legacy, upstream) => {
    expect(upstreamSort(legacy, table)).toBe(upstream);
  });

  it('maps through a configured table', () => {
    expect(upstreamSort('newest', { newest: 'by_date_desc' })).toBe('by_date_desc');
  });

  it.each([null, ''])('%j is absent', (legacy) => {
    expect(upstreamSort(legacy, table)).toBeNull();
  });
});

describe('apiKey → appKey (docs/upstream.md §11.6)', () => {
  const upstream = (overrides: object) => ({ ...config.upstream, ...overrides });

  it('forward: the caller key, else the configured appKey', () => {
    expect(upstreamAppKey('caller-key', upstream({ apiKeyMode: 'forward', appKey: 'fallback' }))).toBe('caller-key');
    expect(upstreamAppKey(null, upstream({ apiKeyMode: 'forward', appKey: 'fallback' }))).toBe('fallback');
    expect(upstreamAppKey('', upstream({ apiKeyMode: 'forward', appKey: 'fallback' }))).toBe('fallback');
    expect(upstreamAppKey(null, upstream({ apiKeyMode: 'forward', appKey: null }))).toBeNull();
  });

  it('fixed: always the configured appKey', () => {
    expect(upstreamAppKey('caller-key', upstream({ apiKeyMode: 'fixed', appKey: 'ours' }))).toBe('ours');
  });

  it('map: through the table; an unknown key is refused without echoing it', () => {
    const mapped = upstream({ apiKeyMode: 'map', apiKeyMap: { 'legacy-1': 'app-1' } });
    expect(upstreamAppKey('legacy-1', mapped)).toBe('app-1');
    expect(() => upstreamAppKey('secret-legacy-key', mapped)).toThrow('The apiKey is not recognized.');
    try {
      upstreamAppKey('secret-legacy-key', mapped);
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('secret-legacy-key');
    }
  });
});

describe('the planned upstream requests', () => {
  const planner = { plan: (legacyCall: LegacyCall) => planOf(legacyCall, translateContext(config)) };
  const call = (name: string, args: LegacyCall['args']): LegacyCall => legacyCall(findOperation(name)!, args);

  it('Search: query, appKey and v', () => {
    expect(planner.plan(call('Search', { query: 'dog', apiKey: 'K', version: '1.0' }))).toEqual({
      kind: 'single',
      appKey: 'K',
      request: {
        path: '/product.search.cp',
        params: [
          ['v', '3'],
          ['appKey', 'K'],
          ['query', 'dog'],
        ],
      },
    });
  });

  it('ProductLookup: productId', () => {
    expect(planner.plan(call('ProductLookup', { productNumber: 1234, apiKey: null }))).toEqual({
      kind: 'single',
      appKey: 'configured-app-key',
      request: {
        path: '/product.searchForProduct.cp',
        params: [
          ['v', '3'],
          ['appKey', 'configured-app-key'],
          ['productId', '1234'],
        ],
      },
    });
  });

  it('AdvancedSearch: empty values are left out, not sent empty', () => {
    const plan = planner.plan(
      call('AdvancedSearch', {
        query: 'cat',
        apiKey: 'K',
        productTypes: '',
        sort: '',
        maxProductsPerDesign: '',
        startResults: '',
        maxResults: '',
      }),
    );
    expect(plan).toEqual({
      kind: 'single',
      appKey: 'K',
      request: {
        path: '/product.search.cp',
        params: [
          ['v', '3'],
          ['appKey', 'K'],
          ['query', 'cat'],
        ],
      },
    });
  });

  it('AdvancedSearch: merchandiseIds, maxProductsPerDesign, sort and page-based paging', () => {
    const plan = planner.plan(
      call('AdvancedSearch', {
        query: 'cat',
        apiKey: 'K',
        productTypes: 'Mug,2',
        sort: 'by-date-desc',
        maxProductsPerDesign: '1',
        startResults: '20',
        maxResults: '10',
      }),
    );
    expect(plan.kind).toBe('window');
    if (plan.kind !== 'window') return;
    expect(plan.requests).toEqual([
      {
        path: '/product.search.cp',
        params: [
          ['v', '3'],
          ['appKey', 'K'],
          ['query', 'cat'],
          ['merchandiseIds', '0,2'],
          ['maxProductsPerDesign', '1'],
          ['sort', 'by_date_desc'],
          ['pageNumber', '3'],
          ['resultsPerPage', '10'],
        ],
      },
    ]);
  });

  it('StoreLookup: storeId and merchandiseIds, first page 0 at the configured store page size', () => {
    const plan = planner.plan(call('StoreLookup', { storeId: 'cybersprocket', productTypes: '-999' }));
    expect(plan).toMatchObject({
      kind: 'allPages',
      appKey: 'configured-app-key',
      base: {
        path: '/product.searchForProductsOfStore.cp',
        params: [
          ['v', '3'],
          ['appKey', 'configured-app-key'],
          ['storeId', 'cybersprocket'],
          ['merchandiseIds', '-999'],
        ],
      },
      pageSize: 256,
    });
  });

  it('the upstream version is configuration; the legacy version is never sent', () => {
    const plan = planOf(call('Search', { query: 'x', version: '2.0' }), translateContext(testConfig({ upstream: { version: '4' } })));
    expect(plan).toMatchObject({
      request: {
        params: [
          ['v', '4'],
          ['appKey', 'configured-app-key'],
          ['query', 'x'],
        ],
      },
    });
  });
});

describe('tables never match inherited properties', () => {
  it('a legacy sort named like an Object.prototype member passes through unchanged', () => {
    expect(upstreamSort('constructor', config.mapping.sort)).toBe('constructor');
  });

  it('map mode refuses an apiKey named like an Object.prototype member', () => {
    expect(() => upstreamAppKey('hasOwnProperty', { ...config.upstream, apiKeyMode: 'map', apiKeyMap: { 'legacy-1': 'app-1' } })).toThrow(
      'The apiKey is not recognized.',
    );
  });
});
