import type { Config } from './config/schema.js';
import type { LegacyCall } from './operations.js';
import { executePlan } from './outbound/execute.js';
import { createPageCounts } from './outbound/page-counts.js';
import type { Fetcher } from './outbound/upstream.js';
import { planOf, translateContext, type Plan } from './translate/plan.js';
import type { Page } from './xml/compact.js';

/** Answers a legacy call with its result, or rejects with the error the web method would have thrown. */
export interface CallAnswerer {
  (call: LegacyCall, upstream: Fetcher, signal?: AbortSignal): Promise<Page>;
  /** The two halves, for a caller that needs the plan itself (the call runner names the successor request). */
  plan(call: LegacyCall): Plan;
  answerPlan(plan: Plan, upstream: Fetcher, signal?: AbortSignal): Promise<Page>;
}

/** Lists remembered: a minute is long enough for a client paging through stores, short enough to follow a catalog. */
const PAGE_COUNT_MEMORY = { maxEntries: 10_000, maxAgeMs: 60_000 };

/** Translate (pure), carry out the plan, assemble (pure): the middle of every call, whatever its binding. */
export function createCallAnswerer(config: Config): CallAnswerer {
  const context = translateContext(config);
  const planner = { plan: (call: LegacyCall) => planOf(call, context) };
  const { maxConcurrentPages } = config.upstream;
  const pageCounts = createPageCounts(PAGE_COUNT_MEMORY);
  const answerPlan = (plan: Plan, upstream: Fetcher, signal?: AbortSignal): Promise<Page> =>
    executePlan(plan, upstream, { maxConcurrentPages, pageCounts, ...(signal ? { signal } : {}) });
  // Planned inside the promise: a translation error is a failed call like any other.
  return Object.assign(
    async (call: LegacyCall, upstream: Fetcher, signal?: AbortSignal) => answerPlan(planner.plan(call), upstream, signal),
    {
      plan: planner.plan,
      answerPlan,
    },
  );
}
