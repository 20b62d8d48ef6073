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
  answer(call: LegacyCall, client: Fetcher): Promise<XmlElement>;
}

export type Fetcher = Pick<UpstreamClient, 'fetch'>;

export function createProxy(config: Config): Proxy {
  const planner = createPlanner(config);
  const limit = config.upstream.maxConcurrentPages;
  return {
    answer: async (call, client) => carryOut(planner.plan(call), client, limit),
  };
}

async function carryOut(plan: Plan, client: Fetcher, limit: number): Promise<XmlElement> {
  switch (plan.kind) {
    case 'single':
      return client.fetch(plan.request);
    case 'window':
      return assembleWindow(await fetchAll(plan.requests, client, limit), plan.window, plan.run);
    case 'allPages': {
      const first = await client.fetch(pageRequest(plan.base, plan.profile, 0, plan.pageSize));
      const total = totalItems(first);
      const pageCount = Math.max(1, Math.ceil(total / plan.pageSize));
      if (pageCount > plan.maxPages) {
        throw new OperationError(
          `The store has ${total} designs, which take ${pageCount} upstream pages of ${plan.pageSize}; one StoreLookup fetches at most ${plan.maxPages} pages. Use StoreLookupPaged.`,
          'page_cap',
        );
      }
      const rest = Array.from({ length: pageCount - 1 }, (_, i) => pageRequest(plan.base, plan.profile, i + 1, plan.pageSize));
      return assembleAll([first, ...(await fetchAll(rest, client, limit))]);
    }
  }
}

/** Fetches every request, at most `limit` at a time, answers in request order. */
async function fetchAll(requests: readonly UpstreamRequest[], client: Fetcher, limit: number): Promise<XmlElement[]> {
  const results: XmlElement[] = new Array(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length) {
      const index = next++;
      results[index] = await client.fetch(requests[index] as UpstreamRequest);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, requests.length) }, worker));
  return results;
}
