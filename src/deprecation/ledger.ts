/**
 * The deprecation ledger: who still calls what. Per client × operation × binding, when it was first
 * and last seen, how many calls and how each ended, and the replacement request of its latest
 * successful call (its `successor`, an example the client can copy). Pure: hits in, entries out.
 *
 * Each instance keeps one live (`GET /ledger`); the migration report builds one from the hit logs.
 * Ledgers of several instances merge into the ledger of all their hits.
 */

import { SpaceSaving } from './space-saving.js';
import type { SuccessorPaging } from '../translate/plan.js';
import type { ClientStackName } from '../clients/stack.js';

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
  /** How the successor's pages make the call's result; absent from hits of older versions. */
  readonly successorPaging?: SuccessorPaging | null;
  /** The stack that made the call (src/clients/stack.ts); absent from hits of older versions. */
  readonly clientStack?: ClientStackName;
  readonly clientStackVersion?: string | null;
}

/** The replacement request of a successful call, and when that call was made. */
export interface Example {
  readonly at: number;
  readonly successor: string;
  /** How its pages make the call's result; null for one page, or an example of an older version. */
  readonly paging: SuccessorPaging | null;
}

/** The stack of the latest call that named one, and when that call was made. */
export interface SeenStack {
  readonly at: number;
  readonly name: ClientStackName;
  readonly version: string | null;
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
  /** The stack of the latest call, a known one before `unknown`; null when no call named one (a ledger of an older version). */
  readonly stack: SeenStack | null;
}

/**
 * Where the calls of unnamed callers pushed out of the ledger go: fingerprints of unknown callers are
 * unbounded, the memory of a long-running instance must not be. Of unnamed callers the ledger holds the
 * `maxEntries` heaviest entries (Space-Saving, src/deprecation/space-saving.ts): a new one takes the
 * place of the one counted least, whose calls go to `other`, so that a flood of new keys cannot hide a
 * caller that calls more often than any of them. Configured clients are never folded: the `clients`
 * table bounds them.
 */
export const FOLDED_CLIENT = 'other';

/** Entries of unnamed callers (client × operation × binding) a ledger holds. */
export const DEFAULT_MAX_ENTRIES = 10_000;

const keyOf = (client: string, operation: string, binding: string): string => `${client}\u0000${operation}\u0000${binding}`;

const noCalls = (): Record<Outcome, number> => ({ ok: 0, fault: 0, shed: 0, refused: 0 });

/** Of two things seen (an example, a stack), the one seen last. */
const later = <T extends { readonly at: number }>(a: T | null, b: T | null): T | null =>
  a === null || (b !== null && b.at >= a.at) ? b : a;

export class Ledger {
  readonly #entries = new Map<string, LedgerEntry>();
  /** The keys of unnamed callers' entries, FOLDED_CLIENT's aside, by how much they call: what `maxEntries` bounds. */
  readonly #unnamed: SpaceSaving;
  /** Entries held per client: to tell `onFolded` when a client's last one went. */
  readonly #entriesOf = new Map<string, number>();
  #folded: number;

  /**
   * `folded`: calls already folded elsewhere, carried over by a merge. `onFolded`: told of each client
   * whose last entry was pushed out (the report moves its calls per day to FOLDED_CLIENT then).
   */
  constructor(
    readonly maxEntries: number = DEFAULT_MAX_ENTRIES,
    folded = 0,
    private readonly onFolded: (client: string) => void = () => {},
  ) {
    this.#unnamed = new SpaceSaving(maxEntries);
    this.#folded = folded;
  }

  /** Calls counted under FOLDED_CLIENT: of unnamed callers pushed out by callers that call more. */
  get folded(): number {
    return this.#folded;
  }

  /** Counts a hit made at `at` (epoch ms); returns the client it was counted under. */
  add(hit: LedgerHit, at: number): string {
    const successor =
      hit.outcome === 'ok' && typeof hit.successor === 'string'
        ? { at, successor: hit.successor, paging: hit.successorPaging ?? null }
        : null;
    // Set after: a computed key in the literal is a call into V8's runtime on every hit.
    const outcomes = noCalls();
    outcomes[hit.outcome] = 1;
    // A configured client's label is its name; everyone else's is `other`.
    const configured = hit.clientLabel === hit.client;
    const { client, operation, binding } = hit;
    const stack = hit.clientStack === undefined ? null : { at, name: hit.clientStack, version: hit.clientStackVersion ?? null };
    const entry = { client, configured, operation, binding, firstSeen: at, lastSeen: at, calls: 1, outcomes, example: successor, stack };
    return this.absorb(entry);
  }

  /** Counts a whole entry of another ledger (see mergeLedgers); returns the client it was counted under. */
  absorb(entry: LedgerEntry): string {
    const key = keyOf(entry.client, entry.operation, entry.binding);
    const pushedOut = !entry.configured && entry.client !== FOLDED_CLIENT ? this.#unnamed.count(key, entry.calls) : null;
    const held = this.#entries.get(key);
    if (held === undefined) this.#entriesOf.set(entry.client, (this.#entriesOf.get(entry.client) ?? 0) + 1);
    this.#entries.set(key, held === undefined ? { ...entry, outcomes: { ...entry.outcomes } } : combined(held, entry));
    if (pushedOut !== null) this.#fold(pushedOut);
    return entry.client;
  }

  entries(): LedgerEntry[] {
    return [...this.#entries.values()];
  }

  /** Moves the entry under `key` into FOLDED_CLIENT's of its operation and binding. */
  #fold(key: string): void {
    const gone = this.#entries.get(key) as LedgerEntry;
    this.#entries.delete(key);
    const left = (this.#entriesOf.get(gone.client) ?? 1) - 1;
    if (left === 0) this.#entriesOf.delete(gone.client);
    else this.#entriesOf.set(gone.client, left);
    this.#folded += gone.calls;
    this.absorb({ ...gone, client: FOLDED_CLIENT, configured: false });
    if (left === 0) this.onFolded(gone.client);
  }
}

/** The stack seen last, but a known one over `unknown`: one curl call with a key does not hide the SOAP stack behind it. */
function laterStack(a: SeenStack | null, b: SeenStack | null): SeenStack | null {
  if (a !== null && b !== null && (a.name === 'unknown') !== (b.name === 'unknown')) return a.name === 'unknown' ? b : a;
  return later(a, b);
}

/** The stack of a client's entries: their latest, a known one before `unknown`. */
export function latestStack(entries: readonly LedgerEntry[]): SeenStack | null {
  return entries.reduce<SeenStack | null>((latest, entry) => laterStack(latest, entry.stack), null);
}

/** The calls of `a` and `b`, one client, operation and binding's, as one entry. */
export function combined(a: LedgerEntry, b: LedgerEntry): LedgerEntry {
  return {
    client: a.client,
    configured: a.configured,
    operation: a.operation,
    binding: a.binding,
    firstSeen: Math.min(a.firstSeen, b.firstSeen),
    lastSeen: Math.max(a.lastSeen, b.lastSeen),
    calls: a.calls + b.calls,
    outcomes: {
      ok: a.outcomes.ok + b.outcomes.ok,
      fault: a.outcomes.fault + b.outcomes.fault,
      shed: a.outcomes.shed + b.outcomes.shed,
      refused: a.outcomes.refused + b.outcomes.refused,
    },
    example: later(a.example, b.example),
    stack: laterStack(a.stack, b.stack),
  };
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

/** Most calls first; ties by client, operation and binding, so that equal ledgers print alike. */
export function sortEntries(entries: LedgerEntry[]): LedgerEntry[] {
  return entries.sort(
    (a, b) =>
      b.calls - a.calls || compareText(a.client, b.client) || compareText(a.operation, b.operation) || compareText(a.binding, b.binding),
  );
}

/** By code unit, not locale: the same order on every machine. */
export const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
