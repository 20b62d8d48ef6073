import { OPERATIONS, findOperation, parameterMapping, type PagedPath, type ParamMapping } from '../operations.js';
import { DAY_MS, type Collected } from './collect.js';
import { OUTCOMES, compareText, latestStack, sortEntries, type LedgerEntry, type Outcome } from '../deprecation/ledger.js';
import type { ClientStackName } from '../clients/stack.js';
import type { SuccessorPaging } from '../translate/plan.js';
import { type ClientStatus, clientStatus, type StatusPolicy } from '../migration/status.js';

/**
 * The migration report: per client, what it still calls, how much, since and until when, whether that
 * is rising or falling, and for each operation the replacement request with an example of its own.
 * Pure: what was collected in, the report out; the renderers (table, JSON, HTML) only lay it out.
 */

export interface Tally {
  readonly calls: number;
  readonly faults: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
  readonly firstSeen: string;
  readonly lastSeen: string;
}

/** The last 7 days of the log against the 7 before them. */
export interface Trend {
  readonly last7: number;
  readonly previous7: number;
  readonly direction: 'rising' | 'falling' | 'flat';
}

export interface BindingReport extends Tally {
  readonly binding: string;
}

export interface OperationReport extends Tally {
  readonly operation: string;
  /** Null for `unknown`: the call named no operation. */
  readonly replacement: string | null;
  /** The successor of the client's latest ok call of the operation; null when no line recorded one (schema 1). */
  readonly example: string | null;
  /** How the pages from `example` on made that call's result; null for one page (or a line that did not say). */
  readonly examplePaging: SuccessorPaging | null;
  readonly bindings: readonly BindingReport[];
}

export interface ClientReport extends Tally, ClientStatus {
  readonly client: string;
  /** The stack of its latest call (src/clients/stack.ts); null when no line named one (logs of older versions). */
  readonly stack: ClientStackName | null;
  readonly stackVersion: string | null;
  readonly fingerprint: string | null;
  readonly team: string | null;
  readonly contact: string | null;
  /** Null when the log covers fewer than 14 days. */
  readonly trend: Trend | null;
  /** Calls on each of the last (up to) 14 days of the log. */
  readonly recentDays: readonly number[];
  readonly operations: readonly OperationReport[];
}

export interface Replacement {
  readonly operation: string;
  readonly replacement: string;
  readonly note: string;
  readonly mapping: readonly ParamMapping[];
}

/** Calls on each day of `MigrationReport.days`. */
export interface Series {
  readonly name: string;
  readonly counts: readonly number[];
}

export interface SkippedLine {
  readonly source: string;
  readonly line: number;
  readonly reason: string;
}

export interface InputSummary {
  readonly sources: readonly { readonly name: string; readonly lines: number; readonly hits: number; readonly error: string | null }[];
  readonly lines: number;
  readonly hits: number;
  /** Lines of other events (operator warnings, start-up lines), and blank ones. */
  readonly otherLines: number;
  readonly malformed: number;
  /** The first malformed lines, to look at. */
  readonly skipped: readonly SkippedLine[];
}

/** Days of the log before the charted ones: their calls are in every count, not in `perDay`. */
export interface Uncharted {
  /** The first and last of them, `YYYY-MM-DD`. */
  readonly from: string;
  readonly to: string;
  readonly days: number;
  readonly calls: number;
}

export interface MigrationReport {
  readonly version: typeof REPORT_JSON_VERSION;
  readonly period: { readonly from: string; readonly to: string } | null;
  /** The UTC days charted, `YYYY-MM-DD`: every day from the first hit to the last, the last CHARTED_DAYS at most. */
  readonly days: readonly string[];
  /** Null when every day is charted. */
  readonly uncharted: Uncharted | null;
  readonly input: InputSummary;
  /** Calls counted under the client `other` because the ledger was full (src/deprecation/ledger.ts). */
  readonly folded: number;
  readonly clients: readonly ClientReport[];
  readonly replacements: readonly Replacement[];
  readonly perDay: { readonly byOperation: readonly Series[]; readonly byClient: readonly Series[] };
}

export type PagingProfiles = Readonly<Record<PagedPath, { readonly pageParam: string; readonly sizeParam: string }>>;

/**
 * Bump when a field of MigrationReport changes meaning or goes away (docs/migration.md §3). 1 was the
 * shape before `uncharted`, without `version`, when `days` was every day of the log however many.
 */
export const REPORT_JSON_VERSION = 2;

/** Clients charted one by one; the others share one chart. */
export const CHARTED_CLIENTS = 20;
/**
 * A year of days charted, the latest. Hit times may span a century (hit-line.ts), and a count per day of
 * each series, a bar per day in each chart, made a page of 82 MB from two stray times a century apart.
 */
export const CHARTED_DAYS = 366;
const TREND_DAYS = 7;
/** Within ±10 % the trend is flat: day-to-day noise is not a migration. */
const FLAT_BAND = 0.1;

/** What a client's status is judged by (`deprecation.sunsetAt`, `deprecation.quietDays` of CONFIG_FILE), and when. */
export interface Judgement {
  readonly policy: StatusPolicy;
  /** Epoch ms: when the report is made. */
  readonly now: number;
}

export function buildReport(collected: Collected, input: InputSummary, profiles: PagingProfiles, judgement: Judgement): MigrationReport {
  const first = collected.from === null ? 0 : Math.floor(collected.from / DAY_MS);
  const dayCount = collected.to === null ? 0 : Math.floor(collected.to / DAY_MS) - first + 1;
  const firstCharted = first + Math.max(0, dayCount - CHARTED_DAYS);
  const dayNumbers = Array.from({ length: Math.min(dayCount, CHARTED_DAYS) }, (_, i) => firstCharted + i);
  const series = (name: string, days: ReadonlyMap<number, number> | undefined): Series => ({
    name,
    counts: dayNumbers.map((day) => days?.get(day) ?? 0),
  });

  const byClient = groupBy(collected.ledger.entries(), (entry) => entry.client);
  const clients = [...byClient]
    .map(([client, entries]): ClientReport => {
      const recentDays = series(client, collected.byClient.get(client)).counts.slice(-2 * TREND_DAYS);
      const card = collected.cards.get(client);
      const stack = latestStack(entries);
      return {
        client,
        ...clientStatus(Math.max(...entries.map((entry) => entry.lastSeen)), judgement.now, judgement.policy),
        stack: stack?.name ?? null,
        stackVersion: stack?.version ?? null,
        fingerprint: card?.fingerprint ?? null,
        team: card?.team ?? null,
        contact: card?.contact ?? null,
        ...tally(entries),
        trend: dayCount < 2 * TREND_DAYS ? null : trendOf(recentDays),
        recentDays,
        operations: [...groupBy(entries, (entry) => entry.operation)]
          .map(([operation, calls]) => operationReport(operation, calls))
          .sort(byCalls),
      };
    })
    .sort((a, b) => byCalls(a, b) || compareText(a.client, b.client));

  const operationsCalled = new Set(collected.ledger.entries().map((entry) => entry.operation));
  const charted = clients.slice(0, CHARTED_CLIENTS);
  const sharingAChart = clients.slice(CHARTED_CLIENTS);
  const daysBefore = firstCharted - first;
  const uncharted =
    daysBefore === 0
      ? null
      : { from: dayText(first), to: dayText(firstCharted - 1), days: daysBefore, calls: callsBefore(collected, firstCharted) };
  const sharedDays = sumDays(sharingAChart.map((client) => collected.byClient.get(client.client)));
  return {
    version: REPORT_JSON_VERSION,
    period: collected.from === null || collected.to === null ? null : { from: iso(collected.from), to: iso(collected.to) },
    days: dayNumbers.map(dayText),
    uncharted,
    input,
    folded: collected.ledger.folded,
    clients,
    replacements: replacements(operationsCalled, profiles),
    perDay: {
      byOperation: [...collected.byOperation].map(([operation, days]) => series(operation, days)).sort((a, b) => total(b) - total(a)),
      byClient: [
        ...charted.map((client) => series(client.client, collected.byClient.get(client.client))),
        ...(sharingAChart.length === 0 ? [] : [series(`${sharingAChart.length} more clients`, sharedDays)]),
      ],
    },
  };
}

function operationReport(operation: string, entries: readonly LedgerEntry[]): OperationReport {
  const spec = findOperation(operation);
  const latest = entries.reduce<LedgerEntry['example']>(
    (best, entry) => (entry.example !== null && (best === null || entry.example.at > best.at) ? entry.example : best),
    null,
  );
  return {
    operation,
    replacement: spec?.replacement ?? null,
    ...tally(entries),
    example: latest?.successor ?? null,
    examplePaging: latest?.paging ?? null,
    bindings: sortEntries([...entries]).map((entry) => ({ binding: entry.binding, ...tally([entry]) })),
  };
}

/** The mapping of every operation called, in the service's order. */
function replacements(called: ReadonlySet<string>, profiles: PagingProfiles): Replacement[] {
  return OPERATIONS.filter((spec) => called.has(spec.name)).map((spec) => ({
    operation: spec.name,
    replacement: spec.replacement,
    note: spec.migrationNote,
    mapping: parameterMapping(spec, profiles),
  }));
}

function tally(entries: readonly LedgerEntry[]): Tally {
  const outcomes = Object.fromEntries(
    OUTCOMES.map((outcome) => [outcome, entries.reduce((sum, entry) => sum + entry.outcomes[outcome], 0)]),
  ) as Record<Outcome, number>;
  return {
    calls: entries.reduce((sum, entry) => sum + entry.calls, 0),
    faults: outcomes.fault,
    outcomes,
    firstSeen: iso(Math.min(...entries.map((entry) => entry.firstSeen))),
    lastSeen: iso(Math.max(...entries.map((entry) => entry.lastSeen))),
  };
}

function trendOf(recentDays: readonly number[]): Trend {
  const last7 = sum(recentDays.slice(-TREND_DAYS));
  const previous7 = sum(recentDays.slice(-2 * TREND_DAYS, -TREND_DAYS));
  const direction = last7 > previous7 * (1 + FLAT_BAND) ? 'rising' : last7 < previous7 * (1 - FLAT_BAND) ? 'falling' : 'flat';
  return { last7, previous7, direction };
}

function callsBefore(collected: Collected, firstDay: number): number {
  let calls = 0;
  for (const days of collected.byOperation.values()) for (const [day, count] of days) if (day < firstDay) calls += count;
  return calls;
}

function sumDays(all: readonly (ReadonlyMap<number, number> | undefined)[]): Map<number, number> {
  const summed = new Map<number, number>();
  for (const days of all) for (const [day, calls] of days ?? []) summed.set(day, (summed.get(day) ?? 0) + calls);
  return summed;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group === undefined) groups.set(key(item), [item]);
    else group.push(item);
  }
  return groups;
}

const sum = (counts: readonly number[]): number => counts.reduce((a, b) => a + b, 0);
const total = (series: Series): number => sum(series.counts);
const byCalls = (a: { readonly calls: number }, b: { readonly calls: number }): number => b.calls - a.calls;
const iso = (ms: number): string => new Date(ms).toISOString();
/** Days since the epoch as `YYYY-MM-DD`. */
const dayText = (day: number): string => iso(day * DAY_MS).slice(0, 10);
