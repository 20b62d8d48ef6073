/**
 * What a pure function gave for its last `maxEntries` distinct inputs, the oldest forgotten first. For
 * work a cache hit would otherwise do again on every call with the same input (hashing a page's key,
 * reading the same envelope): its input is the key, so whatever the key holds (a request with its
 * apiKey) stays in this process's memory, as the request itself did, and goes nowhere else.
 */
export class BoundedMemo<V> {
  readonly #entries = new Map<string, V>();
  readonly #maxEntries: number;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value for `input`, made by `make` when not remembered (and remembered then). */
  of(input: string, make: (input: string) => V): V {
    const known = this.#entries.get(input);
    if (known !== undefined) return known;
    const value = make(input);
    if (this.#entries.size >= this.#maxEntries) {
      // A Map iterates in insertion order: the first is the oldest.
      for (const oldest of this.#entries.keys()) {
        this.#entries.delete(oldest);
        break;
      }
    }
    this.#entries.set(input, value);
    return value;
  }
}
