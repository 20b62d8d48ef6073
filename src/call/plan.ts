import type { LegacyCall } from '../operations.js';
import {
  planOf,
  type SuccessorPaging,
  type UpstreamRequest,
  successorOf,
  successorPagingOf,
  type Plan,
  type TranslateContext,
} from '../translate/plan.js';

/**
 * A call's plan, made once and carried: the refusal names its successor, a route hands it to the
 * legacy origin's side, and the translated path fetches it. A call whose values do not translate
 * carries its error instead: it is still refused or routed like any other, and fails only where its
 * plan would be fetched.
 */
export type Planned =
  | { readonly plan: Plan; readonly successor: string | null; readonly paging: SuccessorPaging | null }
  | { readonly error: unknown; readonly successor: null; readonly paging: null };

/**
 * `planCall` for one configuration's context. A call read from a remembered request (frozen, and the
 * same object for every call that sends that request: src/inbound/soap/read.ts) is planned once:
 * planning is pure, and its plan, successor and the page keys of its requests (src/cache/key.ts)
 * then come to a cache hit made already.
 */
export function callPlanner(context: TranslateContext): (call: LegacyCall) => Planned {
  const plans = new WeakMap<LegacyCall, Planned>();
  return (call) => {
    if (!Object.isFrozen(call)) return planCall(call, context);
    const known = plans.get(call);
    if (known !== undefined) return known;
    const planned = planCall(call, context);
    // A plan that failed is made again: its error is the call's own, not one to share.
    if ('plan' in planned) plans.set(call, sharedPlan(planned));
    return planned;
  };
}

function planCall(call: LegacyCall, context: TranslateContext): Planned {
  try {
    const plan = planOf(call, context);
    return { plan, successor: successorOf(plan), paging: successorPagingOf(plan) };
  } catch (error) {
    return { error, successor: null, paging: null };
  }
}

/** A plan every call of its request shares, frozen with its requests: the page cache knows their keys by them (src/cache/key.ts). */
function sharedPlan<P extends Planned & { readonly plan: Plan }>(planned: P): P {
  for (const request of requestsOf(planned.plan)) Object.freeze(Object.freeze(request).params);
  Object.freeze(planned.plan);
  return Object.freeze(planned);
}

/** Every request a plan holds; a kind of plan added without a case here does not compile. */
function requestsOf(plan: Plan): readonly UpstreamRequest[] {
  switch (plan.kind) {
    case 'single':
      return [plan.request];
    case 'window':
      return plan.requests;
    case 'allPages':
      return [plan.base, plan.first];
  }
}
