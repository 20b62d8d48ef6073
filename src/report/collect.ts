import type { LoggedHit } from './hit-line.js';
import { FOLDED_CLIENT, Ledger, mergeLedgers } from '../deprecation/ledger.js';
import { ANONYMOUS } from '../clients/fingerprint.js';

/**
 * What the report gathers from the hits, one at a time: the ledger, calls per day (per operation and
 * per client, for the trend and the charts), and who the configured clients are. Memory grows with
 * clients × operations × bindings and days, never with the number of lines.
 */

export const DAY_MS = 86_400_000;

/** Calls per UTC day (days since the epoch), per operation or per client. */
export type DayCounts = Map<string, Map<number, number>>;

/** Team and contact of a configured client, as schema 2 lines give them. */
export interface ClientCard {
  readonly fingerprint: string | null;
  readonly team: string | null;
  readonly contact: string | null;
}

export interface Collected {
  readonly ledger: Ledger;
  readonly byOperation: DayCounts;
  readonly byClient: DayCounts;
  readonly cards: ReadonlyMap<string, ClientCard>;
  /** Epoch ms of the earliest and latest hit; null without hits. */
  readonly from: number | null;
  readonly to: number | null;
}

export class HitCollector {
  /** Schema 2 lines, counted as the live ledgers count them, and schema 1 lines of fingerprints they had named. */
  readonly #ledger: Ledger;
  readonly #byClient: DayCounts = new Map();
  /**
   * Schema 1 lines of fingerprints no schema 2 line had named yet, named once every line is in. Apart
   * from #ledger: a key sent from a configured client's addresses makes its fingerprint that client's
   * in schema 2, and the same key's calls from elsewhere, an unnamed caller's, must stay theirs.
   */
  readonly #schema1: Ledger;
  readonly #bySchema1Client: DayCounts = new Map();
  readonly #byOperation: DayCounts = new Map();
  /** A configured client's name by the fingerprint of a key it sent (schema 2), as schema 1 lines name it. */
  readonly #names = new Map<string, string>();
  readonly #cards = new Map<string, ClientCard>();
  #from = Infinity;
  #to = -Infinity;

  constructor(maxEntries?: number) {
    // A caller the ledger pushes out takes its calls per day to `other`: the days, as the ledger, hold
    // the callers that call most, and grow with them, not with every key ever sent.
    this.#ledger = new Ledger(maxEntries, 0, (client) => moveDays(this.#byClient, client, FOLDED_CLIENT));
    this.#schema1 = new Ledger(maxEntries, 0, (client) => moveDays(this.#bySchema1Client, client, FOLDED_CLIENT));
  }

  add(hit: LoggedHit): void {
    // A configured client's label is its name, everyone else's `other`; schema 1 lines have none.
    if (hit.clientLabel === hit.client && hit.clientFingerprint !== null) {
      const fingerprint = hit.clientFingerprint === ANONYMOUS ? null : hit.clientFingerprint;
      if (fingerprint !== null) this.#names.set(fingerprint, hit.client);
      this.#cards.set(hit.client, { fingerprint, team: hit.team, contact: hit.contact });
    }
    const schema1 = hit.clientFingerprint === null;
    // A schema 1 line of a fingerprint already named is that configured client's, so never folded.
    const name = schema1 ? this.#names.get(hit.client) : undefined;
    const unnamedSchema1 = schema1 && name === undefined;
    const counted = name === undefined ? hit : { ...hit, client: name, clientLabel: name };
    const client = (unnamedSchema1 ? this.#schema1 : this.#ledger).add(counted, hit.time);
    const day = Math.floor(hit.time / DAY_MS);
    countDay(unnamedSchema1 ? this.#bySchema1Client : this.#byClient, client, day, 1);
    countDay(this.#byOperation, hit.operation, day, 1);
    if (hit.time < this.#from) this.#from = hit.time;
    if (hit.time > this.#to) this.#to = hit.time;
  }

  /** Everything gathered, schema 1 fingerprints named as schema 2 lines named them. */
  result(): Collected {
    const configuredName = (client: string): string | undefined => this.#names.get(client);
    const byClient: DayCounts = new Map();
    for (const [client, days] of this.#byClient) for (const [day, calls] of days) countDay(byClient, client, day, calls);
    for (const [client, days] of this.#bySchema1Client) {
      for (const [day, calls] of days) countDay(byClient, configuredName(client) ?? client, day, calls);
    }
    return {
      // With the caps of both: what either folded stays folded, and nothing more is.
      ledger: mergeLedgers([this.#ledger, mergeLedgers([this.#schema1], configuredName)]),
      byOperation: this.#byOperation,
      byClient,
      cards: this.#cards,
      from: Number.isFinite(this.#from) ? this.#from : null,
      to: Number.isFinite(this.#to) ? this.#to : null,
    };
  }
}

function countDay(counts: DayCounts, key: string, day: number, calls: number): void {
  let days = counts.get(key);
  if (days === undefined) {
    days = new Map();
    counts.set(key, days);
  }
  days.set(day, (days.get(day) ?? 0) + calls);
}

function moveDays(counts: DayCounts, from: string, to: string): void {
  for (const [day, calls] of counts.get(from) ?? []) countDay(counts, to, day, calls);
  counts.delete(from);
}
