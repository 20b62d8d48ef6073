import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { legacyCall } from './support/calls.js';
import { type RecordedApp, startRecordedApp } from './support/recorded-app.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { addressGroup, addressLimit } from '../src/server/address-limit.js';

/**
 * `GET /deprecation/status` (issue 31, item 4): a caller reads its own migration with its own key, on
 * the service port, and learns nothing of any other caller nor which keys exist.
 */

const DAY = 86_400_000;
const KEY = 'warehouse-secret-key';
const OTHER_KEY = 'partner-secret-key';
/** Warehouse's second key, which no call used. */
const UNUSED_KEY = 'warehouse-spare-key';
const BRANCH_KEY = 'branch-secret-key';
/** The key of a configured client that made no call. */
const DORMANT_KEY = 'dormant-secret-key';

let app: RecordedApp;
let address = 0;
/** Each test its own caller address (the app trusts one hop of X-Forwarded-For), so that the per-address limit is each test's own. */
const from = (): Record<string, string> => ({ 'x-forwarded-for': `198.51.100.${++address}` });

beforeAll(async () => {
  app = await startRecordedApp({
    server: { trustProxy: 1 },
    deprecation: { sunsetAt: new Date(Date.now() + 60 * DAY).toISOString(), clientIdKey: TEST_CLIENT_ID_KEY },
    clients: [
      { name: 'warehouse', team: 'Logistics', contact: 'logistics@example.com', apiKeys: [KEY, UNUSED_KEY] },
      // Named by its key and by its addresses: whoever calls from them is counted under it.
      { name: 'branch', team: 'Branch office', apiKeys: [BRANCH_KEY], addresses: ['192.0.2.0/24'] },
      { name: 'dormant', team: 'Dormant team', contact: 'dormant@example.com', apiKeys: [DORMANT_KEY] },
    ],
  });
  for (const response of [
    await legacyCall(app.base, 'soap11', 'Search', { query: 'dog', apiKey: KEY }, { 'user-agent': 'PHP-SOAP/8.2.7' }),
    await legacyCall(app.base, 'httpGet', 'ProductLookup', { productNumber: '42', apiKey: OTHER_KEY }, { 'user-agent': 'curl/8.5.0' }),
    // A caller with no key from branch's addresses: counted under branch.
    await legacyCall(app.base, 'httpGet', 'Search', { query: 'private-query' }, { 'x-forwarded-for': '192.0.2.7' }),
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

  it('answers the key of a configured client with no call as any key never seen: no name, no card', async () => {
    const dormant = JSON.parse((await status(`?apiKey=${DORMANT_KEY}`)).text) as Record<string, unknown>;
    const unknown = JSON.parse((await status('?apiKey=totally-unknown-key')).text) as Record<string, unknown>;
    for (const answer of [dormant, unknown]) {
      expect(answer).toMatchObject({ configured: false, team: null, contact: null, calls: 0, client: expect.stringMatching(/^hmac:/) });
    }
    expect(JSON.stringify(dormant)).not.toContain('dormant');
    // A second key of a client with calls is that client's.
    expect(JSON.parse((await status(`?apiKey=${UNUSED_KEY}`)).text)).toMatchObject({ client: 'warehouse', calls: 1 });
  });

  it('reads the key as the legacy bindings do: apikey in any case, a repeated one comma-joined', async () => {
    const { response, text } = await status(`?APIKEY=${KEY}`);
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ client: 'warehouse', calls: 1 });
    const repeated = JSON.parse((await status(`?apiKey=${KEY}&apikey=${KEY}`)).text) as Record<string, unknown>;
    expect(repeated).toMatchObject({ client: clientFingerprint(`${KEY},${KEY}`, TEST_CLIENT_ID_KEY), calls: 0 });
  });

  it('shows a client the table names by its addresses the counts of its calls, not the requests others made from them', async () => {
    const { text } = await status(`?apiKey=${BRANCH_KEY}`);
    const body = JSON.parse(text) as { client: string; calls: number; operations: { replacement: string[]; snippets: unknown }[] };
    expect(body).toMatchObject({ client: 'branch', calls: 1 });
    expect(body.operations).toEqual([expect.objectContaining({ operation: 'Search', replacement: [], snippets: null })]);
    expect(text).not.toContain('private-query');
  });

  it('asks for a key when none is presented, and for one when two differ', async () => {
    for (const [query, headers] of [
      ['', {}],
      ['?apiKey=', {}],
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

describe('the per-address limit', () => {
  it('counts an IPv4 address as itself, and an IPv6 one by its /64', () => {
    expect(addressGroup('203.0.113.9')).toBe('203.0.113.9');
    expect(addressGroup('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('2001:db8:0:0:ffff::2')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('2001:0db8:0001:0002:0003:0004:0005:0006')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
  });

  it('gives a bucket of its burst, refilled at its rate, and forgets the address asked least recently past its bound', () => {
    const limit = addressLimit({ burst: 2, perMinute: 60, maxAddresses: 2 });
    expect([limit.take('a', 0), limit.take('a', 0), limit.take('a', 0)]).toEqual([
      { allowed: true },
      { allowed: true },
      { allowed: false, retryAfterSeconds: 1 },
    ]);
    expect(limit.take('a', 1000)).toEqual({ allowed: true });
    limit.take('b', 1000);
    limit.take('c', 1000);
    // `a` was forgotten, and starts with a full bucket again.
    expect([limit.take('a', 1000), limit.take('a', 1000)]).toEqual([{ allowed: true }, { allowed: true }]);
  });
});
