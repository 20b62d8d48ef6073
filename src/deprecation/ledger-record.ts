import { stackOfRecord } from '../clients/stack.js';
import { BINDING_NAMES } from '../inbound/binding.js';
import { OPERATIONS } from '../operations.js';
import { MAX_SUCCESSOR_LENGTH, type SuccessorPaging } from '../translate/plan.js';
import { OUTCOMES, type Example, type LedgerEntry, type Outcome, type SeenStack } from './ledger.js';

/**
 * A ledger entry as the fleet keeps it in Redis: JSON (sealed by src/deprecation/fleet-ledger.ts),
 * and the checks it must pass when read back, as if it were written now: whatever is in Redis may
 * have been put there by someone else, and one bad entry must cost that entry, not the answer.
 */

/** Larger than any entry the proxy writes (an example of 2,000 characters, a name of 64): refused unread. */
export const MAX_RECORD_BYTES = 8192;

/** A configured client's name (64 characters, docs/migration.md §1), a fingerprint, `anonymous`, `other`. */
const CLIENT = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const OPERATION_NAMES: ReadonlySet<string> = new Set([...OPERATIONS.map((operation) => operation.name), 'unknown']);
const BINDINGS: ReadonlySet<string> = new Set([...BINDING_NAMES, 'unknown']);
/** Hits are timed by the instances' clocks: a little ahead of this one is skew, more is a forged time. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** No hit of this service is older (the report's bound too). */
const EARLIEST = Date.UTC(2000, 0, 1);

export function recordOf(entry: LedgerEntry): Buffer {
  return Buffer.from(JSON.stringify(entry), 'utf8');
}

/** The entry `bytes` hold, or null when it is not one the proxy could have written by `now`. */
export function entryOfRecord(bytes: Buffer, now: number): LedgerEntry | null {
  if (bytes.length > MAX_RECORD_BYTES) return null;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Readonly<Record<string, unknown>>;
  const { client, configured, operation, binding, firstSeen, lastSeen, calls } = record;
  const instant = (at: unknown): at is number =>
    Number.isSafeInteger(at) && (at as number) >= EARLIEST && (at as number) <= now + CLOCK_SKEW_MS;
  const outcomes = outcomesOf(record.outcomes);
  const example = exampleOf(record.example, instant);
  const stack = seenStackOf(record.stack, instant);
  if (
    typeof client !== 'string' ||
    !CLIENT.test(client) ||
    typeof configured !== 'boolean' ||
    typeof operation !== 'string' ||
    !OPERATION_NAMES.has(operation) ||
    typeof binding !== 'string' ||
    !BINDINGS.has(binding) ||
    !instant(firstSeen) ||
    !instant(lastSeen) ||
    firstSeen > lastSeen ||
    outcomes === null ||
    calls !== OUTCOMES.reduce((sum, outcome) => sum + outcomes[outcome], 0) ||
    example === undefined ||
    stack === undefined
  )
    return null;
  return { client, configured, operation, binding, firstSeen, lastSeen, calls, outcomes, example, stack };
}

/** Each outcome a count (a non-negative safe integer, and their sum too); null otherwise. */
function outcomesOf(value: unknown): Record<Outcome, number> | null {
  if (typeof value !== 'object' || value === null) return null;
  const given = value as Readonly<Record<string, unknown>>;
  const counts = OUTCOMES.map((outcome) => given[outcome]);
  if (!counts.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return null;
  const [ok, fault, shed, refused] = counts as [number, number, number, number];
  return Number.isSafeInteger(ok + fault + shed + refused) ? { ok, fault, shed, refused } : null;
}

/** The stack, null for none (an entry an older version wrote has no field); undefined when it is not one a call could have given. */
function seenStackOf(value: unknown, instant: (at: unknown) => at is number): SeenStack | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return undefined;
  const { at, name, version } = value as Readonly<Record<string, unknown>>;
  const stack = stackOfRecord(name, version);
  return instant(at) && stack !== null ? { at, ...stack } : undefined;
}

/**
 * Bounds no call of the proxy reaches: its pages are at most `upstream.maxPagesPerCall` (10,000), a
 * window starts inside its first page (`paging.profiles` pages are at most 100,000 items), and what
 * a snippet slices must stay an Int32 in C# and Java.
 */
const MAX_PAGES = 10_000;
const MAX_SKIP = 100_000;
const MAX_INT32 = 2 ** 31 - 1;

const count = (value: unknown, min: number, max: number): value is number =>
  Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;

/**
 * The paging of an example as a record or a hit line holds it: null (one page, or absent: a version
 * before it); undefined when it is not one a call could have given.
 */
export function pagingOfRecord(value: unknown): SuccessorPaging | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return undefined;
  const { pages, skip, take } = value as Readonly<Record<string, unknown>>;
  const valid =
    (pages === null || count(pages, 1, MAX_PAGES)) &&
    count(skip, 0, MAX_SKIP) &&
    (take === null || count(take, 0, MAX_INT32 - (skip as number)));
  return valid ? { pages: pages as number | null, skip: skip as number, take: take as number | null } : undefined;
}

/** The example, null for none; undefined when it is not one a call could have given. */
function exampleOf(value: unknown, instant: (at: unknown) => at is number): Example | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'object') return undefined;
  const { at, successor, paging } = value as Readonly<Record<string, unknown>>;
  const bounded = typeof successor === 'string' && successor.startsWith('/') && successor.length <= MAX_SUCCESSOR_LENGTH;
  const pages = pagingOfRecord(paging);
  return instant(at) && bounded && pages !== undefined ? { at, successor, paging: pages } : undefined;
}
