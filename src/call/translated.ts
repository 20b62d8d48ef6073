import { UpstreamBusy } from '../errors.js';
import type { Binding } from '../inbound/binding.js';
import type { PlanFetcher } from '../outbound/execute.js';
import type { FetchOptions, FetchPage } from '../outbound/fetch.js';
import { releasePage } from '../xml/compact.js';
import type { LegacyCall } from '../operations.js';
import type { WrittenEnding } from '../inbound/ending.js';
import { shedReply } from './admission.js';
import type { Planned } from './plan.js';

/**
 * The translated path: the plan's pages fetched and assembled into the result (`fetchPlan`), written
 * by the binding; any failure written as the binding's fault or error text, but a call over the
 * upstream budget, which is shed. Rejects only on a binding's own defect.
 */
export async function translatedEnding<W>(
  binding: Binding<W>,
  call: LegacyCall,
  wire: W,
  planned: Planned,
  fetchPlan: PlanFetcher,
  fetch: FetchPage,
  options: FetchOptions,
): Promise<WrittenEnding> {
  try {
    if ('error' in planned) throw planned.error;
    const result = await fetchPlan(planned.plan, fetch, options);
    const reply = binding.write(result, call, wire);
    // Written into the reply: the page's bytes go back to the pool (src/xml/pool.ts).
    releasePage(result);
    return { reply, failure: null, successor: planned.successor, successorPaging: planned.paging };
  } catch (err) {
    // Over the upstream budget: shed, as a call past the concurrency limit is, not a fault.
    const reply = err instanceof UpstreamBusy ? shedReply(err.retryAfterSeconds) : binding.writeError(err, wire);
    return { reply, failure: err, successor: planned.successor, successorPaging: planned.paging };
  }
}
