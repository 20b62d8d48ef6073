import { createHash, createHmac } from 'node:crypto';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { PROCESS_KEY } from '../src/clients/process-key.js';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRefusedKeys } from '../src/cache/refused-keys.js';
import { createShared, type Shared, type SharedLog } from '../src/redis/shared.js';
import { Redis } from 'ioredis';
import { requireClient, skipClientSuite } from './support/clients.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';

/** The fleet's shared state (src/redis/shared.ts): Redis when it answers, the instance's own state when not. */

interface Line {
  readonly level: 'warn' | 'info';
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

function recordingLog(): SharedLog & { readonly lines: Line[] } {
  const lines: Line[] = [];
  return {
    lines,
    warn: (fields, message) => lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
    info: (fields, message) => lines.push({ level: 'info', fields: fields as Record<string, unknown>, message }),
  };
}

/** What a use of the shared state gets: Redis's answer, or the instance's own. */
const ownState = (shared: Shared): Promise<string> =>
  shared.run(
    'cache',
    async () => 'from redis',
    () => 'own',
  );

const settings = (url: string | null) => ({ url, keyPrefix: 'test:', commandTimeoutMs: 200, connectTimeoutMs: 500 });

async function metric(registry: Registry, name: string): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((each) => each.name === name);
  return (found?.values ?? []).reduce((sum, value) => sum + value.value, 0);
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('without redis.url', () => {
  it('takes every fallback, says nothing and exports no redis_up', async () => {
    const registry = new Registry();
    const log = recordingLog();
    const shared = createShared(settings(null), registry, log);
    expect(shared.configured).toBe(false);
    expect(await ownState(shared)).toBe('own');
    expect(shared.key('page', 'abc')).toBe('test:page:abc');
    expect(log.lines).toEqual([]);
    expect((await registry.getMetricsAsJSON()).map((each) => each.name)).not.toContain('redis_up');
    await shared.close();
  });
});

describe('hashOf, for key parts that hold an appKey', () => {
  const FLEET_KEY = `${'k'.repeat(32)}fleet`;
  it('is an HMAC with the fleet secret, the same on every instance given it, and never a plain SHA-256 (issue 27)', () => {
    const quiet = { warn: () => {}, info: () => {} };
    const keyed = createShared(settings(null), new Registry(), quiet, FLEET_KEY);
    const again = createShared(settings(null), new Registry(), quiet, FLEET_KEY);
    const unkeyed = createShared(settings(null), new Registry(), quiet);
    expect(keyed.hashOf('app-key-1')).toMatch(/^[0-9a-f]{64}$/);
    expect(again.hashOf('app-key-1')).toBe(keyed.hashOf('app-key-1'));
    expect(keyed.hashOf('app-key-1')).not.toBe(unkeyed.hashOf('app-key-1'));
    // Without a secret the process's own random key: a plain SHA-256 of a 6-digit key is reversed in a second.
    expect(unkeyed.hashOf('app-key-1')).not.toBe(createHash('sha256').update('app-key-1').digest('hex'));
    for (const key of [FLEET_KEY, PROCESS_KEY]) {
      expect(unkeyed.hashOf('app-key-1')).not.toBe(createHmac('sha256', key).update('app-key-1').digest('hex'));
    }
  });

  // A caller chooses the text hashed (its apiKey names the budget and pause keys, the refused-keys
  // members), and whoever can read Redis reads the hash: were it the seal's HMAC under the same key,
  // an apiKey spelling `length ‖ Redis key ‖ value` would have the proxy seal that value for that key.
  it('is never a seal: a caller who can read Redis cannot have the proxy sign a value of its choosing', () => {
    const quiet = { warn: () => {}, info: () => {} };
    const shared = createShared(settings(null), new Registry(), quiet, FLEET_KEY);
    const key = 'test:ledger:v2:entry:0123456789abcdef0123456789abcdef';
    const value = Buffer.from('{"client":"acme","calls":31337}');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(Buffer.byteLength(key));
    const apiKey = Buffer.concat([length, Buffer.from(key), value]).toString('utf8');
    const forged = Buffer.concat([Buffer.from(shared.hashOf(apiKey), 'hex'), value]);
    expect(shared.seal.open(key, forged)).toBeNull();
    // Nor does a budget key's name give away the caller's fingerprint in the ledger.
    expect(shared.hashOf('app-key-1').slice(0, 12)).not.toBe(clientFingerprint('app-key-1', FLEET_KEY).slice('hmac:'.length));
  });
});

describe.skipIf(skipClientSuite(redisInstalled))('with a real redis-server', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    requireClient(redisInstalled, REDIS_MISSING);
    redis = await startRedis();
  });
  afterAll(async () => redis?.stop());

  it('uses Redis while it answers, falls back at once while it is away (said once), and shares again when it is back', async () => {
    const registry = new Registry();
    const log = recordingLog();
    const shared: Shared = createShared(settings(redis.url), registry, log);
    try {
      await until(() => shared.available(), 5000);
      expect(
        await shared.run(
          'cache',
          (client) => client.set(shared.key('k'), 'v').then(() => client.get(shared.key('k'))),
          () => 'own',
        ),
      ).toBe('v');
      expect(await metric(registry, 'redis_up')).toBe(1);

      await redis.kill();
      const started = performance.now();
      const answers = [];
      for (let index = 0; index < 20; index++)
        answers.push(
          await shared.run(
            'budget',
            async (client) => client.get('x'),
            () => 'own',
          ),
        );
      expect(answers).toEqual(Array(20).fill('own'));
      // Never a wait on a Redis that is away: 20 calls well within one command timeout each.
      expect(performance.now() - started).toBeLessThan(20 * 200);
      expect(await metric(registry, 'redis_up')).toBe(0);
      expect(await metric(registry, 'redis_fallbacks_total')).toBeGreaterThanOrEqual(19);
      expect(log.lines.filter((line) => line.fields.event === 'redis_unavailable')).toHaveLength(1);

      await redis.restart();
      await until(() => shared.available(), 10_000);
      expect(
        await shared.run(
          'cache',
          async (client) => client.ping(),
          () => 'own',
        ),
      ).toBe('PONG');
      expect(log.lines.map((line) => line.fields.event)).toEqual(['redis_unavailable', 'redis_recovered']);
      expect(await metric(registry, 'redis_up')).toBe(1);
    } finally {
      await shared.close();
    }
  });

  it('takes a command Redis refuses (an error reply) for that use failing, not for Redis being down', async () => {
    const log = recordingLog();
    const shared = createShared(settings(redis.url), new Registry(), log);
    try {
      await until(() => shared.available(), 5000);
      expect(
        await shared.run(
          'cache',
          (client) => client.set(shared.key('k'), 'v', 'PX', Number.POSITIVE_INFINITY),
          () => 'own',
        ),
      ).toBe('own');
      expect(shared.available()).toBe(true);
      expect(log.lines).toEqual([]);
      expect(
        await shared.run(
          'cache',
          (client) => client.ping(),
          () => 'own',
        ),
      ).toBe('PONG');
    } finally {
      await shared.close();
    }
  });

  it('never logs the password of redis.url, even when Redis refuses it', async () => {
    const guarded = await startRedis({ password: 'the-right-one' });
    const log = recordingLog();
    const shared = createShared(settings(guarded.url.replace('redis://', 'redis://:S3cretRedisPass@')), new Registry(), log);
    try {
      await until(() => log.lines.length > 0, 5000);
      expect(log.lines[0]?.fields.event).toBe('redis_unavailable');
      expect(await ownState(shared)).toBe('own');
      expect(JSON.stringify(log.lines)).not.toContain('S3cretRedisPass');
    } finally {
      await shared.close();
      await guarded.stop();
    }
  });
  it('refused-keys: a member that is no keyed hash is dropped inside Redis, never sent; the hashes are still read', async () => {
    const registry = new Registry();
    const log = recordingLog();
    const shared = createShared(settings(redis.url), registry, log, `${'k'.repeat(32)}fleet`);
    const client = new Redis(redis.url);
    const refused = createRefusedKeys({ shared, memoryMs: () => 60_000, active: () => true, now: Date.now });
    try {
      await until(() => shared.available(), 5000);
      const hash = shared.hashOf('revoked-key');
      const until_ = Date.now() + 30_000;
      // 8 MB in one member: ten thousand such would be 80 GB read by every instance, once a second.
      await client.zadd('test:refused-keys', until_, hash, until_, 'x'.repeat(8 * 1024 * 1024));
      const sent = async (): Promise<number> => Number(/total_net_output_bytes:(\d+)/.exec(await client.info('stats'))?.[1]);
      const before = await sent();
      await until(() => refused.has(hash), 5000);
      expect((await sent()) - before).toBeLessThan(1024 * 1024);
      expect(refused.size).toBe(1);
      expect(log.lines.filter((line) => line.fields.event === 'redis_value_refused')).toMatchObject([
        { fields: { use: 'cache', reason: 'bounds', key: 'test:refused-keys' } },
      ]);
    } finally {
      refused.close();
      client.disconnect();
      await shared.close();
    }
  });
});
