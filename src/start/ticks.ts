import { createHook, type HookCallbacks } from 'node:async_hooks';

/**
 * One of node's own TickObjects (what `process.nextTick` queues), kept for the life of the process.
 * For the proxy's own process only (main and the benchmark's proxy), as `tuneHeap` is.
 *
 * Why: `process.nextTick` builds each TickObject as an object literal with computed keys, and V8 keeps
 * the hidden classes (maps) that literal goes through only while some object has them. Node's streams
 * call `nextTick` several times a call, but a TickObject lives only until its tick has run, so a full
 * collection usually finds none alive and drops those maps; the next `nextTick` builds them again, new
 * ones, and after a few rounds V8 stops expecting any map at that site: from then on every TickObject
 * is built in V8's runtime, its map migrated property by property. The proxy's start runs enough full
 * collections for that; a bare server's does not. Measured on Node 20 and 24 alike: after 30 full
 * collections with no TickObject alive, a `nextTick` cost 385–783 ns against 85–126 with one held;
 * in the proxy, hot Search under wrk on Node 20, about 2 µs a call (docs/performance.md, "One
 * TickObject held").
 *
 * How it is reached: an async hook's `init` is handed it, the hook enabled for a single `nextTick`
 * here and disabled at once, so no hook runs afterwards. Enabling a hook leaves one lasting mark on
 * Node 20: it installs V8's promise hooks, which invalidates V8's promise-hook protector for the life
 * of the process (optimized code then calls Promise builtins rather than inlining them); Node 24 takes
 * `trackPromises: false` and installs none. Measured with that cost on Node 20, holding still won
 * (docs/performance.md). The other way to reach one, `executionAsyncResource()` inside a tick, leaves
 * a mark on every runtime: every callback from node's native side then goes through a JS trampoline.
 *
 * Returns what it holds (a test reads it): empty if node no longer hands TickObjects to hooks, which
 * costs speed, never a call.
 */
export function holdTickObject(): readonly object[] {
  const captured: object[] = [];
  const callbacks: HookCallbacks & { readonly trackPromises: boolean } = {
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') captured.push(resource);
    },
    // Node 24: no promise hooks (Node 20 does not know the option, and installs them).
    trackPromises: false,
  };
  const hook = createHook(callbacks);
  hook.enable();
  try {
    process.nextTick(() => {});
  } finally {
    hook.disable();
  }
  held.push(...captured);
  return captured;
}

/** Held for the life of the process: that is the point. */
const held: object[] = [];
