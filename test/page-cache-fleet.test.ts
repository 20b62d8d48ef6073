import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PageSource } from '../src/outbound/fetch.js';
import { startBuilt } from './support/built-proxy.js';
import { markedPage, startCachedApp, until, type CachedApp, type Called } from './support/cached-app.js';
import { requireClient, skipClientSuite } from './support/clients.js';
import { createSeal } from '../src/redis/seal.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';
import type { Json } from '../src/config/validate.js';

/**
 * The page cache of a fleet: two instances of the app sharing one real redis-server (Debian's
 * package; .ci/run installs it) and one upstream. A page one fetched is a hit on the other; misses
 * of the same page on both at once make one upstream request; Redis killed, calls are still answered,
 * each instance says so once and shows redis_up 0, and sharing resumes when Redis is back.
 */

if (!redisInstalled) {
  // Said where the test run shows it: the fleet's tests did not run here.
  console.warn(`test/page-cache-fleet.test.ts skipped: ${REDIS_MISSING}`);
}

let redis: RedisServer;
let upstream: StubUpstream;
/** Milliseconds before the upstream answers. */
let delayMs = 0;
const version = 1;
let instances: CachedApp[] = [];

describe.skipIf(skipClientSuite(redisInstalled))('the page cache of a fleet sharing one redis-server', () => {
  beforeAll(async () => {
    requireClient(redisInstalled, REDIS_MISSING);
    redis = await startRedis();
    upstream = await startStubUpstream((_req: IncomingMessage, res: ServerResponse) => {
      const body = markedPage(`v${version}`);
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(body), delayMs);
    });
  });

  afterAll(async () => {
    await upstream?.close();
    await redis?.stop();
  });

  afterEach(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    instances = [];
    upstream.requests.length = 0;
    delayMs = 0;
    const client = new Redis(redis.url);
    await client.flushall();
    client.disconnect();
  });

  /** Two instances of one fleet: the same Redis, the same clientIdKey, their own memory. */
  async function fleet(): Promise<[CachedApp, CachedApp]> {
    return [await another(), await another()];
  }

  /** One more instance of the fleet, connected to Redis; `settings` over the fleet's. */
  async function another(settings: Readonly<Record<string, Json>> = {}, answering: StubUpstream = upstream): Promise<CachedApp> {
    const fleetSettings = { redis: { url: redis.url, keyPrefix: 'fleet-test:' }, deprecation: { clientIdKey: TEST_CLIENT_ID_KEY } };
    const instance = await startCachedApp(() => {}, { ...fleetSettings, ...settings }, { upstream: answering });
    instances.push(instance);
    // Until its connection is ready an instance is on its own state, as during an outage.
    await until('the instance connected to Redis', async () => (await instance.metric('redis_up')) === 1);
    return instance;
  }

  const pagesOf = (called: { hit: Record<string, unknown> }) => called.hit.pages as Record<PageSource, number>;
  const only = (result: PageSource) => ({ hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0, [result]: 1 });

  async function keysInRedis(): Promise<{ keys: string[]; values: string }> {
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('*');
      const values = await Promise.all(keys.map((key) => client.getBuffer(key)));
      return { keys, values: values.map((value) => value?.toString('latin1') ?? '').join('\n') };
    } finally {
      client.disconnect();
    }
  }

  it('a value larger than any page under a page key is refused inside Redis: never sent, Redis not taken for down', async () => {
    const [a, b] = await fleet();
    const first = await a.search('dog');
    await until('the page in Redis', async () => (await keysInRedis()).keys.some((key) => key.startsWith('fleet-test:page:')));
    const client = new Redis(redis.url);
    const sent = async (): Promise<number> => Number(/total_net_output_bytes:(\d+)/.exec(await client.info('stats'))?.[1]);
    try {
      const [key] = (await client.keys('fleet-test:page:*')) as [string];
      // 64 MB: upstream.maxResponseBytes is 4 MB. Read whole, it outlasted redis.commandTimeoutMs and
      // the instance took Redis for down (a warning, the fleet's state dropped) each time it was asked.
      await client.set(key, Buffer.alloc(64 * 1024 * 1024, 0x41), 'PX', 600_000);
      const before = await sent();
      const second = await b.search('dog');
      expect(second.status).toBe(200);
      expect(second.body).toBe(first.body);
      expect(pagesOf(second)).toEqual(only('miss'));
      expect((await sent()) - before).toBeLessThan(1024 * 1024);
    } finally {
      client.disconnect();
    }
    expect(await b.metric('redis_up')).toBe(1);
    expect(b.lines.filter((line) => line.event === 'redis_unavailable')).toEqual([]);
    expect(b.lines.filter((line) => line.event === 'redis_value_refused')).toMatchObject([{ use: 'cache', reason: 'bounds' }]);
  });

  it('a page one instance fetched is a hit on the other; Redis holds it under a hash, no appKey in clear', async () => {
    const [a, b] = await fleet();
    const first = await a.search('dog', 'secret-app-key-1');
    expect(pagesOf(first)).toEqual(only('miss'));
    await until('the page in Redis', async () => (await keysInRedis()).keys.some((key) => key.startsWith('fleet-test:page:')));
    const second = await b.search('dog', 'secret-app-key-1');
    expect(second.body).toBe(first.body);
    expect(pagesOf(second)).toEqual(only('hit'));
    expect(second.hit.upstreamRequests).toBe(0);
    expect(upstream.requests).toHaveLength(1);
    const { keys, values } = await keysInRedis();
    expect(`${keys.join('\n')}\n${values}`).not.toContain('secret-app-key-1');
    // The page's own lock is gone once its page is in Redis.
    expect(keys.filter((key) => key.startsWith('fleet-test:page-lock:'))).toEqual([]);
  });

  it('a page in Redis cut short or changed is a miss on the instance that reads it, never a broken reply', async () => {
    const [a, b] = await fleet();
    const first = await a.search('dog');
    await until('the page in Redis', async () => (await keysInRedis()).keys.some((key) => key.startsWith('fleet-test:page:')));
    const client = new Redis(redis.url);
    try {
      const [key] = (await client.keys('fleet-test:page:*')) as [string];
      const stored = (await client.getBuffer(key)) as Buffer;
      await client.set(key, stored.subarray(0, stored.length - 60), 'PX', 600_000);
    } finally {
      client.disconnect();
    }
    const second = await b.search('dog');
    expect(second.body).toBe(first.body);
    expect(pagesOf(second)).toEqual(only('miss'));
    expect(upstream.requests).toHaveLength(2);
  });

  /** Each page key of Redis with what it holds, once `count` pages are there. */
  async function pagesInRedis(count: number): Promise<[string, Buffer][]> {
    await until(
      `${count} pages in Redis`,
      async () => (await keysInRedis()).keys.filter((key) => key.startsWith('fleet-test:page:')).length === count,
    );
    const client = new Redis(redis.url);
    try {
      const keys = (await client.keys('fleet-test:page:*')).sort();
      return Promise.all(keys.map(async (key): Promise<[string, Buffer]> => [key, (await client.getBuffer(key)) as Buffer]));
    } finally {
      client.disconnect();
    }
  }

  async function writeToRedis(key: string, value: Buffer): Promise<void> {
    const client = new Redis(redis.url);
    await client.set(key, value, 'PX', 600_000);
    client.disconnect();
  }

  const seal = createSeal(TEST_CLIENT_ID_KEY);
  /** A sealed page entry's header (src/cache/entry.ts) changed and sealed again with the fleet's own secret. */
  function resealed(key: string, stored: Buffer, change: (header: Record<string, unknown>) => object): Buffer {
    const value = seal.open(key, stored) as Buffer;
    const length = value.readUInt32BE(0);
    const header = Buffer.from(JSON.stringify(change(JSON.parse(value.toString('utf8', 4, 4 + length)) as Record<string, unknown>)));
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(header.length);
    return seal.close(key, Buffer.concat([prefix, header, value.subarray(4 + length)]));
  }

  const refusedOn = (instance: CachedApp, reason: string) => instance.metric('redis_values_refused_total', { use: 'cache', reason });

  it("a page moved to another appKey's Redis key is refused there: fetched for that key, counted, said once", async () => {
    const [a, b] = await fleet();
    await a.search('dog', 'key-one');
    await a.search('dog', 'key-two');
    const [[first, one], [second, two]] = (await pagesInRedis(2)) as [[string, Buffer], [string, Buffer]];
    await writeToRedis(first, two);
    await writeToRedis(second, one);
    expect(pagesOf(await b.search('dog', 'key-one'))).toEqual(only('miss'));
    expect(pagesOf(await b.search('dog', 'key-two'))).toEqual(only('miss'));
    expect(upstream.requests).toHaveLength(4);
    expect(await refusedOn(b, 'forged')).toBeGreaterThanOrEqual(2);
    expect(b.lines.filter((line) => line.event === 'redis_value_refused')).toEqual([
      expect.objectContaining({ use: 'cache', reason: 'forged', key: expect.stringMatching(/^fleet-test:page:/) }),
    ]);
  });

  it('a page altered in Redis by one byte of the same length is refused', async () => {
    const [a, b] = await fleet();
    const first = await a.search('dog');
    const [[key, stored]] = (await pagesInRedis(1)) as [[string, Buffer]];
    const at = stored.lastIndexOf('v1');
    const altered = Buffer.from(stored);
    altered.write('v2', at, 'latin1');
    await writeToRedis(key, altered);
    const second = await b.search('dog');
    expect([second.body, pagesOf(second)]).toEqual([first.body, only('miss')]);
    expect(await refusedOn(b, 'forged')).toBeGreaterThan(0);
  });

  it('a page written to Redis by someone without the secret (fresh until 1e16, its own bytes) is refused', async () => {
    const [a, b] = await fleet();
    const first = await a.search('dog');
    const [[key]] = (await pagesInRedis(1)) as [[string, Buffer]];
    const page = Buffer.from(markedPage('forged'));
    const header = Buffer.from(
      JSON.stringify({
        rootName: 'searchResultSet',
        storedAt: 0,
        freshUntil: 1e16,
        staleWhileRevalidateUntil: 1e16,
        staleIfErrorUntil: 1e16,
        length: page.length,
      }),
    );
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(header.length);
    await writeToRedis(key, Buffer.concat([prefix, header, page]));
    const second = await b.search('dog');
    expect([second.body, pagesOf(second)]).toEqual([first.body, only('miss')]);
    expect(await refusedOn(b, 'forged')).toBeGreaterThan(0);
  });

  it("a page sealed by the fleet but out of bounds is not served as fresh: a date to come, a freshness of the header's own", async () => {
    const [a, b] = await fleet();
    await a.search('dog');
    const [[key, stored]] = (await pagesInRedis(1)) as [[string, Buffer]];
    // Stored a year from now: fresh for a year, were it believed.
    await writeToRedis(
      key,
      resealed(key, stored, (header) => ({ ...header, storedAt: b.clock.now + 365 * 86_400_000 })),
    );
    expect(pagesOf(await b.search('dog'))).toEqual(only('miss'));
    expect(await refusedOn(b, 'bounds')).toBeGreaterThan(0);
    // Stored three minutes ago, saying it is fresh until 1e16: its deadlines are worked out again, by
    // the configured 60 s fresh and 60 s stale-while-revalidate, so it is past them.
    const [[, again]] = (await pagesInRedis(1)) as [[string, Buffer]];
    const old = (header: Record<string, unknown>) => ({ ...header, storedAt: b.clock.now - 180_000, freshUntil: 1e16 });
    await writeToRedis(key, resealed(key, again, old));
    // Asked of an instance with nothing in memory: b keeps the page it fetched.
    const c = await another();
    expect(pagesOf(await c.search('dog'))).toEqual(only('miss'));
    expect(upstream.requests).toHaveLength(3);
  });

  it('a lock on a page held for a year is not obeyed: the miss fetches the page at once, and the lock is counted', async () => {
    const [a, b] = await fleet();
    await a.search('dog');
    const [[key]] = (await pagesInRedis(1)) as [[string, Buffer]];
    const client = new Redis(redis.url);
    try {
      await client.del(key);
      await client.set(key.replace(':page:', ':page-lock:'), 'not-an-instance', 'PX', 365 * 86_400_000);
    } finally {
      client.disconnect();
    }
    const started = performance.now();
    expect(pagesOf(await b.search('dog'))).toEqual(only('miss'));
    // An instance waits up to 3 s for the holder of a lock to bring the page.
    expect(performance.now() - started).toBeLessThan(1500);
    expect(await b.metric('redis_values_refused_total', { use: 'lock', reason: 'bounds' })).toBe(1);
  });

  it('an instance killed while it fetches a page holds up the others no longer than cache.lockTtlMs', async () => {
    const lockTtlMs = 2000;
    // The killed instance's request is never answered; any after it is.
    const slow = await startStubUpstream((_req: IncomingMessage, res: ServerResponse, index: number) => {
      if (index > 0) res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(markedPage('after'));
    });
    const dir = mkdtempSync(join(tmpdir(), 'proxy-lock-'));
    try {
      const file = join(dir, 'config.json');
      const shared = { redis: { keyPrefix: 'fleet-test:' }, cache: { lockTtlMs } };
      writeFileSync(file, JSON.stringify({ ...shared, upstream: { appKey: 'configured-app-key' } }));
      const env = { UPSTREAM_URL: slow.origin, REDIS_URL: redis.url, CLIENT_ID_KEY: TEST_CLIENT_ID_KEY, CONFIG_FILE: file };
      const killed = await startBuilt(env);
      await until('the instance connected to Redis', async () =>
        /^redis_up 1$/m.test(await (await fetch(`${killed.adminUrl}/metrics`)).text()),
      );
      const abandoned = fetch(`${killed.url}/index.asmx/Search?query=dog&apiKey=K1&version=1`).catch(() => null);
      await until('its upstream request', () => slow.requests.length === 1);
      expect((await keysInRedis()).keys.filter((key) => key.startsWith('fleet-test:page-lock:'))).toHaveLength(1);
      await killed.kill();
      await abandoned;

      const b = await another({ cache: { lockTtlMs } }, slow);
      const started = performance.now();
      const called = await b.search('dog');
      expect(called.status).toBe(200);
      expect(pagesOf(called)).toEqual(only('miss'));
      expect(performance.now() - started).toBeLessThan(lockTtlMs + 500);
    } finally {
      await slow.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an upstream that accepts and never answers: each call fails in its deadline with the legacy timeout, holding nothing', async () => {
    let answering = false;
    const hole = await startStubUpstream((_req: IncomingMessage, res: ServerResponse) => {
      if (answering) res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(markedPage('back'));
    });
    try {
      const settings = { upstream: { callTimeoutMs: 600, budget: { requestsPerSecond: 4, burst: 1, maxWaitMs: 2000 } } };
      const [a, b] = [await another(settings, hole), await another(settings, hole)];
      // Two callers of one page on each instance, and one of another page each: a lock taken, a slot waited for.
      const timed = async (call: Promise<Called>): Promise<{ called: Called; ms: number }> => {
        const started = performance.now();
        const called = await call;
        return { called, ms: performance.now() - started };
      };
      const calls = await Promise.all([a.search('dog'), a.search('dog'), b.search('dog'), a.search('cat'), b.search('cow')].map(timed));
      for (const { called, ms } of calls) {
        expect(called.status).toBe(500);
        expect(called.body.trim()).toBe('The operation has timed out');
        expect(ms).toBeLessThan(600 + 400);
      }
      expect((await keysInRedis()).keys.filter((key) => key.startsWith('fleet-test:page-lock:'))).toEqual([]);
      // Back: the next call goes as soon as the budget's rate allows, owing nothing to the calls that failed.
      answering = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const started = performance.now();
      expect((await a.search('dog')).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(300);
    } finally {
      await Promise.all(instances.splice(0).map((instance) => instance.close()));
      await hole.close();
    }
  });

  it('shared across keys, a key one instance saw refused is served no shared page by the others', async () => {
    const gateway = await startStubUpstream((req: IncomingMessage, res: ServerResponse) => {
      if (new URL(req.url ?? '/', 'http://upstream').searchParams.get('appKey') === 'REVOKED') {
        res.writeHead(403, { 'content-type': 'text/xml', 'x-mashery-error-code': 'ERR_403_NOT_AUTHORIZED' }).end('<h1>Not Authorized</h1>');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(markedPage('page'));
    });
    try {
      const sharing = { cache: { shareAcrossKeys: true } };
      const [a, b] = [await another(sharing, gateway), await another(sharing, gateway)];
      expect((await a.search('dog', 'K1')).status).toBe(200);
      // Not known to be refused: a shared page skips the upstream's check of the key.
      expect(pagesOf(await a.search('dog', 'REVOKED'))).toEqual(only('hit'));
      expect((await b.search('cat', 'REVOKED')).status).toBe(500);
      await until('a to hear of it', async () => (await a.search('dog', 'REVOKED')).status === 500, 5000);
    } finally {
      await Promise.all(instances.splice(0).map((instance) => instance.close()));
      await gateway.close();
    }
  });

  it('misses of the same page on both instances at once make one upstream request', async () => {
    const [a, b] = await fleet();
    delayMs = 300;
    const called = await Promise.all([
      ...Array.from({ length: 4 }, () => a.search('cat')),
      ...Array.from({ length: 4 }, () => b.search('cat')),
    ]);
    expect(upstream.requests).toHaveLength(1);
    expect(new Set(called.map((call) => call.body)).size).toBe(1);
    const hits = [...a.lines, ...b.lines].filter((line) => line.event === 'deprecated_call');
    expect(hits).toHaveLength(8);
    const total = (result: PageSource): number => hits.reduce((sum, hit) => sum + (hit.pages as Record<PageSource, number>)[result], 0);
    expect({ miss: total('miss'), coalesced: total('coalesced') }).toEqual({ miss: 1, coalesced: 7 });
  });

  it('Redis killed: calls are still answered, each instance says so once and shows redis_up 0; back, they share again', async () => {
    const [a, b] = await fleet();
    await a.search('before');
    await until('redis_up 1', async () => (await a.metric('redis_up')) === 1);

    await redis.kill();
    const during = [await a.search('during'), await b.search('during'), await a.search('during'), await b.search('during2')];
    for (const call of during) expect(call.status).toBe(200);
    // Each instance keeps its own pages meanwhile: a's second call of "during" is a hit from its memory.
    expect(pagesOf(during[2]!)).toEqual(only('hit'));
    await until('Redis to be missed', async () => (await a.metric('redis_up')) === 0 && (await b.metric('redis_up')) === 0);
    for (const instance of [a, b]) {
      expect(instance.lines.filter((line) => line.event === 'redis_unavailable')).toHaveLength(1);
      expect(await instance.metric('redis_fallbacks_total', { use: 'cache' })).toBeGreaterThan(0);
    }

    await redis.restart();
    await until('Redis to be back on both', async () => (await a.metric('redis_up')) === 1 && (await b.metric('redis_up')) === 1, 15_000);
    for (const instance of [a, b]) expect(instance.lines.filter((line) => line.event === 'redis_recovered')).toHaveLength(1);
    upstream.requests.length = 0;
    const fetched = await a.search('after');
    await until('the page in Redis', async () => (await keysInRedis()).keys.some((key) => key.startsWith('fleet-test:page:')));
    expect(pagesOf(await b.search('after'))).toEqual(only('hit'));
    expect(fetched.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  }, 30_000);
});
