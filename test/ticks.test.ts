import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The built module (`npm test` compiles it first), in a process of its own, as the proxy's start runs it. */
const TICKS = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'start', 'ticks.js')).href;

describe('the TickObject held (src/start/ticks.ts)', () => {
  it('holds one of node’s TickObjects, and leaves no async hook running after', () => {
    // Read after two more ticks have run: had its hook stayed enabled, what it returns (the very array
    // the hook fills) would hold those too.
    const script = `
      const { holdTickObject } = await import(${JSON.stringify(TICKS)});
      const held = holdTickObject();
      process.nextTick(() => {});
      process.nextTick(() => {}, 1);
      await new Promise((resolve) => setImmediate(resolve));
      process.stdout.write(JSON.stringify({
        held: held.length,
        keys: held.map((tick) => Object.keys(tick)),
        symbols: held.map((tick) => Object.getOwnPropertySymbols(tick).map(String)),
      }));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    const seen = JSON.parse(child.stdout) as { held: number; keys: string[][]; symbols: string[][] };
    expect(seen.held).toBe(1);
    expect(seen.keys).toEqual([['callback', 'args']]);
    // Node 24 adds its async context frame after these.
    expect(seen.symbols[0]?.slice(0, 2)).toEqual(['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)']);
  });

  // Node 24 takes `trackPromises: false`; Node 20 ignores it, and its protector goes (docs/performance.md).
  it.skipIf(Number(process.versions.node.split('.')[0]) < 24)('leaves V8’s promise-hook protector in place on Node 24', () => {
    const script = `
      const { holdTickObject } = await import(${JSON.stringify(TICKS)});
      process.stdout.write(String(holdTickObject().length) + '\\n');
      await Promise.resolve();`;
    const child = spawnSync(process.execPath, ['--trace-protector-invalidation', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(child.stderr).toBe('');
    expect(child.stdout.split('\n')).toContain('1');
    expect(child.stdout).not.toContain('PromiseHook');
  });
});
