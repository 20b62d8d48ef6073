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

/**
 * The most the young generation may grow to, in MB: 8, where V8 lets it grow to 32.
 *
 * Every ArrayBuffer counts as V8 external memory, and a call still allocates some the pool cannot lend
 * (src/xml/pool.ts): the socket's read buffers, a 125 KB page in two or three of them. V8 frees young
 * ArrayBuffers at a scavenge, which comes once the young generation is full; at 32 MB of it that came
 * after more than the 64 MB of external memory at which V8 starts a full collection instead. A young
 * generation that grew to its largest stayed there: after a burst of AdvancedSearch (two pages and a
 * tree a call), Search ran with a full collection every 200 ms on Node 24 (45 in 10 s, against 2 with
 * this cap) and at 0.40 ms of CPU a call against 0.35. Measured on both runtimes after such a burst
 * (docs/performance.md): Node 24 2,775 against 2,316 req/s. Node 20's V8 has no such flag; its young
 * generation stays small by itself (2 full collections in the same run).
 */
const YOUNG_GENERATION_MB = 8;

/**
 * Whether node's command line sets V8 flag `flag` already, in any spelling V8 takes (one or two
 * dashes, `-` or `_`). NODE_OPTIONS may not carry V8 flags such as these.
 */
export function flagGiven(execArgv: readonly string[], flag: string): boolean {
  return execArgv.some((arg) => /^--?([^=]*)=/.exec(arg)?.[1]?.replaceAll('_', '-') === flag);
}

/** The V8 flags the proxy sets for itself: each its value, and the first node major whose V8 has it. */
const HEAP_FLAGS: Readonly<Record<string, { readonly value: number; readonly sinceNode: number }>> = {
  'heap-growing-percent': { value: HEAP_GROWING_PERCENT, sinceNode: 20 },
  // Node 20's V8 has no such flag, and keeps its young generation small by itself.
  'scavenger-max-new-space-capacity-mb': { value: YOUNG_GENERATION_MB, sinceNode: 24 },
};

/**
 * Sets the heap flags for this process, each where its V8 has it and unless node's command line sets
 * it already (`=0` for the heap growth is V8's own choice): an operator's own choice wins. Returns the
 * flags it set. For the proxy's own process only (main and the benchmark's proxy), never in a process
 * that hosts other code, such as a test runner.
 */
export function tuneHeap(nodeMajor = Number(process.versions.node.split('.')[0])): string[] {
  const set = Object.entries(HEAP_FLAGS)
    .filter(([flag, { sinceNode }]) => nodeMajor >= sinceNode && !flagGiven(process.execArgv, flag))
    .map(([flag]) => flag);
  for (const flag of set) setFlagsFromString(`--${flag}=${HEAP_FLAGS[flag]?.value}`);
  return set;
}
