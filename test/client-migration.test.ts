import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { clientStatus } from '../src/migration/status.js';
import { legacyCall } from './support/calls.js';
import { type RecordedApp, startRecordedApp } from './support/recorded-app.js';

/**
 * A status per client and each client's migration (issue 31, item 2): `GET /clients` and
 * `GET /clients/{client}` on the operator listener, as JSON and as pages, from the calls made.
 */

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T12:00:00.000Z');

describe('the status of a client', () => {
  const policy = (sunsetAt: string | null) => ({ sunsetAt, quietDays: 30 });
  const sunset = '2027-01-31T00:00:00.000Z';

  it('is ok once it has made no legacy call for quietDays, sunset or not', () => {
    expect(clientStatus(NOW - 30 * DAY, NOW, policy(sunset))).toEqual({ status: 'ok', fixBy: null, urgency: null });
    expect(clientStatus(NOW - 31 * DAY, NOW, policy(null))).toEqual({ status: 'ok', fixBy: null, urgency: null });
  });

  it('is deprecated while it calls and no sunset is set', () => {
    expect(clientStatus(NOW - 29 * DAY, NOW, policy(null))).toEqual({ status: 'deprecated', fixBy: null, urgency: null });
  });

  it('is fix-by the sunset: yellow more than 30 days ahead, red within them', () => {
    expect(clientStatus(NOW, NOW, policy(sunset))).toEqual({ status: 'fix-by', fixBy: sunset, urgency: 'yellow' });
    const near = Date.parse(sunset) - 30 * DAY;
    expect(clientStatus(near, near, policy(sunset))).toEqual({ status: 'fix-by', fixBy: sunset, urgency: 'red' });
    expect(clientStatus(near - 1, near - 1, policy(sunset))).toMatchObject({ urgency: 'yellow' });
  });

  it('is overdue when it still calls once the sunset has passed', () => {
    const after = Date.parse(sunset) + DAY;
    expect(clientStatus(after, after, policy(sunset))).toEqual({ status: 'overdue', fixBy: sunset, urgency: 'red' });
    // It called until the sunset and then stopped: overdue until quietDays have passed, then ok.
    expect(clientStatus(Date.parse(sunset) - DAY, after, policy(sunset))).toMatchObject({ status: 'overdue' });
    expect(clientStatus(Date.parse(sunset) - DAY, Date.parse(sunset) + 29 * DAY, policy(sunset))).toMatchObject({ status: 'ok' });
  });
});

describe('GET /clients and /clients/{client}', () => {
  const KEY = 'warehouse-secret-key';
  const STRANGER_KEY = 'stranger-secret-key';
  const SUNSET = new Date(Date.now() + 20 * DAY).toISOString();
  /** Days the operator listener's clock is ahead of the calls. */
  let later = 0;
  let app: RecordedApp;
  /** The Link header's successor-version of warehouse's SOAP Search. */
  let successor: string;

  beforeAll(async () => {
    app = await startRecordedApp(
      {
        deprecation: { sunsetAt: SUNSET, successorBaseUrl: 'https://open-api.example.com' },
        clients: [{ name: 'warehouse', team: 'Logistics <East>', contact: 'logistics@example.com', apiKeys: [KEY] }],
      },
      { now: () => Date.now() + later * DAY },
    );
    const calls = [
      legacyCall(app.base, 'httpGet', 'StoreLookup', { storeId: 'store-1', apiKey: KEY }, { 'user-agent': 'curl/8.5.0' }),
      legacyCall(
        app.base,
        'httpGet',
        'Search',
        { query: 'cat', apiKey: STRANGER_KEY },
        { 'user-agent': 'Zeep/4.2.1 (www.python-zeep.org)' },
      ),
    ];
    for (const response of await Promise.all(calls)) await response.text();
    const search = await legacyCall(app.base, 'soap11', 'Search', { query: 'dog', apiKey: KEY }, { 'user-agent': 'PHP-SOAP/8.2.7' });
    await search.text();
    successor = /<([^>]+)>; rel="successor-version"/.exec(search.headers.get('link') ?? '')?.[1] ?? '';
    expect(successor).toMatch(/^https:\/\/open-api\.example\.com\/product\.search\.cp\?/);
  });

  afterAll(async () => {
    await app.close();
  });

  const json = async (path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${app.admin}${path}`, { headers });
    const text = await response.text();
    for (const key of [KEY, STRANGER_KEY]) expect(text).not.toContain(key);
    return { status: response.status, type: response.headers.get('content-type'), text, body: JSON.parse(text) as Record<string, unknown> };
  };

  it('lists every client with its status, stack, last call and calls per operation and binding, red before the rest', async () => {
    later = 0;
    const { status, type, body } = await json('/clients');
    expect(status).toBe(200);
    expect(type).toBe('application/json; charset=utf-8');
    expect(body).toMatchObject({ version: 1, scope: 'instance', sunsetAt: SUNSET, quietDays: 30, folded: 0 });
    expect(body.clients).toEqual([
      {
        client: 'warehouse',
        configured: true,
        status: 'fix-by',
        fixBy: SUNSET,
        urgency: 'red',
        stack: 'php-soapclient',
        stackVersion: '8.2.7',
        firstSeen: expect.any(String),
        lastSeen: expect.any(String),
        calls: 2,
        operations: expect.arrayContaining([
          { operation: 'StoreLookup', binding: 'httpGet', calls: 1, lastSeen: expect.any(String) },
          { operation: 'Search', binding: 'soap11', calls: 1, lastSeen: expect.any(String) },
        ]),
      },
      expect.objectContaining({
        client: clientFingerprint(STRANGER_KEY),
        configured: false,
        status: 'fix-by',
        stack: 'python-zeep',
        stackVersion: '4.2.1',
        calls: 1,
      }),
    ]);
  });

  it("gives one client's migration: its card, and the request that replaces each of its calls, as its Link header named it", async () => {
    later = 0;
    const { status, body } = await json('/clients/warehouse');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      version: 1,
      client: 'warehouse',
      team: 'Logistics <East>',
      contact: 'logistics@example.com',
      status: 'fix-by',
      fixBy: SUNSET,
      stack: 'php-soapclient',
      language: 'php',
    });
    const operations = body.operations as { operation: string; binding: string; endpoint: string; replacement: string[] }[];
    const search = operations.find((use) => use.operation === 'Search');
    expect(search).toMatchObject({ binding: 'soap11', calls: 1, endpoint: '/product.search.cp', replacement: [successor] });
    expect(operations.find((use) => use.operation === 'StoreLookup')?.replacement).toEqual([
      expect.stringMatching(/^https:\/\/open-api\.example\.com\/product\.searchForProductsOfStore\.cp\?.*storeId=store-1/),
    ]);
  });

  it("judges at the listener's clock: ok after quietDays without a call, overdue while still calling after the sunset", async () => {
    later = 21;
    expect((await json('/clients/warehouse')).body).toMatchObject({ status: 'overdue', fixBy: SUNSET, urgency: 'red' });
    later = 31;
    expect((await json('/clients/warehouse')).body).toMatchObject({ status: 'ok', fixBy: null, urgency: null });
    later = 0;
  });

  it('renders the same as pages, for NAME.html or a browser asking for HTML, everything from the calls encoded', async () => {
    later = 0;
    for (const [path, headers] of [
      ['/clients/warehouse.html', {}],
      ['/clients/warehouse', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }],
    ] as const) {
      const response = await fetch(`${app.admin}${path}`, { headers });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain(`fix by ${SUNSET.slice(0, 10)}`);
      expect(html).toContain('Logistics &lt;East&gt;');
      expect(html).toContain('php-soapclient 8.2.7');
      // The code of its stack's language open first; the key a placeholder.
      expect(html).toContain('<details open><summary>php</summary><pre><code>&lt;?php');
      expect(html).toContain('YOUR_APP_KEY');
      expect(html).toContain(successor.replaceAll('&', '&amp;'));
      expect(html).not.toContain('<script');
      expect(html).not.toContain(KEY);
    }
    const list = await fetch(`${app.admin}/clients.html`);
    const html = await list.text();
    expect(html).toContain('href="clients/warehouse.html"');
    expect(html).toContain(`href="clients/${encodeURIComponent(clientFingerprint(STRANGER_KEY))}.html"`);
  });

  it('answers 404 for a client with no call in the ledger, and for the folded callers', async () => {
    for (const client of ['nobody', 'other']) {
      const { status, body } = await json(`/clients/${client}`);
      expect(status).toBe(404);
      expect(body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    }
  });

  it('is not on the service port unless written down', async () => {
    expect((await fetch(`${app.base}/clients`)).status).not.toBe(200);
  });
});
