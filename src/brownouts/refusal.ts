import type { Caller } from '../clients/directory.js';
import { CallRefused } from '../errors.js';
import type { Reply } from '../inbound/reply.js';
import type { LegacyCall } from '../operations.js';
import { refusalOf, type Schedule } from './schedule.js';

/**
 * The call path's side of brownouts and sunset: a call the schedule refuses now becomes a
 * `CallRefused`, written by its binding like any error the web method throws, before any upstream
 * request.
 */

/**
 * The refusal of `call` from `caller` at this moment, or null when it goes through. `successor`: the
 * call's own replacement request, which the refusal names (null for a call that does not translate,
 * refused all the same).
 */
export type Refuser = (call: LegacyCall, caller: Caller, successor: string | null) => CallRefused | null;

export function createRefuser(schedule: Schedule, now: () => number): Refuser {
  return (call, caller, successor) => {
    const at = now();
    // The label is the configured client's name, or `other`, which no brownout can list.
    const refusal = refusalOf(schedule, at, { operation: call.operation.name, client: caller.label });
    if (refusal === null) return null;
    const { name: operation, replacement } = call.operation;
    const detail = { ...refusal, operation, replacement, successor, sunsetAt: schedule.sunsetAt, at };
    return new CallRefused(detail, refusal.reason === 'brownout' ? Math.max(1, Math.ceil((refusal.until - at) / 1000)) : null);
  };
}

/** A brownout's reply says when its window closes (`Retry-After`, in seconds); a refusal after sunset does not. */
export function refusalReply(reply: Reply, refused: CallRefused): Reply {
  if (refused.retryAfterSeconds === null) return reply;
  return { ...reply, headers: { ...reply.headers, 'retry-after': String(refused.retryAfterSeconds) } };
}
