import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { UPSTREAM_ENDPOINTS } from '../src/operations.js';
import { buildApp, type App } from '../src/server/app.js';
import { parseXml } from '../src/xml/parse.js';
import { recordingUpstream } from './support/pages.js';
import { rawRequest } from './support/raw-http.js';
import type { StubUpstream } from './support/stub-upstream.js';
import { SERVICE_NAMESPACE, SOAP11_ENV, SOAP12_ENV } from './support/wire.js';

/**
 * Hostile and malformed requests, written out and generated, over the four bindings: each gets an
 * answer of the contract's kinds in time, every XML answer parses, nothing invalid reaches the
 * upstream, the caller's key appears in no answer and no log line, and the process keeps serving.
 */

const KEY = 'Secret-Key-7fQ2';
const OPERATIONS = ['StoreLookup', 'StoreLookupPaged', 'ProductLookup', 'Search', 'AdvancedSearch'];
const STATUSES = new Set([200, 400, 404, 405, 413, 415, 500, 503]);
const UPSTREAM_PARAMS = new Set([
  'v',
  'appKey',
  'query',
  'merchandiseIds',
  'maxProductsPerDesign',
  'sort',
  'storeId',
  'productId',
  'pageNumber',
  'resultsPerPage',
  'page',
  'pageSize',
]);

let upstream: StubUpstream;
let app: App;
let proxy: string;
const lines: string[] = [];

beforeAll(async () => {
  upstream = await recordingUpstream(500);
  const config = loadConfig(
    {},
    { log: { level: 'info' }, upstream: { baseUrl: upstream.origin, callTimeoutMs: 2000 }, server: { bodyLimitBytes: 64 * 1024 } },
  );
  app = await buildApp(config, { logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }) });
  proxy = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app.fastify.close();
  await upstream.close();
});

interface Attack {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

async function expectContained(attack: Attack): Promise<void> {
  const response = await rawRequest(proxy, { ...attack, signal: AbortSignal.timeout(5000) });
  expect(STATUSES, `${attack.method} ${attack.path} → ${response.status}`).toContain(response.status);
  const type = String(response.headers['content-type'] ?? '');
  if (response.text !== '' && /xml/.test(type)) expect(() => parseXml(response.text), response.text.slice(0, 200)).not.toThrow();
  expect(response.text).not.toContain(KEY);
}

const envelope = (version: '1.1' | '1.2', op: string, inner: string): string =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${version === '1.1' ? SOAP11_ENV : SOAP12_ENV}"><soap:Body><${op} ` +
  `xmlns="${SERVICE_NAMESPACE}">${inner}</${op}></soap:Body></soap:Envelope>`;

const KNOWN: readonly (readonly [string, Attack])[] = [
  [
    'an external entity (XXE)',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}Search"` },
      body: `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${envelope('1.1', 'Search', '<query>&e;</query>')}`,
    },
  ],
  [
    'a billion laughs',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}Search"` },
      body:
        `<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c ` +
        `"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>${envelope('1.1', 'Search', '<query>&c;</query>')}`,
    },
  ],
  [
    'nesting 10,000 deep',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'application/soap+xml; charset=utf-8' },
      body: envelope('1.2', 'Search', `${'<x>'.repeat(10_000)}${'</x>'.repeat(10_000)}`),
    },
  ],
  [
    'a body over the limit',
    {
      method: 'POST',
      path: '/index.asmx/Search',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `query=${'a'.repeat(70_000)}`,
    },
  ],
  ['a query of a million characters', { method: 'GET', path: `/index.asmx/Search?query=${'%41'.repeat(2000)}&apiKey=${KEY}`, headers: {} }],
  ['a path escape out of the service', { method: 'GET', path: '/index.asmx/../../etc/passwd', headers: {} }],
  ['a malformed escape', { method: 'GET', path: '/index.asmx/Se%ZZarch?query=%', headers: {} }],
  [
    'an upstream parameter smuggled in a value',
    { method: 'GET', path: `/index.asmx/Search?query=${encodeURIComponent('dog&appKey=stolen&v=1')}&apiKey=${KEY}`, headers: {} },
  ],
  [
    'a store id with a path in it',
    { method: 'GET', path: `/index.asmx/StoreLookup?storeId=${encodeURIComponent('../../admin?x=1#')}&apiKey=${KEY}`, headers: {} },
  ],
  [
    'a SOAPAction with CR and NUL escaped',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/%0D%0AX-Evil:%201%00"' },
      body: envelope('1.1', 'Search', ''),
    },
  ],
  [
    'a CDATA end inside a value',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}Search"` },
      body: envelope('1.1', 'Search', `<query><![CDATA[ ]]]]><![CDATA[> ]]></query><apiKey>${KEY}</apiKey>`),
    },
  ],
  [
    'an int past Int32 with the key in the envelope',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}ProductLookup"` },
      body: envelope('1.1', 'ProductLookup', `<productNumber>99999999999999999999</productNumber><apiKey>${KEY}</apiKey>`),
    },
  ],
  [
    'a windows far past the end',
    { method: 'GET', path: `/index.asmx/AdvancedSearch?startResults=999999999&maxResults=999999999&apiKey=${KEY}`, headers: {} },
  ],
  [
    'a UTF-16 body that says UTF-8',
    {
      method: 'POST',
      path: '/index.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}Search"` },
      body: Buffer.from(envelope('1.1', 'Search', ''), 'utf16le').toString('latin1'),
    },
  ],
];

describe('hostile requests', () => {
  it.each(KNOWN)('%s gets an answer of the contract', async (_name, attack) => {
    await expectContained(attack);
  });

  it('300 generated ones over the four bindings: answered in time, XML that parses, no key, a valid upstream request', async () => {
    const text = fc.string({
      unit: fc.constantFrom(
        'a',
        'Z',
        '0',
        ' ',
        '<',
        '>',
        '&',
        '"',
        "'",
        '%',
        '+',
        '=',
        ';',
        '/',
        '\u0000',
        '\u0001',
        '\r',
        '\n',
        'é',
        '😀',
        '\uFFFE',
        '&amp;',
        '&#0;',
        ']]>',
      ),
      maxLength: 40,
    });
    const operation = fc.oneof(fc.constantFrom(...OPERATIONS), fc.constantFrom('search', 'Nope', '', '/', '%00', 'Search/x'));
    // The key only ever as the key: an action or a product type is echoed in its fault, as ASMX did.
    const param = fc.oneof(
      fc.tuple(
        fc.constantFrom(
          'query',
          'storeId',
          'version',
          'productTypes',
          'pageIndex',
          'pageSize',
          'productNumber',
          'startResults',
          'maxResults',
          'sort',
          'x',
        ),
        text,
      ),
      fc.constantFrom<[string, string]>(['apiKey', KEY], ['APIKEY', KEY], ['apiKey', `${KEY} `]),
    );
    const attack: fc.Arbitrary<Attack> = fc.oneof(
      fc.tuple(operation, fc.array(param, { maxLength: 6 })).map(
        ([op, params]): Attack => ({
          method: 'GET',
          path: `/index.asmx/${op}?${params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`,
          headers: {},
        }),
      ),
      fc
        .tuple(
          operation,
          fc.array(param, { maxLength: 6 }),
          fc.constantFrom('application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', 'text/xml'),
        )
        .map(
          ([op, params, type]): Attack => ({
            method: 'POST',
            path: `/index.asmx/${op}`,
            headers: type === '' ? {} : { 'content-type': type },
            body: params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'),
          }),
        ),
      fc
        .tuple(fc.constantFrom<'1.1' | '1.2'>('1.1', '1.2'), operation, fc.array(param, { maxLength: 6 }), text, fc.boolean())
        .map(([version, op, params, action, wellFormed]): Attack => {
          const inner = params
            .map(([k, v]) => (wellFormed ? `<${k}>${v.replace(/&(?!amp;)/g, '&amp;').replace(/</g, '&lt;')}</${k}>` : `<${k}>${v}</${k}>`))
            .join('');
          return {
            method: 'POST',
            path: '/index.asmx',
            headers:
              version === '1.1'
                ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${encodeURIComponent(action)}"` }
                : { 'content-type': `application/soap+xml; charset=utf-8; action="${SERVICE_NAMESPACE}${op}"` },
            body: envelope(version, op || 'Search', inner),
          };
        }),
      fc
        .tuple(fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND'), operation)
        .map(([method, op]): Attack => ({ method, path: `/index.asmx/${op}`, headers: {} })),
    );
    await fc.assert(fc.asyncProperty(attack, expectContained), { numRuns: 300 });

    const paths = new Set(Object.keys(UPSTREAM_ENDPOINTS));
    for (const asked of upstream.requests.map((request) => new URL(request.url ?? '/', 'http://upstream'))) {
      expect(paths).toContain(asked.pathname);
      expect(asked.searchParams.getAll('v')).toEqual(['3']);
      for (const name of asked.searchParams.keys()) expect(UPSTREAM_PARAMS).toContain(name);
    }
    expect(lines.join('\n')).not.toContain(KEY);
    expect((await fetch(`${proxy}/index.asmx/Search?query=dog`)).status).toBe(200);
  }, 120_000);
});
