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

/** What the ledger reads of a deprecation hit (schema 1 hits have no `successor`). */
export interface LedgerHit {
  readonly client: string;
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
 * Where callers go once the ledger holds `maxEntries`: fingerprints of unknown callers are unbounded,
 * the memory of a long-running instance must not be.
 */
export const FOLDED_CLIENT = 'other';

export const DEFAULT_MAX_ENTRIES = 10_000;

interface MutableEntry {
  readonly client: string;
  readonly operation: string;
  readonly binding: string;
  firstSeen: number;
  lastSeen: number;
  calls: number;
  readonly outcomes: Record<Outcome, number>;
  example: Example | null;
}

const keyOf = (client: string, operation: string, binding: string): string => `${client}\u0000${operation}\u0000${binding}`;

const later = (a: Example | null, b: Example | null): Example | null => (a === null || (b !== null && b.at >= a.at) ? b : a);

export class Ledger {
  readonly #entries = new Map<string, MutableEntry>();
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
    const outcomes = { ok: 0, fault: 0, shed: 0, refused: 0, [hit.outcome]: 1 };
    return this.absorb({ client: hit.client, operation: hit.operation, binding: hit.binding, firstSeen: at, lastSeen: at, calls: 1, outcomes, example: successor });
  }

  /** Counts a whole entry of another ledger (see mergeLedgers); returns the client it was counted under. */
  absorb(entry: LedgerEntry): string {
    const into = this.#entryFor(entry.client, entry.operation, entry.binding, entry.calls);
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

  /** The entry counting `client`'s calls of `operation` over `binding`, FOLDED_CLIENT's when the ledger is full. */
  #entryFor(client: string, operation: string, binding: string, calls: number): MutableEntry {
    const known = this.#entries.get(keyOf(client, operation, binding));
    if (known !== undefined) return known;
    const full = this.#entries.size >= this.maxEntries && client !== FOLDED_CLIENT;
    if (full) this.#folded += calls;
    const owner = full ? FOLDED_CLIENT : client;
    const key = keyOf(owner, operation, binding);
    const existing = this.#entries.get(key);
    if (existing !== undefined) return existing;
    const created: MutableEntry = { client: owner, operation, binding, firstSeen: Infinity, lastSeen: -Infinity, calls: 0, outcomes: { ok: 0, fault: 0, shed: 0, refused: 0 }, example: null };
    this.#entries.set(key, created);
    return created;
  }
}

/**
 * The ledger of all the hits of `ledgers` (e.g. one per instance), with the first one's cap, every
 * client renamed by `rename`: the report names a schema 1 fingerprint by the configured name schema 2
 * lines gave it. Entries that come to share a key merge; calls folded anywhere stay folded.
 */
export function mergeLedgers(ledgers: readonly [Ledger, ...Ledger[]], rename: (client: string) => string = (client) => client): Ledger {
  const merged = new Ledger(ledgers[0].maxEntries, ledgers.reduce((sum, ledger) => sum + ledger.folded, 0));
  for (const ledger of ledgers) for (const entry of ledger.entries()) merged.absorb({ ...entry, client: rename(entry.client) });
  return merged;
}

/** The ledger as `GET /ledger` and the report's JSON give it: times in ISO 8601, largest callers first. */
export interface LedgerJson {
  readonly maxEntries: number;
  readonly folded: number;
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

export function ledgerJson(ledger: Ledger): LedgerJson {
  return {
    maxEntries: ledger.maxEntries,
    folded: ledger.folded,
    entries: sortEntries(ledger.entries()).map((entry) => ({
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

/** Most calls first; ties by client, operation and binding, so that equal ledgers print alike. */
export function sortEntries(entries: LedgerEntry[]): LedgerEntry[] {
  return entries.sort((a, b) => b.calls - a.calls || compareText(a.client, b.client) || compareText(a.operation, b.operation) || compareText(a.binding, b.binding));
}

/** By code unit, not locale: the same order on every machine. */
export const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
