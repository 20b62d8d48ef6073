import type { LegacyCall } from '../operations.js';
import { planOf, type SuccessorPaging, successorOf, successorPagingOf, type Plan, type TranslateContext } from '../translate/plan.js';

/**
 * A call's plan, made once and carried: the refusal names its successor, a route hands it to the
 * legacy origin's side, and the translated path fetches it. A call whose values do not translate
 * carries its error instead: it is still refused or routed like any other, and fails only where its
 * plan would be fetched.
 */
export type Planned =
  | { readonly plan: Plan; readonly successor: string | null; readonly paging: SuccessorPaging | null }
  | { readonly error: unknown; readonly successor: null; readonly paging: null };

export function planCall(call: LegacyCall, context: TranslateContext): Planned {
  try {
    const plan = planOf(call, context);
    return { plan, successor: successorOf(plan), paging: successorPagingOf(plan) };
  } catch (error) {
    return { error, successor: null, paging: null };
  }
}
