import { setFlagsFromString } from 'node:v8';

/**
 * The V8 flags the proxy sets for itself at start, each measured on both supported runtimes and set
 * only on those where it helps (docs/performance.md). V8 reads them as the heap works, so they take
 * effect when set from inside the process; flags V8 reads only when it makes the heap (the young
 * generation's size) would not, and the proxy sets none of those.
 */
interface HeapFlag {
  /** As on node's command line, without the dashes, and its value (`=300`), or '' for a switch. */
  readonly name: string;
  readonly value: string;
  /** Whether the runtime, by its V8 major version, is one it was measured to help on. */
  readonly helpsOn: (v8Major: number) => boolean;
}

const HEAP_FLAGS: readonly HeapFlag[] = [
  /**
   * How far V8 lets the old generation grow past the live heap before its next full collection: fixed
   * at 300 %, a factor of 4, the largest V8 itself picks (for large heaps).
   *
   * V8 derives the factor from how fast the old generation fills against how fast it collects. This
   * proxy's old generation fills slowly while its page Buffers churn in the young one, so V8 chose a
   * small factor, and under sustained load the proxy fell every 20–30 s into runs of back-to-back full
   * collections: 5 to 10 a second for one to six seconds, 100–170 ms of pauses in each of those seconds,
   * and a p99 of 40–150 ms while they lasted. Fixed at 4, the same minute of load at about 1,000 calls
   * a second had two full collections and no run. The price is an old generation up to about four times
   * what the last full collection left, about 100 MB at the 26 MB this proxy keeps live under load; near
   * --max-old-space-size V8 still collects at half the way there.
   *
   * Over 40 s at 1,100 calls a second, V8's own growth (`=0`) had 43 full collections (285 ms of pauses)
   * on Node 20 and 111 (855 ms) on Node 24, this setting 3 (17 ms) and 4 (37 ms).
   */
  { name: 'heap-growing-percent', value: '=300', helpsOn: () => true },
  /**
   * Memory outside V8's heap (the Buffers every upstream page arrives in, about 128 KB a Search) counted
   * in the heap's own limit, as one budget, rather than against a limit of its own. This proxy allocates
   * little on the heap, so its young generation is collected rarely, and the dead Buffers' memory, freed
   * only by those collections, piles up meanwhile: Node 24's V8 (13.6) then starts a full collection for
   * "external memory pressure", in some runs about four a second for as long as the load lasted (56–69
   * in a run where Node 20 had 3). With this switch the same runs had 3, at about 0.9 × the CPU per call.
   * Node 20's V8 (11) has neither the storm nor the switch. Measured on V8 13 only: a later V8 may rename
   * or drop the switch (an unknown flag is an error line at every start), so it is set on 13 alone until
   * measured again there.
   */
  { name: 'external-memory-accounted-in-global-limit', value: '', helpsOn: (v8Major) => v8Major === 13 },
];

/**
 * Whether node's command line sets the flag `name` already, in any spelling V8 takes (one or two
 * dashes, `-` or `_`, a value after `=`, or `no-` or `no` before a switch). NODE_OPTIONS may carry none of them.
 */
export function flagGiven(execArgv: readonly string[], name: string): boolean {
  return execArgv.some((arg) => {
    const given = /^--?([^=]*)/.exec(arg)?.[1]?.replaceAll('_', '-');
    return given === name || given === `no-${name}` || given === `no${name}`;
  });
}

/**
 * The proxy's heap flags, as written, that help on a runtime with V8 `v8Version` and that node's
 * command line `execArgv` does not set already: an operator's own choice wins.
 */
export function heapFlagsFor(execArgv: readonly string[], v8Version: string): string[] {
  const v8Major = Number.parseInt(v8Version, 10);
  return HEAP_FLAGS.filter((flag) => flag.helpsOn(v8Major) && !flagGiven(execArgv, flag.name)).map((flag) => `--${flag.name}${flag.value}`);
}

/**
 * Sets the heap flags for this process and returns them. For the proxy's own process only (main and
 * the benchmark's proxy), never in a process that hosts other code, such as a test runner.
 */
export function tuneHeap(): string[] {
  const flags = heapFlagsFor(process.execArgv, process.versions.v8);
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
