import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { DeprecationHit } from '../src/deprecation/hits.js';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import type { LedgerJson } from '../src/deprecation/ledger-page.js';
import type { Running } from '../src/start/main.js';
import { buildApp, type App } from '../src/server/app.js';
import { recordingUpstream } from './support/pages.js';
import { startProxy } from './support/proxy.js';
import type { StubUpstream } from './support/stub-upstream.js';
import { SERVICE_NAMESPACE, SOAP11_ENV, XML_CONTENT_TYPE, XML_DECLARATION } from './support/wire.js';

/** `GET /ledger`: the live ledger of one instance, fed by every hit it records. */

let proxy: Running;

beforeAll(async () => {
  proxy = await startProxy();
});

afterAll(async () => {
  await proxy.stop();
});

const get = (path: string): Promise<Response> => fetch(`${proxy.url}${path}`);

function soapSearch(query: string, apiKey: string): Promise<Response> {
  const body =
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body><Search ` +
    `xmlns="${SERVICE_NAMESPACE}"><query>${query}</query><apiKey>${apiKey}</apiKey></Search></soap:Body></soap:Envelope>`;
  return fetch(`${proxy.url}/index.asmx`, {
    method: 'POST',
    headers: { 'content-type': XML_CONTENT_TYPE, soapaction: `"${SERVICE_NAMESPACE}Search"` },
    body,
  });
}

describe('GET /ledger', () => {
  it('counts the calls made through the proxy, per client, operation and binding, without their keys', async () => {
    const before = Date.now();
    for (const response of [
      await get('/index.asmx/Search?query=dog&apiKey=ledger-key-1&version=1.0'),
      await get('/index.asmx/Search?query=cat&apiKey=ledger-key-1&version=1.0'),
      await get('/index.asmx/ProductLookup?productNumber=abc&apiKey=ledger-key-1'),
      await soapSearch('mug', 'ledger-key-2'),
    ])
      await response.text();
    const response = await fetch(`${proxy.adminUrl}/ledger`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await response.text();
    expect(text).not.toContain('ledger-key-');
    const ledger = JSON.parse(text) as LedgerJson;
    expect(ledger).toMatchObject({ maxEntries: 10_000, folded: 0 });
    const first = clientFingerprint('ledger-key-1');
    expect(
      ledger.entries.map(({ client, operation, binding, calls, outcomes }) => ({ client, operation, binding, calls, outcomes })),
    ).toEqual([
      { client: first, operation: 'Search', binding: 'httpGet', calls: 2, outcomes: { ok: 2, fault: 0, shed: 0, refused: 0 } },
      // A call that cannot be read names no caller.
      { client: 'anonymous', operation: 'ProductLookup', binding: 'httpGet', calls: 1, outcomes: { ok: 0, fault: 1, shed: 0, refused: 0 } },
      {
        client: clientFingerprint('ledger-key-2'),
        operation: 'Search',
        binding: 'soap11',
        calls: 1,
        outcomes: { ok: 1, fault: 0, shed: 0, refused: 0 },
      },
    ]);
    for (const entry of ledger.entries) {
      expect(Date.parse(entry.firstSeen)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(entry.lastSeen)).toBeGreaterThanOrEqual(Date.parse(entry.firstSeen));
      expect(Date.parse(entry.lastSeen)).toBeLessThanOrEqual(Date.now());
    }
  });
});

describe('GET /ledger at the cap: 10,001 unnamed callers, then a configured client', () => {
  let upstream: StubUpstream;
  let app: App;
  /** The operator listener, where /ledger is. */
  let base: string;

  /** A caller's call as the hit recorder gets it, with a successor as long as one can be (2,000 characters). */
  const junkHit = (i: number): DeprecationHit => {
    const fingerprint = `sha256:${i.toString(16).padStart(12, '0')}`;
    return {
      requestId: `request-${i}`,
      operation: 'Search',
      binding: 'httpGet',
      client: fingerprint,
      clientLabel: 'other',
      clientFingerprint: fingerprint,
      team: null,
      contact: null,
      legacyVersion: null,
      replacement: '/product.search.cp',
      successor: `/product.search.cp?v=3&query=${'x'.repeat(1970)}`,
      successorPaging: { pages: 10_000, skip: 100_000, take: 2 ** 31 - 1 - 100_000 },
      clientStack: 'perl-soapwsdl',
      clientStackVersion: `3.${'0'.repeat(38)}`,
      route: 'translated',
      outcome: 'ok',
      reason: null,
      status: 200,
      durationMs: 1,
      upstreamRequests: 1,
      pages: { hit: 0, miss: 1, stale: 0, revalidated: 0, coalesced: 0 },
      remoteAddress: '203.0.113.5',
      userAgent: null,
    };
  };

  beforeAll(async () => {
    upstream = await recordingUpstream(10);
    const clients = [{ name: 'warehouse-app', apiKeys: ['warehouse-key'] }];
    const config = loadConfig({ UPSTREAM_URL: upstream.origin }, { log: { level: 'silent' }, server: { adminPort: 0 } }, { clients });
    app = await buildApp(config, { logger: pino({ level: 'silent' }) });
    const service = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
    base = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
    for (let i = 0; i <= 10_000; i++) app.hits.record(junkHit(i));
    for (const query of ['dog', 'cat']) await (await fetch(`${service}/index.asmx/Search?query=${query}&apiKey=warehouse-key`)).text();
  });

  afterAll(async () => {
    await app?.fastify.close();
    await upstream?.close();
  });

  interface Reply {
    readonly ms: number;
    readonly status: number;
    readonly bytes: number;
    readonly json: unknown;
  }

  const ledgerAt = async (path: string): Promise<Reply> => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`);
    const text = await response.text();
    return { ms: performance.now() - started, status: response.status, bytes: Buffer.byteLength(text), json: JSON.parse(text) };
  };

  it('still counts the configured client, under its name, and the unnamed caller past the cap under "other"', async () => {
    const { json } = await ledgerAt('/ledger?client=warehouse-app');
    expect(json).toMatchObject({ version: 2, folded: 1, total: { entries: 10_002, calls: 10_003 }, matched: { entries: 1, calls: 2 } });
    const warehouse = expect.objectContaining({ client: 'warehouse-app', operation: 'Search', binding: 'httpGet', calls: 2 });
    expect((json as LedgerJson).entries).toEqual([warehouse]);
    const other = (await ledgerAt('/ledger?client=other')).json as LedgerJson;
    expect(other.entries).toEqual([expect.objectContaining({ client: 'other', calls: 1 })]);
  });

  it('answers in well under 50 ms, a page at a time, with the largest callers first', async () => {
    const runs = [];
    for (let i = 0; i < 7; i++) runs.push(await ledgerAt('/ledger'));
    const median = runs.map((run) => run.ms).sort((a, b) => a - b)[3] ?? Infinity;
    expect(median).toBeLessThan(50);
    const first = runs[0]!;
    expect(first.status).toBe(200);
    expect(first.bytes).toBeLessThan(300_000);
    expect(first.json).toMatchObject({ limit: 100, nextOffset: 100, matched: { entries: 10_002 } });
    expect((first.json as LedgerJson).entries[0]).toMatchObject({ client: 'warehouse-app', calls: 2 });
    const page = (await ledgerAt('/ledger?limit=3&offset=10000')).json as LedgerJson;
    expect(page.entries).toHaveLength(2);
    expect(page.nextOffset).toBeNull();
  });

  it('refuses a bad query with 400 and a JSON message that says what is wrong', async () => {
    const response = await fetch(`${base}/ledger?limit=all`);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const message = 'limit must be a whole number from 1 to 1000, got "all"';
    expect(await response.json()).toEqual({ statusCode: 400, error: 'Bad Request', message });
    expect(((await ledgerAt('/ledger?offset=1&offset=2')).json as { message: string }).message).toBe('offset is given more than once');
  });
});
