import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/validate.js';
import { deprecationSignals } from '../src/deprecation/headers.js';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { createHitRecorder, hitLine, HIT_SCHEMA_VERSION, type DeprecationHit } from '../src/deprecation/hits.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { CLIENT_STACK_NAMES } from '../src/clients/stack.js';
import { OUTCOMES } from '../src/deprecation/ledger.js';
import { BINDING_NAMES } from '../src/inbound/binding.js';
import { OPERATIONS, UPSTREAM_ENDPOINTS } from '../src/operations.js';
import { PAGE_SOURCES } from '../src/outbound/fetch.js';
import { CALL_BINDINGS, legacyCall, type CallBinding } from './support/calls.js';
import { startProxy } from './support/proxy.js';
import { startRecordedApp, type RecordedApp } from './support/recorded-app.js';
import { SELF_SERVICE_LINK } from './support/wire.js';

/**
 * Every call is one deprecation hit with the same fields, whichever binding it came in on: the
 * dashboards count callers per operation and binding from these lines and from `legacy_calls_total`.
 */

let recorded: RecordedApp;

beforeAll(async () => {
  recorded = await startRecordedApp({
    // Each binding's call of the same Search goes upstream: the hit of a cached page is test/page-cache.test.ts's.
    cache: { enabled: false },
    deprecation: { clientIdKey: TEST_CLIENT_ID_KEY },
    clients: [
      { name: 'warehouse', team: 'Logistics', contact: 'logistics@example.com', apiKeys: ['warehouse-key'] },
      { name: 'shop', fingerprints: [clientFingerprint('shop-key', TEST_CLIENT_ID_KEY)] },
      // The tests call from loopback: a key of the table wins over the address of another client.
      { name: 'office', addresses: ['127.0.0.0/8', '::1'] },
    ],
  });
});

afterAll(() => recorded.close());

beforeEach(() => {
  recorded.lines.length = 0;
});

/** `op` called over `binding` with `params` (in declaration order), as a client of that binding sends it. */
function call(binding: CallBinding, op: string, params: Readonly<Record<string, string>>): Promise<Response> {
  return legacyCall(recorded.base, binding, op, params, { 'user-agent': `hits-test/${binding}` });
}

async function hitOf(response: Response): Promise<Record<string, unknown>> {
  await response.text();
  const hits = recorded.lines.filter((line) => line.event === 'deprecated_call');
  expect(hits).toHaveLength(1);
  return hits[0] as Record<string, unknown>;
}

describe('the deprecation hit', () => {
  it.each(CALL_BINDINGS)(
    '%s: a key the caller sends as its version or in its User-Agent is not logged, in any spelling',
    async (binding) => {
      const key = 'K3y+Secret/Q7';
      const response = await legacyCall(
        recorded.base,
        binding,
        'Search',
        { query: 'dog', apiKey: key, version: key },
        {
          'user-agent': `MyApp/1.0 apiKey=${encodeURIComponent(key).toLowerCase()} (${key})`,
        },
      );
      const hit = await hitOf(response);
      expect(hit).toMatchObject({ legacyVersion: '[redacted]', userAgent: 'MyApp/1.0 apiKey=[redacted] ([redacted])' });
      const line = JSON.stringify(recorded.lines);
      for (const spelling of [key, encodeURIComponent(key), encodeURIComponent(key).toLowerCase()]) expect(line).not.toContain(spelling);
    },
  );

  it('an address taken from X-Forwarded-For is redacted and cut like any text the caller wrote', async () => {
    const proxy = await startRecordedApp({ server: { trustProxy: true } });
    try {
      const response = await fetch(`${proxy.base}/index.asmx/Search?query=dog`, {
        headers: { 'x-forwarded-for': `apiKey=${'A'.repeat(8000)}` },
      });
      await response.text();
      const hit = proxy.lines.find((line) => line.event === 'deprecated_call')!;
      expect(hit.remoteAddress).toBe('apiKey=[redacted]');
      const long = await fetch(`${proxy.base}/index.asmx/Search?query=cat`, { headers: { 'x-forwarded-for': 'A'.repeat(8000) } });
      await long.text();
      expect(proxy.lines.filter((line) => line.event === 'deprecated_call')[1]!.remoteAddress).toBe(`${'A'.repeat(256)}…`);
    } finally {
      await proxy.close();
    }
  });

  it.each(CALL_BINDINGS)('%s: a successful call records every field of the schema', async (binding) => {
    const hit = await hitOf(await call(binding, 'Search', { query: 'dog', apiKey: 'caller-key-1', version: '2.0' }));
    expect(hit).toMatchObject({
      event: 'deprecated_call',
      schema: 2,
      operation: 'Search',
      binding,
      client: 'office',
      clientLabel: 'office',
      clientFingerprint: clientFingerprint('caller-key-1', TEST_CLIENT_ID_KEY),
      team: null,
      contact: null,
      legacyVersion: '2.0',
      replacement: '/product.search.cp',
      successor: '/product.search.cp?v=3&query=dog',
      outcome: 'ok',
      reason: null,
      status: 200,
      upstreamRequests: 1,
      pages: { hit: 0, miss: 1, stale: 0, revalidated: 0, coalesced: 0 },
      remoteAddress: '127.0.0.1',
      userAgent: `hits-test/${binding}`,
    });
    expect(hit.durationMs).toBeTypeOf('number');
    expect(JSON.stringify(hit)).not.toContain('caller-key-1');
  });

  it.each(CALL_BINDINGS)('%s: a call with a bad int is recorded under its operation, as a fault of the request', async (binding) => {
    const response = await call(binding, 'ProductLookup', { productNumber: 'abc', apiKey: 'caller-key-2' });
    expect(response.status).toBe(500);
    const hit = await hitOf(response);
    expect(hit).toMatchObject({
      operation: 'ProductLookup',
      binding,
      replacement: '/product.searchForProduct.cp',
      outcome: 'fault',
      reason: 'bad_request',
      status: 500,
      upstreamRequests: 0,
    });
  });

  it.each(CALL_BINDINGS)('%s: a value the translation refuses is a client_input fault of the caller', async (binding) => {
    const hit = await hitOf(await call(binding, 'AdvancedSearch', { query: 'dog', apiKey: 'caller-key-3', productTypes: 'Hovercraft' }));
    expect(hit).toMatchObject({
      operation: 'AdvancedSearch',
      binding,
      clientFingerprint: clientFingerprint('caller-key-3', TEST_CLIENT_ID_KEY),
      successor: null,
      outcome: 'fault',
      reason: 'client_input',
      upstreamRequests: 0,
    });
  });

  it('a method that does not exist is recorded as operation "unknown"', async () => {
    const hit = await hitOf(await call('httpGet', 'NoSuchMethod', {}));
    expect(hit).toMatchObject({ operation: 'unknown', binding: 'httpGet', replacement: '', outcome: 'fault', reason: 'bad_request' });
  });

  it('legacy_calls_total counts SOAP faults under the operation called', async () => {
    await (await call('soap11', 'ProductLookup', { productNumber: '1x' })).text();
    const metrics = await (await fetch(`${recorded.admin}/metrics`)).text();
    expect(metrics).toMatch(/^legacy_calls_total\{operation="ProductLookup",binding="soap11",outcome="fault",client="office"\} [1-9]/m);
    expect(metrics).not.toMatch(/^legacy_calls_total\{operation="unknown",binding="soap11"/m);
  });
});

describe('the hit line', () => {
  const hit: DeprecationHit = {
    requestId: '6f1d3c2e-8a4b-4c1d-9e2f-0a1b2c3d4e5f',
    operation: 'Search',
    binding: 'soap11',
    client: 'warehouse',
    clientLabel: 'warehouse',
    clientFingerprint: 'hmac:0123456789ab',
    team: 'Logistics "East"',
    contact: null,
    legacyVersion: 'ä\\\u0001',
    replacement: '/product.search.cp',
    successor: '/product.search.cp?v=3&query=dog',
    successorPaging: { pages: 2, skip: 5, take: 60 },
    route: 'translated',
    outcome: 'ok',
    reason: null,
    status: 200,
    durationMs: 12.345,
    upstreamRequests: 1,
    pages: { hit: 1, miss: 2, stale: 3, revalidated: 4, coalesced: 5 },
    remoteAddress: '10.1.2.3',
    userAgent: 'x'.repeat(300),
    clientStack: 'dotnet-wsdl',
    clientStackVersion: '4.0.30319.42000',
  };
  const at = Date.parse('2026-11-25T10:00:00.123Z');

  it.each([
    ['untraced', hit],
    ['traced', { ...hit, traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' }],
  ])("is byte for byte the line pino wrote for it in the proxy's line format, caller text cut at 256 characters (%s)", (_, called) => {
    const lines: string[] = [];
    const logger = pino(
      { timestamp: () => `,"time":"${new Date(at).toISOString()}"`, formatters: { level: (label: string) => ({ level: label }) } },
      { write: (line: string) => lines.push(line) },
    );
    const { traceId, spanId, ...fields } = called;
    logger.info(
      {
        event: 'deprecated_call',
        schema: HIT_SCHEMA_VERSION,
        ...fields,
        userAgent: `${'x'.repeat(256)}…`,
        ...(traceId === undefined ? {} : { traceId, spanId }),
      },
      'deprecated call Search (soap11)',
    );
    expect(hitLine(called, at)).toBe(lines[0]);
  });

  it('writes every name of the closed sets it writes without escaping as JSON reads it, and the pages in PAGE_SOURCES order', () => {
    const values: [keyof DeprecationHit, readonly string[]][] = [
      ['operation', [...OPERATIONS.map((op) => op.name), 'unknown']],
      ['binding', [...BINDING_NAMES, 'unknown']],
      ['outcome', OUTCOMES],
      ['replacement', [...Object.keys(UPSTREAM_ENDPOINTS), '']],
      ['clientStack', CLIENT_STACK_NAMES],
    ];
    for (const [field, names] of values) {
      for (const name of names) {
        const parsed = JSON.parse(hitLine({ ...hit, [field]: name }, at)) as Record<string, unknown>;
        expect(parsed[field]).toBe(name);
      }
    }
    const parsed = JSON.parse(hitLine(hit, at)) as { pages: Record<string, number>; msg: string };
    expect(Object.keys(parsed.pages)).toEqual([...PAGE_SOURCES]);
    expect(parsed.msg).toBe('deprecated call Search (soap11)');
  });

  it('writes the time of each hit, a millisecond apart', () => {
    const times = [at, at, at + 1, at].map((time) => (JSON.parse(hitLine(hit, time)) as { time: string }).time);
    expect(times).toEqual(['2026-11-25T10:00:00.123Z', '2026-11-25T10:00:00.123Z', '2026-11-25T10:00:00.124Z', '2026-11-25T10:00:00.123Z']);
  });

  it('writes a lone surrogate in caller text, or half a pair the cut left, as U+FFFD: no escape that strict JSON readers refuse', () => {
    const line = hitLine({ ...hit, legacyVersion: 'a\uD800b', userAgent: `${'x'.repeat(255)}\u{1F600}` }, at);
    expect(line).not.toMatch(/\\ud[89a-f]/i);
    const parsed = JSON.parse(line) as Record<string, string>;
    expect(parsed.legacyVersion).toBe('a\uFFFDb');
    expect(parsed.userAgent).toBe(`${'x'.repeat(255)}\uFFFD…`);
  });

  it("goes to the hit logger's destination, and nowhere from a logger set above info (as logger.info would not write it)", () => {
    const written = (level: string): string[] => {
      const lines: string[] = [];
      const logger = pino({ level }, { write: (line: string) => lines.push(line) });
      createHitRecorder(new Registry(), logger, logger).record(hit);
      return lines;
    };
    expect(written('info').map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({ event: 'deprecated_call', requestId: hit.requestId }),
    ]);
    expect(written('warn')).toEqual([]);
    expect(written('silent')).toEqual([]);
  });
});

describe('named clients (the clients table)', () => {
  it.each(CALL_BINDINGS)(
    '%s: a client named by its apiKey is named in the hit, with its team and contact, and in the metrics',
    async (binding) => {
      const hit = await hitOf(await call(binding, 'ProductLookup', { productNumber: '7', apiKey: 'warehouse-key' }));
      expect(hit).toMatchObject({
        client: 'warehouse',
        clientLabel: 'warehouse',
        clientFingerprint: clientFingerprint('warehouse-key', TEST_CLIENT_ID_KEY),
        team: 'Logistics',
        contact: 'logistics@example.com',
      });
      expect(JSON.stringify(hit)).not.toContain('warehouse-key');
      const metrics = await (await fetch(`${recorded.admin}/metrics`)).text();
      expect(metrics).toMatch(
        new RegExp(`^legacy_calls_total\\{operation="ProductLookup",binding="${binding}",outcome="ok",client="warehouse"\\} [1-9]`, 'm'),
      );
    },
  );

  it('a client named by the fingerprint of its key is found without the key in the configuration', async () => {
    expect(await hitOf(await call('httpGet', 'Search', { query: 'dog', apiKey: 'shop-key' }))).toMatchObject({
      client: 'shop',
      clientLabel: 'shop',
    });
  });

  it('a caller matched by nothing is named by its fingerprint and counted as "other"', async () => {
    const proxy = await startProxy({
      clients: [{ name: 'elsewhere', addresses: ['10.0.0.0/8'] }],
      deprecation: { clientIdKey: TEST_CLIENT_ID_KEY },
    });
    try {
      const response = await fetch(`${proxy.url}/index.asmx/Search?query=dog&apiKey=stranger-key`);
      expect(response.status).toBe(200);
      const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
      expect(metrics).toMatch(/^legacy_calls_total\{operation="Search",binding="httpGet",outcome="ok",client="other"\} 1$/m);
      expect(metrics).not.toContain(clientFingerprint('stranger-key', TEST_CLIENT_ID_KEY));
    } finally {
      await proxy.stop();
    }
  });
});

describe('named clients behind a load balancer (server.trustProxy)', () => {
  const clients = [{ name: 'shop', addresses: ['10.20.0.0/16'] }];
  const searchFrom = async (app: RecordedApp, forwardedFor: string): Promise<Record<string, unknown>> => {
    app.lines.length = 0;
    await (await fetch(`${app.base}/index.asmx/Search?query=dog`, { headers: { 'x-forwarded-for': forwardedFor } })).text();
    return app.lines.find((line) => line.event === 'deprecated_call')!;
  };

  it('with the number of proxies in front, the address is the one the nearest proxy saw, not one a caller wrote', async () => {
    const app = await startRecordedApp({ server: { trustProxy: 1 }, clients });
    try {
      // The load balancer appends the address it saw; anything before it came from the caller.
      expect(await searchFrom(app, '10.20.1.1, 203.0.113.5')).toMatchObject({ client: 'anonymous', remoteAddress: '203.0.113.5' });
      expect(await searchFrom(app, '203.0.113.5, 10.20.1.1')).toMatchObject({ client: 'shop', remoteAddress: '10.20.1.1' });
    } finally {
      await app.close();
    }
  });

  it(
    'true (every hop trusted: the first X-Forwarded-For entry, which any caller writes) is refused for a table that names ' + 'addresses',
    () => {
      expect(() => validateConfig({ server: { trustProxy: true }, clients })).toThrow(
        'Invalid configuration: server.trustProxy must be the number of proxies in front of the proxy (e.g. 1), not true, when a client ' +
          'of the clients table is known by its addresses: with true the address is the first entry of X-Forwarded-For, which any caller ' +
          'can write.',
      );
      expect(validateConfig({ server: { trustProxy: true }, clients: [{ name: 'shop', apiKeys: ['k'] }] }).server.trustProxy).toBe(true);
      expect(() => validateConfig({ server: { trustProxy: 0 } })).toThrow(
        'Invalid configuration: server.trustProxy must be true, false or the number of proxies in front (1 to 16), got 0.',
      );
    },
  );
});

describe('the successor-version link of each answer', () => {
  it.each(CALL_BINDINGS)(
    '%s: names the exact .cp request that replaces the call, without the key, and the hit records it',
    async (binding) => {
      const response = await call(binding, 'AdvancedSearch', {
        query: 'red dog',
        apiKey: 'secret-key',
        version: '1',
        productTypes: 'Large Mug',
        startResults: '60',
        maxResults: '20',
        sort: 'by-date-desc',
      });
      expect(response.status).toBe(200);
      // Items 60..79 are page 4 of 20 (docs/upstream.md §3): the request a migrated client sends.
      const successor = '/product.search.cp?v=3&query=red+dog&merchandiseIds=1&sort=by_date_desc&pageNumber=4&resultsPerPage=20';
      expect(response.headers.get('link')).toBe(`<${recorded.upstream.origin}${successor}>; rel="successor-version", ${SELF_SERVICE_LINK}`);
      expect((await hitOf(response)).successor).toBe(successor);
      expect(response.headers.get('link')).not.toContain('secret-key');
    },
  );

  it("is left out when the call was not translated (a fault of the request): the caller's self-service page is all", async () => {
    const response = await call('httpGet', 'ProductLookup', { productNumber: 'x' });
    expect(response.status).toBe(500);
    expect(response.headers.get('link')).toBe(SELF_SERVICE_LINK);
  });

  it.each(['https://open-api.example.com/', 'https://user:secret@open-api.example.com//'])(
    'joins deprecation.successorBaseUrl %s with one slash, and never sends credentials written in it',
    (successorBaseUrl) => {
      const { linkFor } = deprecationSignals(validateConfig({ deprecation: { successorBaseUrl } }));
      expect(linkFor('/product.search.cp?v=3&query=dog')).toBe(
        `<https://open-api.example.com/product.search.cp?v=3&query=dog>; rel="successor-version", ${SELF_SERVICE_LINK}`,
      );
    },
  );

  it(
    'comes first, before the configured links, and uses deprecation.successorBaseUrl; deprecation.successorUrl is then the ' +
      'service-doc',
    async () => {
      const proxy = await startProxy({
        deprecation: {
          policyUrl: 'https://example.com/deprecation',
          successorUrl: 'https://example.com/api',
          successorBaseUrl: 'https://open-api.example.com',
        },
      });
      try {
        const response = await fetch(`${proxy.url}/index.asmx/ProductLookup?productNumber=42&apiKey=k`);
        expect(response.headers.get('link')).toBe(
          '<https://open-api.example.com/product.searchForProduct.cp?v=3&productId=42>; rel="successor-version", ' +
            '<https://example.com/deprecation>; rel="deprecation"; type="text/html", <https://example.com/api>; rel="service-doc"',
        );
      } finally {
        await proxy.stop();
      }
    },
  );

  it(
    'an answer without a successor of its own (a fault of the request, the WSDL) names deprecation.successorUrl as the ' +
      'successor-version',
    async () => {
      const proxy = await startProxy({
        deprecation: { policyUrl: 'https://example.com/deprecation', successorUrl: 'https://example.com/api' },
      });
      try {
        for (const path of ['/index.asmx/ProductLookup?productNumber=x&apiKey=k', '/index.asmx?WSDL']) {
          const response = await fetch(`${proxy.url}${path}`);
          await response.arrayBuffer();
          expect(response.headers.get('link')).toBe(
            '<https://example.com/deprecation>; rel="deprecation"; type="text/html", <https://example.com/api>; rel="successor-version"',
          );
        }
      } finally {
        await proxy.stop();
      }
    },
  );
});
