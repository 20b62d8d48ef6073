import type { Config, PagingProfile } from '../config.js';
import { OperationError } from '../errors.js';
import { intArg, stringArg, type LegacyCall, type UpstreamPath } from '../operations.js';
import { captionIndex, merchandiseIds, nonNegativeInteger, present, upstreamAppKey, upstreamSort, type CaptionIndex } from './mapping.js';
import { planPages, type ItemWindow, type PageRun } from './paging.js';

/**
 * Call in, plan out: which upstream request(s) answer a legacy call (cp-upstream.md §11).
 * No I/O here; the plan is carried out by src/proxy.ts.
 */

export type QueryParams = readonly (readonly [string, string])[];

export interface UpstreamRequest {
  readonly path: UpstreamPath;
  readonly params: QueryParams;
}

export type Plan =
  /** One request whose answer is the result as it is. */
  | { readonly kind: 'single'; readonly request: UpstreamRequest }
  /** Pages `run` of a paged endpoint, fetched concurrently, sliced to `window`. */
  | { readonly kind: 'window'; readonly window: ItemWindow; readonly run: PageRun; readonly requests: readonly UpstreamRequest[] }
  /** Every page of `base`: the first, then the rest once the total is known. */
  | {
      readonly kind: 'allPages';
      readonly base: UpstreamRequest;
      readonly profile: PagingProfile;
      readonly pageSize: number;
      readonly maxPages: number;
    };

export interface Planner {
  plan(call: LegacyCall): Plan;
}

export function createPlanner(config: Config): Planner {
  const captions = captionIndex(config.mapping.merchandise);
  return { plan: (call) => planCall(call, config, captions) };
}

function planCall(call: LegacyCall, config: Config, captions: CaptionIndex): Plan {
  const path = call.operation.replacement;
  const universal: [string, string][] = [['v', config.upstream.version]];
  const appKey = upstreamAppKey(stringArg(call, 'apiKey'), config.upstream);
  if (appKey !== null) universal.push(['appKey', appKey]);
  const request = (params: readonly (readonly [string, string | null])[]): UpstreamRequest => ({
    path,
    params: [...universal, ...params.filter((p): p is [string, string] => p[1] !== null)],
  });

  switch (call.operation.name) {
    case 'Search':
      return { kind: 'single', request: request([['query', present(stringArg(call, 'query'))]]) };

    case 'ProductLookup':
      return { kind: 'single', request: request([['productId', String(intArg(call, 'productNumber'))]]) };

    case 'StoreLookup':
      return {
        kind: 'allPages',
        base: request(storeParams(call, captions)),
        profile: config.paging.profiles['/product.searchForProductsOfStore.cp'],
        pageSize: config.paging.storeLookupPageSize,
        maxPages: config.upstream.maxPagesPerCall,
      };

    case 'StoreLookupPaged': {
      const pageIndex = intArg(call, 'pageIndex');
      const pageSize = intArg(call, 'pageSize');
      const base = config.paging.legacyPageIndexBase;
      if (pageIndex < base) throw clientError(`pageIndex must be ${base} or greater; got ${pageIndex}.`);
      if (pageSize < 1) throw clientError(`pageSize must be 1 or greater; got ${pageSize}.`);
      const window = { offset: (pageIndex - base) * pageSize, count: pageSize };
      return windowPlan(window, request(storeParams(call, captions)), config.paging.profiles['/product.searchForProductsOfStore.cp'], config);
    }

    case 'AdvancedSearch': {
      const base = request([
        ['query', present(stringArg(call, 'query'))],
        ['merchandiseIds', merchandiseIds(stringArg(call, 'productTypes'), captions)],
        ['maxProductsPerDesign', present(stringArg(call, 'maxProductsPerDesign'))],
        ['sort', upstreamSort(stringArg(call, 'sort'), config.mapping.sort)],
      ]);
      const start = nonNegativeInteger('startResults', stringArg(call, 'startResults'));
      const max = nonNegativeInteger('maxResults', stringArg(call, 'maxResults'));
      if (start === null && max === null) return { kind: 'single', request: base };
      const count = max ?? config.paging.defaultMaxResults;
      const offset = config.paging.startResults === 'page' ? (start ?? 0) * count : (start ?? 0);
      return windowPlan({ offset, count }, base, config.paging.profiles['/product.search.cp'], config);
    }
  }
}

function storeParams(call: LegacyCall, captions: CaptionIndex): [string, string | null][] {
  return [
    ['storeId', present(stringArg(call, 'storeId'))],
    ['merchandiseIds', merchandiseIds(stringArg(call, 'productTypes'), captions)],
  ];
}

function windowPlan(window: ItemWindow, base: UpstreamRequest, profile: PagingProfile, config: Config): Plan {
  if (!Number.isSafeInteger(window.offset + window.count)) throw clientError('The requested window is too large.');
  const run = planPages(window, profile.maxPageSize);
  if (run.pageCount > config.upstream.maxPagesPerCall) {
    throw new OperationError(
      `The requested window of ${window.count} items needs ${run.pageCount} upstream pages; one call fetches at most ${config.upstream.maxPagesPerCall}. Ask for fewer items.`,
      'page_cap',
      { clientFault: true },
    );
  }
  const requests = Array.from({ length: run.pageCount }, (_, i) => pageRequest(base, profile, run.firstPage + i, run.pageSize));
  return { kind: 'window', window, run, requests };
}

/** The request for 0-based page `index` of size `size`, numbered the way the endpoint counts. */
export function pageRequest(base: UpstreamRequest, profile: PagingProfile, index: number, size: number): UpstreamRequest {
  return {
    path: base.path,
    params: [...base.params, [profile.pageParam, String(index + profile.firstPage)], [profile.sizeParam, String(size)]],
  };
}

function clientError(message: string): OperationError {
  return new OperationError(message, 'client_input', { clientFault: true });
}
