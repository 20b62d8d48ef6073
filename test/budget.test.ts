import type { IncomingMessage, ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import { PROCESS_KEY } from '../src/clients/process-key.js';
import { createSeal } from '../src/redis/seal.js';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { retryAfterSeconds } from '../src/outbound/failures.js';
import { buildApp } from '../src/server/app.js';
import { CALL_BINDINGS, legacyCall } from './support/calls.js';
import { startCachedApp } from './support/cached-app.js';
import { requireClient, skipClientSuite } from './support/clients.js';
import { pageDocument, SEARCH_PAGES, STORE_PAGES } from './support/pages.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';

/**
 * The upstream budget of each appKey (`upstream.budget`, src/budget/budget.ts) and the page counts,
 * shared by instances of the proxy through a real redis-server, against loopback stub upstreams:
 * the rate held across instances, sheds over every binding, Mashery's 403 over QPS turned into a
 * fleet-wide pause and sheds (never a fault), Redis killed and back, and nothing changed without a
 * budget.
 */

type Line = Record<string, unknown>;

interface Instance {
  readonly base: string;
  readonly admin: string;
  readonly lines: Line[];
  metrics(): Promise<string>;
  close(): Promise<void>;
}

const open: Instance[] = [];
const stubs: StubUpstream[] = [];

/** `connected`: wait until Redis is connected, as a fleet long up has; false for an instance that never reaches it. */
async function instance(upstream: StubUpstream, overrides: Json, connected = true): Promise<Instance> {
  const config = loadConfig({ UPSTREAM_URL: upstream.origin }, { log: { level: 'info' }, server: { adminPort: 0 } }, overrides);
  const lines: Line[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Line) });
  const app = await buildApp(config, { logger });
  const base = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
  const running: Instance = {
    base,
    admin,
    lines,
    metrics: async () => (await fetch(`${admin}/metrics`)).text(),
    close: () => app.fastify.close(),
  };
  open.push(running);
  // Until Redis is connected, the instance keeps to its own state: wait for it, as a fleet long up has.
  const deadline = Date.now() + 5000;
  while (connected && config.redis.url !== null && !/^redis_up 1$/m.test(await running.metrics())) {
    if (Date.now() > deadline) throw new Error('Redis did not connect within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return running;
}

async function stub(handler: (req: IncomingMessage, res: ServerResponse, index: number) => void): Promise<StubUpstream> {
  const started = await startStubUpstream(handler);
  stubs.push(started);
  return started;
}

/** An upstream answering every request with a page, and the time each request came. */
async function timedUpstream(delayMs = 0): Promise<StubUpstream & { readonly arrivals: number[] }> {
  const arrivals: number[] = [];
  const upstream = await stub((req, res) => {
    arrivals.push(performance.now());
    const url = new URL(req.url ?? '/', 'http://upstream');
    const naming = url.pathname.endsWith('/product.searchForProductsOfStore.cp') ? STORE_PAGES : SEARCH_PAGES;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(pageDocument(600, new Map(url.searchParams), naming));
    }, delayMs);
  });
  return Object.assign(upstream, { arrivals });
}

const lookup = (base: string, apiKey: string): Promise<Response> =>
  fetch(`${base}/index.asmx/ProductLookup?${new URLSearchParams({ productNumber: '3', apiKey, version: '1' })}`);

/** `count` calls from `call`, one every `everyMs`, each reply read whole. */
async function paced(
  count: number,
  everyMs: number,
  call: (i: number) => Promise<Response>,
): Promise<{ status: number; retryAfter: string | null; body: string }[]> {
  const replies: Promise<{ status: number; retryAfter: string | null; body: string }>[] = [];
  for (let i = 0; i < count; i++) {
    replies.push(
      call(i).then(async (reply) => ({ status: reply.status, retryAfter: reply.headers.get('retry-after'), body: await reply.text() })),
    );
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return Promise.all(replies);
}

/** The most arrivals in any span of `spanMs`. */
function mostWithin(arrivals: readonly number[], spanMs: number): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; first < sorted.length; first++) {
    while (last < sorted.length && (sorted[last] as number) < (sorted[first] as number) + spanMs) last++;
    most = Math.max(most, last - first);
  }
  return most;
}

const hitsOf = (lines: readonly Line[]): Line[] => lines.filter((line) => line.event === 'deprecated_call');
const metric = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/** Mashery's answer to a key over its QPS (docs/upstream.md §7.2). */
function overQps(res: ServerResponse, retryAfter: string): void {
  res.writeHead(403, {
    'content-type': 'text/xml',
    'retry-after': retryAfter,
    'x-mashery-error-code': 'ERR_403_DEVELOPER_OVER_QPS',
    'x-error-detail-header': 'Account Over Queries Per Second Limit',
  });
  res.end('<h1>Developer Over Qps</h1>');
}

/** 20 requests/s with a burst of 6, over a fleet of 3. */
const budgetOf3 = { requestsPerSecond: 20, burst: 6, maxWaitMs: 0, instances: 3 };

/**
 * At 2 requests/s with a burst of 1: a call takes the burst; a second is given the slot 500 ms on, and
 * its caller hangs up at 100 ms; a third, at 150 ms, must go at about 500 ms, in the slot given back,
 * not at 1,000 ms behind it.
 */
async function slotGivenBack(overrides: Json): Promise<void> {
  const upstream = await timedUpstream();
  const proxy = await instance(upstream, overrides);
  const product = (productNumber: string, signal?: AbortSignal) =>
    fetch(`${proxy.base}/index.asmx/ProductLookup?${new URLSearchParams({ productNumber, apiKey: 'k', version: '1' })}`, { signal });
  const started = performance.now();
  expect((await product('1')).status).toBe(200);
  const cancelled = product('2', AbortSignal.timeout(100)).catch((err: unknown) => err);
  await new Promise((resolve) => setTimeout(resolve, 150));
  expect((await product('3')).status).toBe(200);
  expect(await cancelled).toBeInstanceOf(Error);
  expect(upstream.arrivals).toHaveLength(2);
  expect((upstream.arrivals[1] as number) - started).toBeLessThan(800);
  expect((upstream.arrivals[1] as number) - started).toBeGreaterThanOrEqual(400);
  await until(async () => metric(await proxy.metrics(), 'upstream_budget_slots_given_back_total') === 1);
}

/**
 * At 10 requests/s with a burst of 1: calls at 0, 5, 10 and 15 ms take the slots at 0, 100, 200 and
 * 300 ms; the second's caller hangs up at 50 ms. Its slot is not the last, so it is not given back: a
 * call at 80 ms goes at 400 ms, not at 300 ms beside the fourth, two at once past a burst of one.
 */
async function earlierSlotKept(overrides: Json): Promise<void> {
  const upstream = await timedUpstream();
  const proxy = await instance(upstream, overrides);
  const product = (productNumber: string, signal?: AbortSignal) =>
    fetch(`${proxy.base}/index.asmx/ProductLookup?${new URLSearchParams({ productNumber, apiKey: 'k', version: '1' })}`, { signal });
  const at = (ms: number, call: () => Promise<Response | unknown>) =>
    new Promise((resolve) => setTimeout(resolve, ms)).then(call).then(
      (reply) => (reply instanceof Response ? reply.text().then(() => reply.status) : reply),
      (err: unknown) => err,
    );
  const statuses = await Promise.all([
    at(0, () => product('1')),
    at(5, () => product('2', AbortSignal.timeout(45))),
    at(10, () => product('3')),
    at(15, () => product('4')),
    at(80, () => product('5')),
  ]);
  expect(statuses.filter((status) => status === 200)).toHaveLength(4);
  expect(upstream.arrivals).toHaveLength(4);
  expect(mostWithin(upstream.arrivals, 60)).toBe(1);
  expect(metric(await proxy.metrics(), 'upstream_budget_slots_given_back_total')).toBe(0);
}

async function until(condition: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((running) => running.close()));
  await Promise.all(stubs.splice(0).map((upstream) => upstream.close()));
});

describe('without a budget (upstream.budget.requestsPerSecond null)', () => {
  it("a Mashery 403 over QPS is the 403 fault it always was, and /metrics has no budget's series", async () => {
    const upstream = await stub((_req, res) => overQps(res, '1'));
    const proxy = await instance(upstream, {});
    const reply = await lookup(proxy.base, 'key-a');
    expect(reply.status).toBe(500);
    expect((await reply.text()).trim()).toBe('The remote server returned an error: (403) Forbidden.');
    expect(hitsOf(proxy.lines)).toMatchObject([{ outcome: 'fault', reason: 'upstream_status', upstreamRequests: 1 }]);
    expect(await proxy.metrics()).not.toContain('upstream_budget');
  });
});

describe('with a budget, on one instance without Redis', () => {
  it('sheds at once a call whose deadline comes before its slot, rather than waiting to time out', async () => {
    const upstream = await timedUpstream();
    const proxy = await instance(upstream, {
      upstream: { callTimeoutMs: 400, budget: { requestsPerSecond: 1, burst: 1, maxWaitMs: 5000 } },
    });
    const product = (productNumber: string) =>
      fetch(`${proxy.base}/index.asmx/ProductLookup?${new URLSearchParams({ productNumber, apiKey: 'k', version: '1' })}`);
    expect((await product('1')).status).toBe(200);
    // The next slot is a second away, past this call's 400 ms: no wait, a 503 that says when to come back.
    const started = performance.now();
    const shed = await product('2');
    const tookMs = performance.now() - started;
    expect(shed.status).toBe(503);
    expect(Number(shed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(tookMs).toBeLessThan(300);
    expect(upstream.requests).toHaveLength(1);
    expect(hitsOf(proxy.lines).map((hit) => [hit.outcome, hit.reason, hit.upstreamRequests])).toEqual([
      ['ok', null, 1],
      ['shed', 'budget', 0],
    ]);
  });

  it('an instance that cannot reach Redis spends its share of the budget alone (requestsPerSecond / instances), not all', async () => {
    const upstream = await timedUpstream();
    // Nothing listens on port 1: the instance never connects, as one cut off from Redis, or before its first connection.
    const proxy = await instance(
      upstream,
      { redis: { url: 'redis://127.0.0.1:1' }, cache: { enabled: false }, upstream: { budget: budgetOf3 } },
      false,
    );
    // 40 calls a second for 1.5 s: the whole budget would let 6 + 20 × 1.5 = 36 through; a third of it 2 + 10.
    const replies = await paced(60, 25, () => lookup(proxy.base, 'one-key'));
    expect(upstream.arrivals.length).toBeLessThanOrEqual(14);
    expect(upstream.arrivals.length).toBeGreaterThanOrEqual(9);
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(upstream.arrivals.length);
    expect(replies.filter((reply) => reply.status === 503).length).toBe(60 - upstream.arrivals.length);
    expect(metric(await proxy.metrics(), 'redis_up')).toBe(0);
  });

  it('a call cancelled while it waits for its slot gives it back: the next request goes in its place', async () => {
    await slotGivenBack({ upstream: { budget: { requestsPerSecond: 2, burst: 1, maxWaitMs: 5000 } } });
  });

  it('a slot given back is only ever the last: a cancelled earlier one never lets a request past the burst', async () => {
    await earlierSlotKept({ upstream: { budget: { requestsPerSecond: 10, burst: 1, maxWaitMs: 1000 } } });
  });

  it('sheds a call that gets a Mashery 403 (header or body alone) and pauses its key; any other 403 stays a fault', async () => {
    let answer: (res: ServerResponse) => void = (res) => overQps(res, '1');
    const upstream = await stub((_req, res) => answer(res));
    const proxy = await instance(upstream, { upstream: { budget: { requestsPerSecond: 100 } } });

    const shed = await lookup(proxy.base, 'key-a');
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.text()).toContain('Server Too Busy');
    // Paused: shed at once, without asking the upstream.
    expect((await lookup(proxy.base, 'key-a')).status).toBe(503);
    expect(upstream.requests).toHaveLength(1);
    // Another key has its own budget.
    answer = (res) => {
      res.writeHead(403, { 'content-type': 'text/xml' });
      res.end('\r\n<h1>Developer Over Rate</h1>\n');
    };
    const byBody = await lookup(proxy.base, 'key-b');
    expect(byBody.status).toBe(503);
    expect(byBody.headers.get('retry-after')).toBe('60');

    answer = (res) => {
      res.writeHead(403, { 'content-type': 'text/xml', 'x-mashery-error-code': 'ERR_403_NOT_AUTHORIZED' });
      res.end('<h1>Not Authorized</h1>');
    };
    const forbidden = await lookup(proxy.base, 'key-c');
    expect(forbidden.status).toBe(500);
    expect((await forbidden.text()).trim()).toBe('The remote server returned an error: (403) Forbidden.');

    expect(hitsOf(proxy.lines).map((hit) => [hit.outcome, hit.reason, hit.status])).toEqual([
      ['shed', 'budget', 503],
      ['shed', 'budget', 503],
      ['shed', 'budget', 503],
      ['fault', 'upstream_status', 500],
    ]);
    const metrics = await proxy.metrics();
    expect(metric(metrics, 'upstream_key_pauses_total{limit="qps"}')).toBe(1);
    expect(metric(metrics, 'upstream_key_pauses_total{limit="rate"}')).toBe(1);
    expect(metric(metrics, 'upstream_budget_sheds_total{source="upstream"}')).toBe(3);
    // The key named as the hits name its caller: the same keyed fingerprint.
    const [byKeyA, , byKeyB] = hitsOf(proxy.lines).map((hit) => hit.clientFingerprint);
    expect(proxy.lines.filter((line) => line.event === 'upstream_key_paused')).toEqual([
      expect.objectContaining({ limit: 'qps', pauseMs: 1000, appKey: byKeyA }),
      expect.objectContaining({ limit: 'rate', pauseMs: 60_000, appKey: byKeyB }),
    ]);
    expect(byKeyA).toMatch(/^hmac:[0-9a-f]{12}$/);
    expect(JSON.stringify(proxy.lines)).not.toMatch(/key-[abc]/);
  });

  it("a 403 whose body only holds the gateway's words (a caller's text echoed) is the fault it always was, pausing nothing", async () => {
    const upstream = await stub((req, res) => {
      const query = new URL(req.url ?? '/', 'http://upstream').searchParams.get('query') ?? '';
      res.writeHead(403, { 'content-type': 'text/html' });
      res.end(`<html><body>Forbidden: ${query}</body></html>`);
    });
    const proxy = await instance(upstream, { upstream: { budget: { requestsPerSecond: 100 } } });
    const search = (query: string) =>
      fetch(`${proxy.base}/index.asmx/Search?${new URLSearchParams({ query, apiKey: 'shared', version: '1' })}`);
    for (const echoed of ['<h1>Developer Over Rate</h1>', ' <h1>Developer Over Qps</h1> ']) expect((await search(echoed)).status).toBe(500);
    expect(upstream.requests).toHaveLength(2);
    expect((await search('cat')).status).toBe(500);
    expect(upstream.requests).toHaveLength(3);
    expect(proxy.lines.filter((line) => line.event === 'upstream_key_paused')).toEqual([]);
  });

  it('reads Retry-After as seconds or an HTTP date, capped at an hour', () => {
    expect(retryAfterSeconds('7')).toBe(7);
    expect(retryAfterSeconds(new Date(Date.now() + 30_000).toUTCString())).toBeCloseTo(30, -1);
    expect(retryAfterSeconds('999999')).toBe(3600);
    expect(retryAfterSeconds('soon')).toBeUndefined();
    expect(retryAfterSeconds(undefined)).toBeUndefined();
  });
});

/** A stub of the Mashery gateway in front of the upstream: `qps` requests a second per key, a 403 over QPS past them. */
async function masheryGateway(qps: number): Promise<{ upstream: StubUpstream; refused: () => number }> {
  const seen: number[] = [];
  let refused = 0;
  const upstream = await stub((req, res) => {
    const now = performance.now();
    while (seen.length > 0 && (seen[0] as number) <= now - 1000) seen.shift();
    if (seen.length >= qps) {
      refused++;
      overQps(res, '1');
      return;
    }
    seen.push(now);
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(pageDocument(1, new Map(new URL(req.url ?? '/', 'http://upstream').searchParams), SEARCH_PAGES));
  });
  return { upstream, refused: () => refused };
}

describe.skipIf(skipClientSuite(redisInstalled))(`shared through Redis${redisInstalled ? '' : ` (skipped: ${REDIS_MISSING})`}`, () => {
  let redis: RedisServer;
  beforeAll(async () => {
    requireClient(redisInstalled, REDIS_MISSING);
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  /** A fresh key prefix per test, so that tests share the server but no state. */
  let fleet = 0;
  // The page cache off: each call is an upstream request for the budget to hold (the cache has tests of its own).
  const shared = (budget: Json | null = null): Json => ({
    redis: { url: redis.url, keyPrefix: `test-${++fleet}:` },
    cache: { enabled: false },
    ...(budget === null ? {} : { upstream: { budget } }),
  });

  it('a call cancelled while it waits for its slot gives it back to the fleet: the next request goes in its place', async () => {
    await slotGivenBack(shared({ requestsPerSecond: 2, burst: 1, maxWaitMs: 5000 }));
  });

  it('a slot given back to the fleet is only ever the last: a cancelled earlier one never lets a request past the burst', async () => {
    await earlierSlotKept(shared({ requestsPerSecond: 10, burst: 1, maxWaitMs: 1000 }));
  });

  it('holds 20 requests/s with a burst of 5 for one appKey across two instances: at most 45 upstream requests in any 2 s', async () => {
    const upstream = await timedUpstream();
    const settings = shared({ requestsPerSecond: 20, burst: 5, maxWaitMs: 300 });
    const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
    // 80 calls a second for 2.5 s, alternately on each instance, all with one apiKey (so one appKey).
    const replies = await paced(200, 12.5, (i) => lookup((i % 2 === 0 ? a : b).base, 'shared-key'));
    expect(mostWithin(upstream.arrivals, 2000)).toBeLessThanOrEqual(45);
    expect(mostWithin(upstream.arrivals, 2000)).toBeGreaterThanOrEqual(38);
    expect(new Set(replies.map((reply) => reply.status))).toEqual(new Set([200, 503]));
    for (const reply of replies.filter((r) => r.status === 503)) expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1);
    // Both instances waited and shed; another appKey is not held back by this one's budget.
    for (const proxy of [a, b]) {
      const metrics = await proxy.metrics();
      expect(metric(metrics, 'upstream_budget_waits_total')).toBeGreaterThan(0);
      expect(metric(metrics, 'upstream_budget_sheds_total{source="budget"}')).toBeGreaterThan(0);
      expect(metric(metrics, 'redis_up')).toBe(1);
    }
    expect((await lookup(a.base, 'other-key')).status).toBe(200);
  }, 20_000);

  it(
    'a call without room within maxWaitMs gets 503 Server Too Busy with Retry-After over every binding, its hit shed for the ' + 'budget',
    async () => {
      const upstream = await timedUpstream();
      const proxy = await instance(upstream, shared({ requestsPerSecond: 0.2, burst: 1, maxWaitMs: 0 }));
      expect((await lookup(proxy.base, 'slow-key')).status).toBe(200);
      for (const binding of CALL_BINDINGS) {
        const reply = await legacyCall(proxy.base, binding, 'ProductLookup', { productNumber: '3', apiKey: 'slow-key', version: '1' });
        expect({ binding, status: reply.status, retryAfter: reply.headers.get('retry-after') }).toEqual({
          binding,
          status: 503,
          retryAfter: '5',
        });
        expect(await reply.text()).toContain('Server Too Busy');
      }
      expect(upstream.requests).toHaveLength(1);
      expect(hitsOf(proxy.lines).slice(1)).toMatchObject(
        CALL_BINDINGS.map((binding) => ({ binding, outcome: 'shed', reason: 'budget', status: 503, upstreamRequests: 0 })),
      );
      expect(metric(await proxy.metrics(), 'upstream_budget_sheds_total{source="budget"}')).toBe(4);
    },
  );

  it('at 100 calls/s against a gateway enforcing 20 requests/s with 403s, no 403 reaches a caller: each call is answered or shed with ' +
    'Retry-After', async () => {
    const { upstream, refused } = await masheryGateway(20);
    // A budget above the plan (25 + 5 a second against 20), so that the gateway does refuse.
    const settings = shared({ requestsPerSecond: 25, burst: 5, maxWaitMs: 500 });
    const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
    const replies = await paced(300, 10, (i) => lookup((i % 2 === 0 ? a : b).base, 'plan-key'));
    expect(refused()).toBeGreaterThan(0);
    expect(replies.filter((reply) => reply.status !== 200 && reply.status !== 503)).toEqual([]);
    expect(replies.filter((reply) => reply.status === 503 && !(Number(reply.retryAfter) >= 1))).toEqual([]);
    expect(replies.filter((reply) => reply.status === 200).length).toBeGreaterThan(30);
    const hits = [...hitsOf(a.lines), ...hitsOf(b.lines)];
    expect(hits).toHaveLength(300);
    expect(hits.filter((hit) => hit.outcome !== 'ok' && hit.outcome !== 'shed')).toEqual([]);
    const pauses = [a, b].map(async (proxy) => metric(await proxy.metrics(), 'upstream_key_pauses_total{limit="qps"}') ?? 0);
    expect((await Promise.all(pauses)).reduce((sum, n) => sum + n, 0)).toBe(refused());
  }, 20_000);

  it('sized as docs/operating.md says (requestsPerSecond + burst at most 80% of the plan’s QPS), the gateway never refuses', async () => {
    const { upstream, refused } = await masheryGateway(20);
    const settings = shared({ requestsPerSecond: 12, burst: 4, maxWaitMs: 500 });
    const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
    const replies = await paced(200, 10, (i) => lookup((i % 2 === 0 ? a : b).base, 'plan-key'));
    expect(refused()).toBe(0);
    expect(new Set(replies.map((reply) => reply.status))).toEqual(new Set([200, 503]));
  }, 20_000);

  it('a 403 seen by one instance pauses the key for the fleet: the other sheds without an upstream request until the pause ' +
    'ends', async () => {
    const upstream = await stub((req, res, index) => {
      if (index === 0) return overQps(res, '2');
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(pageDocument(1, new Map(new URL(req.url ?? '/', 'http://upstream').searchParams), SEARCH_PAGES));
    });
    const settings = shared({ requestsPerSecond: 100 });
    const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
    const started = performance.now();
    const first = await lookup(a.base, 'paused-key');
    expect([first.status, first.headers.get('retry-after')]).toEqual([503, '2']);
    const other = await lookup(b.base, 'paused-key');
    expect(other.status).toBe(503);
    expect(Number(other.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    expect(upstream.requests).toHaveLength(1);
    expect(hitsOf(b.lines)).toMatchObject([{ outcome: 'shed', reason: 'budget', upstreamRequests: 0 }]);
    expect(metric(await b.metrics(), 'upstream_budget_sheds_total{source="upstream"}')).toBe(1);
    expect(metric(await a.metrics(), 'upstream_key_pauses_total{limit="qps"}')).toBe(1);
    // Other keys are not paused.
    expect((await lookup(b.base, 'other-key')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 2100 - performance.now())));
    expect((await lookup(b.base, 'paused-key')).status).toBe(200);
  }, 10_000);

  /** The Redis keys of the one appKey a first call spent from: its bucket, and where its pause would be. */
  async function budgetKeys(client: Redis): Promise<{ bucket: string; pause: string }> {
    const [bucket] = (await client.keys(`test-${fleet}:budget:*`)) as [string];
    return { bucket, pause: bucket.replace(':budget:', ':budget-pause:') };
  }

  it('a pause in Redis is obeyed only when the fleet sealed it, no longer than it says: else deleted, counted, the call goes', async () => {
    const upstream = await timedUpstream();
    // A bucket kept for seconds (10 at 2 a second), for the test to find it.
    const proxy = await instance(upstream, shared({ requestsPerSecond: 2, burst: 10 }));
    expect((await lookup(proxy.base, 'held-key')).status).toBe(200);
    const client = new Redis(redis.url);
    try {
      const { pause } = await budgetKeys(client);
      // Sealed as the fleet seals a pause (these instances hold the process's key): with the time it ends.
      const seal = createSeal(PROCESS_KEY);
      const endingAt = (at: number) => seal.close(pause, Buffer.from(String(at), 'latin1')).toString('base64');
      const refusedPauses: [value: string, ttlMs: number][] = [
        // Longer than the longest the proxy sets (an hour): `bounds`.
        [endingAt(Date.now() + 365 * 86_400_000), 365 * 86_400_000],
        // Within the hour a 403 may ask for, but written without the secret: `forged`.
        ['1', 600_000],
        // One the fleet set, ended a minute ago, put back with a fresh TTL: `forged`.
        [endingAt(Date.now() - 60_000), 600_000],
      ];
      for (const [value, ttlMs] of refusedPauses) {
        await client.set(pause, value, 'PX', ttlMs);
        const reply = await lookup(proxy.base, 'held-key');
        expect([reply.status, reply.headers.get('retry-after')]).toEqual([200, null]);
        expect(await client.exists(pause)).toBe(0);
      }
      // One that holds, for ten minutes: obeyed.
      await client.set(pause, endingAt(Date.now() + 600_000), 'PX', 600_000);
      const paused = await lookup(proxy.base, 'held-key');
      expect(paused.status).toBe(503);
      expect(Number(paused.headers.get('retry-after'))).toBeGreaterThan(590);
    } finally {
      client.disconnect();
    }
    expect(upstream.requests).toHaveLength(4);
    const metrics = await proxy.metrics();
    expect(metric(metrics, 'redis_values_refused_total{use="budget",reason="bounds"}')).toBe(1);
    expect(metric(metrics, 'redis_values_refused_total{use="budget",reason="forged"}')).toBe(2);
  });

  it('a bucket in Redis set a year ahead holds the key back one burst window at most, counted', async () => {
    const upstream = await timedUpstream();
    // A burst window: 2 requests at 1 a second, and the longest wait, 500 ms: 2.5 s.
    const proxy = await instance(upstream, shared({ requestsPerSecond: 1, burst: 2, maxWaitMs: 500 }));
    expect((await lookup(proxy.base, 'held-key')).status).toBe(200);
    const client = new Redis(redis.url);
    try {
      const { bucket } = await budgetKeys(client);
      await client.set(bucket, String(Date.now() + 365 * 86_400_000), 'PX', 365 * 86_400_000);
      const held = await lookup(proxy.base, 'held-key');
      expect([held.status, held.headers.get('retry-after')]).toEqual([503, '2']);
      await client.set(bucket, 'not a number');
      expect((await lookup(proxy.base, 'held-key')).status).toBe(503);
      await client.del(bucket);
      await client.rpush(bucket, 'a list');
      expect((await lookup(proxy.base, 'held-key')).status).toBe(503);
    } finally {
      client.disconnect();
    }
    const metrics = await proxy.metrics();
    expect(metric(metrics, 'redis_values_refused_total{use="budget",reason="bounds"}')).toBe(3);
    expect(metric(metrics, 'redis_fallbacks_total{use="budget"}') ?? 0).toBe(0);
  });

  it('Redis killed mid-run: calls are still answered on the local budget, said once in the log and in redis_up and ' +
    'redis_fallbacks_total, and sharing resumes when it is back', async () => {
    const upstream = await timedUpstream();
    const own = await startRedis();
    try {
      const proxy = await instance(upstream, {
        redis: { url: own.url },
        cache: { enabled: false },
        upstream: { budget: { requestsPerSecond: 50, burst: 10 } },
      });
      const before = paced(20, 25, () => lookup(proxy.base, 'key'));
      await new Promise((resolve) => setTimeout(resolve, 250));
      await own.kill();
      const replies = [...(await before), ...(await paced(20, 25, () => lookup(proxy.base, 'key')))];
      expect(replies.map((reply) => reply.status)).toEqual(replies.map(() => 200));
      const down = await proxy.metrics();
      expect(metric(down, 'redis_up')).toBe(0);
      expect(metric(down, 'redis_fallbacks_total{use="budget"}')).toBeGreaterThan(0);
      expect(proxy.lines.filter((line) => line.event === 'redis_unavailable')).toHaveLength(1);

      await own.restart();
      const deadline = Date.now() + 10_000;
      while (metric(await proxy.metrics(), 'redis_up') !== 1 && Date.now() < deadline) {
        expect((await lookup(proxy.base, 'key')).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(metric(await proxy.metrics(), 'redis_up')).toBe(1);
      expect(proxy.lines.filter((line) => line.event === 'redis_unavailable')).toHaveLength(1);
      expect(proxy.lines.filter((line) => line.event === 'redis_recovered')).toHaveLength(1);
      const client = new Redis(own.url);
      try {
        expect(await lookup(proxy.base, 'key').then((reply) => reply.status)).toBe(200);
        expect((await client.keys('*')).some((key) => key.includes(':budget:'))).toBe(true);
      } finally {
        client.disconnect();
      }
    } finally {
      await own.stop();
    }
  }, 30_000);

  it(
    'shares page counts: a store listed on one instance is asked for whole, all pages at once, on the other; no appKey in ' + 'Redis',
    async () => {
      const upstream = await timedUpstream(150);
      const settings = shared();
      const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
      const store = (base: string): Promise<Response> =>
        fetch(
          `${base}/index.asmx/StoreLookup?` +
            new URLSearchParams({ storeId: 'big', apiKey: 'store-key-123', version: '1', productTypes: '' }).toString(),
        );
      expect((await store(a.base)).status).toBe(200);
      // 600 items in pages of 256: the first page, then the two others once its total is known.
      expect(upstream.arrivals).toHaveLength(3);
      expect((upstream.arrivals[1] as number) - (upstream.arrivals[0] as number)).toBeGreaterThanOrEqual(140);
      upstream.arrivals.length = 0;
      expect((await store(b.base)).status).toBe(200);
      expect(upstream.arrivals).toHaveLength(3);
      expect(Math.max(...upstream.arrivals) - Math.min(...upstream.arrivals)).toBeLessThan(100);

      const client = new Redis(redis.url);
      try {
        const keys = await client.keys(`test-${fleet}:*`);
        expect(keys.filter((key) => key.includes(':pages:'))).toHaveLength(1);
        const values = await Promise.all(keys.map((key) => client.get(key)));
        expect(JSON.stringify([keys, values])).not.toContain('store-key-123');
      } finally {
        client.disconnect();
      }
    },
  );
  it('a page count in Redis not sealed by the fleet is refused: the list is fetched as one not seen before', async () => {
    const upstream = await timedUpstream();
    const settings = shared();
    const [a, b] = [await instance(upstream, settings), await instance(upstream, settings)];
    const store = (base: string): Promise<Response> =>
      fetch(`${base}/index.asmx/StoreLookup?${new URLSearchParams({ storeId: 'big', apiKey: 'k', version: '1', productTypes: '' })}`);
    expect((await store(a.base)).status).toBe(200);
    const client = new Redis(redis.url);
    try {
      const [key] = (await client.keys(`test-${fleet}:pages:*`)) as [string];
      // As many pages as a call may fetch (upstream.maxPagesPerCall), not sealed.
      await client.set(key, '50', 'PX', 60_000);
    } finally {
      client.disconnect();
    }
    upstream.arrivals.length = 0;
    expect((await store(b.base)).status).toBe(200);
    expect(upstream.arrivals).toHaveLength(3);
    expect(metric(await b.metrics(), 'redis_values_refused_total{use="pageCounts",reason="forged"}')).toBe(1);
  });
});

describe("the gateway's 403 told from the upstream's own", () => {
  it('a query the upstream echoes in its own 403 document never pauses the shared appKey of every caller', async () => {
    const proxy = await startCachedApp(
      (req, res) => {
        const url = new URL(req.url ?? '/', 'http://upstream');
        const query = url.searchParams.get('query') ?? '';
        if (query.startsWith('private')) {
          res
            .writeHead(403, { 'content-type': 'text/xml; charset=utf-8' })
            .end(`<help><exception-message>The query '${query}' is not permitted for this key.</exception-message></help>`);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(pageDocument(2, new Map(url.searchParams), SEARCH_PAGES));
      },
      { cache: { enabled: false }, upstream: { apiKeyMode: 'fixed', budget: { requestsPerSecond: 50, burst: 10 } } },
    );
    try {
      const attack = await proxy.search('private <h1>Developer Over Rate</h1>', 'attacker');
      expect([attack.status, attack.hit.outcome, attack.hit.reason]).toEqual([500, 'fault', 'upstream_status']);
      expect((await proxy.search('cat', 'victim')).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });
});
