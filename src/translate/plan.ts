import type { Config, PagingProfile } from '../config/schema.js';
import { TranslationError } from '../errors.js';
import type { ArgValue, ItemWindow, LegacyCall, PagedPath, PagedTarget, TranslatedParams, UpstreamPath } from '../operations.js';
import type { ItemsShape } from './assemble.js';
import { captionIndex, merchandiseIds, upstreamAppKey, upstreamSort, type CaptionIndex } from './mapping.js';
import { itemWindow, legacyPageWindow, planPages, sliceStart, type PageRun } from './paging.js';

/**
 * Call in, plan out: which upstream request(s) answer a legacy call (docs/upstream.md §2, §3). Each
 * operation's translator (in the table, src/operations.ts) says what it needs through a `Target`; the
 * plan is carried out by src/outbound/execute.ts. No I/O here.
 */

export type QueryParams = readonly (readonly [string, string])[];

export interface UpstreamRequest {
  readonly path: UpstreamPath;
  readonly params: QueryParams;
}

/** Parameters whose values must never reach a fault, a log line, a metric or a header. */
export const SECRET_PARAMS: ReadonlySet<string> = new Set(['appKey']);

/** The appKey a request carries; null for none (`forward` mode, a call without a key, no `upstream.appKey`). */
export function appKeyOf(request: UpstreamRequest): string | null {
  const appKey = request.params.find(([name]) => name === 'appKey')?.[1];
  return appKey === undefined || appKey === '' ? null : appKey;
}

/** Past this, a successor request is not named: a header that long breaks proxies on the way. */
export const MAX_SUCCESSOR_LENGTH = 2000;

/**
 * The `.cp` request that replaces a call, as a path and query without its secrets: what the call's
 * `successor-version` link and its deprecation hit show. The first request of the plan: the one a
 * migrated client sends first (a window's or a list's further pages follow its page parameters).
 */
export function successorOf(plan: Plan): string | null {
  const request = plan.kind === 'single' ? plan.request : plan.kind === 'window' ? plan.requests[0] : plan.first;
  if (request === undefined) return null;
  const query = new URLSearchParams(request.params.filter(([name]) => !SECRET_PARAMS.has(name)) as [string, string][]).toString();
  const target = `${request.path}?${query}`;
  return target.length > MAX_SUCCESSOR_LENGTH ? null : target;
}

/**
 * How the `.cp` pages that replace a call make its result, from its first request (`successorOf`) on:
 * what a migrating client must request and keep. Null for a call of one request, whose page is the result.
 */
export interface SuccessorPaging {
  /** Pages requested, the first one's page parameter stepped by one; null: until the list's total is reached. */
  readonly pages: number | null;
  /** The items of those pages, in order, that the result is: `take` (null: all) from `skip` on. */
  readonly skip: number;
  readonly take: number | null;
}

export function successorPagingOf(plan: Plan): SuccessorPaging | null {
  if (plan.kind === 'single') return null;
  if (plan.kind === 'allPages') return { pages: null, skip: 0, take: null };
  return { pages: plan.run.pageCount, skip: sliceStart(plan.window, plan.run), take: plan.window.count };
}

/** What every plan says besides its requests. */
interface PlanBase {
  /** The appKey its requests carry and spend from (their budget); null for none. */
  readonly appKey: string | null;
}

export interface AllPagesPlan extends PlanBase {
  readonly kind: 'allPages';
  /** Where the endpoint's pages keep their items (`upstream.answers`). */
  readonly shape: ItemsShape;
  /** The request every page extends with its page number and size. */
  readonly base: UpstreamRequest;
  readonly profile: PagingProfile;
  readonly pageSize: number;
  readonly maxPages: number;
  /** Page 0: its total says how many pages follow (`pageCount`). */
  readonly first: UpstreamRequest;
}

export type Plan =
  /** One request whose page is the result as it is. */
  | (PlanBase & { readonly kind: 'single'; readonly request: UpstreamRequest })
  /** Pages `run` of a paged endpoint, fetched concurrently, sliced to `window`. */
  | (PlanBase & {
      readonly kind: 'window';
      readonly window: ItemWindow;
      readonly run: PageRun;
      readonly requests: readonly UpstreamRequest[];
      readonly shape: ItemsShape;
    })
  /** Every page of a list, all its items or a failure: the first page, then the rest once the total is known. */
  | AllPagesPlan;

/** What translators need from the configuration, prepared once. */
export interface TranslateContext {
  readonly upstream: Config['upstream'];
  readonly paging: Config['paging'];
  readonly mapping: Config['mapping'];
  readonly captions: CaptionIndex;
}

/** The plan of a call: its operation's translator with the arguments read as its parameters declare. */
export function planOf(call: LegacyCall, context: TranslateContext): Plan {
  const args: Record<string, ArgValue> = {};
  for (const { name, type } of call.operation.params) {
    const value = call.args[name];
    args[name] = type === 'int' ? (typeof value === 'number' ? value : 0) : typeof value === 'string' ? value : null;
  }
  return call.operation.translate(args, targetOf(call.operation.replacement, call.credentials.apiKey, context));
}

/** The context of `planOf`, prepared once from the configuration. */
export function translateContext(config: Pick<Config, 'upstream' | 'paging' | 'mapping'>): TranslateContext {
  return { upstream: config.upstream, paging: config.paging, mapping: config.mapping, captions: captionIndex(config.mapping.merchandise) };
}

/**
 * The replacement endpoint `path` as a translator sees it; windows and lists are asked only of a paged one (the table's types see to it).
 */
export function targetOf(path: UpstreamPath, apiKey: string | null, context: TranslateContext): PagedTarget<Plan> {
  const universal: [string, string][] = [['v', context.upstream.version]];
  const appKey = upstreamAppKey(apiKey, context.upstream);
  if (appKey !== null) universal.push(['appKey', appKey]);
  const request = (params: TranslatedParams): UpstreamRequest => ({
    path,
    params: [...universal, ...params.filter((p): p is readonly [string, string] => p[1] !== null)],
  });
  const profile = (): PagingProfile => context.paging.profiles[path as PagedPath];
  const { maxPagesPerCall } = context.upstream;
  const shape = context.upstream.answers[path];
  return {
    single: (params) => ({ kind: 'single', appKey, request: request(params) }),
    merchandiseIds: (productTypes) => merchandiseIds(productTypes, context.captions),
    sort: (legacy) => upstreamSort(legacy, context.mapping.sort),
    legacyPageWindow: (pageIndex, pageSize) => legacyPageWindow(pageIndex, pageSize, context.paging),
    itemWindow: (startResults, maxResults) => itemWindow(startResults, maxResults, context.paging),
    window: (window, params) => windowPlan(window, request(params), profile(), maxPagesPerCall, shape, appKey),
    allPages: (params) => {
      const pageSize = context.paging.storeLookupPageSize;
      const base = request(params);
      return {
        kind: 'allPages',
        appKey,
        base,
        profile: profile(),
        pageSize,
        maxPages: maxPagesPerCall,
        first: pageRequest(base, profile(), 0, pageSize),
        shape,
      };
    },
  };
}

function windowPlan(
  window: ItemWindow,
  base: UpstreamRequest,
  profile: PagingProfile,
  maxPages: number,
  shape: ItemsShape,
  appKey: string | null,
): Plan {
  const { offset, count } = window;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(count) || offset < 0 || count < 0) {
    throw new TranslationError({ code: 'invalid_window', offset, count });
  }
  if (!Number.isSafeInteger(offset + count)) throw new TranslationError({ code: 'window_too_large' });
  const run = planPages(window, profile.maxPageSize);
  if (run.pageCount > maxPages) {
    throw new TranslationError({ code: 'window_page_cap', count: window.count, pageCount: run.pageCount, maxPages });
  }
  const requests = Array.from({ length: run.pageCount }, (_, i) => pageRequest(base, profile, run.firstPage + i, run.pageSize));
  return { kind: 'window', appKey, window, run, requests, shape };
}

/**
 * How many pages a whole list whose pages report `total` items takes; past the page cap a fault,
 * never a truncated result.
 */
export function pageCount(plan: AllPagesPlan, total: number): number {
  const count = Math.max(1, Math.ceil(total / plan.pageSize));
  if (count > plan.maxPages) {
    throw new TranslationError({ code: 'store_page_cap', total, pageCount: count, pageSize: plan.pageSize, maxPages: plan.maxPages });
  }
  return count;
}

/** Pages `from` (inclusive) to `to` (exclusive) of a whole list, 0-based. */
export function listPages(plan: AllPagesPlan, from: number, to: number): UpstreamRequest[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => pageRequest(plan.base, plan.profile, from + i, plan.pageSize));
}

/** What identifies a list between calls: the same request but for its page number. */
export function listKey(plan: AllPagesPlan): string {
  // Escaped as a query is: a storeId holding `&merchandiseIds=0` must not name another list.
  return `${plan.base.path}?${new URLSearchParams(plan.base.params as [string, string][]).toString()}&${plan.pageSize}`;
}

/** The request for 0-based page `index` of size `size`, numbered the way the endpoint counts. */
function pageRequest(base: UpstreamRequest, profile: PagingProfile, index: number, size: number): UpstreamRequest {
  return {
    path: base.path,
    params: [...base.params, [profile.pageParam, String(index + profile.firstPage)], [profile.sizeParam, String(size)]],
  };
}
