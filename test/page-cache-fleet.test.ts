import type { IncomingMessage, ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PageResult } from '../src/cache/page-cache.js';
import { markedPage, startCachedApp, until, type CachedApp } from './support/cached-app.js';
import { requireClient, skipClientSuite } from './support/clients.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';

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
    const overrides = { redis: { url: redis.url, keyPrefix: 'fleet-test:' }, deprecation: { clientIdKey: TEST_CLIENT_ID_KEY } };
    instances = [await startCachedApp(() => {}, overrides, { upstream }), await startCachedApp(() => {}, overrides, { upstream })];
    // Until its connection is ready an instance is on its own state, as during an outage.
    await until('both instances connected to Redis', async () => {
      const up = await Promise.all(instances.map((instance) => instance.metric('redis_up')));
      return up.every((value) => value === 1);
    });
    return instances as [CachedApp, CachedApp];
  }

  const pagesOf = (called: { hit: Record<string, unknown> }) => called.hit.pages as Record<PageResult, number>;
  const only = (result: PageResult) => ({ hit: 0, miss: 0, stale: 0, revalidated: 0, coalesced: 0, [result]: 1 });

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
    const total = (result: PageResult): number => hits.reduce((sum, hit) => sum + (hit.pages as Record<PageResult, number>)[result], 0);
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
