import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/deprecation/hits.js';
import type { LedgerJson } from '../src/migration/ledger.js';
import type { Running } from '../src/main.js';
import { startProxy } from './support/proxy.js';
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
  const body = `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body><Search xmlns="${SERVICE_NAMESPACE}"><query>${query}</query><apiKey>${apiKey}</apiKey></Search></soap:Body></soap:Envelope>`;
  return fetch(`${proxy.url}/index.asmx`, { method: 'POST', headers: { 'content-type': XML_CONTENT_TYPE, soapaction: `"${SERVICE_NAMESPACE}Search"` }, body });
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
    expect(ledger.entries.map(({ client, operation, binding, calls, outcomes }) => ({ client, operation, binding, calls, outcomes }))).toEqual([
      { client: first, operation: 'Search', binding: 'httpGet', calls: 2, outcomes: { ok: 2, fault: 0, shed: 0, refused: 0 } },
      // A call that cannot be read names no caller.
      { client: 'anonymous', operation: 'ProductLookup', binding: 'httpGet', calls: 1, outcomes: { ok: 0, fault: 1, shed: 0, refused: 0 } },
      { client: clientFingerprint('ledger-key-2'), operation: 'Search', binding: 'soap11', calls: 1, outcomes: { ok: 1, fault: 0, shed: 0, refused: 0 } },
    ]);
    for (const entry of ledger.entries) {
      expect(Date.parse(entry.firstSeen)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(entry.lastSeen)).toBeGreaterThanOrEqual(Date.parse(entry.firstSeen));
      expect(Date.parse(entry.lastSeen)).toBeLessThanOrEqual(Date.now());
    }
  });
});
