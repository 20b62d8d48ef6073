import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as soap from 'soap';
import type { Catalog, Design, Product } from '../src/demo/catalog.js';
import { parseXml } from '../src/xml/parse.js';
import { childElements, type XmlElement } from '../src/xml/tree.js';
import { STORE_PAGE_SIZE, demoCatalog, hitStacksSince, pairLogProblems, startProxyPair } from './support/clients.js';
import type { TestProxy } from './support/proxy.js';
import {
  ampersandProduct,
  childNamed,
  largestStore,
  readResultSet,
  smallestStore,
  type ResultProduct,
  type ResultSet,
} from './support/results.js';
import {
  NO_SUCH_STORE_FAULT,
  REFUSED_CONNECTION_FAULT,
  SERVICE_NAMESPACE,
  SOAP11_WIRE,
  SOAP12_WIRE,
  XML_DECLARATION,
  XSD_NS,
  XSI_NS,
  type OperationName,
  type SoapVersionWire,
} from './support/wire.js';

/**
 * The `soap` npm package as a real WSDL-driven client of the proxy: the client is built from the
 * served `?WSDL` and calls all five operations over SOAP 1.1 and SOAP 1.2, and every result is
 * checked against the demo catalog (docs/wire.md §0, §4, §5).
 *
 * How this client picks the SOAP version (soap 1.13): the port only picks the address and the
 * binding's soapAction; the envelope is SOAP 1.2 (`application/soap+xml; action="…"`, no SOAPAction
 * header, the 2003/05 envelope namespace) only with the client option `forceSoap12Headers`. So the
 * SOAP 1.2 client is created with that option and calls through the `{Svc}Soap12` port, and every
 * call checks the request it really sent (`lastRequest`, `lastRequestHeaders`).
 *
 * The `<OpResult>` content (`mixed="true"` + `<s:any />`) comes back from the client as an object
 * tree (`attributes` per element, arrays for repeated elements, text decoded once). The assertions
 * read the raw envelope (`lastResponse`) with the product's own parser, and each call also checks
 * that the client's object tree holds the same items.
 */

/** The demo upstream's default page of `product.search.cp` (docs/upstream.md §2.1). */
const SEARCH_DEFAULT_PAGE = 60;

// --- The soap client, typed loosely ----------------------------------------------------------------

type Args = Readonly<Record<string, string | number>>;
type SoapCallback = (err: unknown, result: unknown) => void;
type SoapMethod = (args: Args, callback: SoapCallback) => void;

/** What this test uses of `soap.Client`. */
interface LooseClient {
  describe(): Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly lastRequest?: string;
  readonly lastRequestHeaders?: object;
  readonly lastResponse?: unknown;
  readonly lastResponseHeaders?: object;
}

interface SoapVersionCase extends SoapVersionWire {
  /** `{Svc}` + this is the port the client calls through. */
  readonly portSuffix: 'Soap' | 'Soap12';
  readonly clientOptions: { readonly forceSoap12Headers: boolean };
  /** The SOAPAction header sent, `undefined` when none is. */
  readonly soapActionHeader: (action: string) => string | undefined;
  readonly clientCode: string;
  readonly serverCode: string;
}

const VERSIONS: readonly SoapVersionCase[] = [
  {
    ...SOAP11_WIRE,
    portSuffix: 'Soap',
    clientOptions: { forceSoap12Headers: false },
    soapActionHeader: (action) => `"${action}"`,
    clientCode: 'soap:Client',
    serverCode: 'soap:Server',
  },
  {
    ...SOAP12_WIRE,
    portSuffix: 'Soap12',
    clientOptions: { forceSoap12Headers: true },
    soapActionHeader: () => undefined,
    clientCode: 'soap:Sender',
    serverCode: 'soap:Receiver',
  },
];

/** A client built from a proxy's WSDL, bound to one port of its one service. */
interface PortClient {
  readonly client: LooseClient;
  readonly service: string;
  readonly port: string;
  readonly version: SoapVersionCase;
}

async function portClient(proxyUrl: string, version: SoapVersionCase): Promise<PortClient> {
  const client = (await soap.createClientAsync(`${proxyUrl}/index.asmx?WSDL`, version.clientOptions)) as unknown as LooseClient;
  const services = Object.keys(client.describe());
  expect(services, 'the WSDL describes one service').toHaveLength(1);
  const service = services[0] as string;
  return { client, service, port: `${service}${version.portSuffix}`, version };
}

function method(pc: PortClient, op: OperationName): SoapMethod {
  const services = pc.client as unknown as Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, SoapMethod>>>>>>;
  const fn = services[pc.service]?.[pc.port]?.[op];
  if (typeof fn !== 'function') throw new Error(`the client has no ${pc.service}.${pc.port}.${op}`);
  return fn;
}

function invoke(pc: PortClient, op: OperationName, args: Args): Promise<unknown> {
  return new Promise((resolve, reject) => {
    method(pc, op)(args, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** Header names in lower case, values as strings. */
function headerMap(headers: object | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]));
}

/** The request really went out in the version's form: envelope namespace, Content-Type, SOAPAction. */
function expectRequestInVersion(pc: PortClient, op: OperationName): void {
  const action = `${SERVICE_NAMESPACE}${op}`;
  const headers = headerMap(pc.client.lastRequestHeaders);
  expect(headers['content-type'], 'request Content-Type').toBe(pc.version.requestContentType(action));
  expect(headers['soapaction'], 'request SOAPAction header').toBe(pc.version.soapActionHeader(action));
  const envelope = parseXml(pc.client.lastRequest ?? '');
  expect(envelope.uri, 'request envelope namespace').toBe(pc.version.envelopeNs);
  const body = childElements(envelope).find((child) => child.local === 'Body');
  const wrapper = body ? childElements(body)[0] : undefined;
  expect({ local: wrapper?.local, uri: wrapper?.uri }, 'request body element').toEqual({ local: op, uri: SERVICE_NAMESPACE });
}

function envelopeStart(version: SoapVersionCase): string {
  return XML_DECLARATION + `<soap:Envelope xmlns:soap="${version.envelopeNs}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}">`;
}

/** The whole fault envelope of docs/wire.md §5.1, `text` already escaped. */
function faultEnvelope(version: SoapVersionCase, code: string, text: string): string {
  const fault =
    version.portSuffix === 'Soap'
      ? `<soap:Fault><faultcode>${code}</faultcode><faultstring>${text}</faultstring><detail /></soap:Fault>`
      : `<soap:Fault><soap:Code><soap:Value>${code}</soap:Value></soap:Code><soap:Reason><soap:Text ` +
        `xml:lang="en">${text}</soap:Text></soap:Reason><soap:Detail /></soap:Fault>`;
  return `${envelopeStart(version)}<soap:Body>${fault}</soap:Body></soap:Envelope>`;
}

function rawResponse(pc: PortClient): string {
  const raw = pc.client.lastResponse;
  if (typeof raw !== 'string') throw new Error(`expected the raw response text, got ${typeof raw}`);
  return raw;
}

// --- Reading results -------------------------------------------------------------------------------

/**
 * The success envelope of docs/wire.md §4 in the version of the call: `{Op}Response` in the service
 * namespace holding `{Op}Result`, holding the un-namespaced `searchResultSet`.
 */
function resultSetOf(pc: PortClient, op: OperationName): ResultSet {
  const headers = headerMap(pc.client.lastResponseHeaders);
  expect(headers['content-type'], 'response Content-Type').toBe(pc.version.responseContentType);
  expect(headers['cache-control'], 'response Cache-Control').toBe('private, max-age=0');
  const raw = rawResponse(pc);
  // Byte-level frame of §4: one line, this prolog, the result with xmlns="", no trailing newline.
  expect(
    raw.startsWith(
      `${envelopeStart(pc.version)}<soap:Body><${op}Response xmlns="${SERVICE_NAMESPACE}"><${op}Result><searchResultSet xmlns="" `,
    ),
  ).toBe(true);
  expect(raw.endsWith(`</searchResultSet></${op}Result></${op}Response></soap:Body></soap:Envelope>`)).toBe(true);
  expect(raw).not.toMatch(/[\r\n]/);
  const envelope = parseXml(raw);
  expect(envelope.uri, 'response envelope namespace').toBe(pc.version.envelopeNs);
  const body = childNamed(envelope, 'Body');
  const response = body ? childElements(body)[0] : undefined;
  expect({ local: response?.local, uri: response?.uri }).toEqual({ local: `${op}Response`, uri: SERVICE_NAMESPACE });
  const result = response ? childElements(response) : [];
  expect(result.map((element) => element.local)).toEqual([`${op}Result`]);
  const content = result[0] ? childElements(result[0]) : [];
  expect(content.map((element) => ({ local: element.local, uri: element.uri }))).toEqual([{ local: 'searchResultSet', uri: '' }]);
  return readResultSet(content[0] as XmlElement);
}

/** A property path through the client's object tree, `undefined` where it breaks off. */
function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Readonly<Record<string, unknown>>)[key];
  }
  return current;
}

/** The client collapses one repeated element to an object and none to null or absence. */
function asList(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/** The media ids as the soap client itself deserialized them from the `<s:any />` content. */
function clientMediaIds(result: unknown, op: OperationName): number[] {
  const items = asList(at(result, `${op}Result`, 'searchResultSet', 'mainResults', 'searchResultItem'));
  return items.map((item) => Number(at(item, 'attributes', 'mediaId')));
}

/** Calls an operation that should succeed; checks the request and envelope, returns the result set. */
async function call(pc: PortClient, op: OperationName, args: Args): Promise<ResultSet> {
  const result = await invoke(pc, op, args);
  expectRequestInVersion(pc, op);
  const set = resultSetOf(pc, op);
  expect(clientMediaIds(result, op), 'items as the soap client deserialized them').toEqual(set.items.map((item) => item.mediaId));
  return set;
}

interface SeenFault {
  readonly status: number | undefined;
  readonly contentType: string | undefined;
  /** The raw fault envelope the client received. */
  readonly body: string | undefined;
  readonly code: string | undefined;
  readonly text: string | undefined;
  readonly message: string;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function number(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

/** The fault as the soap client reports it: its error's `root` (the parsed envelope) and message. */
async function callFault(pc: PortClient, op: OperationName, args: Args): Promise<SeenFault> {
  const outcome = await invoke(pc, op, args).then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(outcome instanceof Error)) throw new Error(`${op} was expected to fail with a SOAP fault, but it succeeded`);
  expectRequestInVersion(pc, op);
  const fault = at(outcome, 'root', 'Envelope', 'Body', 'Fault');
  return {
    status: number(at(outcome, 'response', 'status')),
    contentType: text(at(outcome, 'response', 'headers', 'content-type')),
    body: text(at(outcome, 'body')),
    // SOAP 1.1: faultcode/faultstring; SOAP 1.2: Code/Value and Reason/Text (with xml:lang, so `$value`).
    code: text(at(fault, 'faultcode')) ?? text(at(fault, 'Code', 'Value')),
    text: text(at(fault, 'faultstring')) ?? text(at(fault, 'Reason', 'Text', '$value')) ?? text(at(fault, 'Reason', 'Text')),
    message: outcome.message,
  };
}

// --- Expectations from the catalog -----------------------------------------------------------------

/** Search words as the demo upstream splits them: lower case, possessive `'s` dropped. */
function words(caption: string): string[] {
  return caption
    .toLowerCase()
    .replace(/['’]s\b/g, '')
    .replace(/['’]/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '');
}

function matchesWord(design: Design, word: string): boolean {
  return [design.caption, ...design.products.map((product) => product.caption)].some((caption) => words(caption).includes(word));
}

function newestFirst(designs: readonly Design[]): Design[] {
  return [...designs].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.mediaId - a.mediaId);
}

function designsOfStore(catalog: Catalog, storeId: string): Design[] {
  return newestFirst(catalog.designs.filter((design) => design.store.id === storeId));
}

function mediaIds(designs: readonly Design[]): number[] {
  return designs.map((design) => design.mediaId);
}

function productNumbers(products: readonly (Product | ResultProduct)[]): number[] {
  return products.map((product) => product.productNumber);
}

/** Counters a result set must carry for `items` returned from `offset` out of `total`. */
function expectCounters(set: ResultSet, counters: { offset: number; length: number; total: number }): void {
  expect(set.items).toHaveLength(counters.length);
  expect({
    startResult: set.attributes.startResult,
    resultLength: set.attributes.resultLength,
    totalDesigns: set.attributes.totalDesigns,
  }).toEqual({ startResult: String(counters.offset), resultLength: String(counters.length), totalDesigns: String(counters.total) });
}

// --- The tests ---------------------------------------------------------------------------------------

let proxy: TestProxy;
/** A second proxy whose upstream refuses connections. */
let unreachable: TestProxy;
let catalog: Catalog;

beforeAll(async () => {
  ({ proxy, unreachable } = await startProxyPair());
  catalog = demoCatalog(proxy);
});

afterAll(async () => {
  await Promise.all([proxy?.stop(), unreachable?.stop()]);
  expect(pairLogProblems({ proxy, unreachable }, ['soap-client-test'])).toEqual([]);
});

describe.each(VERSIONS)('the soap package as a client, $name', (version) => {
  let pc: PortClient;
  let refused: PortClient;

  beforeAll(async () => {
    [pc, refused] = await Promise.all([portClient(proxy.url, version), portClient(unreachable.url, version)]);
  });

  it('finds the Soap and Soap12 ports of the service in the served WSDL', () => {
    const ports = pc.client.describe()[pc.service] ?? {};
    expect(Object.keys(ports).sort()).toEqual([`${pc.service}Soap`, `${pc.service}Soap12`]);
    for (const port of Object.values(ports)) {
      expect(Object.keys(port as object).sort()).toEqual(['AdvancedSearch', 'ProductLookup', 'Search', 'StoreLookup', 'StoreLookupPaged']);
    }
  });

  describe('Search', () => {
    it('returns exactly the designs whose captions hold the word, best score first', async () => {
      const word = 'ninja';
      const expected = catalog.designs.filter((design) => matchesWord(design, word));
      expect(expected.length, 'the word must fit in one default page').toBeGreaterThan(1);
      expect(expected.length).toBeLessThanOrEqual(SEARCH_DEFAULT_PAGE);

      const set = await call(pc, 'Search', { query: word });
      expectCounters(set, { offset: 0, length: expected.length, total: expected.length });
      expect([...set.items.map((item) => item.mediaId)].sort()).toEqual(mediaIds(expected).sort());
      expect(set.searchString).toBe(word);
      expect(set.attributes.sort).toBe('by_score_desc');
      const byId = new Map(expected.map((design) => [design.mediaId, design]));
      const scores = set.items.map((item) => byId.get(item.mediaId)?.score ?? Number.NaN);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    });
  });

  describe('StoreLookup', () => {
    it('returns every design of a store that takes more than one upstream page, newest first', async () => {
      const storeId = largestStore(catalog).id;
      const expected = designsOfStore(catalog, storeId);
      expect(expected.length, 'the store must need several upstream pages').toBeGreaterThan(STORE_PAGE_SIZE);

      const set = await call(pc, 'StoreLookup', { storeId, apiKey: 'soap-client-test', version: '1' });
      expectCounters(set, { offset: 0, length: expected.length, total: expected.length });
      expect(set.items.map((item) => item.mediaId)).toEqual(mediaIds(expected));
      // The store endpoint lists every product of each design.
      expect(set.items.map((item) => productNumbers(item.products))).toEqual(expected.map((design) => productNumbers(design.products)));
    });

    it('returns every design of the smallest store', async () => {
      const storeId = smallestStore(catalog).id;
      const expected = designsOfStore(catalog, storeId);
      const set = await call(pc, 'StoreLookup', { storeId });
      expectCounters(set, { offset: 0, length: expected.length, total: expected.length });
      expect(set.items.map((item) => item.mediaId)).toEqual(mediaIds(expected));
    });

    it('filters by product type name, keeping only the products of that type', async () => {
      const storeId = largestStore(catalog).id;
      const mugs = (product: Product): boolean => product.merchandiseCaption === 'Mug';
      const expected = designsOfStore(catalog, storeId).filter((design) => design.products.some(mugs));
      expect(expected.length).toBeGreaterThan(0);

      const set = await call(pc, 'StoreLookup', { storeId, productTypes: 'Mug' });
      expectCounters(set, { offset: 0, length: expected.length, total: expected.length });
      expect(set.items.map((item) => item.mediaId)).toEqual(mediaIds(expected));
      expect(set.items.map((item) => productNumbers(item.products))).toEqual(
        expected.map((design) => productNumbers(design.products.filter(mugs))),
      );
    });
  });

  describe('StoreLookupPaged', () => {
    const pages = [
      { pageIndex: 0, pageSize: 25 },
      { pageIndex: 2, pageSize: 100 }, // items 200–299: across the first upstream page boundary (256)
      { pageIndex: 3, pageSize: 100 }, // the last, partial page
      { pageIndex: 9, pageSize: 100 }, // past the end: no items
    ];

    it.each(pages)(
      'pageIndex $pageIndex, pageSize $pageSize returns that slice of the store, in order',
      async ({ pageIndex, pageSize }) => {
        const storeId = largestStore(catalog).id;
        const all = designsOfStore(catalog, storeId);
        const offset = pageIndex * pageSize;
        const expected = all.slice(offset, offset + pageSize);

        const set = await call(pc, 'StoreLookupPaged', { storeId, pageIndex, pageSize });
        expect(pc.client.lastRequest).toContain(`<pageIndex>${pageIndex}</pageIndex><pageSize>${pageSize}</pageSize>`);
        expectCounters(set, { offset, length: expected.length, total: all.length });
        expect(set.items.map((item) => item.mediaId)).toEqual(mediaIds(expected));
      },
    );
  });

  describe('ProductLookup', () => {
    it('returns the design holding the product, text double-escaped as the upstream writes it', async () => {
      const { design, product } = ampersandProduct(catalog);

      const set = await call(pc, 'ProductLookup', { productNumber: product.productNumber });
      expect(pc.client.lastRequest).toContain(`<productNumber>${product.productNumber}</productNumber>`);
      expect(set.items.map((item) => item.mediaId)).toEqual([design.mediaId]);
      const products = set.items[0]?.products ?? [];
      expect(products.map((found) => [found.productNumber, found.productTypeNumber])).toEqual([
        [product.productNumber, product.merchandiseId],
      ]);
      // Decoded once, the text still holds the upstream's first escape (docs/upstream.md §5).
      expect(products[0]?.attributes.storeName).toBe(design.store.name.replace(/&/g, '&amp;'));
    });
  });

  describe('AdvancedSearch', () => {
    it('startResults/maxResults with a product type name give that slice of the unpaged search', async () => {
      const query = { productTypes: 'Mug' };
      const unpaged = await call(pc, 'AdvancedSearch', query);
      const total = catalog.designs.filter((design) => design.products.some((product) => product.merchandiseCaption === 'Mug')).length;
      expectCounters(unpaged, { offset: 0, length: Math.min(total, SEARCH_DEFAULT_PAGE), total });
      for (const item of unpaged.items) {
        expect(item.products.map((product) => product.productTypeNumber).every((type) => type === 0)).toBe(true);
      }

      const [start, max] = [7, 20];
      const window = await call(pc, 'AdvancedSearch', { ...query, startResults: String(start), maxResults: String(max) });
      expectCounters(window, { offset: start, length: max, total });
      expect(window.items.map((item) => item.xml)).toEqual(unpaged.items.slice(start, start + max).map((item) => item.xml));
    });

    it('a window over several upstream pages, with numeric ids, sort and maxProductsPerDesign, is exact', async () => {
      const types = new Set([0, 1]);
      const [start, max] = [50, 110];
      const ofTypes = (product: Product): boolean => types.has(product.merchandiseId);
      const matching = newestFirst(catalog.designs.filter((design) => design.products.some(ofTypes)));
      const expected = matching.slice(start, start + max);
      expect(expected.length, 'the window must be full').toBe(max);

      const set = await call(pc, 'AdvancedSearch', {
        productTypes: '0, 1',
        startResults: String(start),
        maxResults: String(max),
        maxProductsPerDesign: '1',
        sort: 'by_date_desc',
      });
      expectCounters(set, { offset: start, length: max, total: matching.length });
      expect(set.attributes.sort).toBe('by_date_desc');
      expect(set.items.map((item) => item.mediaId)).toEqual(mediaIds(expected));
      expect(set.items.map((item) => productNumbers(item.products))).toEqual(
        expected.map((design) => productNumbers(design.products.filter(ofTypes).slice(0, 1))),
      );
    });

    it('an unknown product type is a Client/Sender fault naming it', async () => {
      const fault = await callFault(pc, 'AdvancedSearch', { query: 'dog', productTypes: 'Hovercraft' });
      expect(fault.status).toBe(500);
      expect(fault.code).toBe(version.clientCode);
      expect(fault.text).toContain("'Hovercraft'");
      expect(fault.message).toContain(version.clientCode);
    });
  });

  describe('upstream failures', () => {
    it('an upstream error document is a Server/Receiver fault carrying its message', async () => {
      const fault = await callFault(pc, 'StoreLookup', { storeId: 'nosuchstore' });
      expect({ status: fault.status, code: fault.code, text: fault.text }).toEqual({
        status: 500,
        code: version.serverCode,
        text: NO_SUCH_STORE_FAULT,
      });
    });

    it.each<[OperationName, Args]>([
      ['Search', { query: 'dog' }],
      ['ProductLookup', { productNumber: 1 }],
      ['StoreLookupPaged', { storeId: 'x', pageIndex: 0, pageSize: 10 }],
    ])('a refused connection makes %s a Server/Receiver fault', async (op, args) => {
      const fault = await callFault(refused, op, args);
      expect({ status: fault.status, code: fault.code, text: fault.text }).toEqual({
        status: 500,
        code: version.serverCode,
        text: REFUSED_CONNECTION_FAULT,
      });
      expect(fault.contentType).toBe(version.responseContentType);
      expect(fault.body).toBe(
        faultEnvelope(version, version.serverCode, 'Server was unable to process request. ---&gt; Unable to connect to the remote server'),
      );
    });
  });
});

it('is recognised as node-soap, with its version, in the hit of every call it made', async () => {
  const { version } = JSON.parse(await readFile(new URL('../node_modules/soap/package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const stacks = [...hitStacksSince(proxy.log, 0), ...hitStacksSince(unreachable.log, 0)];
  expect(stacks.length).toBeGreaterThan(20);
  expect(new Set(stacks.map((stack) => `${stack.name} ${stack.version}`))).toEqual(new Set([`node-soap ${version}`]));
});
