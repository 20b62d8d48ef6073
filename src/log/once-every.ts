/**
 * A line said at most once an interval, whatever calls for it: what anyone can make happen (a refused
 * request, a forged value in Redis) must not be able to flood the log. Each call asks whether to speak
 * now; the answer is how many calls there were since the last line (this one included), or null.
 */
export function onceEvery(intervalMs: number): () => number | null {
  let lastSaid = Number.NEGATIVE_INFINITY;
  let unsaid = 0;
  return () => {
    unsaid++;
    const now = performance.now();
    if (now - lastSaid < intervalMs) return null;
    lastSaid = now;
    const count = unsaid;
    unsaid = 0;
    return count;
  };
}
