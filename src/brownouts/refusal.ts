import type { Caller } from '../clients/directory.js';
import { CallRefused, TranslationError } from '../errors.js';
import type { Answer } from '../inbound/reply.js';
import type { LegacyCall } from '../operations.js';
import { successorOf, type Plan } from '../translate/plan.js';
import { refusalOf, type Schedule } from './schedule.js';

/**
 * The call runner's side of brownouts and sunset: a call the schedule refuses now becomes a
 * `CallRefused`, written by its binding like any error the web method throws, before any upstream
 * request.
 */

/** The refusal of `call` from `caller` at this moment, or null when it goes through. */
export type Refuser = (call: LegacyCall, caller: Caller) => CallRefused | null;

export function createRefuser(schedule: Schedule, plan: (call: LegacyCall) => Plan, now: () => number): Refuser {
  return (call, caller) => {
    const at = now();
    // The label is the configured client's name, or `other`, which no brownout can list.
    const refusal = refusalOf(schedule, at, { operation: call.operation.name, client: caller.label });
    if (refusal === null) return null;
    const { name: operation, replacement } = call.operation;
    const detail = { ...refusal, operation, replacement, successor: successorIfTranslated(plan, call), sunsetAt: schedule.sunsetAt, at };
    return new CallRefused(detail, refusal.reason === 'brownout' ? Math.max(1, Math.ceil((refusal.until - at) / 1000)) : null);
  };
}

/** The refusal names the request to send instead; a call whose values do not translate has none, and is refused all the same. */
export function successorIfTranslated(plan: (call: LegacyCall) => Plan, call: LegacyCall): string | null {
  try {
    return successorOf(plan(call));
  } catch (err) {
    if (err instanceof TranslationError) return null;
    throw err;
  }
}

/** A brownout's answer says when its window closes (`Retry-After`, in seconds); a refusal after sunset does not. */
export function refusalAnswer(answer: Answer, refused: CallRefused): Answer {
  if (refused.retryAfterSeconds === null) return answer;
  return { ...answer, headers: { ...answer.headers, 'retry-after': String(refused.retryAfterSeconds) } };
}
