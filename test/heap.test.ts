import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { heapGrowthGiven } from '../src/start/heap.js';

/** The built module (`npm test` compiles it first), in a process of its own: a V8 flag set here would change the test runner's heap. */
const HEAP = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'start', 'heap.js')).href;

/** What `fixHeapGrowth()` returns in a child node started with `nodeArgs`, and what the child wrote to stderr. */
function fixInChild(nodeArgs: string[]): { fixed: string; stderr: string } {
  const script = `import(${JSON.stringify(HEAP)}).then((heap) => process.stdout.write(String(heap.fixHeapGrowth())))`;
  const child = spawnSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  return { fixed: child.stdout, stderr: child.stderr };
}

describe('heap growth (src/start/heap.ts)', () => {
  it("sees an operator's --heap-growing-percent on node's command line in every spelling V8 takes, and nothing else", () => {
    expect(heapGrowthGiven([])).toBe(false);
    expect(heapGrowthGiven(['--heap-growing-percent=150'])).toBe(true);
    expect(heapGrowthGiven(['--max-old-space-size=512', '--heap-growing-percent=0'])).toBe(true);
    expect(heapGrowthGiven(['--heap_growing_percent=150'])).toBe(true);
    expect(heapGrowthGiven(['-heap-growing_percent=150'])).toBe(true);
    expect(heapGrowthGiven(['--heap-growing-percentile=1', '--max-semi-space-size=8', 'heap-growing-percent=1'])).toBe(false);
  });

  it('is set in a process started plainly, as a flag V8 knows (an unknown one is only a line on stderr)', () => {
    expect(fixInChild([])).toEqual({ fixed: 'true', stderr: '' });
  });

  it('is left to the operator when node was started with its own', () => {
    expect(fixInChild(['--heap-growing-percent=150'])).toEqual({ fixed: 'false', stderr: '' });
    expect(fixInChild(['--heap_growing_percent=0']).fixed).toBe('false');
  });
});
