import { setMaxListeners } from 'node:events';
import { assembleAll, assembleWindow, totalItems } from '../translate/assemble.js';
import { remainingPages, type Plan, type UpstreamRequest } from '../translate/plan.js';
import type { XmlElement } from '../xml/tree.js';
import type { Fetcher } from './upstream.js';

/**
 * Carries out a plan: fetches its pages with bounded concurrency and hands them to the pure
 * assemblers. Every rule about what to fetch and how to put it together is in src/translate.
 */

export interface ExecuteOptions {
  /** Upstream requests of one call in flight at once (`upstream.maxConcurrentPages`). */
  readonly maxConcurrentPages: number;
  /** Cancels every upstream request of the call; its reason is what the call then throws. */
  readonly signal?: AbortSignal;
}

export async function executePlan(plan: Plan, upstream: Fetcher, options: ExecuteOptions): Promise<XmlElement> {
  switch (plan.kind) {
    case 'single':
      return upstream.fetch(plan.request, options.signal);
    case 'window':
      return assembleWindow(await fetchAll(plan.requests, upstream, options), plan.window, plan.run);
    case 'allPages': {
      const first = await upstream.fetch(plan.first, options.signal);
      const rest = await fetchAll(remainingPages(plan, totalItems(first)), upstream, options);
      return assembleAll([first, ...rest], plan.pageSize);
    }
  }
}

/**
 * Fetches every request, at most `maxConcurrentPages` at a time, pages in request order. The first
 * failure cancels the requests still running and keeps the rest from starting.
 */
async function fetchAll(requests: readonly UpstreamRequest[], upstream: Fetcher, { maxConcurrentPages, signal }: ExecuteOptions): Promise<XmlElement[]> {
  if (requests.length === 0) return [];
  const failed = new AbortController();
  const combined = signal ? AbortSignal.any([signal, failed.signal]) : failed.signal;
  // Each request in flight listens on it; up to `maxConcurrentPages` at once is expected, not a leak.
  setMaxListeners(maxConcurrentPages + 2, combined);
  const results: XmlElement[] = new Array(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length && !combined.aborted) {
      const index = next++;
      try {
        results[index] = await upstream.fetch(requests[index] as UpstreamRequest, combined);
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
