import type { Config } from '../../src/config/schema.js';
import type { LegacyCall } from '../../src/operations.js';
import { createPlanFetcher } from '../../src/outbound/execute.js';
import { planOf, translateContext } from '../../src/translate/plan.js';
import type { Page } from '../../src/xml/compact.js';
import { fetchOptions, type TestUpstream } from './fetch-options.js';

/**
 * A call's result straight from the translation, as the translated path gets it (planned, fetched,
 * assembled), without a binding: the result, or the error the web method would have thrown.
 */
export function createCallAnswerer(config: Config): (call: LegacyCall, upstream: TestUpstream, signal?: AbortSignal) => Promise<Page> {
  const context = translateContext(config);
  const fetchPlan = createPlanFetcher(config.upstream.maxConcurrentPages);
  return async (call, upstream, signal) => {
    const plan = planOf(call, context);
    return fetchPlan(plan, upstream.fetch, fetchOptions({ appKey: plan.appKey, ...(signal === undefined ? {} : { signal }) }));
  };
}
