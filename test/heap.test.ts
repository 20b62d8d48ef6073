import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flagGiven, heapFlagsFor } from '../src/start/heap.js';

/** The built module (`npm test` compiles it first), in a process of its own: a V8 flag set here would change the test runner's heap. */
const HEAP = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'start', 'heap.js')).href;

/** What `tuneHeap()` returns in a child node started with `nodeArgs`, and what the child wrote to stderr. */
function tuneInChild(nodeArgs: string[]): { flags: string[]; stderr: string } {
  const script = `import(${JSON.stringify(HEAP)}).then((heap) => process.stdout.write(JSON.stringify(heap.tuneHeap())))`;
  const child = spawnSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  return { flags: JSON.parse(child.stdout || 'null') as string[], stderr: child.stderr };
}

const GROWTH = '--heap-growing-percent=300';
const EXTERNAL = '--external-memory-accounted-in-global-limit';

describe('heap flags (src/start/heap.ts)', () => {
  it("sees an operator's flag on node's command line in every spelling V8 takes, and nothing else", () => {
    expect(flagGiven([], 'heap-growing-percent')).toBe(false);
    expect(flagGiven(['--heap-growing-percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--max-old-space-size=512', '--heap-growing-percent=0'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--heap_growing_percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['-heap-growing_percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--heap-growing-percentile=1', '--max-semi-space-size=8', 'heap-growing-percent=1'], 'heap-growing-percent')).toBe(
      false,
    );
    expect(flagGiven(['--no-external-memory-accounted-in-global-limit'], 'external-memory-accounted-in-global-limit')).toBe(true);
    expect(flagGiven(['--external_memory_accounted_in_global_limit'], 'external-memory-accounted-in-global-limit')).toBe(true);
    expect(flagGiven(['--noexternal-memory-accounted-in-global-limit'], 'external-memory-accounted-in-global-limit')).toBe(true);
    expect(flagGiven(['--external-memory-accounted'], 'external-memory-accounted-in-global-limit')).toBe(false);
  });

  it('counts external memory in the heap limit only on V8 13 (Node 24), where it was measured to help; the heap growth on every V8', () => {
    expect(heapFlagsFor([], '11.3.244.8-node.33')).toEqual([GROWTH]);
    expect(heapFlagsFor([], '14.8.1.0-node.1')).toEqual([GROWTH]);
    expect(heapFlagsFor([], '13.6.233.17-node.37')).toEqual([GROWTH, EXTERNAL]);
    expect(heapFlagsFor(['--heap-growing-percent=0'], '13.6.233.17-node.37')).toEqual([EXTERNAL]);
    expect(heapFlagsFor(['--no-external-memory-accounted-in-global-limit'], '13.6.233.17-node.37')).toEqual([GROWTH]);
  });

  it('sets, in a process started plainly, only flags this runtime knows (an unknown one is only a line on stderr)', () => {
    const expected = Number.parseInt(process.versions.v8, 10) === 13 ? [GROWTH, EXTERNAL] : [GROWTH];
    expect(tuneInChild([])).toEqual({ flags: expected, stderr: '' });
  });

  it('leaves a flag to the operator when node was started with it', () => {
    expect(tuneInChild(['--heap-growing-percent=150']).flags).not.toContain(GROWTH);
    expect(tuneInChild(['--heap_growing_percent=0']).flags).not.toContain(GROWTH);
  });
});
