/**
 * A Map in the order its entries were last used, the least recently used first: for the bounded
 * memos and caches a cache hit reads on every call. `get` moves what it finds to the end, by a delete
 * and a set; V8 pays for those on a Map of a few entries by shrinking its table and growing it again,
 * about a microsecond on Node 20, so an entry already at the end (a client asking the same thing
 * again and again) is not moved.
 */
export class RecencyMap<V> {
  readonly #entries = new Map<string, V>();
  /** The key of the entry at the end, if any: the one set or moved last. */
  #newest: string | undefined;

  get size(): number {
    return this.#entries.size;
  }

  /** The value under `key`, now the most recently used. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined && key !== this.#newest) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
      this.#newest = key;
    }
    return value;
  }

  /** The value under `key`, its place left as it is. */
  peek(key: string): V | undefined {
    return this.#entries.get(key);
  }

  /** `value` under `key`, the most recently used. */
  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    this.#newest = key;
  }

  delete(key: string): void {
    this.#entries.delete(key);
    if (key === this.#newest) this.#newest = undefined;
  }

  /** The least recently used entry; undefined when empty. */
  oldest(): [string, V] | undefined {
    for (const entry of this.#entries) return entry;
    return undefined;
  }
}
