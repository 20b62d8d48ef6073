import type { Config } from '../../src/config/schema.js';
import type { LegacyCall } from '../../src/operations.js';
import { createPlanFetcher } from '../../src/outbound/execute.js';
import type { Fetcher } from '../../src/outbound/upstream.js';
import { planOf, translateContext } from '../../src/translate/plan.js';
import type { Page } from '../../src/xml/compact.js';

/**
 * A call's result straight from the translation, as the translated path gets it (planned, fetched,
 * assembled), without a binding: the result, or the error the web method would have thrown.
 */
export function createCallAnswerer(config: Config): (call: LegacyCall, upstream: Fetcher, signal?: AbortSignal) => Promise<Page> {
  const context = translateContext(config);
  const fetchPlan = createPlanFetcher(config.upstream.maxConcurrentPages);
  return async (call, upstream, signal) => fetchPlan(planOf(call, context), upstream, signal);
}
