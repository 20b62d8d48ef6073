import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../src/start/main.js';
import { OPERATIONS, findOperation, type OperationName } from '../src/operations.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute, childElements, type XmlElement } from '../src/xml/tree.js';
import { writeXml } from '../src/xml/write.js';
import { itemIds } from './support/pages.js';
import { startProxy } from './support/proxy.js';
import {
  SERVICE_NAMESPACE,
  SOAP11_ENV,
  SOAP12_CONTENT_TYPE,
  SOAP12_ENV,
  XML_CONTENT_TYPE,
  XML_DECLARATION,
  XSD_NS,
  XSI_NS,
} from './support/wire.js';

/**
 * All twenty operation × binding combinations over real loopback HTTP, against the embedded demo
 * upstream, as `npm start` runs them. Expected results come from asking the demo upstream directly
 * for what the translation decisions say the proxy must ask (docs/upstream.md §11).
 */

const APP_KEY = 'demo-app-key';
type Binding = 'SOAP 1.1' | 'SOAP 1.2' | 'HTTP GET' | 'HTTP POST';
const BINDINGS: readonly Binding[] = ['SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST'];
type Params = Readonly<Record<string, string | number>>;

let proxy: Running;
let upstreamUrl: string;
let bigStore: string;
let bigStoreDesigns: number;
let productNumber: number;

beforeAll(async () => {
  proxy = await startProxy();
  upstreamUrl = proxy.demo!.url;
  const catalog = proxy.demo!.catalog;
  const counts = new Map<string, number>();
  for (const design of catalog.designs) counts.set(design.store.id, (counts.get(design.store.id) ?? 0) + 1);
  [bigStore, bigStoreDesigns] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
  productNumber = catalog.designs[42]!.products[0]!.productNumber;
});

afterAll(async () => {
  await proxy.stop();
});

interface Reply {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: string;
  readonly headers: Headers;
}

function soapEnvelope(version: '1.1' | '1.2', op: OperationName, params: Params): string {
  const envNs = version === '1.1' ? SOAP11_ENV : SOAP12_ENV;
  // Parameters in declaration order, as generated clients send them.
  const children = findOperation(op)!
    .params.filter((p) => p.name in params)
    .map((p) => `<${p.name}>${escapeXml(String(params[p.name]))}</${p.name}>`)
    .join('');
  return (
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${envNs}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}"><soap:Body><${op} ` +
    `xmlns="${SERVICE_NAMESPACE}">${children}</${op}></soap:Body></soap:Envelope>`
  );
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

async function call(binding: Binding, op: OperationName, params: Params): Promise<Reply> {
  const form = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
  let response: Response;
  switch (binding) {
    case 'SOAP 1.1':
      response = await fetch(`${proxy.url}/index.asmx`, {
        method: 'POST',
        headers: { 'content-type': XML_CONTENT_TYPE, soapaction: `"${SERVICE_NAMESPACE}${op}"` },
        body: soapEnvelope('1.1', op, params),
      });
      break;
    case 'SOAP 1.2':
      response = await fetch(`${proxy.url}/index.asmx`, {
        method: 'POST',
        headers: { 'content-type': `${SOAP12_CONTENT_TYPE}; action="${SERVICE_NAMESPACE}${op}"` },
        body: soapEnvelope('1.2', op, params),
      });
      break;
    case 'HTTP GET':
      response = await fetch(`${proxy.url}/index.asmx/${op}?${form}`);
      break;
    case 'HTTP POST':
      response = await fetch(`${proxy.url}/index.asmx/${op}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      break;
  }
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: await response.text(),
    headers: response.headers,
  };
}

/** The result root, after checking the binding's exact framing (docs/wire.md §4, §6.4). */
function resultOf(binding: Binding, op: OperationName, answer: Reply): XmlElement {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('cache-control')).toBe('private, max-age=0');
  expect(answer.headers.get('deprecation')).toMatch(/^@\d+$/);
  if (binding === 'HTTP GET' || binding === 'HTTP POST') {
    expect(answer.contentType).toBe(XML_CONTENT_TYPE);
    expect(answer.body.startsWith('<?xml version="1.0" encoding="utf-8"?>\r\n<searchResultSet ')).toBe(true);
    expect(answer.body).not.toMatch(/[^\r]\n/);
    expect(answer.body).toMatch(/\r\n {2}<mainResults/);
    expect(answer.body.endsWith('</searchResultSet>')).toBe(true);
    return parseXml(answer.body);
  }
  const soap11 = binding === 'SOAP 1.1';
  expect(answer.contentType).toBe(soap11 ? XML_CONTENT_TYPE : SOAP12_CONTENT_TYPE);
  const envNs = soap11 ? SOAP11_ENV : SOAP12_ENV;
  expect(answer.body).toMatch(
    new RegExp(
      `^<\\?xml version="1\\.0" encoding="utf-8"\\?><soap:Envelope xmlns:soap="${envNs.replace(/\./g, '\\.')}" ` +
        `xmlns:xsi="http://www\\.w3\\.org/2001/XMLSchema-instance" ` +
        `xmlns:xsd="http://www\\.w3\\.org/2001/XMLSchema"><soap:Body><${op}Response ` +
        `xmlns="http://tempuri\\.org/"><${op}Result><searchResultSet xmlns="" `,
    ),
  );
  expect(answer.body.endsWith(`</searchResultSet></${op}Result></${op}Response></soap:Body></soap:Envelope>`)).toBe(true);
  expect(answer.body).not.toContain('\n');
  const envelope = parseXml(answer.body);
  const response = childElements(childElements(envelope)[0]!)[0]!;
  expect(response.local).toBe(`${op}Response`);
  return childElements(childElements(response)[0]!)[0]!;
}

/** A page straight from the demo upstream. */
async function upstream(path: string, params: Params): Promise<XmlElement> {
  const query = new URLSearchParams([
    ['v', '3'],
    ['appKey', APP_KEY],
    ...Object.entries(params).map(([k, v]) => [k, String(v)] as [string, string]),
  ]);
  const response = await fetch(`${upstreamUrl}${path}?${query}`);
  expect(response.status).toBe(200);
  return parseXml(await response.text());
}

/** One-line form for comparing trees; the `xmlns=""` the SOAP wrapper needs is checked separately. */
function compact(node: XmlElement): string {
  return writeXml({ ...node, attributes: node.attributes.filter((a) => !(a.name === 'xmlns' && a.value === '')) }, { indent: false });
}

interface Case {
  readonly op: OperationName;
  readonly params: () => Params;
  readonly check: (result: XmlElement) => Promise<void>;
}

const CASES: readonly Case[] = [
  {
    op: 'Search',
    params: () => ({ query: 'dog', apiKey: APP_KEY, version: '1.0' }),
    // One page answers the call: the upstream document passes through untouched.
    check: async (result) => {
      const direct = await upstream('/product.search.cp', { query: 'dog' });
      expect(Number(attribute(result, 'resultLength'))).toBeGreaterThan(0);
      expect(compact(result)).toBe(compact(direct));
    },
  },
  {
    op: 'ProductLookup',
    params: () => ({ productNumber, apiKey: APP_KEY }),
    check: async (result) => {
      const direct = await upstream('/product.searchForProduct.cp', { productId: productNumber });
      expect(compact(result)).toBe(compact(direct));
      expect(compact(result)).toContain(`productNumber="${productNumber}"`);
    },
  },
  {
    op: 'StoreLookup',
    params: () => ({ storeId: bigStore, apiKey: APP_KEY, productTypes: '' }),
    check: async (result) => {
      const pages = await Promise.all(
        [0, 1].map((page) => upstream('/product.searchForProductsOfStore.cp', { storeId: bigStore, page, pageSize: 256 })),
      );
      expect(bigStoreDesigns).toBeGreaterThan(256);
      expect(itemIds(result)).toEqual(pages.flatMap(itemIds));
      expect(itemIds(result)).toHaveLength(bigStoreDesigns);
      expect(attribute(result, 'resultLength')).toBe(String(bigStoreDesigns));
      expect(attribute(result, 'totalDesigns')).toBe(String(bigStoreDesigns));
      expect(attribute(result, 'startResult')).toBe('0');
    },
  },
  {
    op: 'StoreLookupPaged',
    params: () => ({ storeId: bigStore, apiKey: APP_KEY, productTypes: '-999', pageIndex: 2, pageSize: 40 }),
    check: async (result) => {
      const direct = await upstream('/product.searchForProductsOfStore.cp', {
        storeId: bigStore,
        merchandiseIds: '-999',
        page: 2,
        pageSize: 40,
      });
      expect(itemIds(result)).toHaveLength(40);
      expect(compact(result)).toBe(compact(direct));
    },
  },
  {
    op: 'AdvancedSearch',
    params: () => ({
      query: '',
      apiKey: APP_KEY,
      productTypes: '-Mug',
      startResults: 90,
      maxResults: 150,
      maxProductsPerDesign: 2,
      sort: 'by-date-desc',
    }),
    // Crosses upstream pages: sliced, concatenated, counters rewritten.
    check: async (result) => {
      const pages = await Promise.all(
        [1, 2, 3].map((pageNumber) =>
          upstream('/product.search.cp', {
            merchandiseIds: '-0',
            maxProductsPerDesign: 2,
            sort: 'by_date_desc',
            pageNumber,
            resultsPerPage: 100,
          }),
        ),
      );
      const all = pages.flatMap(itemIds);
      expect(all.length).toBeGreaterThan(240);
      expect(itemIds(result)).toEqual(all.slice(90, 240));
      expect(attribute(result, 'startResult')).toBe('90');
      expect(attribute(result, 'resultLength')).toBe('150');
      expect(attribute(result, 'sort')).toBe('by_date_desc');
      expect(attribute(result, 'totalDesigns')).toBe(attribute(pages[0]!, 'totalDesigns'));
      expect(compact(result)).not.toContain('productTypeNumber="0"');
    },
  },
];

describe.each(BINDINGS)('%s', (binding) => {
  it.each(CASES)('$op answers from the replacement endpoint', async ({ op, params, check }) => {
    const answer = await call(binding, op, params());
    await check(resultOf(binding, op, answer));
  });
});

it('covers every operation of the table', () => {
  expect(CASES.map((c) => c.op).sort()).toEqual(OPERATIONS.map((op) => op.name).sort());
});

describe('errors keep the binding form', () => {
  it.each([
    [
      'SOAP 1.1',
      '<faultcode>soap:Client</faultcode><faultstring>Server was unable to read request. ---&gt; There is an error in XML document',
    ],
    [
      'SOAP 1.2',
      '<soap:Value>soap:Sender</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">Server was unable to read request. ---&gt; ' +
        'There is an error in XML document',
    ],
  ] as const)('%s: a bad int is a read fault', async (binding, expected) => {
    const answer = await call(binding, 'ProductLookup', { productNumber: 'abc' });
    expect(answer.status).toBe(500);
    expect(answer.body).toContain(expected);
    expect(answer.body).toContain('---&gt; Input string was not in a correct format.</');
  });

  it.each(['HTTP GET', 'HTTP POST'] as const)('%s: a bad int is the ASMX conversion message', async (binding) => {
    const answer = await call(binding, 'ProductLookup', { productNumber: 'abc' });
    expect(answer.status).toBe(500);
    expect(answer.contentType).toBe('text/plain; charset=utf-8');
    expect(answer.body).toBe(
      'Cannot convert abc to System.Int32.\r\nParameter name: type ---> Input string was not in a correct format.\r\n',
    );
    expect(answer.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it.each(['HTTP GET', 'HTTP POST'] as const)('%s: a missing int parameter', async (binding) => {
    const answer = await call(binding, 'StoreLookupPaged', { storeId: bigStore, pageIndex: 0 });
    expect(answer.status).toBe(500);
    expect(answer.body).toBe('Missing parameter: pageSize.\r\n');
  });

  it.each(BINDINGS)('%s: an upstream <help> error becomes the operation exception', async (binding) => {
    const answer = await call(binding, 'AdvancedSearch', { query: 'dog', sort: 'cheapest', maxResults: 5 });
    expect(answer.status).toBe(500);
    const message = "Invalid sort value 'cheapest'. Acceptable values: by_score_desc, by_date_desc.";
    if (binding === 'HTTP GET' || binding === 'HTTP POST') {
      expect(answer.body).toBe(`${message.replace(/'/g, '&#39;')}\r\n`);
    } else {
      expect(answer.body).toContain(`Server was unable to process request. ---&gt; ${message}</`);
      expect(answer.body).toContain(
        binding === 'SOAP 1.1' ? '<faultcode>soap:Server</faultcode>' : '<soap:Value>soap:Receiver</soap:Value>',
      );
    }
  });

  it.each(BINDINGS)('%s: an unknown product type is a client error that names it', async (binding) => {
    const answer = await call(binding, 'AdvancedSearch', { query: 'dog', productTypes: 'Hovercraft' });
    expect(answer.status).toBe(500);
    expect(answer.body).toContain(
      'Unknown product type &#39;Hovercraft&#39;.'.replace(/&#39;/g, binding.startsWith('HTTP') ? '&#39;' : "'"),
    );
  });

  it('HTTP GET: an unknown operation and a case mismatch', async () => {
    expect((await fetch(`${proxy.url}/index.asmx/Nope`)).status).toBe(500);
    expect(await (await fetch(`${proxy.url}/index.asmx/Nope`)).text()).toBe('Nope Web Service method name is not valid.\r\n');
    expect(await (await fetch(`${proxy.url}/index.asmx/storelookup`)).text()).toBe(
      'Invalid method name &#39;storelookup&#39;,  method names are case sensitive.   The method name &#39;StoreLookup&#39; with the ' +
        'same name but different casing was found.\r\nParameter name: methodName\r\n',
    );
  });

  it('keeps serving after malformed input', async () => {
    const garbage = await fetch(`${proxy.url}/index.asmx`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml', soapaction: `"${SERVICE_NAMESPACE}Search"` },
      body: '<soap:Envelope',
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.text()).toBe('');
    const answer = await call('SOAP 1.1', 'Search', { query: 'dog' });
    expect(answer.status).toBe(200);
  });
});

describe('service description and operations signals', () => {
  it('serves ?WSDL with addresses built from the request, and the four ports', async () => {
    const response = await fetch(`${proxy.url}/index.asmx?WSDL`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(XML_CONTENT_TYPE);
    const wsdl = await response.text();
    const address = `${proxy.url}/index.asmx`;
    for (const port of ['soap:address', 'soap12:address', 'http:address']) expect(wsdl).toContain(`<${port} location="${address}" />`);
    expect(wsdl.match(/<wsdl:port /g)).toHaveLength(4);
  });

  it('counts calls in Prometheus metrics, without keys', async () => {
    await call('SOAP 1.1', 'Search', { query: 'cat', apiKey: 'metrics-secret-key' });
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/legacy_calls_total\{operation="Search",binding="soap11",outcome="ok",client="other"\} [1-9]\d*/);
    expect(metrics).toMatch(/upstream_request_duration_seconds_count\{path="\/product.search.cp",outcome="ok"\} [1-9]\d*/);
    expect(metrics).not.toContain('metrics-secret-key');
  });
});
