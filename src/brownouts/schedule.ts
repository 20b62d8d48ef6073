import { REPEAT_PERIOD_MS, type Config } from '../config/schema.js';
import type { OperationName } from '../operations.js';
import type { Refusal } from '../messages.js';

/**
 * Brownouts and sunset (docs/migration.md §5), as pure functions of the schedule and the time: which
 * call is refused now, and why. Every time is an instant in milliseconds since the epoch, so a
 * daylight-saving change moves nothing: a daily window opens every 24 hours.
 */

export interface Brownout {
  readonly name: string;
  /** Null: every operation. */
  readonly operations: ReadonlySet<string> | null;
  /** Names of the `clients` table; null: every caller. */
  readonly clients: ReadonlySet<string> | null;
  readonly start: number;
  readonly durationMs: number;
  /** Null: one window only. */
  readonly periodMs: number | null;
  /** The last instant a window may start; null: no end. */
  readonly until: number | null;
}

export interface Schedule {
  readonly brownouts: readonly Brownout[];
  /** `deprecation.sunsetAt`, which a refusal names when it is set. */
  readonly sunsetAt: number | null;
  /** `deprecation.refuseAfterSunset`: from `sunsetAt` on, every call is refused. */
  readonly refuseAfterSunset: boolean;
}

/** Who is calling what: the client's name in the `clients` table (`other` for everyone else, which no brownout lists). */
export interface ScheduledCall {
  readonly operation: OperationName;
  readonly client: string;
}

export function scheduleOf({ brownouts, deprecation }: Pick<Config, 'brownouts' | 'deprecation'>): Schedule {
  return {
    brownouts: brownouts.map((entry) => ({
      name: entry.name,
      operations: entry.operations.length === 0 ? null : new Set(entry.operations),
      clients: entry.clients.length === 0 ? null : new Set(entry.clients),
      start: Date.parse(entry.start),
      durationMs: entry.durationMinutes * 60_000,
      periodMs: entry.repeat === null ? null : REPEAT_PERIOD_MS[entry.repeat],
      until: entry.until === null ? null : Date.parse(entry.until),
    })),
    sunsetAt: deprecation.sunsetAt === null ? null : Date.parse(deprecation.sunsetAt),
    refuseAfterSunset: deprecation.refuseAfterSunset,
  };
}

/**
 * The end of the window of `brownout` open at `now` (start inclusive, end exclusive), or null. A
 * repeated window is shorter than its period (validate.ts), so only the latest start can be open.
 */
export function windowEnd(brownout: Brownout, now: number): number | null {
  if (now < brownout.start) return null;
  const latestStart = brownout.periodMs === null ? brownout.start : now - ((now - brownout.start) % brownout.periodMs);
  if (brownout.until !== null && latestStart > brownout.until) return null;
  const end = latestStart + brownout.durationMs;
  return now < end ? end : null;
}

/**
 * Whether the call is refused at `now`: after the sunset every call; else in the open brownout window
 * that names it and closes last, so that its end is when the call goes through again.
 */
export function refusalOf(schedule: Schedule, now: number, call: ScheduledCall): Refusal | null {
  const { sunsetAt } = schedule;
  if (schedule.refuseAfterSunset && sunsetAt !== null && now >= sunsetAt) return { reason: 'sunset', since: sunsetAt };
  let refusal: Extract<Refusal, { reason: 'brownout' }> | null = null;
  for (const brownout of schedule.brownouts) {
    if (brownout.operations !== null && !brownout.operations.has(call.operation)) continue;
    if (brownout.clients !== null && !brownout.clients.has(call.client)) continue;
    const until = windowEnd(brownout, now);
    if (until !== null && (refusal === null || until > refusal.until)) refusal = { reason: 'brownout', brownout: brownout.name, until };
  }
  return refusal;
}
