import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { legacyCall } from './support/calls.js';
import { type RecordedApp, startRecordedApp } from './support/recorded-app.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';

/**
 * `GET /deprecation/status` (issue 31, item 4): a caller reads its own migration with its own key, on
 * the service port, and learns nothing of any other caller nor which keys exist.
 */

const DAY = 86_400_000;
const KEY = 'warehouse-secret-key';
const OTHER_KEY = 'partner-secret-key';

let app: RecordedApp;
let address = 0;
/** Each test its own caller address (the app trusts X-Forwarded-For), so that the per-address limit is each test's own. */
const from = (): Record<string, string> => ({ 'x-forwarded-for': `198.51.100.${++address}` });

beforeAll(async () => {
  app = await startRecordedApp({
    server: { trustProxy: true },
    deprecation: { sunsetAt: new Date(Date.now() + 60 * DAY).toISOString(), clientIdKey: TEST_CLIENT_ID_KEY },
    clients: [{ name: 'warehouse', team: 'Logistics', contact: 'logistics@example.com', apiKeys: [KEY] }],
  });
  for (const response of [
    await legacyCall(app.base, 'soap11', 'Search', { query: 'dog', apiKey: KEY }, { 'user-agent': 'PHP-SOAP/8.2.7' }),
    await legacyCall(app.base, 'httpGet', 'ProductLookup', { productNumber: '42', apiKey: OTHER_KEY }, { 'user-agent': 'curl/8.5.0' }),
  ])
    await response.text();
});

afterAll(async () => {
  await app.close();
});

async function status(query: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${app.base}/deprecation/status${query}`, { headers: { ...from(), ...headers } });
  return { response, text: await response.text() };
}

describe('GET /deprecation/status', () => {
  it("answers a caller that presents its key with its own migration, and nothing of another's", async () => {
    for (const [query, headers] of [
      [`?apiKey=${KEY}`, {}],
      ['', { 'x-api-key': KEY }],
    ] as const) {
      const { response, text } = await status(query, headers);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = JSON.parse(text) as Record<string, unknown>;
      expect(body).toMatchObject({ version: 1, client: 'warehouse', team: 'Logistics', status: 'fix-by', urgency: 'yellow' });
      expect(body).toMatchObject({ stack: 'php-soapclient', calls: 1 });
      expect(body.operations).toEqual([
        expect.objectContaining({
          operation: 'Search',
          binding: 'soap11',
          replacement: [expect.stringMatching(/\/product\.search\.cp\?v=3&query=dog$/)],
        }),
      ]);
      for (const secret of [KEY, OTHER_KEY, clientFingerprint(OTHER_KEY, TEST_CLIENT_ID_KEY), 'productId=42'])
        expect(text).not.toContain(secret);
    }
    const partner = JSON.parse((await status(`?apiKey=${OTHER_KEY}`)).text) as Record<string, unknown>;
    expect(partner).toMatchObject({ client: clientFingerprint(OTHER_KEY, TEST_CLIENT_ID_KEY), stack: 'curl', calls: 1 });
  });

  it('answers a key never seen with "no legacy calls seen", in the same shape as any other answer', async () => {
    const seen = JSON.parse((await status(`?apiKey=${KEY}`)).text) as Record<string, unknown>;
    const { response, text } = await status('?apiKey=never-seen-key');
    expect(response.status).toBe(200);
    const unseen = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(unseen).sort()).toEqual(Object.keys(seen).sort());
    expect(unseen).toMatchObject({ status: 'ok', calls: 0, operations: [], lastSeen: null, message: 'No legacy calls seen for this key.' });
    expect(text).not.toContain('never-seen-key');
  });

  it('asks for a key when none is presented, and for one when two differ', async () => {
    for (const [query, headers] of [
      ['', {}],
      ['?apiKey=', {}],
      [`?apiKey=${KEY}&apiKey=${KEY}`, {}],
      [`?apiKey=${KEY}`, { 'x-api-key': OTHER_KEY }],
    ] as const) {
      const { response, text } = await status(query, headers);
      expect(response.status).toBe(400);
      expect(JSON.parse(text)).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(text).not.toContain(KEY);
    }
  });

  it('renders the same as a page for a browser', async () => {
    const { response, text } = await status(`?apiKey=${KEY}`, { accept: 'text/html,*/*;q=0.8' });
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(text).toContain('<h1>warehouse</h1>');
    expect(text).not.toContain(KEY);
    const unseen = await status('?apiKey=never-seen-key', { accept: 'text/html' });
    expect(unseen.text).toContain('No legacy calls seen for this key.');
  });

  it('limits each address: 10 at once, then one every 2 s, with Retry-After', async () => {
    const headers = { 'x-forwarded-for': '203.0.113.77' };
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) {
      const response = await fetch(`${app.base}/deprecation/status?apiKey=${KEY}`, { headers });
      await response.text();
      answers.push(response.status);
      if (response.status === 429) expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(answers).toEqual([...Array(10).fill(200), 429, 429]);
    // Another address is not held back.
    expect((await status(`?apiKey=${KEY}`)).response.status).toBe(200);
  });

  it('never writes the key to the log', () => {
    const logged = JSON.stringify(app.lines);
    expect(logged).not.toContain(KEY);
    expect(logged).not.toContain('never-seen-key');
  });
});

describe('GET /deprecation/status with deprecation.selfService off', () => {
  it('is answered as any other path outside the service', async () => {
    const off = await startRecordedApp({ deprecation: { selfService: false } });
    try {
      const [status, elsewhere] = await Promise.all([
        fetch(`${off.base}/deprecation/status?apiKey=${KEY}`),
        fetch(`${off.base}/deprecation/elsewhere?apiKey=${KEY}`),
      ]);
      expect(status.status).toBe(elsewhere.status);
      expect(await status.text()).toBe(await elsewhere.text());
    } finally {
      await off.close();
    }
  });
});
