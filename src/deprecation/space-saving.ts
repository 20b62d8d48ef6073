/**
 * Space-Saving (Metwally, Agrawal and El Abbadi, 2005): the heaviest keys of an unbounded stream in
 * `capacity` counters. A key not held takes the place of the key with the least count and starts
 * from that count, so a count is an upper bound of the key's calls. Any key counted more than
 * total / capacity times is held: ten thousand keys seen once each cannot push out a key seen more
 * often than any of them, whichever came first. Counts are estimates; the ledger keeps true ones.
 */

interface Slot {
  readonly key: string;
  count: number;
  /** When the key was let in: of equal counts the earliest goes first, so that a tie has one answer. */
  readonly admitted: number;
  /** Where it is in the heap. */
  at: number;
}

export class SpaceSaving {
  /** A binary min-heap by (count, admitted). */
  readonly #heap: Slot[] = [];
  readonly #slots = new Map<string, Slot>();
  #admissions = 0;

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`a Space-Saving summary needs a capacity of 1 or more, got ${capacity}`);
  }

  get size(): number {
    return this.#heap.length;
  }

  /** Adds `by` to `key`'s count; returns the key pushed out to make room for it, or null. */
  count(key: string, by: number): string | null {
    const held = this.#slots.get(key);
    if (held !== undefined) {
      held.count += by;
      this.#down(held.at);
      return null;
    }
    if (this.#heap.length < this.capacity) {
      this.#insert(key, by);
      return null;
    }
    const least = this.#heap[0] as Slot;
    this.#slots.delete(least.key);
    const slot: Slot = { key, count: least.count + by, admitted: this.#admissions++, at: 0 };
    this.#heap[0] = slot;
    this.#slots.set(key, slot);
    this.#down(0);
    return least.key;
  }

  #insert(key: string, count: number): void {
    const slot: Slot = { key, count, admitted: this.#admissions++, at: this.#heap.length };
    this.#heap.push(slot);
    this.#slots.set(key, slot);
    this.#up(slot.at);
  }

  #less(a: Slot, b: Slot): boolean {
    return a.count < b.count || (a.count === b.count && a.admitted < b.admitted);
  }

  #place(slot: Slot, at: number): void {
    this.#heap[at] = slot;
    slot.at = at;
  }

  #up(from: number): void {
    const slot = this.#heap[from] as Slot;
    let at = from;
    while (at > 0) {
      const parent = this.#heap[(at - 1) >> 1] as Slot;
      if (!this.#less(slot, parent)) break;
      this.#place(parent, at);
      at = (at - 1) >> 1;
    }
    this.#place(slot, at);
  }

  #down(from: number): void {
    const slot = this.#heap[from] as Slot;
    const length = this.#heap.length;
    let at = from;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && this.#less(this.#heap[right] as Slot, this.#heap[left] as Slot) ? right : left;
      const smaller = this.#heap[child] as Slot;
      if (!this.#less(smaller, slot)) break;
      this.#place(smaller, at);
      at = child;
    }
    this.#place(slot, at);
  }
}
