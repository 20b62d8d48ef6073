/**
 * The deprecation ledger: who still calls what. Per client × operation × binding, when it was first
 * and last seen, how many calls and how each ended, and the replacement request of its latest
 * successful call (its `successor`, an example the client can copy). Pure: hits in, entries out.
 *
 * Each instance keeps one live (`GET /ledger`); the migration report builds one from the hit logs.
 * Ledgers of several instances merge into the ledger of all their hits.
 */

export const OUTCOMES = ['ok', 'fault', 'shed', 'refused'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** What the ledger reads of a deprecation hit (schema 1 hits have no `clientLabel` nor `successor`). */
export interface LedgerHit {
  readonly client: string;
  /** The name of a client of the `clients` table (then `client` too), else `other`. */
  readonly clientLabel?: string | null;
  readonly operation: string;
  readonly binding: string;
  readonly outcome: Outcome;
  readonly successor?: string | null;
}

/** The replacement request of a successful call, and when that call was made. */
export interface Example {
  readonly at: number;
  readonly successor: string;
}

export interface LedgerEntry {
  readonly client: string;
  /** A client of the `clients` table: never folded. */
  readonly configured: boolean;
  readonly operation: string;
  readonly binding: string;
  /** Epoch milliseconds. */
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly calls: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
  /** From the latest ok call that recorded its successor; null when none did. */
  readonly example: Example | null;
}

/**
 * Where unnamed callers go once the ledger holds `maxEntries` of theirs: fingerprints of unknown
 * callers are unbounded, the memory of a long-running instance must not be. Configured clients are
 * never folded: the `clients` table bounds them, and a flood of new keys must not hide them.
 */
export const FOLDED_CLIENT = 'other';

/** Entries of unnamed callers (client × operation × binding) a ledger holds before it folds new ones. */
export const DEFAULT_MAX_ENTRIES = 10_000;

interface MutableEntry {
  readonly client: string;
  readonly configured: boolean;
  readonly operation: string;
  readonly binding: string;
  firstSeen: number;
  lastSeen: number;
  calls: number;
  readonly outcomes: Record<Outcome, number>;
  example: Example | null;
}

const keyOf = (client: string, operation: string, binding: string): string => `${client}\u0000${operation}\u0000${binding}`;

const noCalls = (): Record<Outcome, number> => ({ ok: 0, fault: 0, shed: 0, refused: 0 });

const later = (a: Example | null, b: Example | null): Example | null => (a === null || (b !== null && b.at >= a.at) ? b : a);

export class Ledger {
  readonly #entries = new Map<string, MutableEntry>();
  /** Entries of unnamed callers, FOLDED_CLIENT's aside: what `maxEntries` bounds. */
  #unnamedEntries = 0;
  #folded: number;

  /** `folded`: calls already folded elsewhere, carried over by a merge. */
  constructor(
    readonly maxEntries: number = DEFAULT_MAX_ENTRIES,
    folded = 0,
  ) {
    this.#folded = folded;
  }

  /** Calls counted under FOLDED_CLIENT because the ledger was full when their key was new. */
  get folded(): number {
    return this.#folded;
  }

  /** Counts a hit made at `at` (epoch ms); returns the client it was counted under. */
  add(hit: LedgerHit, at: number): string {
    const successor = hit.outcome === 'ok' && typeof hit.successor === 'string' ? { at, successor: hit.successor } : null;
    const outcomes = { ...noCalls(), [hit.outcome]: 1 };
    // A configured client's label is its name; everyone else's is `other`.
    const configured = hit.clientLabel === hit.client;
    const { client, operation, binding } = hit;
    return this.absorb({ client, configured, operation, binding, firstSeen: at, lastSeen: at, calls: 1, outcomes, example: successor });
  }

  /** Counts a whole entry of another ledger (see mergeLedgers); returns the client it was counted under. */
  absorb(entry: LedgerEntry): string {
    const into = this.#entryFor(entry);
    into.firstSeen = Math.min(into.firstSeen, entry.firstSeen);
    into.lastSeen = Math.max(into.lastSeen, entry.lastSeen);
    into.calls += entry.calls;
    for (const outcome of OUTCOMES) into.outcomes[outcome] += entry.outcomes[outcome];
    into.example = later(into.example, entry.example);
    return into.client;
  }

  entries(): LedgerEntry[] {
    return [...this.#entries.values()].map((entry) => ({ ...entry, outcomes: { ...entry.outcomes } }));
  }

  /** The entry that counts `entry`'s client, operation and binding: FOLDED_CLIENT's for a new unnamed caller when full. */
  #entryFor({ client, configured, operation, binding, calls }: LedgerEntry): MutableEntry {
    const known = this.#entries.get(keyOf(client, operation, binding));
    if (known !== undefined) return known;
    const unnamed = !configured && client !== FOLDED_CLIENT;
    if (unnamed && this.#unnamedEntries >= this.maxEntries) {
      this.#folded += calls;
      return this.#entries.get(keyOf(FOLDED_CLIENT, operation, binding)) ?? this.#created(FOLDED_CLIENT, false, operation, binding);
    }
    if (unnamed) this.#unnamedEntries++;
    return this.#created(client, configured, operation, binding);
  }

  #created(client: string, configured: boolean, operation: string, binding: string): MutableEntry {
    const created: MutableEntry = {
      client,
      configured,
      operation,
      binding,
      firstSeen: Infinity,
      lastSeen: -Infinity,
      calls: 0,
      outcomes: noCalls(),
      example: null,
    };
    this.#entries.set(keyOf(client, operation, binding), created);
    return created;
  }
}

/**
 * The ledger of all the hits of `ledgers` (e.g. one per instance): its cap the sum of theirs, so that
 * nothing more is folded than each had folded. `configuredName` gives a fingerprint the name of the
 * configured client it belongs to, if any: the report names a schema 1 fingerprint as schema 2 lines
 * named it. Entries that come to share a key merge.
 */
export function mergeLedgers(ledgers: readonly Ledger[], configuredName: (client: string) => string | undefined = () => undefined): Ledger {
  const sum = (count: (ledger: Ledger) => number): number => ledgers.reduce((total, ledger) => total + count(ledger), 0);
  const merged = new Ledger(
    sum((ledger) => ledger.maxEntries),
    sum((ledger) => ledger.folded),
  );
  for (const ledger of ledgers) {
    for (const entry of ledger.entries()) {
      const name = configuredName(entry.client);
      merged.absorb(name === undefined ? entry : { ...entry, client: name, configured: true });
    }
  }
  return merged;
}

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

export interface LedgerTotals {
  readonly entries: number;
  readonly calls: number;
}

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
  }[];
}

export function ledgerJson(ledger: Ledger, { client, offset, limit }: LedgerQuery = FIRST_PAGE): LedgerJson {
  const all = ledger.entries();
  const matched = client === null ? all : all.filter((entry) => entry.client === client);
  const page = sortEntries(matched).slice(offset, offset + limit);
  return {
    version: LEDGER_JSON_VERSION,
    maxEntries: ledger.maxEntries,
    folded: ledger.folded,
    total: totalsOf(all),
    matched: totalsOf(matched),
    offset,
    limit,
    nextOffset: offset + limit < matched.length ? offset + limit : null,
    entries: page.map((entry) => ({
      client: entry.client,
      operation: entry.operation,
      binding: entry.binding,
      firstSeen: new Date(entry.firstSeen).toISOString(),
      lastSeen: new Date(entry.lastSeen).toISOString(),
      calls: entry.calls,
      faults: entry.outcomes.fault,
      outcomes: entry.outcomes,
      example: entry.example?.successor ?? null,
    })),
  };
}

const totalsOf = (entries: readonly LedgerEntry[]): LedgerTotals => ({
  entries: entries.length,
  calls: entries.reduce((sum, entry) => sum + entry.calls, 0),
});

/** As fastify words its own refusals. */
export interface BadRequest {
  readonly statusCode: 400;
  readonly error: 'Bad Request';
  readonly message: string;
}

export type LedgerReply = { readonly status: 200; readonly body: LedgerJson } | { readonly status: 400; readonly body: BadRequest };

/** What `GET /ledger` answers to `query` (the query string, parsed): a page of the ledger, or 400 and why. */
export function ledgerPage(ledger: Ledger, query: unknown): LedgerReply {
  const parsed = ledgerQuery(query);
  if (typeof parsed === 'string') return { status: 400, body: { statusCode: 400, error: 'Bad Request', message: parsed } };
  return { status: 200, body: ledgerJson(ledger, parsed) };
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

/** Most calls first; ties by client, operation and binding, so that equal ledgers print alike. */
export function sortEntries(entries: LedgerEntry[]): LedgerEntry[] {
  return entries.sort(
    (a, b) =>
      b.calls - a.calls || compareText(a.client, b.client) || compareText(a.operation, b.operation) || compareText(a.binding, b.binding),
  );
}

/** By code unit, not locale: the same order on every machine. */
export const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
