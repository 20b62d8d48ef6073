import { RecencyMap } from './recency.js';

/**
 * What a pure function gave for its last `maxEntries` distinct inputs of at most `maxInputLength`
 * characters, the least recently used forgotten first; a longer input is not remembered. For work a
 * cache hit would otherwise do again on every call with the same input (hashing a page's key, reading
 * the same envelope): its input is the key, so whatever the key holds (a request with its apiKey)
 * stays in this process's memory, as the request itself did, and goes nowhere else. At most
 * `maxEntries` × `maxInputLength` characters, whatever callers send.
 */
export class BoundedMemo<V> {
  readonly #entries = new RecencyMap<V>();
  readonly #maxEntries: number;
  readonly #maxInputLength: number;

  constructor(maxEntries: number, maxInputLength: number) {
    this.#maxEntries = maxEntries;
    this.#maxInputLength = maxInputLength;
  }

  /** The value for `input`, made by `make` when not remembered (and remembered then, when `input` is short enough). */
  of(input: string, make: (input: string) => V): V {
    if (input.length > this.#maxInputLength) return make(input);
    const known = this.#entries.get(input);
    if (known !== undefined) return known;
    const value = make(input);
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.oldest();
      if (oldest !== undefined) this.#entries.delete(oldest[0]);
    }
    this.#entries.set(input, value);
    return value;
  }
}
