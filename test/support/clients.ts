import type { Catalog } from '../../src/demo/catalog.js';
import type { Running } from '../../src/start/main.js';
import { logProblems } from './log-check.js';
import type { TestProxy } from './proxy.js';
import { startProxy, startUnreachableProxy } from './proxy.js';

/**
 * What the tests that drive real SOAP clients against the proxy share: when a client that is not
 * installed skips its suite or fails it, the two proxies every such suite calls, and the StoreLookup
 * page size their paging cases rely on.
 */

// --- Whether a client suite runs -----------------------------------------------------------------------

/**
 * REQUIRE_OTHER_CLIENTS=1 (set by .ci/run, which installs the clients) turns a missing client from a
 * skipped suite into a failed one, so CI cannot pass without running them.
 */
const OTHER_CLIENTS_REQUIRED = process.env.REQUIRE_OTHER_CLIENTS === '1';

/**
 * For `describe.skipIf`: a suite whose client is missing is skipped, unless clients are required.
 * `available` undefined (never probed) counts as missing.
 */
export function skipClientSuite(available: boolean | undefined): boolean {
  return !available && !OTHER_CLIENTS_REQUIRED;
}

/**
 * For the suite's `beforeAll`: a missing client only gets this far when clients are required, and
 * then fails the suite; `missing` says what is missing.
 */
export function requireClient(available: boolean | undefined, missing: string): void {
  if (!available) throw new Error(`${missing}, but REQUIRE_OTHER_CLIENTS=1`);
}

// --- The proxies the clients call ------------------------------------------------------------------------

export interface ProxyPair {
  /** The product with its embedded demo upstream. */
  readonly proxy: TestProxy;
  /** A second proxy whose upstream refuses connections. */
  readonly unreachable: TestProxy;
}

/** Starts both proxies side by side; whoever assigns them stops them (`proxy.stop()`, `unreachable.stop()`). */
export async function startProxyPair(): Promise<ProxyPair> {
  const [proxy, unreachable] = await Promise.all([startProxy(), startUnreachableProxy()]);
  return { proxy, unreachable };
}

/**
 * What the pair logged while real clients called it (issue 28): nothing at warn or above but the
 * start-up lines of a test configuration and, behind the refusing upstream, its failures; no line that
 * spells one of `keys`. Empty when clean.
 */
export function pairLogProblems({ proxy, unreachable }: Partial<ProxyPair>, keys: readonly string[]): string[] {
  return [
    ...logProblems(proxy?.log ?? [], keys, ['demo_upstream', 'client_id_key']),
    ...logProblems(unreachable?.log ?? [], keys, ['client_id_key', 'upstream_failure']),
  ];
}

/** The catalog behind `proxy`'s demo upstream, which the client results are checked against. */
export function demoCatalog(proxy: Running): Catalog {
  if (!proxy.demo) throw new Error('the proxy was expected to start the demo upstream');
  return proxy.demo.catalog;
}

/**
 * The default `paging.storeLookupPageSize` (src/config/schema.ts), the upstream page size of
 * StoreLookup: a larger store takes several upstream pages.
 */
export const STORE_PAGE_SIZE = 256;

/** The stack of a hit line (src/clients/stack.ts). */
export interface HitStack {
  readonly name: string;
  readonly version: string | null;
}

/** The stacks the hits in `log` from line `from` on name, one for each hit. */
export function hitStacksSince(log: readonly string[], from: number): HitStack[] {
  return log
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((fields) => fields.event === 'deprecated_call')
    .map((fields) => ({ name: String(fields.clientStack), version: (fields.clientStackVersion as string | null) ?? null }));
}

/** Marks both logs of `pair` now; the stacks the hits logged since, in both, when asked. */
export function markPair({ proxy, unreachable }: ProxyPair): () => HitStack[] {
  const marks = [proxy.log.length, unreachable.log.length] as const;
  return () => [...hitStacksSince(proxy.log, marks[0]), ...hitStacksSince(unreachable.log, marks[1])];
}
