import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flagGiven } from '../src/start/heap.js';

/** The built module (`npm test` compiles it first), in a process of its own: a V8 flag set here would change the test runner's heap. */
const HEAP = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'start', 'heap.js')).href;

/** What `tuneHeap()` returns in a child node started with `nodeArgs`, and what the child wrote to stderr. */
function fixInChild(nodeArgs: string[]): { fixed: string; stderr: string } {
  const script = `import(${JSON.stringify(HEAP)}).then((heap) => process.stdout.write(heap.tuneHeap().join(',')))`;
  const child = spawnSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  return { fixed: child.stdout, stderr: child.stderr };
}

describe('the heap flags (src/start/heap.ts)', () => {
  it("sees an operator's --heap-growing-percent on node's command line in every spelling V8 takes, and nothing else", () => {
    expect(flagGiven([], 'heap-growing-percent')).toBe(false);
    expect(flagGiven(['--heap-growing-percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--max-old-space-size=512', '--heap-growing-percent=0'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--heap_growing_percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['-heap-growing_percent=150'], 'heap-growing-percent')).toBe(true);
    expect(flagGiven(['--heap-growing-percentile=1', '--max-semi-space-size=8', 'heap-growing-percent=1'], 'heap-growing-percent')).toBe(
      false,
    );
  });

  /** The young generation's cap exists in Node 24's V8, not in Node 20's. */
  const youngCap = Number(process.versions.node.split('.')[0]) >= 24 ? ['scavenger-max-new-space-capacity-mb'] : [];

  it("are set in a process started plainly, each a flag this node's V8 knows (an unknown one is only a line on stderr)", () => {
    expect(fixInChild([])).toEqual({ fixed: ['heap-growing-percent', ...youngCap].join(','), stderr: '' });
  });

  it('are left to the operator when node was started with its own', () => {
    expect(fixInChild(['--heap-growing-percent=150'])).toEqual({ fixed: youngCap.join(','), stderr: '' });
    expect(fixInChild(['--heap_growing_percent=0']).fixed).toBe(youngCap.join(','));
    if (youngCap.length > 0) expect(fixInChild(['--scavenger-max-new-space-capacity-mb=32']).fixed).toBe('heap-growing-percent');
  });
});
