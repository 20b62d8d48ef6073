import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import type { Config } from '../../src/config/schema.js';
import type { Upstream } from '../../src/outbound/upstream-client.js';
import { buildApp, type App } from '../../src/server/app.js';
import { startStubUpstream, type StubHandler, type StubUpstream } from './stub-upstream.js';

/**
 * The app with its page cache on, over a stub upstream, on loopback: its own clock (the cache's
 * freshness is seconds to minutes), every log line it writes, its metrics. For the page cache's tests.
 */

export const CLOCK_START = Date.parse('2026-03-02T10:00:00Z');

export interface CachedApp {
  readonly app: App;
  readonly base: string;
  readonly upstream: StubUpstream;
  /** Every line logged (hits and the operators' lines), parsed; a test may empty it. */
  readonly lines: Record<string, unknown>[];
  /** The app's clock, epoch milliseconds: a test moves it. */
  readonly clock: { now: number };
  /** A Search over HTTP GET: status, body, and the hit logged last (the call's, when calls are made one at a time). */
  search(query: string, apiKey?: string): Promise<Called>;
  /** The value of one series of the app's metrics; undefined when it has none. */
  metric(name: string, labels?: Readonly<Record<string, string>>): Promise<number | undefined>;
  close(): Promise<void>;
}

export interface Called {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
  readonly hit: Record<string, unknown>;
}

/**
 * A page of the search endpoint whose `searchString` is `marker`, as the upstream writes it
 * (indented, no declaration: compact bytes once checked).
 */
export function markedPage(marker: string): string {
  return (
    '<searchResultSet totalDesigns="1" totalProducts="1" startResult="0" resultLength="1" version="3" sort="by_score_desc">\n' +
    '  <mainResults>\n    <searchResultItem type="IMAGE" mediaId="1">\n      <products total="1" />\n    </searchResultItem>\n  ' +
    '</mainResults>\n' +
    `  <searchQuery>\n    <searchString>${marker}</searchString>\n  </searchQuery>\n</searchResultSet>`
  );
}

export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * `handler` answers the upstream's requests; `overrides` go over the defaults with the cache on.
 * `wrap` may put something between the app and its undici upstream (as the budget does); `env` is the
 * environment the configuration is read from (none by default).
 */
export async function startCachedApp(
  handler: StubHandler,
  overrides: Json = {},
  options: { readonly upstream?: StubUpstream; readonly wrap?: (config: Config) => Upstream; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<CachedApp> {
  const upstream = options.upstream ?? (await startStubUpstream(handler));
  const config = loadConfig(
    options.env ?? {},
    { upstream: { baseUrl: upstream.origin, appKey: 'configured-app-key' }, log: { level: 'info' }, server: { adminPort: null } },
    { cache: { enabled: true } },
    overrides,
  );
  const clock = { now: CLOCK_START };
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const wrapped = options.wrap?.(config);
  const app = await buildApp(config, { logger, now: () => clock.now, ...(wrapped ? { upstream: wrapped } : {}) });
  const base = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    base,
    upstream,
    lines,
    clock,
    async search(query, apiKey = 'K1') {
      const hits = (): Record<string, unknown>[] => lines.filter((line) => line.event === 'deprecated_call');
      const before = hits().length;
      const response = await fetch(`${base}/index.asmx/Search?${new URLSearchParams({ query, apiKey, version: '1' })}`);
      const body = await response.text();
      await until('the hit', () => hits().length > before, 2000);
      return { status: response.status, body, headers: response.headers, hit: hits().at(-1)! };
    },
    async metric(name, labels = {}) {
      const metric = (await app.registry.getMetricsAsJSON()).find((one) => one.name === name);
      const value = (metric?.values as { value: number; labels: Record<string, string | number> }[] | undefined)?.find((one) =>
        Object.entries(labels).every(([label, wanted]) => String(one.labels[label]) === wanted),
      );
      return value?.value;
    },
    async close() {
      await app.fastify.close();
      if (options.upstream === undefined) await upstream.close();
    },
  };
}
