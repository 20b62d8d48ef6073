import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past the live heap before its next full collection: fixed
 * at 300 %, a factor of 4, the largest V8 itself picks (for large heaps).
 *
 * V8 derives the factor from how fast the old generation fills against how fast it collects. This
 * proxy's old generation fills slowly while its page Buffers churn in the young one, so V8 chose a
 * small factor, and under sustained load the proxy fell every 20–30 s into runs of back-to-back full
 * collections: 5 to 10 a second for one to six seconds, 100–170 ms of pauses in each of those seconds,
 * and a p99 of 40–150 ms while they lasted (README, Benchmark). Fixed at 4, the same minute of load at
 * about 1,000 calls a second had two full collections and no run (at 3, five); fixed at 2, it was one
 * run from start to end (node 20). The price is an old generation up to about four times what the
 * last full collection left, about 100 MB at the 26 MB this proxy keeps live under load; near
 * --max-old-space-size V8 still collects at half the way there. V8 uses the factor for small heaps and
 * under memory pressure too, where it would otherwise grow more slowly.
 *
 * Measured on both supported runtimes, and kept on both (docs/performance.md, the heap growth): over
 * 40 s at 1,100 calls a second, V8's own growth (`=0`) had 43 full collections (285 ms of pauses) on
 * Node 20 and 111 (855 ms) on Node 24, this setting 3 (17 ms) and 4 (37 ms).
 */
const HEAP_GROWING_PERCENT = 300;

const FLAG = 'heap-growing-percent';

/**
 * Whether node's command line sets the heap growth already, in any spelling V8 takes (one or two
 * dashes, `-` or `_`); `=0` is V8's own choice. NODE_OPTIONS may not carry this flag.
 */
export function heapGrowthGiven(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => /^--?([^=]*)=/.exec(arg)?.[1]?.replaceAll('_', '-') === FLAG);
}

/**
 * Sets the heap growth for this process, unless node's command line sets one already: an operator's
 * own choice wins. Returns whether it set it. For the proxy's own process only (main and the
 * benchmark's proxy), never in a process that hosts other code, such as a test runner.
 */
export function fixHeapGrowth(): boolean {
  if (heapGrowthGiven(process.execArgv)) return false;
  setFlagsFromString(`--${FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}
