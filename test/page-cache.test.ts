import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { deadlinesOf } from '../src/cache/freshness.js';
import { createPageCache, staleMayStandIn } from '../src/cache/page-cache.js';
import type { PageSource } from '../src/outbound/fetch.js';
import { UpstreamBusy, UpstreamError } from '../src/errors.js';
import type { FetchOptions, FetchPage } from '../src/outbound/fetch.js';
import { createUpstream, type Upstream } from '../src/outbound/upstream-client.js';
import { fetchOptions } from './support/fetch-options.js';
import { createShared } from '../src/redis/shared.js';
import type { UpstreamRequest } from '../src/translate/plan.js';
import { compactDocument, type Page } from '../src/xml/compact.js';
import { markedPage, startCachedApp, until, type CachedApp } from './support/cached-app.js';
import { testConfig } from './support/config.js';

/**
 * The page cache of one instance (src/cache/page-cache.ts) against a real upstream on loopback: what
 * goes upstream and what the caller gets, by the app's clock. The fleet's (Redis) is
 * test/page-cache-fleet.test.ts.
 */

const SEARCH = '/product.search.cp';
/** The search endpoint's defaults: 60 s fresh, 60 s stale while revalidating, an hour stale if the upstream fails. */
const FRESH_MS = 60_000;
const SWR_MS = 60_000;
const SIE_MS = 3_600_000;

let open: CachedApp[] = [];
afterEach(async () => {
  await Promise.all(open.map((app) => app.close()));
  open = [];
});

async function started(...args: Parameters<typeof startCachedApp>): Promise<CachedApp> {
  const app = await startCachedApp(...args);
  open.push(app);
  return app;
}

/** What the upstream does next: answer page `version` (with `headers`), fail, or never answer. */
interface Behaviour {
  mode: 'ok' | '500' | '503' | '404' | 'hang' | 'tree';
  version: number;
  headers: Record<string, string>;
  /** Milliseconds before a response. */
  delayMs: number;
  /** Answers 304 when the request's validator matches this. */
  notModifiedFor: string | null;
}

function upstreamDoing(behaviour: Behaviour) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const respond = (): void => {
      const { mode, version, headers } = behaviour;
      if (mode === 'hang') return;
      const validator = req.headers['if-none-match'] ?? req.headers['if-modified-since'];
      if (behaviour.notModifiedFor !== null && validator === behaviour.notModifiedFor) {
        res.writeHead(304, headers).end();
        return;
      }
      if (mode === '500' || mode === '503' || mode === '404') {
        res.writeHead(Number(mode), { 'content-type': 'text/html' }).end('<html><body>down</body></html>');
        return;
      }
      const body = mode === 'tree' ? `<?xml version="1.0"?>\n${markedPage(`v${version}`)}` : markedPage(`v${version}`);
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8', ...headers }).end(body);
    };
    if (behaviour.delayMs > 0) setTimeout(respond, behaviour.delayMs);
    else respond();
  };
}

function behaviour(overrides: Partial<Behaviour> = {}): Behaviour {
  return { mode: 'ok', version: 1, headers: {}, delayMs: 0, notModifiedFor: null, ...overrides };
}

const pagesOf = (called: { hit: Record<string, unknown> }) => called.hit.pages as Record<PageSource, number>;
const only = (result: PageSource): Record<PageSource, number> => ({ hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0, [result]: 1 });

describe('the fetch pipeline carries the call through the cache', () => {
  it("an upstream request the cache makes for a call is logged with that call's requestId", async () => {
    const upstream = behaviour();
    upstream.mode = '503';
    const app = await started(upstreamDoing(upstream));
    const failed = await app.search('dog');
    expect(failed.hit.reason).toBe('upstream_status');
    const logged = app.lines.filter((line) => line.event === 'upstream_failure');
    expect(logged).toEqual([expect.objectContaining({ path: SEARCH, status: 503, requestId: failed.hit.requestId })]);
    expect(failed.hit.requestId).toEqual(expect.any(String));
  });
});

/**
 * Pages over the pool's smallest size, each naming its query (and `marker()`) in every item: a page or
 * reply whose buffer went back to the pool would come out holding another query's items.
 */
function largePages(marker: () => string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const query = `${new URL(req.url ?? '/', 'http://upstream').searchParams.get('query') ?? ''}${marker()}`;
    const items = Array.from(
      { length: 300 },
      (_, id) =>
        `    <searchResultItem type="IMAGE" mediaId="${id}" title="${query}">\n      <products total="1" />\n    </searchResultItem>\n`,
    ).join('');
    res
      .writeHead(200, { 'content-type': 'text/xml; charset=utf-8' })
      .end(
        `<searchResultSet totalDesigns="300" totalProducts="300" startResult="0" resultLength="300" version="3" ` +
          `sort="by_score_desc">\n  <mainResults>\n${items}  </mainResults>\n  <searchQuery>\n    ` +
          `<searchString>${query}</searchString>\n  </searchQuery>\n</searchResultSet>`,
      );
  };
}

/** Search for `query` with the apiKey K1 over each binding: the request's URL path and its init. */
function searchOver(query: string): Record<string, [string, RequestInit]> {
  const envelope = (ns: string): string =>
    `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${ns}"><soap:Body><Search xmlns="http://tempuri.org/">` +
    `<query>${query}</query><apiKey>K1</apiKey><version>1</version></Search></soap:Body></soap:Envelope>`;
  return {
    soap11: [
      '/index.asmx',
      {
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/Search"' },
        body: envelope('http://schemas.xmlsoap.org/soap/envelope/'),
      },
    ],
    soap12: [
      '/index.asmx',
      {
        method: 'POST',
        headers: { 'content-type': 'application/soap+xml; charset=utf-8' },
        body: envelope('http://www.w3.org/2003/05/soap-envelope'),
      },
    ],
    httpGet: [`/index.asmx/Search?${new URLSearchParams({ query, apiKey: 'K1', version: '1' })}`, {}],
    httpPost: [
      '/index.asmx/Search',
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query, apiKey: 'K1', version: '1' }).toString(),
      },
    ],
  };
}

describe('a fresh page', () => {
  it('is served from memory: the same reply, no upstream request, the hit says hit', async () => {
    const upstream = behaviour();
    const app = await started(upstreamDoing(upstream));
    const first = await app.search('dog');
    upstream.version = 2;
    const second = await app.search('dog');
    expect(first.status).toBe(200);
    expect(first.body).toContain('v1');
    expect(second.body).toBe(first.body);
    expect(app.upstream.requests).toHaveLength(1);
    expect(pagesOf(first)).toEqual(only('miss'));
    expect(first.hit.upstreamRequests).toBe(1);
    expect(pagesOf(second)).toEqual(only('hit'));
    expect(second.hit.upstreamRequests).toBe(0);
    expect(await app.metric('upstream_cache_results_total', { endpoint: SEARCH, result: 'hit' })).toBe(1);
    expect(await app.metric('upstream_cache_results_total', { endpoint: SEARCH, result: 'miss' })).toBe(1);
    expect(await app.metric('upstream_cache_results_total', { endpoint: SEARCH, result: 'stale' })).toBe(0);
  });

  it('keeps its bytes while other calls borrow and give back the pooled buffers pages come in (src/xml/pool.ts)', async () => {
    const app = await started(largePages(() => ''));
    const first = await app.search('kept');
    expect(first.body.length).toBeGreaterThan(32 * 1024);
    for (const other of ['cat', 'bird', 'fish', 'mouse', 'horse']) expect((await app.search(other)).status).toBe(200);
    const again = await app.search('kept');
    expect(pagesOf(again)).toEqual(only('hit'));
    expect(again.body).toBe(first.body);
  });

  it("each binding's reply from a hit, written once and kept with the page, is the reply of a call without the cache", async () => {
    // src/memo/replies.ts
    let marker = '-v1';
    const cached = await started(largePages(() => marker));
    const uncached = await started(
      largePages(() => marker),
      { cache: { enabled: false } },
    );
    const reply = async (app: CachedApp, [path, init]: [string, RequestInit]): Promise<string> => {
      const response = await fetch(`${app.base}${path}`, init);
      expect(response.status).toBe(200);
      return response.text();
    };
    const expected: Record<string, string> = {};
    for (const [binding, request] of Object.entries(searchOver('kept'))) expected[binding] = await reply(uncached, request);
    // GET and POST answer the same document; the two SOAP versions their own envelopes.
    expect(new Set(Object.values(expected)).size).toBe(3);
    for (let round = 0; round < 3; round++) {
      for (const [binding, request] of Object.entries(searchOver('kept'))) {
        expect(await reply(cached, request), `${binding}, round ${round}`).toBe(expected[binding]);
        // Other pages and replies borrow and give back the pool's buffers in between.
        for (const other of ['cat', 'bird']) await reply(cached, searchOver(`${other}${round}`)[binding]!);
      }
    }
    expect(cached.upstream.requests.filter((request) => request.url.includes('query=kept'))).toHaveLength(1);
    // A page replaced is written anew.
    marker = '-v2';
    cached.clock.now += FRESH_MS + SWR_MS + 1;
    for (const request of Object.values(searchOver('kept'))) expect(await reply(cached, request)).toContain('title="kept-v2"');
  });

  it('shared across keys, a caller coalesced on another key’s request that its key may not make gets its own request', async () => {
    let first = true;
    const app = await started(
      (req, res) => {
        const good = new URL(req.url ?? '/', 'http://upstream').searchParams.get('appKey') === 'GOOD';
        // The first request is slow, so that the other caller coalesces on it.
        setTimeout(
          () => {
            if (good) res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(markedPage('page'));
            else
              res.writeHead(403, { 'content-type': 'text/xml' }).end('<help><exception-message>Invalid appKey</exception-message></help>');
          },
          first ? 300 : 0,
        );
        first = false;
      },
      { cache: { shareAcrossKeys: true }, upstream: { apiKeyMode: 'forward' } },
    );
    const bad = app.search('dog', 'BAD-KEY');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const good = await fetch(`${app.base}/index.asmx/Search?query=dog&apiKey=GOOD&version=1`);
    expect(good.status).toBe(200);
    expect(await good.text()).toContain('page');
    expect((await bad).status).toBe(500);
  });

  /** An upstream behind its gateway: a page for a key it takes, Mashery's 403 for none or one it refuses. */
  function gateway(refused: Set<string>) {
    return (req: IncomingMessage, res: ServerResponse): void => {
      const appKey = new URL(req.url ?? '/', 'http://upstream').searchParams.get('appKey');
      if (appKey === null || refused.has(appKey)) {
        const code = appKey === null ? 'ERR_403_DEVELOPER_INACTIVE' : 'ERR_403_NOT_AUTHORIZED';
        res.writeHead(403, { 'content-type': 'text/xml', 'x-mashery-error-code': code }).end('<h1>Not Authorized</h1>');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(markedPage('page'));
    };
  }

  it('shared across keys, a call without a key (forward mode) is never served a shared page: the upstream checks it', async () => {
    const app = await started(gateway(new Set()), { cache: { shareAcrossKeys: true }, upstream: { apiKeyMode: 'forward', appKey: null } });
    expect((await app.search('dog', 'K1')).status).toBe(200);
    const keyless = await app.search('dog', '');
    expect([keyless.status, keyless.body.trim()]).toEqual([500, 'The remote server returned an error: (403) Forbidden.']);
    expect(app.upstream.requests).toHaveLength(2);
    expect(pagesOf(await app.search('dog', 'K2'))).toEqual(only('hit'));
  });

  it('shared across keys, a key the upstream refused is not served a shared page until the upstream takes it again', async () => {
    const refused = new Set(['REVOKED']);
    const app = await started(gateway(refused), { cache: { shareAcrossKeys: true } });
    expect((await app.search('dog', 'K1')).status).toBe(200);
    expect((await app.search('cat', 'REVOKED')).status).toBe(500);
    const revoked = await app.search('dog', 'REVOKED');
    expect([revoked.status, pagesOf(revoked)]).toEqual([500, { hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0 }]);
    expect(app.upstream.requests).toHaveLength(3);
    // The key taken again (a request of its own succeeds): shared pages again.
    refused.clear();
    expect((await app.search('bird', 'REVOKED')).status).toBe(200);
    expect(pagesOf(await app.search('dog', 'REVOKED'))).toEqual(only('hit'));
    expect(app.upstream.requests).toHaveLength(4);
  });

  it('is keyed by the exact upstream request, appKey included unless cache.shareAcrossKeys', async () => {
    const own = await started(upstreamDoing(behaviour()));
    await own.search('dog', 'K1');
    await own.search('dog', 'K2');
    await own.search('cat', 'K1');
    expect(own.upstream.requests).toHaveLength(3);

    const shared = await started(upstreamDoing(behaviour()), { cache: { shareAcrossKeys: true } });
    await shared.search('dog', 'K1');
    const other = await shared.search('dog', 'K2');
    expect(shared.upstream.requests).toHaveLength(1);
    expect(pagesOf(other)).toEqual(only('hit'));
  });

  it('a tree page (outside the canonical subset) passes uncached', async () => {
    const app = await started(upstreamDoing(behaviour({ mode: 'tree' })));
    const first = await app.search('dog');
    const second = await app.search('dog');
    expect(second.body).toBe(first.body);
    expect(app.upstream.requests).toHaveLength(2);
    expect(pagesOf(second)).toEqual(only('miss'));
  });

  it('the memory holds at most cache.maxBytes of pages, the least recently used evicted first', async () => {
    const pageBytes = compactDocument(Buffer.from(markedPage('v1')), 'searchResultSet')!.bytes.length;
    // Room for two pages and their entries, not three.
    const app = await started(upstreamDoing(behaviour()), { cache: { maxBytes: 2 * (pageBytes + 256) + 10 } });
    await app.search('a');
    await app.search('b');
    await app.search('a'); // a is now the most recently used
    await app.search('c'); // evicts b
    expect(app.upstream.requests).toHaveLength(3);
    expect(pagesOf(await app.search('a'))).toEqual(only('hit'));
    expect(pagesOf(await app.search('c'))).toEqual(only('hit'));
    expect(pagesOf(await app.search('b'))).toEqual(only('miss'));
    expect(await app.metric('upstream_cache_memory_bytes')).toBeLessThanOrEqual(2 * (pageBytes + 256) + 10);
  });
});

describe('stale-while-revalidate', () => {
  it('a page past its freshness is served as it is while exactly one background request refreshes it', async () => {
    const upstream = behaviour({ delayMs: 0 });
    const app = await started(upstreamDoing(upstream));
    await app.search('dog');
    upstream.version = 2;
    upstream.delayMs = 300;
    app.clock.now += FRESH_MS + 1000;
    app.lines.length = 0;
    const stale = await Promise.all(Array.from({ length: 8 }, () => app.search('dog')));
    for (const called of stale) expect(called.body).toContain('v1');
    for (const hit of app.lines.filter((line) => line.event === 'deprecated_call')) {
      expect(pagesOf({ hit })).toEqual(only('stale'));
      // The refresh is the app's, not the call's.
      expect(hit.upstreamRequests).toBe(0);
    }
    await until('the background refresh', () => app.upstream.requests.length === 2);
    await until('the refreshed page', async () => (await app.search('dog')).body.includes('v2'));
    const fresh = await app.search('dog');
    expect(pagesOf(fresh)).toEqual(only('hit'));
    expect(app.upstream.requests).toHaveLength(2);
  });

  it('past stale-while-revalidate the call waits for the upstream', async () => {
    const upstream = behaviour();
    const app = await started(upstreamDoing(upstream));
    await app.search('dog');
    upstream.version = 2;
    app.clock.now += FRESH_MS + SWR_MS + 1000;
    const called = await app.search('dog');
    expect(called.body).toContain('v2');
    expect(pagesOf(called)).toEqual(only('miss'));
    expect(called.hit.upstreamRequests).toBe(1);
  });
});

describe('stale-if-error', () => {
  /** A page cached at the start, then the upstream failing as `failing` makes it, `laterMs` on. */
  async function failingAfter(failing: (upstream: Behaviour) => void, laterMs: number, overrides = {}) {
    const upstream = behaviour();
    const app = await started(upstreamDoing(upstream), overrides);
    await app.search('dog');
    failing(upstream);
    app.clock.now += laterMs;
    return app;
  }

  it.each(['500', '503'] as const)('a %s: the stale page, up to its age; past it, the legacy fault', async (status) => {
    const app = await failingAfter((upstream) => (upstream.mode = status), FRESH_MS + SWR_MS + 1000);
    const stale = await app.search('dog');
    expect(stale.status).toBe(200);
    expect(stale.body).toContain('v1');
    expect(pagesOf(stale)).toEqual(only('stale'));
    expect(stale.hit).toMatchObject({ outcome: 'ok', upstreamRequests: 1 });
    expect(await app.metric('upstream_cache_stale_if_error_total', { endpoint: SEARCH })).toBe(1);

    app.clock.now += SIE_MS;
    const fault = await app.search('dog');
    expect(fault.status).toBe(500);
    expect(fault.body).toContain(`The remote server returned an error: (${status})`);
    expect(fault.hit).toMatchObject({ outcome: 'fault', reason: 'upstream_status' });
  });

  it('a timeout: the stale page', async () => {
    const app = await failingAfter((upstream) => (upstream.mode = 'hang'), FRESH_MS + SWR_MS + 1000, {
      upstream: { headersTimeoutMs: 200 },
    });
    const stale = await app.search('dog');
    expect(stale.body).toContain('v1');
    expect(pagesOf(stale)).toEqual(only('stale'));
    app.clock.now += SIE_MS;
    const fault = await app.search('dog');
    expect(fault.status).toBe(500);
    expect(fault.body).toContain('The operation has timed out');
  });

  it('an unreachable upstream: the stale page', async () => {
    const app = await failingAfter(() => {}, FRESH_MS + SWR_MS + 1000);
    await app.upstream.close();
    const stale = await app.search('dog');
    expect(stale.body).toContain('v1');
    expect(pagesOf(stale)).toEqual(only('stale'));
    app.clock.now += SIE_MS;
    const fault = await app.search('dog');
    expect(fault.body).toContain('Unable to connect to the remote server');
  });

  it('a 4xx is the call’s fault, never hidden by a stale page', async () => {
    const app = await failingAfter((upstream) => (upstream.mode = '404'), FRESH_MS + SWR_MS + 1000);
    const fault = await app.search('dog');
    expect(fault.status).toBe(500);
    expect(fault.body).toContain('(404)');
  });

  it('over the upstream budget (UpstreamBusy, under the cache): the stale page; past its age, shed with Retry-After', async () => {
    let busy = false;
    const upstream = behaviour();
    const app = await started(
      upstreamDoing(upstream),
      {},
      {
        wrap: (config) => {
          const real = createUpstream(config.upstream);
          return {
            fetch: (request, options) => (busy ? Promise.reject(new UpstreamBusy(7, 'budget')) : real.fetch(request, options)),
            reachable: () => real.reachable(),
            close: () => real.close(),
          } satisfies Upstream;
        },
      },
    );
    await app.search('dog');
    busy = true;
    app.clock.now += FRESH_MS + SWR_MS + 1000;
    const stale = await app.search('dog');
    expect(stale.body).toContain('v1');
    expect(pagesOf(stale)).toEqual(only('stale'));
    app.clock.now += SIE_MS;
    const shed = await app.search('dog');
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('7');
    expect(shed.hit).toMatchObject({ outcome: 'shed', reason: 'budget' });
  });
});

describe("the upstream's Cache-Control and validators", () => {
  it('no-store: never kept', async () => {
    const app = await started(upstreamDoing(behaviour({ headers: { 'cache-control': 'no-store' } })));
    await app.search('dog');
    expect(pagesOf(await app.search('dog'))).toEqual(only('miss'));
    expect(app.upstream.requests).toHaveLength(2);
  });

  it('max-age: fresh for as long as it says, longer or shorter than the configured freshness', async () => {
    const long = behaviour({ headers: { 'cache-control': 'max-age=600' } });
    const app = await started(upstreamDoing(long));
    await app.search('dog');
    app.clock.now += 300_000;
    expect(pagesOf(await app.search('dog'))).toEqual(only('hit'));

    const short = behaviour({ headers: { 'cache-control': 'max-age=5, must-revalidate' } });
    const other = await started(upstreamDoing(short));
    await other.search('dog');
    other.clock.now += 10_000;
    // must-revalidate: no stale serving either.
    expect(pagesOf(await other.search('dog'))).toEqual(only('miss'));
    expect(other.upstream.requests).toHaveLength(2);
  });

  it('ETag: revalidated with If-None-Match, a 304 keeps the page and makes it fresh again', async () => {
    const upstream = behaviour({ headers: { etag: '"v1"' }, notModifiedFor: '"v1"' });
    const app = await started(upstreamDoing(upstream), { cache: { endpoints: { [SEARCH]: { staleWhileRevalidateSeconds: 0 } } } });
    const first = await app.search('dog');
    app.clock.now += FRESH_MS + 1000;
    const revalidated = await app.search('dog');
    expect(app.upstream.requests).toHaveLength(2);
    expect(app.upstream.requests[1]!.headers['if-none-match']).toBe('"v1"');
    expect(app.upstream.requests[0]!.headers['if-none-match']).toBeUndefined();
    expect(revalidated.body).toBe(first.body);
    expect(pagesOf(revalidated)).toEqual(only('revalidated'));
    expect(revalidated.hit.upstreamRequests).toBe(1);
    expect(pagesOf(await app.search('dog'))).toEqual(only('hit'));
    expect(app.upstream.requests).toHaveLength(2);
  });

  it('Last-Modified: revalidated with If-Modified-Since; a changed page replaces it', async () => {
    const stamp = 'Mon, 02 Mar 2026 09:00:00 GMT';
    const upstream = behaviour({ headers: { 'last-modified': stamp } });
    const app = await started(upstreamDoing(upstream), { cache: { endpoints: { [SEARCH]: { staleWhileRevalidateSeconds: 0 } } } });
    await app.search('dog');
    upstream.version = 2;
    app.clock.now += FRESH_MS + 1000;
    const changed = await app.search('dog');
    expect(app.upstream.requests[1]!.headers['if-modified-since']).toBe(stamp);
    expect(changed.body).toContain('v2');
    expect(pagesOf(changed)).toEqual(only('miss'));
  });
});

describe('coalescing', () => {
  it('64 concurrent identical calls make one upstream request', async () => {
    const app = await started(upstreamDoing(behaviour({ delayMs: 300 })));
    const calls = await Promise.all(
      Array.from({ length: 64 }, () =>
        fetch(`${app.base}/index.asmx/Search?query=dog&apiKey=K1&version=1`).then(async (response) => ({
          status: response.status,
          body: await response.text(),
        })),
      ),
    );
    expect(app.upstream.requests).toHaveLength(1);
    expect(new Set(calls.map((call) => `${call.status} ${call.body}`)).size).toBe(1);
    expect(calls[0]!.status).toBe(200);
    await until('64 hits', () => app.lines.filter((line) => line.event === 'deprecated_call').length === 64);
    const hits = app.lines.filter((line) => line.event === 'deprecated_call');
    const total = (result: PageSource): number => hits.reduce((sum, hit) => sum + (hit.pages as Record<PageSource, number>)[result], 0);
    expect({ miss: total('miss'), coalesced: total('coalesced') }).toEqual({ miss: 1, coalesced: 63 });
    expect(hits.reduce((sum, hit) => sum + (hit.upstreamRequests as number), 0)).toBe(1);
  });

  describe('a call that leaves', () => {
    const request: UpstreamRequest = { path: SEARCH, params: [['query', 'dog']] };
    const page = compactDocument(Buffer.from(markedPage('v1')), 'searchResultSet')!;

    /** An upstream that answers when told to, and shows whether its request was cancelled. */
    function slowUpstream() {
      const seen: AbortSignal[] = [];
      let answer: (page: Page) => void = () => {};
      const fetch: FetchPage = (_request, { signal }) => {
        seen.push(signal);
        return new Promise<Page>((resolve, reject) => {
          answer = resolve;
          signal.addEventListener('abort', () => reject(signal.reason));
        });
      };
      return { fetch, seen, answer: (with_: Page) => answer(with_) };
    }

    function cache() {
      const config = testConfig({ cache: { enabled: true } });
      const registry = new Registry();
      const shared = createShared(config.redis, registry, { warn() {}, info() {} });
      return createPageCache({
        settings: () => config,
        shared,
        registry,
        log: { debug() {} },
      });
    }

    it('serves a cached page without making the call signal; a page it fetches keeps the call options', async () => {
      let signalReads = 0;
      const callOptions = (): FetchOptions =>
        Object.defineProperty(fetchOptions({ requestId: 'call-7', appKey: 'the-key' }), 'signal', {
          get: () => {
            signalReads++;
            return new AbortController().signal;
          },
        });
      const heard: FetchOptions[] = [];
      const fetch = cache().intercept(async (_request, options) => {
        heard.push(options);
        return page;
      });
      expect(await fetch(request, callOptions())).toMatchObject({ type: 'compact', bytes: page.bytes });
      expect(heard).toHaveLength(1);
      expect(heard[0]).toMatchObject({ requestId: 'call-7', appKey: 'the-key' });
      expect(heard[0]!.revalidation?.responded).toBeTypeOf('function');
      expect(heard[0]!.signal.aborted).toBe(false);
      signalReads = 0;
      expect(await fetch(request, callOptions())).toMatchObject({ type: 'compact', bytes: page.bytes });
      expect(heard).toHaveLength(1);
      expect(signalReads).toBe(0);
    });

    it('leaves without cancelling the request the others wait for', async () => {
      const upstream = slowUpstream();
      const served: PageSource[] = [];
      const fetch = cache().intercept(upstream.fetch);
      const tally = { upstreamRequest() {}, page: (source: PageSource) => served.push(source) };
      const leader = new AbortController();
      const first = fetch(request, fetchOptions({ signal: leader.signal, tally }));
      const second = fetch(request, fetchOptions({ tally }));
      await until('the upstream request', () => upstream.seen.length === 1);
      leader.abort(new Error('the first caller hung up'));
      await expect(first).rejects.toThrow('the first caller hung up');
      expect(upstream.seen[0]!.aborted).toBe(false);
      upstream.answer(page);
      expect(await second).toEqual(page);
      expect(served).toEqual(['coalesced']);
    });

    it('the last one to leave cancels it', async () => {
      const upstream = slowUpstream();
      const fetch = cache().intercept(upstream.fetch);
      const callers = [new AbortController(), new AbortController()];
      const fetches = callers.map((caller) => fetch(request, fetchOptions({ signal: caller.signal })));
      await until('the upstream request', () => upstream.seen.length === 1);
      for (const caller of callers) caller.abort(new Error('gone'));
      await Promise.allSettled(fetches);
      expect(upstream.seen[0]!.aborted).toBe(true);
    });

    it('a call that comes while a cancelled request is still ending gets a request of its own, not the reason it ended', async () => {
      const seen: AbortSignal[] = [];
      // Cancelled, the request takes a while to end (as the budget giving its slot back to Redis did).
      const lingering: FetchPage = (_request, { signal }) => {
        seen.push(signal);
        if (seen.length > 1) return Promise.resolve(page);
        return new Promise<Page>((_resolve, reject) => {
          signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), 100));
        });
      };
      const fetch = cache().intercept(lingering);
      const gone = new AbortController();
      const first = fetch(request, fetchOptions({ signal: gone.signal }));
      await until('the upstream request', () => seen.length === 1);
      gone.abort(new Error('the first caller hung up'));
      await expect(first).rejects.toThrow('the first caller hung up');
      expect(await fetch(request, fetchOptions())).toEqual(page);
      expect(seen).toHaveLength(2);
    });
  });
});

describe('rules', () => {
  it('stale may stand in for the upstream being down, slow, failing with 5xx or over its budget, nothing else', () => {
    expect(staleMayStandIn(new UpstreamBusy(1, 'upstream'))).toBe(true);
    expect(staleMayStandIn(new UpstreamError({ code: 'timeout' }))).toBe(true);
    expect(staleMayStandIn(new UpstreamError({ code: 'unreachable' }))).toBe(true);
    expect(staleMayStandIn(new UpstreamError({ code: 'status', status: 502 }))).toBe(true);
    expect(staleMayStandIn(new UpstreamError({ code: 'error_document', status: 500, message: 'boom' }))).toBe(true);
    expect(staleMayStandIn(new UpstreamError({ code: 'status', status: 403 }))).toBe(false);
    expect(staleMayStandIn(new UpstreamError({ code: 'error_document', status: 400, message: 'bad query' }))).toBe(false);
    expect(staleMayStandIn(new UpstreamError({ code: 'wrong_root', root: 'x', expected: 'searchResultSet' }))).toBe(false);
    expect(staleMayStandIn(new Error('a defect'))).toBe(false);
  });

  it('Cache-Control: max-age less Age, s-maxage first, stale-* of the response, must-revalidate', () => {
    const configured = { freshSeconds: 60, staleWhileRevalidateSeconds: 30, staleIfErrorSeconds: 600 };
    const at = (cacheControl: string | null, ageSeconds = 0) => deadlinesOf(0, configured, { cacheControl, ageSeconds });
    expect(at(null)).toEqual({ freshUntil: 60_000, staleWhileRevalidateUntil: 90_000, staleIfErrorUntil: 660_000 });
    expect(at('max-age=100', 40)).toEqual({ freshUntil: 60_000, staleWhileRevalidateUntil: 90_000, staleIfErrorUntil: 660_000 });
    expect(at('max-age=100, s-maxage=10')).toEqual({ freshUntil: 10_000, staleWhileRevalidateUntil: 10_000, staleIfErrorUntil: 10_000 });
    expect(at('max-age=10, stale-while-revalidate=5, stale-if-error=20')).toEqual({
      freshUntil: 10_000,
      staleWhileRevalidateUntil: 15_000,
      staleIfErrorUntil: 30_000,
    });
    expect(at('no-cache')).toEqual({ freshUntil: 0, staleWhileRevalidateUntil: 0, staleIfErrorUntil: 0 });
    // A century, or more digits than a number holds, is a week: the longest any page is the catalog.
    const week = 604_800_000;
    expect(at('max-age=3153600000')).toEqual({
      freshUntil: week,
      staleWhileRevalidateUntil: week + 30_000,
      staleIfErrorUntil: week + 600_000,
    });
    expect(at(`max-age=${'9'.repeat(400)}, stale-if-error=${'9'.repeat(400)}`)?.staleIfErrorUntil).toBe(2 * week);
    expect(at('public, no-store')).toBeNull();
    expect(at('private, max-age=60')).toBeNull();
  });
});
