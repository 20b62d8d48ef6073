import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { refusalText } from '../src/messages.js';
import { refusalOf, scheduleOf, windowEnd, type Schedule } from '../src/brownouts/schedule.js';
import { parseXml } from '../src/xml/parse.js';
import { CALL_BINDINGS, legacyCall, type CallBinding } from './support/calls.js';
import { startProxy } from './support/proxy.js';
import { startRecordedApp, type RecordedApp } from './support/recorded-app.js';
import { SELF_SERVICE_LINK, SOAP12_CONTENT_TYPE, UNABLE_TO_PROCESS, XML_CONTENT_TYPE, expectedFault } from './support/wire.js';

const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

/**
 * Brownouts and sunset (docs/migration.md §5): scheduled windows in which the calls they name are
 * refused with a fault that names the replacement, and, after the sunset, refusal for good.
 */

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const at = (text: string): number => Date.parse(text);

const CLIENTS = [
  { name: 'warehouse', apiKeys: ['warehouse-key'] },
  { name: 'shop', apiKeys: ['shop-key'] },
];

function scheduleFor(brownouts: Json[], deprecation: Json = {}): Schedule {
  return scheduleOf(loadConfig({}, { clients: CLIENTS, brownouts, deprecation }));
}

describe('the schedule (pure)', () => {
  const once = scheduleFor([{ name: 'once', start: '2026-12-01T10:00:00Z', durationMinutes: 30 }]).brownouts[0]!;

  it('a one-off window opens at its start (inclusive) and closes at its end (exclusive)', () => {
    const start = at('2026-12-01T10:00:00Z');
    expect(windowEnd(once, start - 1)).toBeNull();
    expect(windowEnd(once, start)).toBe(start + 30 * MINUTE);
    expect(windowEnd(once, start + 30 * MINUTE - 1)).toBe(start + 30 * MINUTE);
    expect(windowEnd(once, start + 30 * MINUTE)).toBeNull();
    expect(windowEnd(once, start + DAY)).toBeNull();
  });

  it('a daily window opens every 24 hours from its start, and not before it', () => {
    const [daily] = scheduleFor([{ name: 'daily', start: '2026-12-01T10:00:00Z', durationMinutes: 30, repeat: 'daily' }]).brownouts;
    const start = at('2026-12-01T10:00:00Z');
    expect(windowEnd(daily!, start - DAY + MINUTE)).toBeNull();
    expect(windowEnd(daily!, start + 40 * DAY + 29 * MINUTE)).toBe(start + 40 * DAY + 30 * MINUTE);
    expect(windowEnd(daily!, start + 40 * DAY + 30 * MINUTE)).toBeNull();
    expect(windowEnd(daily!, start + 40 * DAY - 1)).toBeNull();
  });

  it('a weekly window opens every 7 days, not on the days between', () => {
    const [weekly] = scheduleFor([{ name: 'weekly', start: '2026-12-01T10:00:00Z', durationMinutes: 120, repeat: 'weekly' }]).brownouts;
    const start = at('2026-12-01T10:00:00Z');
    expect(windowEnd(weekly!, start + 14 * DAY + 60 * MINUTE)).toBe(start + 14 * DAY + 120 * MINUTE);
    for (const day of [1, 2, 3, 4, 5, 6, 8]) expect(windowEnd(weekly!, start + day * DAY + 60 * MINUTE)).toBeNull();
  });

  it('until is the last instant a window may start: that window runs its course, none follows', () => {
    const [ending] = scheduleFor([
      { name: 'ending', start: '2026-12-01T10:00:00Z', durationMinutes: 30, repeat: 'daily', until: '2026-12-03T10:00:00Z' },
    ]).brownouts;
    const start = at('2026-12-01T10:00:00Z');
    expect(windowEnd(ending!, start + 2 * DAY + 29 * MINUTE)).toBe(start + 2 * DAY + 30 * MINUTE);
    expect(windowEnd(ending!, start + 3 * DAY)).toBeNull();
  });

  it('is in UTC instants: a daily window keeps its UTC time across a daylight-saving change', () => {
    // 10:00 in Berlin before the change on 2026-03-29 is 09:00Z; after it, the window opens at 11:00 Berlin time.
    const [daily] = scheduleFor([{ name: 'dst', start: '2026-03-28T10:00:00+01:00', durationMinutes: 10, repeat: 'daily' }]).brownouts;
    expect(windowEnd(daily!, at('2026-03-30T09:00:00Z'))).toBe(at('2026-03-30T09:10:00Z'));
    expect(windowEnd(daily!, at('2026-03-30T10:00:00+02:00'))).toBeNull();
  });

  it('refuses only the operations and clients a brownout names; none named is all', () => {
    const schedule = scheduleFor([
      { name: 'search-warehouse', operations: ['Search'], clients: ['warehouse'], start: '2026-12-01T10:00:00Z', durationMinutes: 30 },
      { name: 'everything', start: '2026-12-02T10:00:00Z', durationMinutes: 30 },
    ]);
    const first = at('2026-12-01T10:15:00Z');
    expect(refusalOf(schedule, first, { operation: 'Search', client: 'warehouse' })).toEqual({
      reason: 'brownout',
      brownout: 'search-warehouse',
      until: at('2026-12-01T10:30:00Z'),
    });
    expect(refusalOf(schedule, first, { operation: 'Search', client: 'shop' })).toBeNull();
    expect(refusalOf(schedule, first, { operation: 'Search', client: 'other' })).toBeNull();
    expect(refusalOf(schedule, first, { operation: 'ProductLookup', client: 'warehouse' })).toBeNull();
    const second = at('2026-12-02T10:15:00Z');
    expect(refusalOf(schedule, second, { operation: 'StoreLookup', client: 'other' })).toMatchObject({ brownout: 'everything' });
  });

  it('of overlapping windows, names the one that closes last: then the call goes through again', () => {
    const schedule = scheduleFor([
      { name: 'short', start: '2026-12-01T10:00:00Z', durationMinutes: 30 },
      { name: 'long', start: '2026-12-01T09:00:00Z', durationMinutes: 120 },
    ]);
    expect(refusalOf(schedule, at('2026-12-01T10:10:00Z'), { operation: 'Search', client: 'other' })).toEqual({
      reason: 'brownout',
      brownout: 'long',
      until: at('2026-12-01T11:00:00Z'),
    });
  });

  it('after the sunset refuses every call, when refuseAfterSunset is set; the sunset alone refuses nothing', () => {
    const brownouts = [{ name: 'late', start: '2027-07-01T00:00:00Z', durationMinutes: 30 }];
    const sunsetAt = '2027-06-30T00:00:00Z';
    const refusing = scheduleFor(brownouts, { sunsetAt, refuseAfterSunset: true });
    const call = { operation: 'Search', client: 'shop' } as const;
    expect(refusalOf(refusing, at(sunsetAt) - 1, call)).toBeNull();
    expect(refusalOf(refusing, at(sunsetAt), call)).toEqual({ reason: 'sunset', since: at(sunsetAt) });
    // A brownout after the sunset changes nothing: the sunset is for good.
    expect(refusalOf(refusing, at('2027-07-01T00:10:00Z'), call)).toEqual({ reason: 'sunset', since: at(sunsetAt) });
    expect(refusalOf(scheduleFor([], { sunsetAt }), at(sunsetAt) + DAY, call)).toBeNull();
  });
});

describe('the refusal text', () => {
  const brownout = {
    reason: 'brownout',
    brownout: 'dec-week-1',
    until: at('2026-12-01T10:30:00Z'),
    operation: 'Search',
    replacement: '/product.search.cp',
    at: at('2026-12-01T10:10:00Z'),
  } as const;

  it('names the brownout and its end, the sunset, the replacement and the exact successor request', () => {
    expect(refusalText({ ...brownout, successor: '/product.search.cp?v=3&query=dog', sunsetAt: at('2027-06-30T00:00:00Z') })).toBe(
      'This operation is temporarily unavailable (scheduled brownout "dec-week-1" until 2026-12-01T10:30:00Z): Search is deprecated and ' +
        'will be switched off on 2027-06-30T00:00:00Z. Use /product.search.cp instead: /product.search.cp?v=3&query=dog',
    );
  });

  it('in a brownout after the sunset, says the operation was due to be switched off then, not that it will be', () => {
    expect(refusalText({ ...brownout, successor: null, sunsetAt: at('2026-12-01T10:10:00Z') })).toBe(
      'This operation is temporarily unavailable (scheduled brownout "dec-week-1" until 2026-12-01T10:30:00Z): Search is deprecated and ' +
        'was due to be switched off on 2026-12-01T10:10:00Z. Use /product.search.cp instead.',
    );
  });

  it('leaves out what is not known: no sunset configured, a call that does not translate', () => {
    expect(refusalText({ ...brownout, successor: null, sunsetAt: null })).toBe(
      'This operation is temporarily unavailable (scheduled brownout "dec-week-1" until 2026-12-01T10:30:00Z): Search is deprecated. ' +
        'Use /product.search.cp instead.',
    );
  });

  it('after the sunset says the operation is switched off, and when', () => {
    const sunsetAt = at('2027-06-30T00:00:00Z');
    expect(
      refusalText({
        reason: 'sunset',
        since: sunsetAt,
        at: sunsetAt + DAY,
        operation: 'ProductLookup',
        replacement: '/product.searchForProduct.cp',
        successor: '/product.searchForProduct.cp?v=3&productId=42',
        sunsetAt,
      }),
    ).toBe(
      'This operation is no longer available: ProductLookup was switched off on 2027-06-30T00:00:00Z. Use /product.searchForProduct.cp ' +
        'instead: /product.searchForProduct.cp?v=3&productId=42',
    );
  });
});

describe('the configuration', () => {
  const valid = { name: 'dec-week-1', start: '2026-12-01T10:00:00Z', durationMinutes: 30 };
  const attempt = (brownout: Json) => () => loadConfig({}, { clients: CLIENTS, brownouts: [brownout] });

  it('fills in the defaults of an entry', () => {
    expect(loadConfig({}, { brownouts: [valid] }).brownouts).toEqual([
      { ...valid, operations: [], clients: [], repeat: null, until: null },
    ]);
  });

  it.each([
    [
      { ...valid, clients: ['warehose'] },
      'brownouts entry 1 (dec-week-1) names the client "warehose", which the clients table does not list.',
    ],
    [{ ...valid, clients: ['other'] }, 'brownouts entry 1 (dec-week-1) names the client "other", which the clients table does not list.'],
    [
      { ...valid, operations: ['Serch'] },
      'brownouts.0.operations.0 must be one of "StoreLookup", "StoreLookupPaged", "ProductLookup", "Search", "AdvancedSearch", got ' +
        '"Serch".',
    ],
    [{ ...valid, start: '2026-12-01T10:00:00' }, 'brownouts.0.start must be an ISO 8601 date and time with an offset'],
    [{ ...valid, repeat: 'hourly' }, 'brownouts.0.repeat must be one of "daily", "weekly", got "hourly".'],
    [{ ...valid, repeat: 'daily', until: 'soon' }, 'brownouts.0.until must be an ISO 8601 date and time with an offset'],
    [{ ...valid, durationMinutes: 0 }, 'brownouts.0.durationMinutes must be a whole number from 1 to 525600, got 0.'],
    [{ ...valid, durationMinutes: 1.5 }, 'brownouts.0.durationMinutes must be a whole number from 1 to 525600, got 1.5.'],
    [{ name: 'x', durationMinutes: 30 }, 'brownouts.0.start is required.'],
    [{ ...valid, name: 'dec week' }, 'brownouts.0.name must be 1 to 64 letters, digits, "_", "." or "-", got "dec week".'],
    [
      { ...valid, durationMinute: 30 },
      'brownouts.0.durationMinute is not a configuration key (did you mean brownouts.0.durationMinutes?).',
    ],
    [
      { ...valid, until: '2026-12-08T10:00:00Z' },
      'brownouts entry 1 (dec-week-1) sets until without repeat; until ends a repeated brownout.',
    ],
    [{ ...valid, repeat: 'daily', until: '2026-11-30T10:00:00Z' }, 'brownouts entry 1 (dec-week-1) has until earlier than its start.'],
    [
      { ...valid, repeat: 'daily', durationMinutes: 1440 },
      'brownouts entry 1 (dec-week-1) must last less than the day it repeats in (1440 minutes).',
    ],
    [
      { ...valid, repeat: 'weekly', durationMinutes: 10080 },
      'brownouts entry 1 (dec-week-1) must last less than the week it repeats in (10080 minutes).',
    ],
  ])('%j is refused', (brownout, message) => {
    expect(attempt(brownout)).toThrow(`Invalid configuration: ${message}`);
  });

  it('refuses two brownouts of one name: it is their metric label', () => {
    expect(() => loadConfig({}, { brownouts: [valid, valid] })).toThrow(
      'Invalid configuration: brownouts entry 2 (dec-week-1) has the name of entry 1; each brownout has its own name.',
    );
  });

  it('refuses refuseAfterSunset without a sunset', () => {
    expect(() => loadConfig({}, { deprecation: { refuseAfterSunset: true } })).toThrow(
      'Invalid configuration: deprecation.refuseAfterSunset must be false unless deprecation.sunsetAt is set.',
    );
  });
});

describe('through the front door, on a clock the test sets', () => {
  let recorded: RecordedApp;
  let now = 0;

  beforeAll(async () => {
    recorded = await startRecordedApp(
      {
        deprecation: { sunsetAt: '2027-06-30T00:00:00Z' },
        clients: CLIENTS,
        brownouts: [
          { name: 'dec-week-1', operations: ['Search'], clients: ['warehouse'], start: '2026-12-01T10:00:00Z', durationMinutes: 30 },
          { name: 'shop-weekly', clients: ['shop'], start: '2026-12-02T00:00:00Z', durationMinutes: 60, repeat: 'weekly' },
        ],
      },
      { now: () => now },
    );
  });

  afterAll(() => recorded.close());

  beforeEach(() => {
    recorded.lines.length = 0;
    recorded.upstream.requests.length = 0;
  });

  const call = (binding: CallBinding, op: string, params: Readonly<Record<string, string>>): Promise<Response> =>
    legacyCall(recorded.base, binding, op, params);
  const searchDog = (binding: CallBinding, apiKey: string): Promise<Response> => call(binding, 'Search', { query: 'dog', apiKey });
  const hits = (): Record<string, unknown>[] => recorded.lines.filter((line) => line.event === 'deprecated_call');
  const metrics = async (): Promise<string> => (await fetch(`${recorded.admin}/metrics`)).text();

  const SUCCESSOR = '/product.search.cp?v=3&query=dog';
  const REFUSAL =
    `This operation is temporarily unavailable (scheduled brownout "dec-week-1" until 2026-12-01T10:30:00Z): Search is ` +
    `deprecated and will be switched off on 2027-06-30T00:00:00Z. Use /product.search.cp instead: ${SUCCESSOR}`;
  /** The same over HTTP GET/POST, written out once (docs/wire.md §6.3): HTML-encoded, then CRLF. */
  const REFUSAL_TEXT =
    `This operation is temporarily unavailable (scheduled brownout &quot;dec-week-1&quot; until ` +
    `2026-12-01T10:30:00Z): Search is deprecated and will be switched off on 2027-06-30T00:00:00Z. Use /product.search.cp instead: ` +
    `/product.search.cp?v=3&amp;query=dog\r\n`;

  it.each(CALL_BINDINGS)(
    '%s: in the window, the chosen client is refused with the replacement, its successor and the sunset, and nothing goes upstream',
    async (binding) => {
      now = at('2026-12-01T10:10:00Z');
      const response = await searchDog(binding, 'warehouse-key');
      const body = await response.text();
      expectRefusal(binding, response, body, REFUSAL);
      if (binding === 'httpGet') expect(body).toBe(REFUSAL_TEXT);
      // The window closes at 10:30: 20 minutes on.
      expect(response.headers.get('retry-after')).toBe('1200');
      expect(response.headers.get('link')).toBe(`<${recorded.upstream.origin}${SUCCESSOR}>; rel="successor-version", ${SELF_SERVICE_LINK}`);
      expect(response.headers.get('sunset')).toBe('Wed, 30 Jun 2027 00:00:00 GMT');
      expect(recorded.upstream.requests).toEqual([]);
      // The hit is the only line about the call.
      expect(recorded.lines).toHaveLength(1);
      expect(hits()[0]).toMatchObject({
        operation: 'Search',
        binding,
        client: 'warehouse',
        successor: SUCCESSOR,
        outcome: 'refused',
        reason: 'brownout',
        status: 500,
        upstreamRequests: 0,
      });
    },
  );

  it("the caller's own values reach the fault only as the successor's URL encoding, and the fault is well-formed XML", async () => {
    now = at('2026-12-01T10:10:00Z');
    // `<b>&"` as SOAP carries it.
    const response = await call('soap12', 'Search', { query: '&lt;b&gt;&amp;&quot;', apiKey: 'warehouse-key' });
    const text = REFUSAL.replace(SUCCESSOR, '/product.search.cp?v=3&query=%3Cb%3E%26%22');
    expectRefusal('soap12', response, await response.text(), text);
  });

  it.each(CALL_BINDINGS)(
    '%s: in the window, another client, and the chosen client calling another operation, are answered',
    async (binding) => {
      now = at('2026-12-01T10:10:00Z');
      const other = await searchDog(binding, 'shop-key');
      expect(other.status).toBe(200);
      await other.text();
      const stranger = await searchDog(binding, 'stranger-key');
      expect(stranger.status).toBe(200);
      await stranger.text();
      const lookup = await call(binding, 'ProductLookup', { productNumber: '42', apiKey: 'warehouse-key' });
      expect(lookup.status).toBe(200);
      await lookup.text();
      expect(hits().map(({ client, outcome }) => [client, outcome])).toEqual([
        ['shop', 'ok'],
        [expect.stringMatching(/^hmac:[0-9a-f]{12}$/), 'ok'],
        ['warehouse', 'ok'],
      ]);
    },
  );

  it.each([
    ['a moment before the window', '2026-12-01T09:59:59.999Z', 200],
    ['at its start', '2026-12-01T10:00:00.000Z', 500],
    ['a moment before its end', '2026-12-01T10:29:59.999Z', 500],
    ['at its end', '2026-12-01T10:30:00.000Z', 200],
    ['the next day (a one-off window)', '2026-12-02T10:10:00.000Z', 200],
  ])('%s (%s) the chosen client gets %i', async (_when, time, status) => {
    now = at(time);
    const response = await searchDog('httpGet', 'warehouse-key');
    expect(response.status).toBe(status);
    await response.text();
    expect(hits()[0]).toMatchObject({ outcome: status === 200 ? 'ok' : 'refused' });
  });

  it('a repeated window refuses every operation of its client, a call that does not translate too, without a successor', async () => {
    // The second week's window of shop-weekly: 2026-12-09T00:00Z for an hour.
    now = at('2026-12-09T00:15:00Z');
    const response = await call('soap11', 'AdvancedSearch', { query: 'dog', apiKey: 'shop-key', productTypes: 'Hovercraft' });
    const body = await response.text();
    const text =
      'This operation is temporarily unavailable (scheduled brownout "shop-weekly" until 2026-12-09T01:00:00Z): AdvancedSearch is ' +
      'deprecated and will be switched off on 2027-06-30T00:00:00Z. Use /product.search.cp instead.';
    expectRefusal('soap11', response, body, text);
    expect(response.headers.get('retry-after')).toBe('2700');
    expect(response.headers.get('link')).toBe(SELF_SERVICE_LINK);
    expect(hits()[0]).toMatchObject({ client: 'shop', outcome: 'refused', reason: 'brownout', successor: null });
  });

  it('a window after the sunset (refuseAfterSunset off) says the operation was due to be switched off on the sunset', async () => {
    // shop-weekly's window a week after the sunset of 2027-06-30.
    now = at('2027-07-07T00:15:00Z');
    const response = await searchDog('soap11', 'shop-key');
    const text =
      'This operation is temporarily unavailable (scheduled brownout "shop-weekly" until 2027-07-07T01:00:00Z): Search is deprecated ' +
      'and was due to be switched off on 2027-06-30T00:00:00Z. ' +
      `Use /product.search.cp instead: ${SUCCESSOR}`;
    expectRefusal('soap11', response, await response.text(), text);
    expect(response.headers.get('retry-after')).toBe('2700');
  });

  it('legacy_brownout_active is 1 while a window is open, and refused calls count as outcome "refused"', async () => {
    now = at('2026-12-01T10:10:00Z');
    await (await searchDog('httpGet', 'warehouse-key')).text();
    const during = await metrics();
    expect(during).toMatch(/^legacy_brownout_active\{brownout="dec-week-1"\} 1$/m);
    expect(during).toMatch(/^legacy_brownout_active\{brownout="shop-weekly"\} 0$/m);
    expect(during).toMatch(/^legacy_calls_total\{operation="Search",binding="httpGet",outcome="refused",client="warehouse"\} [1-9]/m);
    now = at('2026-12-01T10:30:00Z');
    expect(await metrics()).toMatch(/^legacy_brownout_active\{brownout="dec-week-1"\} 0$/m);
  });
});

describe('after the sunset, with refuseAfterSunset (the product as npm start runs it)', () => {
  const sunset = { deprecatedAt: '2020-01-01T00:00:00Z', sunsetAt: '2021-01-01T00:00:00Z' };

  it('refuses every caller on every binding for good, naming the replacement and the sunset, without Retry-After', async () => {
    const proxy = await startProxy({ deprecation: { ...sunset, refuseAfterSunset: true } });
    try {
      const text =
        'This operation is no longer available: ProductLookup was switched off on 2021-01-01T00:00:00Z. Use ' +
        '/product.searchForProduct.cp instead: /product.searchForProduct.cp?v=3&productId=42';
      for (const binding of CALL_BINDINGS) {
        const response = await legacyCall(proxy.url, binding, 'ProductLookup', { productNumber: '42', apiKey: `caller-${binding}` });
        const body = await response.text();
        expectRefusal(binding, response, body, text);
        expect(response.headers.get('retry-after')).toBeNull();
      }
      expect(await (await fetch(`${proxy.adminUrl}/metrics`)).text()).toMatch(
        /^legacy_calls_total\{operation="ProductLookup",binding="soap12",outcome="refused",client="other"\} 1$/m,
      );
    } finally {
      await proxy.stop();
    }
  });

  it('without refuseAfterSunset, a past sunset refuses nothing', async () => {
    const proxy = await startProxy({ deprecation: sunset });
    try {
      const response = await legacyCall(proxy.url, 'httpGet', 'ProductLookup', { productNumber: '42', apiKey: 'k' });
      expect(response.status).toBe(200);
      await response.text();
    } finally {
      await proxy.stop();
    }
  });
});

/** docs/wire.md §6.3: .NET's HtmlEncode of the characters a refusal text holds. */
const htmlEncoded = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** A refusal on each binding: what an exception of the web method gives (docs/wire.md §5.3, §6.3), the SOAP fault well-formed. */
function expectRefusal(binding: CallBinding, response: Response, body: string, text: string): void {
  expect(response.status).toBe(500);
  expect(response.headers.get('cache-control')).toBe('private');
  const expected: Readonly<Record<CallBinding, readonly [contentType: string, body: string]>> = {
    soap11: [XML_CONTENT_TYPE, expectedFault('1.1', 'soap:Server', UNABLE_TO_PROCESS + text)],
    soap12: [SOAP12_CONTENT_TYPE, expectedFault('1.2', 'soap:Receiver', UNABLE_TO_PROCESS + text)],
    httpGet: [TEXT_CONTENT_TYPE, `${htmlEncoded(text)}\r\n`],
    httpPost: [TEXT_CONTENT_TYPE, `${htmlEncoded(text)}\r\n`],
  };
  expect([response.headers.get('content-type'), body]).toEqual(expected[binding]);
  if (binding === 'soap11' || binding === 'soap12') expect(() => parseXml(body)).not.toThrow();
}
