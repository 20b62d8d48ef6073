import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuiltProxy, startBuilt } from './support/built-proxy.js';
import { CALL_BINDINGS, legacyCall } from './support/calls.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { documentedEvents, linesHolding, logProblems, loudEvents } from './support/log-check.js';
import { OPERATIONS, SERVICE_NAMESPACE, SOAP11_ENV, XML_CONTENT_TYPE, XML_DECLARATION } from './support/wire.js';

/**
 * The log of the built proxy as an operator reads it (issue 28): a normal day of calls, description
 * pages, faults, probes and operator endpoints writes no line at warn or above but those that
 * docs/operating.md lists for the case, and no line anywhere holds an apiKey a caller sent, however
 * it was sent (query, form, envelope, header).
 */

const ROOT = join(import.meta.dirname, '..');

/** A key no other text in a log holds by chance, sent by every request below. */
const KEY = 'Zq7LeakCanaryKey41';

const PARAMS: Readonly<Record<(typeof OPERATIONS)[number], Record<string, string>>> = {
  StoreLookup: { storeId: 'spayneuter' },
  StoreLookupPaged: { storeId: 'spayneuter', pageIndex: '0', pageSize: '10' },
  ProductLookup: { productNumber: '30003308' },
  Search: { query: 'dog' },
  AdvancedSearch: { query: 'dog', productTypes: 'Mug', startResults: '0', maxResults: '10', sort: 'by-date-desc' },
};

/** A SOAP 1.1 request of `op` with this body. */
function soap(body: string, op = 'Search'): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': XML_CONTENT_TYPE, soapaction: `"${SERVICE_NAMESPACE}${op}"` },
    body: `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body>${body}</soap:Body></soap:Envelope>`,
  };
}

/** Headers where a caller, or a gateway in front of it, may put a key. */
const KEY_HEADERS = { 'x-api-key': KEY, authorization: `Bearer ${KEY}`, apikey: KEY };

describe.sequential('the log of a normal day', () => {
  let proxy: BuiltProxy;
  beforeAll(async () => {
    proxy = await startBuilt({ CLIENT_ID_KEY: TEST_CLIENT_ID_KEY });
  });
  afterAll(async () => {
    await proxy?.stop();
    // The stop's own lines are part of the day too.
    expect(linesHolding(proxy.lines, [KEY])).toEqual([]);
  });

  /** Lines written while `run` ran, once the hits of its calls are in. */
  async function linesOf(run: () => Promise<void>): Promise<string[]> {
    const from = proxy.lines.length;
    await run();
    await new Promise((resolve) => setTimeout(resolve, 100));
    return proxy.lines.slice(from);
  }

  it('starts saying only that the demo upstream is in use', () => {
    expect(logProblems(proxy.lines, [KEY], ['demo_upstream'])).toEqual([]);
  });

  it('serves every operation over every binding, the key in the call and in headers, with no warning and no key', async () => {
    const seen = await linesOf(async () => {
      for (const op of OPERATIONS) {
        for (const binding of CALL_BINDINGS) {
          const response = await legacyCall(proxy.url, binding, op, { ...PARAMS[op], apiKey: KEY }, KEY_HEADERS);
          expect(response.status, `${op} over ${binding}`).toBe(200);
          await response.arrayBuffer();
        }
      }
    });
    expect(logProblems(seen, [KEY])).toEqual([]);
    expect(seen.filter((line) => line.includes('"event":"deprecated_call"'))).toHaveLength(20);
  });

  it('answers each description page once, with the key in its query, with no warning and no key', async () => {
    const seen = await linesOf(async () => {
      for (const query of ['?WSDL', '?wsdl', '?disco', '', '?op=Search', '?op=StoreLookupPaged']) {
        const separator = query === '' ? '?' : '&';
        const response = await fetch(`${proxy.url}/index.asmx${query}${separator}apiKey=${KEY}&APIKEY=${KEY}`, { headers: KEY_HEADERS });
        expect(response.status, query).toBe(200);
        await response.arrayBuffer();
      }
    });
    expect(logProblems(seen, [KEY])).toEqual([]);
  });

  it('answers the documented faults and errors with no warning and no key', async () => {
    const seen = await linesOf(async () => {
      const requests: [string, RequestInit][] = [
        // Not found, an unknown method, the wrong HTTP method, each with the key in the URL.
        [`/nope?apiKey=${KEY}`, {}],
        [`/index.asmx/Nope?apiKey=${KEY}`, {}],
        [`/index.asmx/Search?query=dog&apiKey=${KEY}`, { method: 'PUT' }],
        // A bad int, an unknown product type, a store the upstream does not know (its error document).
        [`/index.asmx/StoreLookupPaged?storeId=x&pageIndex=abc&pageSize=1&apiKey=${KEY}`, {}],
        [`/index.asmx/AdvancedSearch?query=dog&productTypes=Hovercraft&startResults=0&maxResults=1&sort=&apiKey=${KEY}`, {}],
        [`/index.asmx/StoreLookup?storeId=nosuchstore&apiKey=${KEY}`, {}],
        // Envelopes: malformed around the key, a key in a SOAP header, a DTD, an unknown operation.
        ['/index.asmx', soap(`<Search xmlns="${SERVICE_NAMESPACE}"><apiKey>${KEY}</apiKey><query>dog</query></Search`)],
        ['/index.asmx', soap(`<Search xmlns="${SERVICE_NAMESPACE}"><apiKey>${KEY}</apiKey><query>dog<query></Search>`)],
        [
          '/index.asmx',
          soap(
            `<StoreLookupPaged ` +
              `xmlns="${SERVICE_NAMESPACE}"><storeId>x</storeId><pageIndex>${KEY}</pageIndex><apiKey>${KEY}</apiKey></StoreLookupPaged>`,
            'StoreLookupPaged',
          ),
        ],
        ['/index.asmx', soap(`<Nope xmlns="${SERVICE_NAMESPACE}"><apiKey>${KEY}</apiKey></Nope>`, 'Nope')],
        [
          '/index.asmx',
          {
            ...soap(''),
            body: `<!DOCTYPE x [<!ENTITY k "${KEY}">]><soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body>&k;</soap:Body></soap:Envelope>`,
          },
        ],
        // A form that is not one.
        ['/index.asmx/Search', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `apiKey=${KEY}` }],
      ];
      for (const [path, init] of requests) {
        const response = await fetch(`${proxy.url}${path}`, {
          ...init,
          headers: { ...KEY_HEADERS, ...(init.headers as Record<string, string>) },
        });
        expect(response.status, path).toBeGreaterThanOrEqual(400);
        await response.arrayBuffer();
      }
    });
    expect(logProblems(seen, [KEY])).toEqual([]);
  });

  it('answers the probes and the operator endpoints with no warning and no key', async () => {
    const seen = await linesOf(async () => {
      for (const url of [
        `${proxy.url}/healthz`,
        `${proxy.url}/readyz`,
        `${proxy.adminUrl}/healthz`,
        `${proxy.adminUrl}/readyz`,
        `${proxy.adminUrl}/metrics`,
        `${proxy.adminUrl}/ledger?apiKey=${KEY}`,
        `${proxy.adminUrl}/ledger?limit=abc`,
      ]) {
        const response = await fetch(url, { headers: KEY_HEADERS });
        expect(response.status, url).toBeLessThan(500);
        const body = await response.text();
        expect(body, url).not.toContain(KEY);
      }
    });
    expect(logProblems(seen, [KEY])).toEqual([]);
  });
});

describe('the log of a bad day', () => {
  it('says an unreachable upstream as upstream_failure, each line without the key', async () => {
    const proxy = await startBuilt({ CLIENT_ID_KEY: TEST_CLIENT_ID_KEY, UPSTREAM_URL: 'http://127.0.0.1:9/api' });
    try {
      const from = proxy.lines.length;
      for (const binding of CALL_BINDINGS) {
        const response = await legacyCall(proxy.url, binding, 'Search', { query: 'dog', apiKey: KEY }, KEY_HEADERS);
        expect(response.status).toBe(500);
        await response.arrayBuffer();
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      const loud = loudEvents(proxy.lines.slice(from));
      expect(logProblems(proxy.lines.slice(from), [KEY], ['upstream_failure'])).toEqual([]);
      expect(new Set(loud)).toEqual(new Set(['upstream_failure']));
      expect(documentedEvents().get('upstream_failure')).toBe('warn');
    } finally {
      await proxy.stop();
    }
    expect(linesHolding(proxy.lines, [KEY])).toEqual([]);
  });

  it('says a missing fleet key at start, and nothing else, without CLIENT_ID_KEY', async () => {
    const proxy = await startBuilt({});
    await proxy.stop();
    const loud = loudEvents(proxy.lines);
    expect(loud).toEqual(['demo_upstream', 'client_id_key']);
    expect(documentedEvents().get('client_id_key')).toBe('warn');
  });
});

describe('docs/operating.md, Log events', () => {
  it('lists every event the proxy logs, at the level it logs it', () => {
    const documented = documentedEvents();
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    const logged = new Map<string, string>();
    for (const file of files) {
      const source = readFileSync(join(ROOT, 'src', file), 'utf8');
      for (const [, level, event] of source.matchAll(
        /\.(trace|debug|info|warn|error|fatal)\(\s*\{\s*(?:[a-z]+(?:: [^,]+)?, )?event: '([a-z_]+)'/g,
      ))
        logged.set(event as string, level as string);
    }
    expect(logged.size).toBeGreaterThan(15);
    for (const [event, level] of logged) {
      expect(documented.has(event), `${event} in docs/operating.md`).toBe(true);
      // An event logged at two levels lists the lower first (config_reloaded: info, warn with a restart to make).
      if (documented.get(event) !== level) expect(`${event}: ${level}`).toMatch(/^(config_reloaded|redis_recovered): /);
    }
  });
});
