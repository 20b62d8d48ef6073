import { Ledger, type Outcome } from './ledger.js';
import { type LedgerTotals, type LedgerView, type SortedEntries, viewOf } from './ledger-view.js';

/** `GET /ledger` (docs/migration.md §3): its query, and the page of a ledger it answers. */

/**
 * Bump when a field of LedgerJson changes meaning or goes away (docs/migration.md §3). 1 was the shape
 * before paging, which had no `version` and gave every entry.
 */
export const LEDGER_JSON_VERSION = 2;

/** Entries in a reply of `GET /ledger` when `limit` is not given: the largest callers, a screen or two. */
const DEFAULT_PAGE_SIZE = 100;
/** At the cap, with successors of 2,000 characters, a page of these is 2 MB at most. */
export const MAX_PAGE_SIZE = 1000;

/** Which entries a reply gives: those of `client` (every client when null), largest first, `limit` from `offset`. */
export interface LedgerQuery {
  readonly client: string | null;
  readonly offset: number;
  readonly limit: number;
}

export const FIRST_PAGE: LedgerQuery = { client: null, offset: 0, limit: DEFAULT_PAGE_SIZE };

/** An answer of `GET /ledger` (docs/migration.md §3): times in ISO 8601, largest callers first. */
export interface LedgerJson {
  readonly version: typeof LEDGER_JSON_VERSION;
  readonly maxEntries: number;
  readonly folded: number;
  /** The whole ledger. */
  readonly total: LedgerTotals;
  /** The entries the query's `client` selects (the whole ledger without it), of which `entries` is a page. */
  readonly matched: LedgerTotals;
  readonly offset: number;
  readonly limit: number;
  /** The `offset` of the next page; null when this one is the last. */
  readonly nextOffset: number | null;
  readonly entries: readonly {
    readonly client: string;
    readonly operation: string;
    readonly binding: string;
    readonly firstSeen: string;
    readonly lastSeen: string;
    readonly calls: number;
    readonly faults: number;
    readonly outcomes: Readonly<Record<Outcome, number>>;
    readonly example: string | null;
    /** The stack of its latest call, a known one before `unknown` (src/clients/stack.ts), and its version; null when no call named one. */
    readonly clientStack: string | null;
    readonly clientStackVersion: string | null;
  }[];
}

/** A page of `source`: made from a view, so that it costs what it holds (a Ledger is viewed first, as tests read one). */
export function ledgerJson(source: Ledger | LedgerView, { client, offset, limit }: LedgerQuery = FIRST_PAGE): LedgerJson {
  const view = source instanceof Ledger ? viewOf(source) : source;
  const matched = client === null ? view.all : (view.byClient.get(client) ?? NONE);
  return {
    version: LEDGER_JSON_VERSION,
    maxEntries: view.maxEntries,
    folded: view.folded,
    total: view.all.totals,
    matched: matched.totals,
    offset,
    limit,
    nextOffset: offset + limit < matched.totals.entries ? offset + limit : null,
    entries: matched.entries.slice(offset, offset + limit).map((entry) => ({
      client: entry.client,
      operation: entry.operation,
      binding: entry.binding,
      firstSeen: new Date(entry.firstSeen).toISOString(),
      lastSeen: new Date(entry.lastSeen).toISOString(),
      calls: entry.calls,
      faults: entry.outcomes.fault,
      outcomes: entry.outcomes,
      example: entry.example?.successor ?? null,
      clientStack: entry.stack?.name ?? null,
      clientStackVersion: entry.stack?.version ?? null,
    })),
  };
}

const NONE: SortedEntries = { entries: [], totals: { entries: 0, calls: 0 } };

/** As fastify words its own refusals. */
export interface BadRequest {
  readonly statusCode: 400;
  readonly error: 'Bad Request';
  readonly message: string;
}

export type LedgerReply = { readonly status: 200; readonly body: LedgerJson } | { readonly status: 400; readonly body: BadRequest };

/** What `GET /ledger` answers to `query` (the query string, parsed): a page of the ledger, or 400 and why. */
export function ledgerPage(source: Ledger | LedgerView, query: unknown): LedgerReply {
  const parsed = ledgerQuery(query);
  if (typeof parsed === 'string') return { status: 400, body: { statusCode: 400, error: 'Bad Request', message: parsed } };
  return { status: 200, body: ledgerJson(source, parsed) };
}

/** Whose ledger an answer shows: the fleet's, or this instance's while Redis cannot be read. */
export type LedgerScope = 'fleet' | 'instance';

/** Pages of one view kept as the text sent: pollers asking the same page of an unchanged view cost no JSON. */
const TEXTS_PER_VIEW = 32;
const texts = new WeakMap<LedgerView, Map<string, string>>();

/** `GET /ledger`'s answer as JSON text, with its `scope` when it is a page; the same page of the same view is written once. */
export function ledgerText(view: LedgerView, scope: LedgerScope, query: unknown): { readonly status: 200 | 400; readonly text: string } {
  const known = texts.get(view) ?? new Map<string, string>();
  texts.set(view, known);
  const key = `${scope} ${JSON.stringify(query)}`;
  const kept = known.get(key);
  if (kept !== undefined) return { status: 200, text: kept };
  const { status, body } = ledgerPage(view, query);
  if (status === 400) return { status, text: JSON.stringify(body) };
  const text = JSON.stringify({ ...body, scope });
  if (known.size < TEXTS_PER_VIEW) known.set(key, text);
  return { status, text };
}

const QUERY_PARAMETERS = ['client', 'limit', 'offset'];

/** The query string's `client`, `limit` and `offset`; what is wrong with it as a message. */
function ledgerQuery(query: unknown): LedgerQuery | string {
  const given = (typeof query === 'object' && query !== null ? query : {}) as Readonly<Record<string, unknown>>;
  for (const [name, value] of Object.entries(given)) {
    // An operator's typo (`?clent=`) must not answer as if no filter had been asked for.
    if (!QUERY_PARAMETERS.includes(name)) return `/ledger takes client, limit and offset, not ${JSON.stringify(name)}`;
    if (typeof value !== 'string') return `${name} is given more than once`;
  }
  const { client, limit, offset } = given as Readonly<Record<string, string | undefined>>;
  if (client === '') return 'client must name a client (its name, or the fingerprint of an unnamed caller)';
  const pageSize = limit === undefined ? DEFAULT_PAGE_SIZE : wholeNumber(limit, 1, MAX_PAGE_SIZE);
  if (pageSize === null) return `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}, got ${JSON.stringify(limit)}`;
  const from = offset === undefined ? 0 : wholeNumber(offset, 0, Number.MAX_SAFE_INTEGER);
  if (from === null) return `offset must be a whole number from 0, got ${JSON.stringify(offset)}`;
  return { client: client ?? null, offset: from, limit: pageSize };
}

function wholeNumber(text: string, min: number, max: number): number | null {
  const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  return n >= min && n <= max ? n : null;
}
