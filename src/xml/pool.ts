/**
 * Buffers lent for a page's bytes and a reply's, and given back when they are no longer read, so that
 * a call on the fast path allocates no ArrayBuffer of its own once the pool is warm.
 *
 * Why: every ArrayBuffer allocated counts as V8 external memory. On Node 24 (V8 13.6) the young
 * generation may grow to 32 MB, which moved the scavenge that V8 runs for young ArrayBuffers from
 * 32 MB of them to 128 MB, above the 64 MB of external memory at which V8 starts a full
 * (mark-compact) collection. Two fresh 125 KB Buffers a call (the page copied out of the WebAssembly
 * memory, the envelope joined around it) made that a full collection every 150–200 calls under load,
 * where Node 20 reclaimed the same Buffers by scavenges (docs/performance.md, Node versions).
 *
 * A lent buffer is a view of a pooled one, exactly `length` long. Whoever gives it back promises that
 * nothing reads it any more; one never given back is collected as any Buffer is, so forgetting costs
 * an allocation, not correctness.
 */

/** Smaller than this, Buffer.allocUnsafe (node's own pool below 4 KB): not worth a buffer of its own. */
const SMALLEST = 16 * 1024;
/** Larger than this (the default upstream.maxResponseBytes), allocated and left to the collector. */
const LARGEST = 4 * 1024 * 1024;
/** Bytes kept for reuse, over all sizes: about sixty 125 KB pages and replies in flight. */
const MAX_FREE_BYTES = 16 * 1024 * 1024;

/**
 * Free buffers by size class (a power of two from SMALLEST to LARGEST), last in first out; the classes
 * in the order they were last lent from, the longest unused first.
 */
const free = new Map<number, Buffer[]>();
let freeBytes = 0;
/** The pooled buffers now lent (not free), by their memory: only these are taken back. */
const lent = new WeakSet<ArrayBufferLike>();

function sizeClass(length: number): number {
  return Math.max(SMALLEST, 2 ** Math.ceil(Math.log2(length)));
}

/** A Buffer of `length` bytes, not zeroed: lent from the pool, or allocated when pooling does not pay. */
export function lend(length: number): Buffer {
  if (length < SMALLEST || length > LARGEST) return Buffer.allocUnsafe(length);
  const size = sizeClass(length);
  const list = free.get(size) ?? [];
  // Lent from now: the class moves to the end of the order.
  free.delete(size);
  free.set(size, list);
  const pooled = list.pop();
  if (pooled) freeBytes -= size;
  // Its own ArrayBuffer (allocUnsafeSlow), whole: the pool hands out views of it.
  const buffer = pooled ?? Buffer.allocUnsafeSlow(size);
  lent.add(buffer.buffer);
  return buffer.subarray(0, length);
}

/** Whether the buffer under `bytes` is one the pool lent: only such bytes are given back once written. */
export function isLent(bytes: Uint8Array): boolean {
  return lent.has(bytes.buffer);
}

/** Takes back the buffer under `bytes` when the pool lent it and nothing reads it any more; anything else is left alone. */
export function giveBack(bytes: Uint8Array): void {
  const memory = bytes.buffer;
  if (!lent.has(memory)) return;
  lent.delete(memory);
  const size = memory.byteLength;
  if (freeBytes + size > MAX_FREE_BYTES) makeRoom(size);
  if (freeBytes + size > MAX_FREE_BYTES) return;
  let list = free.get(size);
  if (!list) {
    list = [];
    free.set(size, list);
  }
  list.push(Buffer.from(memory, 0, size));
  freeBytes += size;
}

/**
 * Room for a buffer of `size`, taken from the classes lent from longest ago. Kept as they were, free
 * buffers of a size no call asks for any more (after a burst of larger or smaller pages) would fill
 * the pool for good, and every page and reply of the sizes in use would be a fresh ArrayBuffer again:
 * the allocations the pool is there to spare.
 */
function makeRoom(size: number): void {
  for (const [other, list] of free) {
    if (other === size) continue;
    while (list.length > 0 && freeBytes + size > MAX_FREE_BYTES) {
      list.pop();
      freeBytes -= other;
    }
    if (freeBytes + size <= MAX_FREE_BYTES) return;
  }
}

/** `bytes` out of the buffer the pool lent them in, which goes back: a Buffer of their own, exactly their size, to keep. */
export function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  giveBack(bytes);
  return copy;
}

/** `parts` one after another in a lent buffer: Buffer.concat without an allocation of its own. */
export function joined(parts: readonly Uint8Array[]): Buffer {
  const bytes = lend(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}
