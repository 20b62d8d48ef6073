import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import type { Caller } from '../src/clients/directory.js';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { start, type Running } from '../src/start/main.js';
import { compareReplies, DIFF_TEXT_LIMIT } from '../src/legacy-service/compare.js';
import { bucketOf, routeOf } from '../src/legacy-service/routes.js';
import type { LegacyRoute } from '../src/config/schema.js';
import { CALL_BINDINGS, legacyCall } from './support/calls.js';
import { startProxy } from './support/proxy.js';
import { rawRequest } from './support/raw-http.js';
import { dotnetUrlEncode } from './support/spellings.js';
import { startStubUpstream } from './support/stub-upstream.js';
import { SOAP11_ENV, SOAP12_ENV, XML_CONTENT_TYPE } from './support/wire.js';

/**
 * Shadow and passthrough (docs/migration.md §6): routed calls answered by a legacy origin as it is, or
 * by one path while the other is called in the background and the answers compared.
 */

const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';
const SEARCH = { query: 'dog', maxResults: '5', apiKey: 'secret-caller-key', version: '1.0' };
/** A call the demo upstream fails: the answer is a fault. */
const UNKNOWN_STORE = ['StoreLookup', { storeId: '1', apiKey: 'k' }] as const;
/** A port on loopback where nothing listens. */
const DEAD_ORIGIN = 'http://127.0.0.1:1';

// --- The comparison (pure) -------------------------------------------------------------------------

const soap = (payload: string, prefix = 'soap'): string =>
  `<?xml version="1.0" encoding="utf-8"?><${prefix}:Envelope ` +
  `xmlns:${prefix}="${SOAP11_ENV}"><${prefix}:Body>${payload}</${prefix}:Body></${prefix}:Envelope>`;
const searchAnswer = (items: string): string =>
  soap(
    `<SearchResponse xmlns="http://tempuri.org/"><SearchResult><searchResultSet xmlns="" ` +
      `total="2"><mainResults>${items}</mainResults></searchResultSet></SearchResult></SearchResponse>`,
  );
const ok = (body: string) => ({ status: 200, body });
const soapFault = (code: string, text: string) => ({
  status: 500,
  body: soap(`<soap:Fault><faultcode>${code}</faultcode><faultstring>${text}</faultstring><detail /></soap:Fault>`),
});

describe('comparing two answers (pure)', () => {
  const items =
    '<searchResultItem id="1" price="3"><title>Dog</title></searchResultItem><searchResultItem id="2" ' +
    'price="4"><title>Cat</title></searchResultItem>';

  it('ignores prefixes, namespace declarations, attribute order, whitespace-only text, comments and CDATA', () => {
    const other = soap(
      `<r:SearchResponse xmlns:r="http://tempuri.org/" xmlns:extra="urn:x">\n  <r:SearchResult>\n    <searchResultSet total="2" xmlns="">` +
        `<mainResults><!-- page 1 --><searchResultItem price="3" id="1"><title><![CDATA[Dog]]></title></searchResultItem>\n` +
        `<searchResultItem price="4" ` +
        `id="2"><title>Cat</title></searchResultItem></mainResults></searchResultSet></r:SearchResult></r:SearchResponse>`,
      'env',
    );
    expect(compareReplies('soap11', ok(searchAnswer(items)), ok(other))).toBeNull();
  });

  it('names the first differing attribute, text or item by its path, with both values', () => {
    const changedPrice = items.replace('price="4"', 'price="5"');
    expect(compareReplies('soap11', ok(searchAnswer(items)), ok(searchAnswer(changedPrice)))).toEqual({
      path: '/SearchResult/searchResultSet/mainResults/searchResultItem[2]/@price',
      translated: '4',
      legacy: '5',
    });
    expect(compareReplies('soap11', ok(searchAnswer(items)), ok(searchAnswer(items.replace('Cat', 'Cow'))))).toEqual({
      path: '/SearchResult/searchResultSet/mainResults/searchResultItem[2]/title/text()',
      translated: '"Cat"',
      legacy: '"Cow"',
    });
    const oneItem = items.slice(0, items.indexOf('</searchResultItem>') + '</searchResultItem>'.length);
    expect(compareReplies('soap11', ok(searchAnswer(oneItem)), ok(searchAnswer(items)))).toEqual({
      path: '/SearchResult/searchResultSet/mainResults/searchResultItem[2]',
      translated: '(none)',
      legacy: '<searchResultItem id="2" price="4"><title>"Cat"</title></searchResultItem>',
    });
  });

  it('compares names by namespace, not by prefix', () => {
    const namespaced = items.replace('<searchResultItem id="1"', '<searchResultItem xmlns="urn:other" id="1"');
    expect(compareReplies('soap11', ok(searchAnswer(items)), ok(searchAnswer(namespaced)))?.path).toBe(
      '/SearchResult/searchResultSet/mainResults/searchResultItem[1]',
    );
  });

  it('a fault on one side and a result on the other differ; two faults agree when their codes do', () => {
    const fault = soapFault('soap:Server', 'Server was unable to process request. ---> Unable to connect to the remote server');
    const diff = compareReplies('soap11', ok(searchAnswer(items)), fault);
    expect(diff?.path).toBe('/');
    expect(diff?.translated).toMatch(/^result <\{http:\/\/tempuri.org\/\}SearchResult><searchResultSet total="2">/);
    expect(diff?.legacy).toBe('fault Server: Server was unable to process request. ---> Unable to connect to the remote server');
    expect(compareReplies('soap11', fault, soapFault('soap:Server', 'another text'))).toBeNull();
    expect(compareReplies('soap11', fault, soapFault('soap:Client', 'another text'))?.path).toBe('/');
  });

  it('HTTP GET/POST: the documents compare; a 500 text against a document is a mismatch', () => {
    const document = (price: string): string =>
      `<?xml version="1.0" encoding="utf-8"?>\r\n<searchResultSet total="1">\r\n  <item price="${price}" />\r\n</searchResultSet>`;
    expect(compareReplies('httpGet', ok(document('1')), ok(document('1').replace(/\r\n */g, '')))).toBeNull();
    expect(compareReplies('httpPost', ok(document('1')), ok(document('2')))?.path).toBe('/searchResultSet/item/@price');
    const error = { status: 500, body: 'Unable to connect to the remote server\r\n' };
    expect(compareReplies('httpGet', error, { ...error, body: 'another text\r\n' })).toBeNull();
    expect(compareReplies('httpGet', ok(document('1')), error)).toMatchObject({
      path: '/',
      legacy: 'fault HTTP 500: Unable to connect to the remote server\r\n',
    });
  });

  it('cuts each value and the path, and never shows the caller key, even where an answer echoes it', () => {
    const long = 'x'.repeat(1000);
    const diff = compareReplies('soap11', ok(searchAnswer(items)), ok(searchAnswer(items.replace('Cat', long))));
    expect(diff?.legacy).toBe(`"${'x'.repeat(DIFF_TEXT_LIMIT - 1)}…`);
    const deep = (name: string): string => `<searchResultSet>${`<${name}>`.repeat(60)}1${`</${name}>`.repeat(60)}</searchResultSet>`;
    expect(compareReplies('httpGet', ok(deep('level')), ok(deep('level').replace('1', '2')))?.path).toHaveLength(DIFF_TEXT_LIMIT + 1);
    const echoed = compareReplies(
      'soap11',
      ok(searchAnswer(items)),
      soapFault('soap:Client', 'Unknown apiKey secret-caller-key (secret-caller-key)'),
      ['secret-caller-key'],
    );
    expect(echoed?.legacy).toBe('fault Client: Unknown apiKey [redacted] ([redacted])');
  });

  it('never shows a key an answer quotes: an apiKey or appKey element or attribute is no difference, and shows redacted', () => {
    const quoting = (key: string): string =>
      `<searchResultSet><request appKey="${key}"><apiKey>${key}</apiKey><query>dog</query></request></searchResultSet>`;
    expect(compareReplies('httpGet', ok(quoting('k-one')), ok(quoting('k-two')))).toBeNull();
    expect(compareReplies('httpGet', ok('<searchResultSet />'), ok(quoting('k-two')))).toEqual({
      path: '/searchResultSet/request',
      translated: '(none)',
      legacy: '<request appKey="[redacted]"><apiKey>"[redacted]"</apiKey><query>"dog"</query></request>',
    });
  });

  it('never shows the caller key in an element or attribute name, a namespace URI or the path, in any case or \\u-escaped', () => {
    const echoing = (text: string): string =>
      '<searchResultSet><p:Product xmlns:p="urn:K3ySecretQ7" p:KeyK3ySecretQ7="1">' +
      `<KeyK3ySecretQ7>${text}</KeyK3ySecretQ7></p:Product></searchResultSet>`;
    expect(compareReplies('httpGet', ok('<searchResultSet />'), ok(echoing('K3YSECRETQ7 \\u004B3ySecretQ7')), ['K3ySecretQ7'])).toEqual({
      path: '/searchResultSet/Product',
      translated: '(none)',
      legacy:
        '<{urn:[redacted]}Product {urn:[redacted]}Key[redacted]="1">' +
        '<Key[redacted]>"[redacted] [redacted]"</Key[redacted]></{urn:[redacted]}Product>',
    });
    expect(compareReplies('httpGet', ok(echoing('a')), ok(echoing('b')), ['K3ySecretQ7'])?.path).toBe(
      '/searchResultSet/Product/Key[redacted]/text()',
    );
    expect(compareReplies('httpGet', ok(echoing('a')), ok(echoing('a').replace('="1"', '="2"')), ['K3ySecretQ7'])?.path).toBe(
      '/searchResultSet/Product/@{urn:[redacted]}Key[redacted]',
    );
  });

  it('a value cut at the limit inside an echoed key shows no start of it, whatever its length or spelling', () => {
    const echo = (filler: number, key: string) => soapFault('soap:Client', `${'x'.repeat(filler)} ${dotnetUrlEncode(key)} is not a key`);
    // `fault Client: ` and 179 x's, then the key: the cut falls inside the marker.
    expect(compareReplies('soap11', ok(searchAnswer(items)), echo(179, 'a+b/c=d'), ['a+b/c=d'])?.legacy).toBe(
      `fault Client: ${'x'.repeat(179)} [redac…`,
    );
    // A key longer than all a diff reads of a value: redacted as far as it is read.
    const long = `${'k+'.repeat(150)}end`;
    expect(compareReplies('soap11', ok(searchAnswer(items)), echo(100, long), [long])?.legacy).toBe(
      `fault Client: ${'x'.repeat(100)} [redacted]…`,
    );
  });

  it('reads answers with the safe parser: a DTD is refused, never expanded', () => {
    const withEntity = `<?xml version="1.0"?><!DOCTYPE searchResultSet [<!ENTITY e "expanded">]><searchResultSet>&e;</searchResultSet>`;
    const diff = compareReplies('httpGet', ok('<searchResultSet>expanded</searchResultSet>'), ok(withEntity));
    expect(diff).toMatchObject({ path: '/', legacy: expect.stringMatching(/^fault HTTP 200: <\?xml/) as unknown });
    expect(diff?.legacy).not.toContain('<searchResultSet>expanded');
  });
});

// --- Routing (pure) --------------------------------------------------------------------------------

const caller = (name: string, fingerprint = clientFingerprint(`${name}-key`), label = name): Caller => ({
  name,
  label,
  fingerprint,
  team: null,
  contact: null,
});
const route = (fields: Partial<LegacyRoute> & Pick<LegacyRoute, 'mode'>): LegacyRoute => ({
  operations: [],
  clients: [],
  percent: 100,
  answerFrom: null,
  ...fields,
});

describe('routing a call (pure)', () => {
  it('takes the first route whose operations and clients match; none is the translated path', () => {
    const routes = [
      route({ mode: 'passthrough', operations: ['Search'], clients: ['warehouse'] }),
      route({ mode: 'shadow', operations: ['Search', 'ProductLookup'] }),
    ];
    expect(routeOf(routes, 'Search', caller('warehouse'))).toBe(routes[0]);
    expect(routeOf(routes, 'Search', caller('shop'))).toBe(routes[1]);
    expect(routeOf(routes, 'ProductLookup', caller('warehouse'))).toBe(routes[1]);
    expect(routeOf(routes, 'StoreLookup', caller('warehouse'))).toBeNull();
    // An unnamed caller is labelled `other`: a route that names clients never takes it.
    expect(routeOf([routes[0]!], 'Search', caller('sha256:0123456789ab', 'sha256:0123456789ab', 'other'))).toBeNull();
  });

  it('a percent of callers by a stable hash of their fingerprint: each caller always in or always out, about the share asked', () => {
    const fingerprints = Array.from({ length: 10_000 }, (_, index) => clientFingerprint(`key-${index}`));
    for (const percent of [0, 10, 35, 100]) {
      const routes = [route({ mode: 'shadow', percent })];
      const taken = fingerprints.filter(
        (fingerprint) => routeOf(routes, 'Search', caller(fingerprint, fingerprint, 'other')) !== null,
      ).length;
      expect(Math.abs(taken / fingerprints.length - percent / 100)).toBeLessThan(0.02);
    }
    const one = caller('x', clientFingerprint('steady-key'), 'other');
    const decisions = new Set(Array.from({ length: 50 }, () => routeOf([route({ mode: 'shadow', percent: 50 })], 'Search', one) !== null));
    expect(decisions.size).toBe(1);
    // Raising the percent only adds callers.
    const inAt10 = fingerprints.filter((fingerprint) => bucketOf(fingerprint) < 10);
    expect(inAt10.every((fingerprint) => bucketOf(fingerprint) < 20)).toBe(true);
  });
});

// --- Configuration ---------------------------------------------------------------------------------

describe('configuration of legacy routes', () => {
  const clients = [{ name: 'warehouse', apiKeys: ['warehouse-key'] }];
  it.each([
    [{ legacy: { routes: [{ mode: 'shadow' }] } }, 'legacy.routes need legacy.origin'],
    [
      { legacy: { origin: 'http://old.example', routes: [{ mode: 'shadow', operations: ['Serch'] }] } },
      'legacy.routes.0.operations.0 must be one of',
    ],
    [
      { legacy: { origin: 'http://old.example', routes: [{ mode: 'shadow', clients: ['shop'] }] }, clients },
      'legacy.routes entry 1 names the client "shop", which the clients table does not list.',
    ],
    [
      { legacy: { origin: 'http://old.example', routes: [{ mode: 'passthrough', answerFrom: 'legacy' }] } },
      'legacy.routes entry 1 sets answerFrom, which only a shadow route has',
    ],
    [
      { legacy: { origin: 'http://old.example', routes: [{ mode: 'mirror' }] } },
      'legacy.routes.0.mode must be one of "passthrough", "shadow", got "mirror".',
    ],
    [
      { legacy: { origin: 'http://old.example', routes: [{ mode: 'shadow', percent: 101 }] } },
      'legacy.routes.0.percent must be a whole number from 0 to 100',
    ],
    [{ legacy: { origin: 'ftp://user:pa55word@old.example' } }, 'legacy.origin must be an http or https URL, got "ftp://***@old.example".'],
  ])('%j is refused', (overrides, message) => {
    expect(() => loadConfig({}, overrides as Json)).toThrow(`Invalid configuration: ${message}`);
  });

  it('accepts routes to an origin with credentials, for configured clients', () => {
    const config = loadConfig(
      {},
      {
        clients,
        legacy: {
          origin: 'https://svc:pa55@old.example/',
          routes: [{ mode: 'shadow', clients: ['warehouse'], percent: 25, answerFrom: 'legacy' }],
        },
      },
    );
    expect(config.legacy.origin).toBe('https://svc:pa55@old.example');
    expect(config.legacy.routes[0]).toEqual({ mode: 'shadow', operations: [], clients: ['warehouse'], percent: 25, answerFrom: 'legacy' });
  });
});

// --- Over the wire ---------------------------------------------------------------------------------

interface LoggedProxy extends Running {
  /** Every line logged, parsed. */
  readonly lines: Record<string, unknown>[];
  /** The value of `legacy_shadow_comparisons_total` for `operation` and `result`. */
  comparisons(operation: string, result: string): Promise<number>;
}

/** The product (with its own demo upstream, the default catalog) routing calls to `origin` by `routes`. */
async function startRouted(origin: string, routes: Json[], legacy: Json = {}): Promise<LoggedProxy> {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const config = loadConfig(
    {},
    { server: { host: '127.0.0.1', port: 0, adminPort: 0 }, legacy: { origin, routes, ...(legacy as object) } },
  );
  const running = await start(config, logger);
  return {
    ...running,
    lines,
    async comparisons(operation, result) {
      const text = await (await fetch(`${running.adminUrl}/metrics`)).text();
      const line = text
        .split('\n')
        .find((candidate) => candidate.startsWith(`legacy_shadow_comparisons_total{operation="${operation}",result="${result}"}`));
      return line === undefined ? 0 : Number(line.split(' ')[1]);
    },
  };
}

/** Polls until `check` holds: comparisons finish after the answer. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 250; tries++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in 5 s');
}

/** The status of an answer read to its end: one left unread would hold its proxy's connection open when it stops. */
async function statusOf(answer: Promise<Response>): Promise<number> {
  const response = await answer;
  await response.arrayBuffer();
  return response.status;
}

const hits = (proxy: LoggedProxy) => proxy.lines.filter((line) => line.event === 'deprecated_call');

let origin: Running;
let otherCatalog: Running;
const started: Running[] = [];

beforeAll(async () => {
  // Another instance of the product is a perfect old service: it answers every binding as ASMX did.
  origin = await startProxy();
  otherCatalog = await startProxy({ demo: { seed: 7 } });
});

afterAll(async () => {
  await Promise.all([origin, otherCatalog, ...started].map((running) => running.stop()));
});

async function routed(target: string, routes: Json[], legacy: Json = {}): Promise<LoggedProxy> {
  const proxy = await startRouted(target, routes, legacy);
  started.push(proxy);
  return proxy;
}

describe('passthrough', () => {
  it.each(CALL_BINDINGS)(
    '%s: the answer is the origin’s, byte for byte (status, Content-Type, body), with the deprecation headers',
    async (binding) => {
      const proxy = await routed(origin.url, [{ mode: 'passthrough' }]);
      for (const [operation, params] of [['Search', SEARCH], UNKNOWN_STORE] as const) {
        const direct = await legacyCall(origin.url, binding, operation, params);
        const passed = await legacyCall(proxy.url, binding, operation, params);
        expect(passed.status).toBe(direct.status);
        expect(passed.headers.get('content-type')).toBe(direct.headers.get('content-type'));
        expect(Buffer.from(await passed.arrayBuffer()).equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
        expect(passed.headers.get('deprecation')).not.toBeNull();
      }
      const [good, fault] = hits(proxy);
      expect(good).toMatchObject({
        operation: 'Search',
        binding,
        route: 'passthrough',
        outcome: 'ok',
        reason: null,
        status: 200,
        upstreamRequests: 0,
        successor: '/product.search.cp?v=3&query=dog',
        successorPaging: null,
      });
      // The old service's own fault, relayed as it is; its replacement is still every page of the store.
      expect(fault).toMatchObject({
        operation: 'StoreLookup',
        route: 'passthrough',
        outcome: 'fault',
        reason: 'legacy_fault',
        status: 500,
        successorPaging: { pages: null, skip: 0, take: null },
      });
    },
  );

  it('forwards method, path below the origin, query, body, Content-Type, SOAPAction and User-Agent; nothing else', async () => {
    const stub = await startStubUpstream((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': XML_CONTENT_TYPE, 'x-internal': 'no' }).end('<ok />'));
    });
    try {
      const proxy = await routed(`${stub.origin}/old-root/`, [{ mode: 'passthrough' }]);
      const envelope =
        `<soap:Envelope xmlns:soap="${SOAP12_ENV}"><soap:Body><Search ` +
        `xmlns="http://tempuri.org/"><query>a</query></Search></soap:Body></soap:Envelope>`;
      const answer = await rawRequest(proxy.url, {
        method: 'POST',
        path: '/somewhere/../index.asmx?x=1',
        headers: {
          'Content-Type': 'application/soap+xml; charset=utf-8',
          SOAPAction: '"http://tempuri.org/Search"',
          'User-Agent': 'old-client/1.0',
          Cookie: 'session=1',
          Authorization: 'Basic eDp5',
        },
        body: envelope,
      });
      expect(answer).toMatchObject({ status: 200, text: '<ok />' });
      expect(answer.headers['x-internal']).toBeUndefined();
      const [seen] = stub.requests;
      expect(seen).toMatchObject({ method: 'POST', url: '/old-root/index.asmx?x=1' });
      expect(seen!.headers).toMatchObject({
        'content-type': 'application/soap+xml; charset=utf-8',
        soapaction: '"http://tempuri.org/Search"',
        'user-agent': 'old-client/1.0',
        host: `127.0.0.1:${stub.port}`,
      });
      expect(seen!.headers.cookie).toBeUndefined();
      expect(seen!.headers.authorization).toBeUndefined();
    } finally {
      await stub.close();
    }
  });

  it('a dead origin: 502 with a plain text, the hit says legacy_origin, and the process keeps serving', async () => {
    const proxy = await routed(DEAD_ORIGIN, [{ mode: 'passthrough', operations: ['Search'] }]);
    for (const binding of CALL_BINDINGS) {
      const answer = await legacyCall(proxy.url, binding, 'Search', SEARCH);
      expect(answer.status).toBe(502);
      expect(answer.headers.get('content-type')).toBe(TEXT_CONTENT_TYPE);
      expect(await answer.text()).toBe('502 Bad Gateway: the legacy service did not answer (unreachable).\r\n');
    }
    expect(hits(proxy)[0]).toMatchObject({ route: 'passthrough', outcome: 'fault', reason: 'legacy_origin', status: 502 });
    const translated = await legacyCall(proxy.url, 'soap11', 'ProductLookup', { productNumber: '1', apiKey: 'k' });
    expect(translated.status).toBe(200);
    await translated.text();
    expect(hits(proxy).at(-1)).toMatchObject({ route: 'translated', outcome: 'ok' });
  });

  it('an origin that does not answer within legacy.timeoutMs: 502 (timeout)', async () => {
    const stub = await startStubUpstream(() => {});
    try {
      const proxy = await routed(stub.origin, [{ mode: 'passthrough' }], { timeoutMs: 300 });
      const answer = await legacyCall(proxy.url, 'soap11', 'Search', SEARCH);
      expect(answer.status).toBe(502);
      expect(await answer.text()).toContain('(timeout)');
      expect(hits(proxy)[0]).toMatchObject({ outcome: 'fault', reason: 'legacy_origin', status: 502 });
    } finally {
      await stub.close();
    }
  });

  it('an origin that fails after its answer started: the answer is cut short, the hit says legacy_origin', async () => {
    const stub = await startStubUpstream((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': XML_CONTENT_TYPE });
      res.write('<searchResultSet>');
      setTimeout(() => res.destroy(), 50);
    });
    try {
      const proxy = await routed(stub.origin, [{ mode: 'passthrough' }]);
      const answer = await legacyCall(proxy.url, 'httpGet', 'Search', SEARCH);
      expect(answer.status).toBe(200);
      await expect(answer.text()).rejects.toThrow();
      await eventually(async () => hits(proxy).length === 1);
      expect(hits(proxy)[0]).toMatchObject({ route: 'passthrough', outcome: 'fault', reason: 'legacy_origin', status: 200 });
      expect((await fetch(`${proxy.url}/healthz`)).status).toBe(200);
    } finally {
      await stub.close();
    }
  });

  it('an answer declared larger than legacy.maxResponseBytes is refused before any of it is relayed', async () => {
    const stub = await startStubUpstream((_req, res) =>
      res.writeHead(200, { 'content-type': XML_CONTENT_TYPE, 'content-length': '5000' }).end('x'.repeat(5000)),
    );
    try {
      const proxy = await routed(stub.origin, [{ mode: 'passthrough' }], { maxResponseBytes: 1024 });
      const answer = await legacyCall(proxy.url, 'httpGet', 'Search', SEARCH);
      expect(answer.status).toBe(502);
      expect(await answer.text()).toContain('(too_large)');
    } finally {
      await stub.close();
    }
  });
});

describe('shadow', () => {
  it.each(CALL_BINDINGS)('%s: against an identical origin, every comparison is a match', async (binding) => {
    const proxy = await routed(origin.url, [{ mode: 'shadow', operations: ['Search', 'StoreLookup'] }]);
    const direct = await (await legacyCall(origin.url, binding, 'Search', SEARCH)).text();
    const answer = await legacyCall(proxy.url, binding, 'Search', SEARCH);
    expect(await answer.text()).toBe(direct);
    // Two faults: the origin's and the translation's agree.
    expect(await statusOf(legacyCall(proxy.url, binding, ...UNKNOWN_STORE))).toBe(500);
    await eventually(
      async () => (await proxy.comparisons('Search', 'match')) === 1 && (await proxy.comparisons('StoreLookup', 'match')) === 1,
    );
    expect(proxy.lines.filter((line) => line.event === 'shadow_mismatch')).toEqual([]);
    expect(hits(proxy)[0]).toMatchObject({ route: 'shadow', outcome: 'ok', upstreamRequests: 1 });
  });

  it.each(CALL_BINDINGS)(
    '%s: against an origin with another catalog, a mismatch is counted and logged once with a short diff, never the key',
    async (binding) => {
      const proxy = await routed(otherCatalog.url, [{ mode: 'shadow', operations: ['Search'] }]);
      expect(await statusOf(legacyCall(proxy.url, binding, 'Search', SEARCH))).toBe(200);
      await eventually(async () => (await proxy.comparisons('Search', 'mismatch')) === 1);
      const mismatches = proxy.lines.filter((line) => line.event === 'shadow_mismatch');
      expect(mismatches).toHaveLength(1);
      const [line] = mismatches as {
        level: number;
        operation: string;
        client: string;
        requestId: string;
        diff: { path: string; translated: string; legacy: string };
      }[];
      expect(line).toMatchObject({
        level: 40,
        operation: 'Search',
        binding,
        client: clientFingerprint(SEARCH.apiKey),
        requestId: hits(proxy)[0]!.requestId,
      });
      expect(line!.diff.path).toMatch(/^\/(SearchResult|searchResultSet)\//);
      expect(line!.diff.translated.length).toBeLessThanOrEqual(DIFF_TEXT_LIMIT + 1);
      expect(line!.diff.legacy).not.toBe(line!.diff.translated);
      expect(JSON.stringify(proxy.lines)).not.toContain(SEARCH.apiKey);
    },
  );

  it(
    'an origin whose fault quotes the key as .NET writes it in a URL (%2b, %2f, + for a space): the mismatch line never ' + 'holds it',
    async () => {
      const key = 'Se+cr et/K=y';
      const stub = await startStubUpstream((req, res) => {
        req.resume();
        // As ASP.NET quotes a value it could not use: the text of the exception, HTML-encoded, over HTTP GET.
        req.on('end', () =>
          res.writeHead(500, { 'content-type': TEXT_CONTENT_TYPE }).end(`Key ${dotnetUrlEncode(key)} is not valid for Search.\r\n`),
        );
      });
      try {
        const proxy = await routed(stub.origin, [{ mode: 'shadow', operations: ['Search'] }]);
        expect(await statusOf(legacyCall(proxy.url, 'httpGet', 'Search', { ...SEARCH, apiKey: key }))).toBe(200);
        await eventually(async () => (await proxy.comparisons('Search', 'mismatch')) === 1);
        const line = proxy.lines.find((candidate) => candidate.event === 'shadow_mismatch');
        expect(line).toMatchObject({ diff: { path: '/', legacy: 'fault HTTP 500: Key [redacted] is not valid for Search.\r\n' } });
        expect(JSON.stringify(proxy.lines)).not.toContain(dotnetUrlEncode(key));
      } finally {
        await stub.close();
      }
    },
  );

  it('answerFrom legacy: the caller gets the origin’s bytes, and the translated path is compared in the background', async () => {
    const proxy = await routed(origin.url, [{ mode: 'shadow', answerFrom: 'legacy' }]);
    for (const binding of CALL_BINDINGS) {
      const direct = await (await legacyCall(origin.url, binding, 'Search', SEARCH)).text();
      expect(await (await legacyCall(proxy.url, binding, 'Search', SEARCH)).text()).toBe(direct);
    }
    await eventually(async () => (await proxy.comparisons('Search', 'match')) === CALL_BINDINGS.length);
    expect(hits(proxy).every((hit) => hit.route === 'shadow' && hit.upstreamRequests === 0)).toBe(true);
  });

  it('a dead origin with answerFrom translated: callers are answered as usual, each comparison an error', async () => {
    const proxy = await routed(DEAD_ORIGIN, [{ mode: 'shadow' }]);
    for (const binding of CALL_BINDINGS) {
      const answer = await legacyCall(proxy.url, binding, 'Search', SEARCH);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('searchResultItem');
    }
    await eventually(async () => (await proxy.comparisons('Search', 'error')) === CALL_BINDINGS.length);
    expect(proxy.lines.find((line) => line.event === 'shadow_error')).toMatchObject({
      failed: { translated: null, legacy: 'legacy_origin: unreachable' },
    });
  });

  it('past legacy.maxShadowsInFlight a call is answered but not shadowed, and counted skipped', async () => {
    const proxy = await routed(origin.url, [{ mode: 'shadow' }], { maxShadowsInFlight: 0 });
    expect(await statusOf(legacyCall(proxy.url, 'httpGet', 'Search', SEARCH))).toBe(200);
    expect(await proxy.comparisons('Search', 'skipped')).toBe(1);
  });

  it('a percent route takes the same clients on every call', async () => {
    const proxy = await routed(origin.url, [{ mode: 'shadow', percent: 50 }]);
    const keys = Array.from({ length: 8 }, (_, index) => `client-${index}`);
    for (let round = 0; round < 2; round++) {
      for (const apiKey of keys) await (await legacyCall(proxy.url, 'httpGet', 'ProductLookup', { productNumber: '1', apiKey })).text();
    }
    const routes = new Map<unknown, Set<unknown>>();
    for (const hit of hits(proxy)) routes.set(hit.clientFingerprint, (routes.get(hit.clientFingerprint) ?? new Set()).add(hit.route));
    expect([...routes.values()].every((seen) => seen.size === 1)).toBe(true);
    for (const apiKey of keys)
      expect(routes.get(clientFingerprint(apiKey))).toEqual(new Set([bucketOf(clientFingerprint(apiKey)) < 50 ? 'shadow' : 'translated']));
  });
});
