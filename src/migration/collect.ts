import type { LoggedHit } from './hit-line.js';
import { Ledger, mergeLedgers } from './ledger.js';

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
  readonly #ledger: Ledger;
  readonly #byOperation: DayCounts = new Map();
  readonly #byClient: DayCounts = new Map();
  /** Schema 2 names configured clients; schema 1 lines name the same caller by its fingerprint. */
  readonly #names = new Map<string, string>();
  readonly #cards = new Map<string, ClientCard>();
  #from = Infinity;
  #to = -Infinity;

  constructor(maxEntries?: number) {
    this.#ledger = new Ledger(maxEntries);
  }

  add(hit: LoggedHit): void {
    // A schema 1 line of a fingerprint schema 2 lines have named is a configured client's: never folded.
    const name = hit.clientFingerprint === null ? this.#names.get(hit.client) : undefined;
    const client = this.#ledger.add(name === undefined ? hit : { ...hit, client: name, clientLabel: name }, hit.time);
    const day = Math.floor(hit.time / DAY_MS);
    countDay(this.#byOperation, hit.operation, day, 1);
    countDay(this.#byClient, client, day, 1);
    if (hit.time < this.#from) this.#from = hit.time;
    if (hit.time > this.#to) this.#to = hit.time;
    if (hit.clientFingerprint !== null && hit.clientFingerprint !== hit.client) {
      this.#names.set(hit.clientFingerprint, hit.client);
      this.#cards.set(hit.client, { fingerprint: hit.clientFingerprint, team: hit.team, contact: hit.contact });
    }
  }

  /** Everything gathered, schema 1 fingerprints named as schema 2 lines named them. */
  result(): Collected {
    const configuredName = (client: string): string | undefined => this.#names.get(client);
    const byClient: DayCounts = new Map();
    for (const [client, days] of this.#byClient) for (const [day, calls] of days) countDay(byClient, configuredName(client) ?? client, day, calls);
    return {
      ledger: mergeLedgers([this.#ledger], configuredName),
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
  if (days === undefined) counts.set(key, (days = new Map()));
  days.set(day, (days.get(day) ?? 0) + calls);
}
