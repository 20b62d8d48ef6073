/**
 * Where a client stands in the migration (docs/migration.md, "A status per client"), as Shopify's API
 * health report puts it: `ok` once it has made no legacy call for `quietDays`; else `fix-by` the
 * sunset, `yellow` while that is more than 30 days ahead and `red` within them; `overdue` once the
 * sunset has passed and it still calls; `deprecated` while no sunset is set.
 */

export const CLIENT_STATUSES = ['overdue', 'fix-by', 'deprecated', 'ok'] as const;
export type ClientStatusName = (typeof CLIENT_STATUSES)[number];

export interface ClientStatus {
  readonly status: ClientStatusName;
  /** The sunset, ISO 8601, for `fix-by` and `overdue`; null otherwise. */
  readonly fixBy: string | null;
  /** `red` within RED_WITHIN_DAYS of the sunset or past it, `yellow` before; null for `ok` and `deprecated`. */
  readonly urgency: 'yellow' | 'red' | null;
}

/** What the status is judged by: `deprecation.sunsetAt` and `deprecation.quietDays`. */
export interface StatusPolicy {
  readonly sunsetAt: string | null;
  readonly quietDays: number;
}

const DAY_MS = 86_400_000;
/** A fix-by date this near is red. */
export const RED_WITHIN_DAYS = 30;

/** The status of a client whose latest legacy call was at `lastSeen` (epoch ms), judged at `now`. */
export function clientStatus(lastSeen: number, now: number, { sunsetAt, quietDays }: StatusPolicy): ClientStatus {
  if (now - lastSeen >= quietDays * DAY_MS) return { status: 'ok', fixBy: null, urgency: null };
  if (sunsetAt === null) return { status: 'deprecated', fixBy: null, urgency: null };
  const sunset = Date.parse(sunsetAt);
  const fixBy = new Date(sunset).toISOString();
  if (now >= sunset) return { status: 'overdue', fixBy, urgency: 'red' };
  return { status: 'fix-by', fixBy, urgency: sunset - now <= RED_WITHIN_DAYS * DAY_MS ? 'red' : 'yellow' };
}

/** Worst first: overdue, then red, then yellow, then deprecated, then ok. */
export function statusRank({ status, urgency }: ClientStatus): number {
  if (status === 'fix-by') return urgency === 'red' ? 1 : 2;
  return { overdue: 0, deprecated: 3, ok: 4 }[status];
}

/** The status in words: `ok`, `fix by 2027-01-31`, `overdue since 2027-01-31`, `deprecated`. */
export function statusText({ status, fixBy }: Pick<ClientStatus, 'status' | 'fixBy'>): string {
  const date = fixBy === null ? '' : fixBy.slice(0, 10);
  return status === 'fix-by' ? `fix by ${date}` : status === 'overdue' ? `overdue since ${date}` : status;
}

/** A stack in words: its name and version, or `not known`. */
export function stackText({ stack, stackVersion }: { readonly stack: string | null; readonly stackVersion: string | null }): string {
  return stack === null ? 'not known' : stackVersion === null ? stack : `${stack} ${stackVersion}`;
}
