import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { heapGrowthGiven } from '../src/heap.js';

/** The built module (`npm test` compiles it first), in a process of its own: a V8 flag set here would change the test runner's heap. */
const HEAP = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'heap.js')).href;

function fixedInChild(nodeArgs: string[]): string {
  const script = `import(${JSON.stringify(HEAP)}).then((heap) => process.stdout.write(String(heap.fixHeapGrowth())))`;
  return execFileSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
}

describe('heap growth (src/heap.ts)', () => {
  it("sees an operator's --heap-growing-percent on node's command line, and nothing else", () => {
    expect(heapGrowthGiven([])).toBe(false);
    expect(heapGrowthGiven(['--heap-growing-percent=150'])).toBe(true);
    expect(heapGrowthGiven(['--max-old-space-size=512', '--heap-growing-percent', '150'])).toBe(true);
    expect(heapGrowthGiven(['--heap-growing-percentile=1', '--max-semi-space-size=8'])).toBe(false);
  });

  it('is fixed in a process started plainly, and left to the operator when node was started with its own', () => {
    expect(fixedInChild([])).toBe('true');
    expect(fixedInChild(['--heap-growing-percent=150'])).toBe('false');
  });
});
