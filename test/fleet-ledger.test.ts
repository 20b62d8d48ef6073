import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { Registry } from 'prom-client';
import { createFleetLedger } from '../src/deprecation/fleet-ledger.js';
import type { LedgerJson } from '../src/deprecation/ledger-page.js';
import { createShared } from '../src/redis/shared.js';
import type { Running } from '../src/start/main.js';
import { requireClient, skipClientSuite } from './support/clients.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { startProxy } from './support/proxy.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';

/** `GET /ledger` with `redis.url`: the fleet's ledger, on every instance, even across a Redis outage. */

type FleetLedgerJson = LedgerJson & { readonly scope: 'fleet' | 'instance' };

describe.skipIf(skipClientSuite(redisInstalled))('the fleet ledger (redis.url)', () => {
  let redis: RedisServer;
  let first: Running;
  let second: Running;

  beforeAll(async () => {
    requireClient(redisInstalled, REDIS_MISSING);
    redis = await startRedis();
    const shared = { redis: { url: redis.url, commandTimeoutMs: 200 }, deprecation: { clientIdKey: TEST_CLIENT_ID_KEY } };
    [first, second] = await Promise.all([startProxy(shared), startProxy(shared)]);
  });

  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
    await redis?.stop();
  });

  const search = async (proxy: Running, apiKey: string): Promise<void> => {
    const response = await fetch(`${proxy.url}/index.asmx/Search?query=dog&apiKey=${apiKey}`);
    expect(response.status).toBe(200);
    await response.text();
  };

  const ledgerOf = async (proxy: Running, client: string): Promise<FleetLedgerJson> => {
    const response = await fetch(`${proxy.adminUrl}/ledger?client=${encodeURIComponent(client)}`);
    expect(response.status).toBe(200);
    return (await response.json()) as FleetLedgerJson;
  };

  /**
   * The fleet's ledger read from `proxy`, once it counts `expected` calls of `client` (or 10 s have
   * passed): merging takes a second, and /ledger reads the fleet's ledger every 5 s.
   */
  async function callsSeen(proxy: Running, client: string, expected: number): Promise<FleetLedgerJson> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ledger = await ledgerOf(proxy, client);
      if ((ledger.scope === 'fleet' && ledger.matched.calls === expected) || Date.now() > deadline) return ledger;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('counts the calls of every instance, whichever instance is asked', async () => {
    const client = clientFingerprint('fleet-ledger-key', TEST_CLIENT_ID_KEY);
    await search(first, 'fleet-ledger-key');
    await search(second, 'fleet-ledger-key');
    await search(second, 'fleet-ledger-key');
    for (const proxy of [first, second]) {
      const ledger = await callsSeen(proxy, client, 3);
      expect(ledger.scope).toBe('fleet');
      expect(ledger.entries.map(({ operation, binding, calls, outcomes }) => ({ operation, binding, calls, outcomes }))).toEqual([
        { operation: 'Search', binding: 'httpGet', calls: 3, outcomes: { ok: 3, fault: 0, shed: 0, refused: 0 } },
      ]);
      expect(ledger.entries[0]?.example).toMatch(/^\/product\.search\.cp\?/);
    }
  });

  it("serves each client's status and migration fleet-wide, in /clients, /clients/{client} and to the caller itself", async () => {
    const key = 'fleet-clients-key';
    const client = clientFingerprint(key, TEST_CLIENT_ID_KEY);
    await search(first, key);
    await search(second, key);
    await callsSeen(first, client, 2);
    await callsSeen(second, client, 2);
    for (const proxy of [first, second]) {
      const listed = (await (await fetch(`${proxy.adminUrl}/clients`)).json()) as {
        scope: string;
        clients: { client: string; calls: number; status: string }[];
      };
      expect(listed.scope).toBe('fleet');
      expect(listed.clients.find((one) => one.client === client)).toMatchObject({ calls: 2, status: 'deprecated' });
      const one = (await (await fetch(`${proxy.adminUrl}/clients/${encodeURIComponent(client)}`)).json()) as Record<string, unknown>;
      expect(one).toMatchObject({ scope: 'fleet', client, calls: 2 });
      const own = (await (await fetch(`${proxy.url}/deprecation/status?apiKey=${key}`)).json()) as Record<string, unknown>;
      expect(own).toMatchObject({ client, calls: 2 });
    }
  });

  it('while Redis is away, answers every call and shows the instance’s own ledger; once it is back, the calls made meanwhile are in the ' +
    'fleet’s', {
    timeout: 40_000,
  }, async () => {
    const client = clientFingerprint('outage-ledger-key', TEST_CLIENT_ID_KEY);
    await search(first, 'outage-ledger-key');
    expect((await callsSeen(second, client, 1)).matched.calls).toBe(1);

    await redis.kill();
    await search(first, 'outage-ledger-key');
    await search(second, 'outage-ledger-key');
    const during = await ledgerOf(first, client);
    expect(during.scope).toBe('instance');
    expect(during.matched.calls).toBe(2);

    // Redis comes back empty (no persistence): the fleet's count starts again from what is merged now.
    await redis.restart();
    await search(second, 'outage-ledger-key');
    const after = await callsSeen(first, client, 3);
    expect(after.scope).toBe('fleet');
    // first's call during the outage and second's two calls since the kill; first's earlier call went with Redis.
    expect(after.matched.calls).toBe(3);
  });

  it('keeps the maxEntries heaviest unnamed callers fleet-wide, folding those pushed out, never a configured client', async () => {
    const quiet = { warn: () => {}, info: () => {} };
    const settings = { url: redis.url, keyPrefix: 'fold-test:', commandTimeoutMs: 500, connectTimeoutMs: 1000 };
    const shared = createShared(settings, new Registry(), quiet);
    const ledger = createFleetLedger(shared, { maxEntries: 2, flushIntervalMs: 60_000, retentionDays: 90 });
    try {
      const hit = (client: string, configured = false) => ({
        client,
        clientLabel: configured ? client : 'other',
        operation: 'Search',
        binding: 'soap11',
        outcome: 'ok' as const,
      });
      const deadline = Date.now() + 5000;
      while (!shared.available() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
      // Two merges, as two instances would make them: the second finds the fleet's ledger full, and c
      // and d each take the place of the least counted (Space-Saving), whose calls go to `other`.
      for (const client of ['hmac:a', 'hmac:b']) ledger?.add(hit(client), Date.now());
      await ledger?.flush();
      for (const client of ['hmac:c', 'hmac:d', 'hmac:d']) ledger?.add(hit(client), Date.now());
      ledger?.add(hit('warehouse', true), Date.now());
      await ledger?.flush();
      // The calls of the entries pushed out are counted under `other` by the next merge.
      await ledger?.flush();
      const read = await ledger?.read();
      expect(read?.folded).toBe(2);
      expect(read?.all.entries.map((entry) => [entry.client, entry.calls]).sort()).toEqual([
        ['hmac:c', 1],
        ['hmac:d', 2],
        ['other', 2],
        ['warehouse', 1],
      ]);
    } finally {
      await ledger?.close();
      await shared.close();
    }
  });

  it('merges a full ledger once: a batch too long for one command timeout is sent in chunks, and a merge sent again is not counted ' +
    'twice', async () => {
    const lines: string[] = [];
    const log = { warn: (_fields: object, message: string) => lines.push(message), info: () => {} };
    const settings = { url: redis.url, keyPrefix: 'full-ledger:', commandTimeoutMs: 250, connectTimeoutMs: 1000 };
    const shared = createShared(settings, new Registry(), log);
    const ledger = createFleetLedger(shared, { flushIntervalMs: 3_600_000, retentionDays: 90 });
    try {
      const deadline = Date.now() + 5000;
      while (!shared.available() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
      const callers = 10_000;
      for (let caller = 0; caller < callers; caller++)
        ledger?.add({ client: `hmac:${caller}`, clientLabel: 'other', operation: 'Search', binding: 'httpGet', outcome: 'ok' }, Date.now());
      for (let flush = 0; flush < 3; flush++) await ledger?.flush();
      // Read by another instance's ledger, which has nothing of its own to add: what Redis holds.
      const read = await createFleetLedger(shared, { flushIntervalMs: 3_600_000, retentionDays: 90 })?.read();
      expect(read?.all.entries.reduce((sum, entry) => sum + entry.calls, 0)).toBe(callers);
      expect(lines).toEqual([]);
    } finally {
      await ledger?.close();
      await shared.close();
    }
  }, 30_000);
});
