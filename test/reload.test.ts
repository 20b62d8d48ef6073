import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { ConfigError } from '../src/config/problems.js';
import { RESTART_ONLY, reloaded } from '../src/config/reload.js';
import type { Config } from '../src/config/schema.js';
import type { Json } from '../src/config/validate.js';
import { start, type Running } from '../src/start/main.js';
import { legacyCall } from './support/calls.js';
import { pageDocument, SEARCH_PAGES } from './support/pages.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';

/** Reloading the configuration (SIGHUP, POST /reload): new calls get it, calls in flight keep theirs. */

const base = { server: { host: '127.0.0.1', port: 0, adminPort: 0 }, log: { level: 'silent' } };
const configOf = (...overrides: Json[]): Config => loadConfig({}, base, ...overrides);

/** A brownout of `operation` open from a minute ago for an hour. */
const brownoutNow = (operation: string): Json => ({
  brownouts: [{ name: 'reload-test', operations: [operation], start: new Date(Date.now() - 60_000).toISOString(), durationMinutes: 60 }],
});

describe('what a reload may change (pure)', () => {
  it('applies what new calls read and keeps, naming them, the settings only a restart applies', () => {
    const running = configOf();
    const next = configOf(
      { server: { maxConcurrentCalls: 7 }, upstream: { retries: 0, callTimeoutMs: 1234, budget: { requestsPerSecond: 5 } } },
      { clients: [{ name: 'warehouse', apiKeys: ['warehouse-key'] }] },
      brownoutNow('Search'),
      { redis: { url: 'redis://127.0.0.1:6399' }, cache: { maxBytes: 1024, shareAcrossKeys: true } },
    );
    const { config, restartNeeded } = reloaded(running, next);
    expect(restartNeeded).toEqual(['server', 'redis', 'upstream.retries', 'cache.maxBytes']);
    expect(config.server).toEqual(running.server);
    expect(config.redis).toEqual(running.redis);
    expect([config.upstream.retries, config.cache.maxBytes]).toEqual([running.upstream.retries, running.cache.maxBytes]);
    expect(config.upstream.callTimeoutMs).toBe(1234);
    expect(config.upstream.budget.requestsPerSecond).toBe(5);
    expect(config.cache.shareAcrossKeys).toBe(true);
    expect(config.clients).toEqual(next.clients);
    expect(config.brownouts).toEqual(next.brownouts);
  });

  it(
    'refuses what a start would refuse, the settings kept as they run included: routes that need the origin the reload could ' + 'not add',
    () => {
      const running = configOf();
      const next = configOf({ legacy: { origin: 'http://old.example', routes: [{ mode: 'passthrough' }] } });
      expect(() => reloaded(running, next)).toThrow(
        new ConfigError(
          'legacy.routes',
          'need legacy.origin: the old service the routes send calls to. (with legacy.origin as it runs until a restart)',
        ),
      );
    },
  );

  it('names nothing when nothing that needs a restart changed, and every restart-only path exists', () => {
    const running = configOf();
    expect(reloaded(running, configOf(brownoutNow('Search'))).restartNeeded).toEqual([]);
    for (const path of RESTART_ONLY) {
      expect(
        path.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown>)[key], running),
        path,
      ).toBeDefined();
    }
  });
});

describe('a running proxy', () => {
  let proxy: Running | undefined;
  let upstream: StubUpstream | undefined;
  afterEach(async () => {
    await proxy?.stop();
    await upstream?.close();
    proxy = upstream = undefined;
  });

  it('gives the new configuration to new calls, lets calls in flight finish on theirs, and says what needs a restart', async () => {
    // A slow upstream, so that a call is in flight while the configuration changes under it.
    upstream = await startStubUpstream((_req, res) => {
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/xml' }).end(pageDocument(2, new Map(), SEARCH_PAGES)), 300);
    });
    let next: Config = configOf({ upstream: { baseUrl: upstream.origin } });
    proxy = await start(next, pino({ level: 'silent' }), undefined, () => next);
    const url = proxy.url;

    const inFlight = fetch(`${url}/index.asmx/Search?query=dog&apiKey=k`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    next = configOf({ upstream: { baseUrl: upstream.origin }, server: { maxConcurrentCalls: 3 } }, brownoutNow('Search'));
    expect(proxy.reload()).toEqual({ status: 'reloaded', restartNeeded: ['server'] });

    expect((await inFlight).status).toBe(200);
    const refused = await fetch(`${url}/index.asmx/Search?query=dog&apiKey=k`);
    expect(refused.status).toBe(500);
    expect(await refused.text()).toContain('(scheduled brownout &quot;reload-test&quot; until');
    // Other operations are not in the brownout.
    expect((await fetch(`${url}/index.asmx/ProductLookup?productNumber=1&apiKey=k`)).status).toBe(200);
  });

  it('applies the page cache settings a reload sets: switched off, every call goes upstream again', async () => {
    upstream = await startStubUpstream((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/xml' }).end(pageDocument(2, new Map(), SEARCH_PAGES)),
    );
    let next = configOf({ upstream: { baseUrl: upstream.origin } });
    proxy = await start(next, pino({ level: 'silent' }), undefined, () => next);
    const search = async () => expect((await fetch(`${proxy?.url}/index.asmx/Search?query=dog&apiKey=k`)).status).toBe(200);
    await search();
    await search();
    expect(upstream.requests).toHaveLength(1);
    next = configOf({ upstream: { baseUrl: upstream.origin }, cache: { enabled: false } });
    expect(proxy.reload()).toEqual({ status: 'reloaded', restartNeeded: [] });
    await search();
    await search();
    expect(upstream.requests).toHaveLength(3);
  });

  it('translates a SOAP call it remembers as the reloaded configuration says', async () => {
    upstream = await startStubUpstream((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/xml' }).end(pageDocument(2, new Map(), SEARCH_PAGES)),
    );
    let next = configOf({ upstream: { baseUrl: upstream.origin } });
    proxy = await start(next, pino({ level: 'silent' }), undefined, () => next);
    // The same envelope each time: read once, and planned once for each configuration.
    const search = async () => {
      const reply = await legacyCall(proxy?.url ?? '', 'soap11', 'Search', { query: 'dog', apiKey: 'k' });
      expect(reply.status).toBe(200);
      return reply.headers.get('link');
    };
    expect(await search()).toContain('/product.search.cp?v=3&');
    await search();
    next = configOf({ upstream: { baseUrl: upstream.origin, version: '4' } });
    expect(proxy.reload()).toEqual({ status: 'reloaded', restartNeeded: [] });
    expect(await search()).toContain('/product.search.cp?v=4&');
    await search();
    expect(upstream.requests.map(({ url }) => new URL(url, upstream?.origin).searchParams.get('v'))).toEqual(['3', '4']);
  });

  it('applies an upstream budget a reload sets, to the next call', async () => {
    let next = configOf();
    proxy = await start(next, pino({ level: 'silent' }), undefined, () => next);
    // A query of its own each time: the page cache must not answer in the budget's place.
    let calls = 0;
    const search = () => fetch(`${proxy?.url}/index.asmx/Search?query=dog${++calls}&apiKey=reload-budget`);
    for (let call = 0; call < 3; call++) expect((await search()).status).toBe(200);
    next = configOf({ upstream: { budget: { requestsPerSecond: 0.2, burst: 1, maxWaitMs: 0 } } });
    expect(proxy.reload()).toEqual({ status: 'reloaded', restartNeeded: [] });
    expect((await search()).status).toBe(200);
    const shed = await search();
    expect([shed.status, shed.headers.get('retry-after')]).toEqual([503, '5']);
  });

  it('refuses an invalid configuration, keeps the running one, and is asked for on the operator listener only', async () => {
    let source: () => Config = () => configOf();
    proxy = await start(configOf(), pino({ level: 'silent' }), undefined, () => source());
    source = () => {
      throw new ConfigError('paging.storeLookupPageSize', 'must be a whole number from 1 to 100000, got 0.');
    };
    const refused = await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' });
    expect([refused.status, await refused.json()]).toEqual([
      400,
      { status: 'refused', message: 'Invalid configuration: paging.storeLookupPageSize must be a whole number from 1 to 100000, got 0.' },
    ]);
    expect((await fetch(`${proxy.url}/index.asmx/Search?query=dog`)).status).toBe(200);
    // Not on the legacy service's port: a caller must not be able to reload the proxy.
    expect((await fetch(`${proxy.url}/reload`, { method: 'POST' })).status).not.toBe(200);

    source = () => configOf(brownoutNow('Search'));
    // A page in a browser cannot reload the proxy through a simple cross-origin POST.
    const fromPage = await fetch(`${proxy.adminUrl}/reload`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(fromPage.status).toBe(403);
    expect((await fetch(`${proxy.url}/index.asmx/Search?query=dog`)).status).toBe(200);
    const applied = await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' });
    expect([applied.status, await applied.json()]).toEqual([200, { status: 'reloaded', restartNeeded: [] }]);
    expect((await fetch(`${proxy.url}/index.asmx/Search?query=dog`)).status).toBe(500);
  });
});
