import { setMaxListeners } from 'node:events';
import type { Config } from './config.js';
import { OperationError } from './errors.js';
import type { LegacyCall } from './operations.js';
import type { UpstreamClient } from './outbound/client.js';
import { assembleAll, assembleWindow, totalItems } from './translate/assemble.js';
import { createPlanner, pageRequest, type Plan, type UpstreamRequest } from './translate/plan.js';
import type { XmlElement } from './xml/tree.js';

/**
 * Answers a legacy call: plan it (pure), fetch the plan's pages with bounded concurrency, assemble
 * the result (pure). Throws OperationError for everything the web method would have thrown.
 */
export interface Proxy {
  /** `signal` cancels every upstream request of the call; its reason is what the call then throws. */
  answer(call: LegacyCall, client: Fetcher, signal?: AbortSignal): Promise<XmlElement>;
}

export type Fetcher = Pick<UpstreamClient, 'fetch'>;

export function createProxy(config: Config): Proxy {
  const planner = createPlanner(config);
  const limit = config.upstream.maxConcurrentPages;
  return {
    answer: async (call, client, signal) => carryOut(planner.plan(call), client, limit, signal),
  };
}

async function carryOut(plan: Plan, client: Fetcher, limit: number, signal: AbortSignal | undefined): Promise<XmlElement> {
  switch (plan.kind) {
    case 'single':
      return client.fetch(plan.request, signal);
    case 'window':
      return assembleWindow(await fetchAll(plan.requests, client, limit, signal), plan.window, plan.run);
    case 'allPages': {
      const first = await client.fetch(pageRequest(plan.base, plan.profile, 0, plan.pageSize), signal);
      const total = totalItems(first);
      const pageCount = Math.max(1, Math.ceil(total / plan.pageSize));
      if (pageCount > plan.maxPages) {
        // A Server fault, unlike the Client fault for a too large AdvancedSearch/StoreLookupPaged
        // window: the caller asked for nothing unreasonable, the store is just too big to fetch whole.
        throw new OperationError(
          `The store has ${total} designs, which take ${pageCount} upstream pages of ${plan.pageSize}; one StoreLookup fetches at most ${plan.maxPages} pages. Use StoreLookupPaged.`,
          'page_cap',
        );
      }
      const rest = Array.from({ length: pageCount - 1 }, (_, i) => pageRequest(plan.base, plan.profile, i + 1, plan.pageSize));
      return assembleAll([first, ...(await fetchAll(rest, client, limit, signal))], plan.pageSize);
    }
  }
}

/**
 * Fetches every request, at most `limit` at a time, answers in request order. The first failure
 * cancels the requests still running and keeps the rest from starting.
 */
async function fetchAll(requests: readonly UpstreamRequest[], client: Fetcher, limit: number, signal: AbortSignal | undefined): Promise<XmlElement[]> {
  const failed = new AbortController();
  const combined = signal ? AbortSignal.any([signal, failed.signal]) : failed.signal;
  // Each request in flight listens on it; up to `limit` at once is expected, not a leak.
  setMaxListeners(limit + 2, combined);
  const results: XmlElement[] = new Array(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length && !combined.aborted) {
      const index = next++;
      try {
        results[index] = await client.fetch(requests[index] as UpstreamRequest, combined);
      } catch (err) {
        failed.abort(err);
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, requests.length) }, worker));
  if (combined.aborted) throw combined.reason;
  return results;
}
