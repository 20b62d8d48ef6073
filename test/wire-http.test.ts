import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../src/config/validate.js';
import { renderWsdl } from '../src/inbound/description/wsdl.js';
import type { Running } from '../src/start/main.js';
import { testConfig, testService } from './support/config.js';
import { startProxy } from './support/proxy.js';
import { rawRequest, type RawRequest, type RawResponse } from './support/raw-http.js';
import {
  INT32_OUT_OF_RANGE,
  NOT_AN_INT32,
  SELF_SERVICE_LINK,
  SERVICE_NAMESPACE,
  SOAP11_ENV,
  SOAP12_CONTENT_TYPE,
  XML_CONTENT_TYPE,
  XML_DECLARATION,
} from './support/wire.js';

/**
 * Golden wire tests of docs/wire.md §1 (dispatch), §6 (HTTP GET and POST), §7 (service description
 * and help) and §9 (deprecation headers). Every request is written raw through node:http (method,
 * path, headers and body exactly as given, nothing added but Host and the body length) to the whole
 * product with its embedded demo upstream; status, Content-Type and body are checked byte for byte
 * wherever the spec gives the bytes.
 */

interface Proxy {
  /** `http://127.0.0.1:{port}`, also the Host the requests carry. */
  readonly base: string;
  readonly running: Running;
  send(req: RawRequest | string): Promise<RawResponse>;
}

/** The product started with `overrides` for the enclosing describe block. */
function useProxy(overrides: Json = {}): () => Proxy {
  let running: Running | undefined;
  beforeAll(async () => {
    running = await startProxy(overrides);
  });
  afterAll(async () => {
    await running?.stop();
  });
  return () => {
    if (running === undefined) throw new Error('the proxy is not running');
    const started = running;
    return { base: started.url, running: started, send: (req) => rawRequest(started.url, typeof req === 'string' ? { path: req } : req) };
  };
}

// ---- Requests and expected answers ---------------------------------------------------------------

const TEXT = 'text/plain; charset=utf-8';
const HTML = 'text/html; charset=utf-8';
const FORM = 'application/x-www-form-urlencoded';

const post = (path: string, body: string, contentType: string | null = FORM): RawRequest => ({
  method: 'POST',
  path,
  headers: contentType === null ? {} : { 'content-type': contentType },
  body,
});

const soap11 = (op: string, body = `<query>dog</query>`): RawRequest =>
  post(
    '/index.asmx',
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body><${op} ` +
      `xmlns="${SERVICE_NAMESPACE}">${body}</${op}></soap:Body></soap:Envelope>`,
    XML_CONTENT_TYPE,
  );
const withHeaders = (req: RawRequest, headers: Record<string, string>): RawRequest => ({ ...req, headers: { ...req.headers, ...headers } });
const soapCall = (op: string): RawRequest => withHeaders(soap11(op), { soapaction: `"${SERVICE_NAMESPACE}${op}"` });

/** §6.3 (and §7.2's not-found answers): 500, text/plain, the HTML-encoded chain and CRLF. */
function expectTextError(res: RawResponse, body: string): void {
  expect({ status: res.status, contentType: res.headers['content-type'], body: res.text }).toEqual({
    status: 500,
    contentType: TEXT,
    body,
  });
  expect(res.headers['cache-control']).toBe('private');
}

/** §1: the ASP.NET runtime error page, which shows the message HTML-encoded; HEAD gets no body. */
function expectErrorPage(res: RawResponse, method: string, status: number, message: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe(HTML);
  if (method === 'HEAD') expect(res.text).toBe('');
  else expect(res.text).toContain(message.replace(/'/g, '&#39;'));
}

/** A §6.4 document: the XML text of its `<searchString>`, which the demo upstream echoes. */
function searchedFor(res: RawResponse): string {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toBe(XML_CONTENT_TYPE);
  const match = /<searchString>([^<]*)<\/searchString>|<searchString \/>/.exec(res.text);
  expect(match, res.text).not.toBeNull();
  return match?.[1] ?? '';
}

const CASE_MISMATCH = (given: string, op: string): string =>
  `Invalid method name &#39;${given}&#39;,  method names are case sensitive.   The method name &#39;${op}&#39; with the same name but ` +
  `different casing was found.\r\nParameter name: methodName\r\n`;
const CANNOT_CONVERT = (value: string, inner: string): string =>
  `Cannot convert ${value} to System.Int32.\r\nParameter name: type ---> ${inner}\r\n`;

/** §7.3, written out. */
function discoDocument(url: string): string {
  return [
    XML_DECLARATION,
    '<discovery xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
      'xmlns="http://schemas.xmlsoap.org/disco/">',
    `  <contractRef ref="${url}?wsdl" docRef="${url}" xmlns="http://schemas.xmlsoap.org/disco/scl/" />`,
    `  <soap address="${url}" xmlns:q1="http://tempuri.org/" binding="q1:CatalogServiceSoap" ` +
      `xmlns="http://schemas.xmlsoap.org/disco/soap/" />`,
    `  <soap address="${url}" xmlns:q2="http://tempuri.org/" binding="q2:CatalogServiceSoap12" ` +
      `xmlns="http://schemas.xmlsoap.org/disco/soap/" />`,
    '</discovery>',
  ].join('\r\n');
}

/** The four port addresses of a WSDL, in document order. */
const wsdlAddresses = (wsdl: string): string[] =>
  [...wsdl.matchAll(/<(?:soap|soap12|http):address location="([^"]*)" \/>/g)].map((m) => m[1]!);

// ---- §1 Dispatch -----------------------------------------------------------------------------------

describe('§1 dispatch', () => {
  const proxy = useProxy();

  // First table: the protocol that accepts each request.
  it.each<{ protocol: string; req: RawRequest; status: number; contentType: string; bodyStart: string }>([
    {
      protocol: 'SOAP: no PathInfo, POST',
      req: soapCall('Search'),
      status: 200,
      contentType: XML_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}<soap:Envelope `,
    },
    // A form posted to the SOAP path is still SOAP: no action, not XML (§2.4 row 9).
    {
      protocol: 'SOAP: even for a form',
      req: post('/index.asmx', 'query=dog'),
      status: 500,
      contentType: SOAP12_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}<soap:Envelope `,
    },
    {
      protocol: 'HTTP POST: PathInfo of 2+ chars, POST',
      req: post('/index.asmx/Search', 'query=dog'),
      status: 200,
      contentType: XML_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}\r\n<searchResultSet `,
    },
    {
      protocol: 'HTTP GET: PathInfo of 2+ chars, GET',
      req: { path: '/index.asmx/Search?query=dog' },
      status: 200,
      contentType: XML_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}\r\n<searchResultSet `,
    },
    {
      protocol: 'HTTP GET: a 2-char PathInfo is a method name',
      req: { path: '/index.asmx/X' },
      status: 500,
      contentType: TEXT,
      bodyStart: 'X Web Service method name is not valid.\r\n',
    },
    {
      protocol: 'Discovery: ?wsdl',
      req: { path: '/index.asmx?wsdl' },
      status: 200,
      contentType: XML_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}\r\n<wsdl:definitions `,
    },
    {
      protocol: 'Discovery: ?disco',
      req: { path: '/index.asmx?disco' },
      status: 200,
      contentType: XML_CONTENT_TYPE,
      bodyStart: `${XML_DECLARATION}\r\n<discovery `,
    },
    {
      protocol: 'Discovery: ?schema=',
      req: { path: '/index.asmx?schema=x' },
      status: 500,
      contentType: TEXT,
      bodyStart: 'Schema not found.\r\n',
    },
    { protocol: 'Documentation: no PathInfo, GET', req: { path: '/index.asmx' }, status: 200, contentType: HTML, bodyStart: '<html>' },
    {
      protocol: 'Documentation: any other query',
      req: { path: '/index.asmx?foo=bar' },
      status: 200,
      contentType: HTML,
      bodyStart: '<html>',
    },
  ])('$protocol', async ({ req, status, contentType, bodyStart }) => {
    const res = await proxy().send(req);
    expect({ status: res.status, contentType: res.headers['content-type'] }).toEqual({ status, contentType });
    expect(res.text.startsWith(bodyStart), res.text.slice(0, 200)).toBe(true);
  });

  // Second table: nothing accepts, the last answer decides.
  it.each<[method: string, path: string, status: number, message: string]>([
    ['PUT', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['DELETE', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['HEAD', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['OPTIONS', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['PATCH', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['HEAD', '/index.asmx?wsdl', 405, 'Request format is unrecognized.'],
    ['PUT', '/index.asmx/StoreLookup', 500, "Request format is unrecognized for URL unexpectedly ending in '/StoreLookup'."],
    ['DELETE', '/index.asmx/Search', 500, "Request format is unrecognized for URL unexpectedly ending in '/Search'."],
    ['HEAD', '/index.asmx/Search?query=dog', 500, "Request format is unrecognized for URL unexpectedly ending in '/Search'."],
    ['GET', '/index.asmx/', 500, "Request format is unrecognized for URL unexpectedly ending in '/'."],
    ['POST', '/index.asmx/', 500, "Request format is unrecognized for URL unexpectedly ending in '/'."],
    ['PUT', '/index.asmx/', 500, "Request format is unrecognized for URL unexpectedly ending in '/'."],
  ])('%s %s → %i', async (method, path, status, message) => {
    expectErrorPage(await proxy().send({ method, path }), method, status, message);
  });

  describe('the service path matches in any case; addresses echo it as requested', () => {
    it.each(['/INDEX.ASMX', '/Index.asmx', '/iNdEx.AsMx'])('%s/Search is the operation', async (path) => {
      expect(searchedFor(await proxy().send(`${path}/Search?query=dog`))).toBe('dog');
    });

    it.each(['/Index.asmx', '/INDEX.ASMX'])('%s?wsdl has every location at that path', async (path) => {
      const res = await proxy().send(`${path}?wsdl`);
      expect(wsdlAddresses(res.text)).toEqual(Array(4).fill(`${proxy().base}${path}`));
    });

    it('/iNdEx.AsMx?disco is §7.3 for that path', async () => {
      expect((await proxy().send('/iNdEx.AsMx?disco')).text).toBe(discoDocument(`${proxy().base}/iNdEx.AsMx`));
    });

    it('/INDEX.ASMX help links to the operations at that path', async () => {
      expect((await proxy().send('/INDEX.ASMX')).text).toContain('<a href="INDEX.ASMX?op=Search">Search</a>');
    });

    it('PUT /INDEX.ASMX → 405', async () => {
      expectErrorPage(await proxy().send({ method: 'PUT', path: '/INDEX.ASMX' }), 'PUT', 405, 'Request format is unrecognized.');
    });
  });

  it.each([
    ['GET', '/'],
    ['GET', '/index.asmx.bak'],
    ['GET', '/indexasmx'],
    ['GET', '/other/index.asmx'],
    ['POST', '/service.asmx'],
    ['PUT', '/elsewhere'],
  ])('%s %s is outside the service: 404, no deprecation headers', async (method, path) => {
    const res = await proxy().send({ method, path });
    expect(res.status).toBe(404);
    expect(res.headers.deprecation).toBeUndefined();
  });
});

// ---- §6 HTTP GET and HTTP POST --------------------------------------------------------------------

type Verb = 'GET' | 'POST';

/** The same call over HTTP GET (query string) or HTTP POST (urlencoded form). */
const httpCall = (verb: Verb, op: string, params: string): RawRequest =>
  verb === 'GET' ? { path: `/index.asmx/${op}${params === '' ? '' : `?${params}`}` } : post(`/index.asmx/${op}`, params);

describe('§6 HTTP GET and HTTP POST (lenient default)', () => {
  const proxy = useProxy();

  describe.each<Verb>(['GET', 'POST'])('%s', (verb) => {
    it.each([
      { op: 'Nope', body: 'Nope Web Service method name is not valid.\r\n' },
      { op: 'storelookup', body: CASE_MISMATCH('storelookup', 'StoreLookup') },
      { op: 'SEARCH', body: CASE_MISMATCH('SEARCH', 'Search') },
      // HtmlEncode: the five markup characters, and U+00A0–U+00FF as decimal references; € stays.
      { op: '%3Cb%3E%26%22%27%C3%A9%E2%82%AC', body: '&lt;b&gt;&amp;&quot;&#39;&#233;€ Web Service method name is not valid.\r\n' },
      // HttpUtility.UrlDecode keeps a malformed escape as written; `+` is not a space in a path.
      { op: 'a+b%ZZ', body: 'a+b%ZZ Web Service method name is not valid.\r\n' },
    ])('/index.asmx/$op → the §6.1 text', async ({ op, body }) => {
      expectTextError(await proxy().send(httpCall(verb, op, '')), body);
    });

    it.each([
      { rule: 'a repeated key arrives comma-joined', params: 'query=a&query=b', searched: 'a,b' },
      { rule: 'names match in any case', params: 'QUERY=dog', searched: 'dog' },
      { rule: 'names match in any case (mixed)', params: 'qUeRy=dog', searched: 'dog' },
      { rule: 'unknown keys are ignored', params: 'bogus=1&query=dog&Search=2', searched: 'dog' },
      { rule: '`+` and %XX are decoded', params: 'query=a+b%26c%C3%A9', searched: 'a b&amp;cé' },
      { rule: '`name=` gives ""', params: 'query=', searched: '' },
      { rule: 'an absent optional string is null', params: '', searched: '' },
    ])('$rule', async ({ params, searched }) => {
      expect(searchedFor(await proxy().send(httpCall(verb, 'Search', params)))).toBe(searched);
    });

    it.each([
      { op: 'ProductLookup', params: '', missing: 'productNumber' },
      { op: 'StoreLookupPaged', params: 'storeId=x&pageIndex=0', missing: 'pageSize' },
      { op: 'StoreLookupPaged', params: 'pageSize=10', missing: 'pageIndex' },
    ])('an absent int is always missing: $op?$params', async ({ op, params, missing }) => {
      expectTextError(await proxy().send(httpCall(verb, op, params)), `Missing parameter: ${missing}.\r\n`);
    });

    it.each([
      { value: 'abc', body: CANNOT_CONVERT('abc', NOT_AN_INT32) },
      { value: '', body: CANNOT_CONVERT('', NOT_AN_INT32) },
      { value: '1.5', body: CANNOT_CONVERT('1.5', NOT_AN_INT32) },
      { value: '0x10', body: CANNOT_CONVERT('0x10', NOT_AN_INT32) },
      { value: '1%202', body: CANNOT_CONVERT('1 2', NOT_AN_INT32) },
      { value: '%2B-1', body: CANNOT_CONVERT('+-1', NOT_AN_INT32) },
      { value: '%3C1%3E', body: CANNOT_CONVERT('&lt;1&gt;', NOT_AN_INT32) },
      { value: '2147483648', body: CANNOT_CONVERT('2147483648', INT32_OUT_OF_RANGE) },
      { value: '-2147483649', body: CANNOT_CONVERT('-2147483649', INT32_OUT_OF_RANGE) },
      { value: '99999999999999999999', body: CANNOT_CONVERT('99999999999999999999', INT32_OUT_OF_RANGE) },
    ])('int $value → the .NET conversion error', async ({ value, body }) => {
      expectTextError(await proxy().send(httpCall(verb, 'ProductLookup', `productNumber=${value}`)), body);
    });

    it.each([
      { form: 'N', sent: (n: number) => `${n}` },
      { form: '+N', sent: (n: number) => `%2B${n}` },
      { form: ' N ', sent: (n: number) => `%20%20${n}%20` },
      { form: '\\tN\\r\\n', sent: (n: number) => `%09${n}%0D%0A` },
      { form: '0N', sent: (n: number) => `000${n}` },
    ])('int $form is the product number N', async ({ sent }) => {
      const n = proxy().running.demo!.catalog.designs[42]!.products[0]!.productNumber;
      const res = await proxy().send(httpCall(verb, 'ProductLookup', `productNumber=${sent(n)}`));
      expect(res.status, res.text).toBe(200);
      expect(res.text).toContain(`productNumber="${n}"`);
    });

    it.each(['-1', '-0', '%20-2147483648'])('int %s (a sign) is accepted', async (value) => {
      const res = await proxy().send(httpCall(verb, 'ProductLookup', `productNumber=${value}`));
      expect(res.status, res.text).toBe(200);
    });

    it('a minus sign reaches the operation as a negative number', async () => {
      const res = await proxy().send(httpCall(verb, 'StoreLookupPaged', 'storeId=x&pageIndex=-1&pageSize=%2B10'));
      expect(res.status).toBe(500);
      expect(res.text).toContain('-1');
      expect(res.text).not.toContain('Cannot convert');
    });

    it('§6.4: the document, indented with CRLF, byte for byte', async () => {
      const res = await proxy().send(httpCall(verb, 'Search', 'query=qqq'));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(XML_CONTENT_TYPE);
      expect(res.headers['cache-control']).toBe('private, max-age=0');
      expect(res.text).toBe(
        [
          XML_DECLARATION,
          '<searchResultSet totalDesigns="0" totalProducts="0" startResult="0" resultLength="0" version="3" sort="by_score_desc">',
          '  <mainResults />',
          '  <searchQuery>',
          '    <searchString>qqq</searchString>',
          '  </searchQuery>',
          '  <subtopics />',
          '</searchResultSet>',
        ].join('\r\n'),
      );
    });

    it('§6.4: a full result is the upstream document re-indented, without namespaces added', async () => {
      const res = await proxy().send(httpCall(verb, 'Search', 'query=dog'));
      const upstream = await fetch(`${proxy().running.demo!.url}/product.search.cp?v=3&appKey=demo-app-key&query=dog`);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('private, max-age=0');
      // No BOM, declaration and CRLF first, every break CRLF, none after the last end tag.
      expect(res.text).toBe(`${XML_DECLARATION}\r\n${(await upstream.text()).replace(/\n/g, '\r\n')}`);
      expect(res.text).toMatch(/<mainResults>\r\n {4}<searchResultItem /);
      expect(res.text).not.toMatch(/xmlns=""|xmlns:xsi|xmlns:xsd/);
    });
  });

  describe('HTTP GET reads the query string only', () => {
    it('a form body sent with GET is ignored', async () => {
      const res = await proxy().send({ ...post('/index.asmx/Search?query=fromurl', 'query=fromform'), method: 'GET' });
      expect(searchedFor(res)).toBe('fromurl');
    });
  });

  describe('HTTP POST reads the urlencoded form only', () => {
    it.each([
      {
        rule: 'the query string of a POST is ignored',
        req: post('/index.asmx/Search?query=fromurl', 'query=fromform'),
        searched: 'fromform',
      },
      { rule: 'even when the form lacks the key', req: post('/index.asmx/Search?query=fromurl', ''), searched: '' },
      {
        rule: 'parameters in the Content-Type are fine',
        req: post('/index.asmx/Search', 'query=dog', `${FORM}; charset=utf-8`),
        searched: 'dog',
      },
      {
        rule: 'the media type matches in any case',
        req: post('/index.asmx/Search', 'query=dog', 'Application/X-WWW-Form-URLEncoded'),
        searched: 'dog',
      },
    ])('$rule', async ({ req, searched }) => {
      expect(searchedFor(await proxy().send(req))).toBe(searched);
    });

    it.each([
      {
        type: 'multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW',
        shown: 'multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW',
      },
      { type: null, shown: '' },
      { type: '', shown: '' },
      { type: 'text/xml; charset=utf-8', shown: 'text/xml; charset=utf-8' },
      { type: 'foo', shown: 'foo' },
      { type: 'multipart/form-data; boundary="<&>"', shown: 'multipart/form-data; boundary=&quot;&lt;&amp;&gt;&quot;' },
    ])('Content-Type $type → Request format is invalid', async ({ type, shown }) => {
      expectTextError(await proxy().send(post('/index.asmx/Search', 'query=dog', type)), `Request format is invalid: ${shown}.\r\n`);
    });

    it('the method is looked up before the form is read', async () => {
      expectTextError(await proxy().send(post('/index.asmx/Nope', 'query=dog', null)), 'Nope Web Service method name is not valid.\r\n');
    });
  });
});

describe('§6.2 strict optional parameters: every absent parameter is an error', () => {
  const proxy = useProxy({ service: { httpOptionalParameters: 'strict' } });

  describe.each<Verb>(['GET', 'POST'])('%s', (verb) => {
    it.each([
      { params: '', missing: 'query' },
      { params: 'query=dog', missing: 'apiKey' },
      { params: 'apiKey=k&version=1', missing: 'query' },
      { params: 'query=dog&apiKey=k', missing: 'version' },
    ])('Search?$params → Missing parameter: $missing.', async ({ params, missing }) => {
      expectTextError(await proxy().send(httpCall(verb, 'Search', params)), `Missing parameter: ${missing}.\r\n`);
    });

    it('`name=` is present, as ""', async () => {
      expect(searchedFor(await proxy().send(httpCall(verb, 'Search', 'query=&apiKey=&version=')))).toBe('');
    });

    it('parameters are read in declaration order: the first absent one is reported', async () => {
      const res = await proxy().send(httpCall(verb, 'StoreLookupPaged', 'pageSize=1&pageIndex=0&productTypes=&version='));
      expectTextError(res, 'Missing parameter: storeId.\r\n');
    });
  });

  it('POST: a parameter in the query string does not count', async () => {
    expectTextError(await proxy().send(post('/index.asmx/Search?query=a&apiKey=b&version=c', '')), 'Missing parameter: query.\r\n');
  });
});

// ---- §7 Service description and help ------------------------------------------------------------

describe('§7 service description and help', () => {
  const proxy = useProxy();
  const url = (): string => `${proxy().base}/index.asmx`;

  it.each(['wsdl', 'WSDL', 'Wsdl', 'wSdL'])('?%s → 200 text/xml, the WSDL', async (query) => {
    const res = await proxy().send(`/index.asmx?${query}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(XML_CONTENT_TYPE);
    // The document the renderer tests check against §7.2: declaration, CRLF, two-space indentation.
    expect(res.text).toBe(renderWsdl(testService(), url(), testConfig().paging.profiles));
    expect(res.text.startsWith(`${XML_DECLARATION}\r\n<wsdl:definitions `)).toBe(true);
    expect(res.text).not.toMatch(/[^\r]\n/);
    expect(wsdlAddresses(res.text)).toEqual(Array(4).fill(url()));
  });

  it.each(['disco', 'DISCO', 'Disco'])('?%s → 200 text/xml, §7.3 byte for byte', async (query) => {
    const res = await proxy().send(`/index.asmx?${query}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(XML_CONTENT_TYPE);
    expect(res.text).toBe(discoDocument(url()));
  });

  it.each([
    // `wsdl` with a value names an extra description; there is none, not even for an empty id.
    ['wsdl=x', 'XML Web service description was not found.\r\n'],
    ['WSDL=wsdl1', 'XML Web service description was not found.\r\n'],
    ['wsdl=', 'XML Web service description was not found.\r\n'],
    ['schema=x', 'Schema not found.\r\n'],
    ['Schema=schema1', 'Schema not found.\r\n'],
    // `schema` is looked at first, wherever it stands.
    ['wsdl&schema=x', 'Schema not found.\r\n'],
  ])('?%s → 500 text/plain', async (query, body) => {
    expectTextError(await proxy().send(`/index.asmx?${query}`), body);
  });

  // Nameless values read comma-joined (`wsdl,disco`), which is neither: the help page.
  it.each(['wsdl&disco', 'wsdl&wsdl', 'wsdl&', '&disco'])('?%s is no discovery request', async (query) => {
    const res = await proxy().send(`/index.asmx?${query}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(HTML);
  });

  it('other keys do not matter: ?op=Search&wsdl is the WSDL, ?op=Search&wsdl=x not found', async () => {
    expect((await proxy().send('/index.asmx?op=Search&wsdl')).text).toBe(renderWsdl(testService(), url(), testConfig().paging.profiles));
    expectTextError(await proxy().send('/index.asmx?op=Search&wsdl=x'), 'XML Web service description was not found.\r\n');
  });

  describe('help pages', () => {
    it('GET /index.asmx: the five operations, their deprecation notices, the tempuri advice', async () => {
      const res = await proxy().send('/index.asmx');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(HTML);
      for (const text of [
        'The following operations are supported.  For a formal definition, please review the <a href="?WSDL">Service Description</a>.',
        ...['AdvancedSearch', 'ProductLookup', 'Search', 'StoreLookup', 'StoreLookupPaged'].map(
          (op) => `<a href="index.asmx?op=${op}">${op}</a>`,
        ),
        'Deprecated. Use /product.search.cp instead.',
        'Deprecated. Use /product.searchForProductsOfStore.cp instead.',
        'Deprecated. Use /product.searchForProduct.cp instead.',
        'This web service is using http://tempuri.org/ as its default namespace.',
        'Recommendation: Change the default namespace before the XML Web service is made public.',
      ]) {
        expect(res.text).toContain(text);
      }
    });

    it('?op=Search: the operation page with the test form', async () => {
      const res = await proxy().send('/index.asmx?op=Search');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(HTML);
      for (const text of [
        'Click <a href="index.asmx">here</a> for a complete list of operations.',
        '<h2>Search</h2>',
        "To test the operation using the HTTP POST protocol, click the 'Invoke' button.",
        '<form target="_blank" action="index.asmx/Search" method="POST">',
        '<input type="submit" value="Invoke" class="button">',
        ...['SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST'].map(
          (title) =>
            `The following is a sample ${title} request and response.  The <font class=value>placeholders</font> shown need to be ` +
            `replaced with actual values.`,
        ),
        'POST /index.asmx HTTP/1.1',
        'SOAPAction: "http://tempuri.org/Search"',
      ]) {
        expect(res.text).toContain(text);
      }
    });

    it.each([
      ['Nope', "Method 'Nope' was not found in service CatalogService."],
      ['%3Cb%3E', "Method '&lt;b&gt;' was not found in service CatalogService."],
    ])('?op=%s → Method Not Found', async (op, text) => {
      const res = await proxy().send(`/index.asmx?op=${op}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(HTML);
      expect(res.text).toContain('Method Not Found');
      expect(res.text).toContain(text);
    });
  });
});

describe('§7.1 addresses', () => {
  const HOST = 'legacy.example.com:8080';
  const FORWARDED = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'front.example.net' };

  describe.each<{ setup: string; overrides: Json; headers: Record<string, string>; path: string; url: string }>([
    {
      setup: 'from the Host and scheme of the request',
      overrides: {},
      headers: { host: HOST },
      path: '/index.asmx',
      url: `http://${HOST}/index.asmx`,
    },
    // System.Uri: the host in lower case, the default port left out; the path as requested.
    {
      setup: 'canonical as System.Uri writes it',
      overrides: {},
      headers: { host: 'LEGACY.Example.COM:80' },
      path: '/Index.asmx',
      url: 'http://legacy.example.com/Index.asmx',
    },
    {
      setup: 'X-Forwarded-* ignored by default',
      overrides: {},
      headers: { host: HOST, ...FORWARDED },
      path: '/index.asmx',
      url: `http://${HOST}/index.asmx`,
    },
    {
      setup: 'X-Forwarded-* honoured with server.trustProxy',
      overrides: { server: { trustProxy: true } },
      headers: { host: HOST, ...FORWARDED },
      path: '/index.asmx',
      url: 'https://front.example.net/index.asmx',
    },
    {
      setup: 'X-Forwarded-Proto alone with server.trustProxy',
      overrides: { server: { trustProxy: true } },
      headers: { host: HOST, 'x-forwarded-proto': 'https' },
      path: '/index.asmx',
      url: `https://${HOST}/index.asmx`,
    },
    {
      setup: 'server.publicBaseUrl over everything, the path as requested',
      overrides: { server: { publicBaseUrl: 'https://catalog.example.com', trustProxy: true } },
      headers: { host: HOST, ...FORWARDED },
      path: '/Index.asmx',
      url: 'https://catalog.example.com/Index.asmx',
    },
    {
      setup: 'server.publicBaseUrl with a path',
      overrides: { server: { publicBaseUrl: 'https://example.com/legacy/' } },
      headers: { host: HOST },
      path: '/index.asmx',
      url: 'https://example.com/legacy/index.asmx',
    },
  ])('$setup', ({ overrides, headers, path, url }) => {
    const proxy = useProxy(overrides);
    const get = (query: string): Promise<RawResponse> => proxy().send({ path: `${path}${query}`, headers });

    it('WSDL: all four ports', async () => {
      expect(wsdlAddresses((await get('?wsdl')).text)).toEqual(Array(4).fill(url));
    });

    it('disco: §7.3 byte for byte', async () => {
      expect((await get('?disco')).text).toBe(discoDocument(url));
    });

    // The links are relative whatever the address (§7.4); only the samples spell it out.
    it('help page: relative links, the address in the samples', async () => {
      const body = (await get('')).text;
      expect(body).toContain('<a href="?WSDL">Service Description</a>');
      expect(body).toContain(`href="${path.slice(1)}?disco"`);
      const { pathname, hostname } = new URL(url);
      expect((await get('?op=Search')).text).toContain(`POST ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n`);
    });
  });
});

// ---- fastify's own answers ---------------------------------------------------------------------

describe('answers fastify would write itself come out in the ASMX forms', () => {
  const LIMIT = 1024;
  const proxy = useProxy({ server: { bodyLimitBytes: LIMIT } });
  const tooLarge = Buffer.alloc(LIMIT + 1, 'a');

  it.each<{ name: string; req: RawRequest }>([
    { name: 'SOAP, with Content-Length', req: soapCall('Search') },
    { name: 'HTTP POST, with Content-Length', req: post('/index.asmx/Search', '') },
    { name: 'SOAP, chunked', req: withHeaders(soapCall('Search'), { 'transfer-encoding': 'chunked' }) },
  ])('a body over server.bodyLimitBytes ($name) → 413 error page', async ({ req }) => {
    const res = await proxy().send({ ...req, body: tooLarge });
    expectErrorPage(res, 'POST', 413, 'Maximum request length exceeded.');
    expect(res.headers.deprecation).toMatch(/^@\d+$/);
  });

  it.each([
    // An unparsable Content-Type is the routed SOAP request's 415 (§2.5, §3), not fastify's.
    { type: 'foo', status: 415 },
    { type: '', status: 415 },
    { type: 'text/xml; charset', status: 200 },
  ])('SOAP with Content-Type $type → $status', async ({ type, status }) => {
    const res = await proxy().send(withHeaders(soapCall('Search'), { 'content-type': type }));
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe(XML_CONTENT_TYPE);
    if (status === 415) expect(res.text).toBe('');
  });

  it.each([
    // Methods fastify does not route, and QUERY (which it refuses without a Content-Type).
    ['PROPFIND', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['QUERY', '/index.asmx', 405, 'Request format is unrecognized.'],
    ['MKCOL', '/index.asmx/Search', 500, "Request format is unrecognized for URL unexpectedly ending in '/Search'."],
    ['TRACE', '/index.asmx', 405, 'Request format is unrecognized.'],
  ])('%s %s → %i error page', async (method, path, status, message) => {
    const res = await proxy().send({ method, path });
    expectErrorPage(res, method, status, message);
    expect(res.headers.deprecation).toMatch(/^@\d+$/);
  });

  it('a path the router cannot decode (%ZZ) is a method name, as ASP.NET decodes it', async () => {
    const res = await proxy().send('/index.asmx/Se%ZZ');
    expectTextError(res, 'Se%ZZ Web Service method name is not valid.\r\n');
    expect(res.headers.deprecation).toMatch(/^@\d+$/);
  });

  it('HEAD carries the headers of the answer without its body', async () => {
    const res = await proxy().send({ method: 'HEAD', path: '/index.asmx' });
    expect(res.headers['content-length']).toMatch(/^[1-9]\d*$/);
    expect(res.text).toBe('');
  });
});

// ---- §9 Deprecation, Sunset and Link --------------------------------------------------------------

/** One request per kind of answer from the service path. */
/** `answered`: a call translated and answered, whose answer links its own replacement request. */
const EVERY_KIND_OF_ANSWER: readonly { kind: string; req: RawRequest; status: number; answered?: true }[] = [
  { kind: 'HTTP GET success', req: { path: '/index.asmx/Search?query=dog' }, status: 200, answered: true },
  { kind: 'HTTP POST success', req: post('/index.asmx/Search', 'query=dog'), status: 200, answered: true },
  { kind: 'SOAP 1.1 success', req: soapCall('Search'), status: 200, answered: true },
  { kind: 'SOAP fault', req: withHeaders(soapCall('Search'), { soapaction: `"${SERVICE_NAMESPACE}Nope"` }), status: 500 },
  { kind: 'SOAP empty 400', req: withHeaders(soap11('Search', '<query>'), { soapaction: `"${SERVICE_NAMESPACE}Search"` }), status: 400 },
  { kind: 'SOAP empty 415', req: withHeaders(soapCall('Search'), { 'content-type': 'text/plain' }), status: 415 },
  { kind: 'HTTP text error', req: { path: '/index.asmx/Nope' }, status: 500 },
  { kind: 'WSDL', req: { path: '/index.asmx?wsdl' }, status: 200 },
  { kind: 'WSDL not found', req: { path: '/index.asmx?wsdl=x' }, status: 500 },
  { kind: 'disco', req: { path: '/index.asmx?disco' }, status: 200 },
  { kind: 'help', req: { path: '/index.asmx' }, status: 200 },
  { kind: 'operation help', req: { path: '/index.asmx?op=Search' }, status: 200 },
  { kind: '405 error page', req: { method: 'PUT', path: '/index.asmx' }, status: 405 },
  { kind: '405 to HEAD', req: { method: 'HEAD', path: '/index.asmx' }, status: 405 },
  { kind: '500 error page', req: { method: 'PUT', path: '/index.asmx/StoreLookup' }, status: 500 },
  { kind: '405 to a method fastify does not route', req: { method: 'PROPFIND', path: '/index.asmx' }, status: 405 },
  { kind: '413', req: { ...post('/index.asmx/Search', ''), body: Buffer.alloc(2048, 'a') }, status: 413 },
  { kind: 'a path the router cannot decode', req: { path: '/index.asmx/%ZZ' }, status: 500 },
  { kind: 'an unparsable Content-Type', req: post('/index.asmx/Search', 'query=dog', 'foo'), status: 500 },
  { kind: 'a path that normalises to the service', req: { path: '/x/../index.asmx/Search?query=dog' }, status: 200, answered: true },
  { kind: 'the service path in another case', req: { path: '/INDEX.ASMX?disco' }, status: 200 },
];

const NOT_THE_SERVICE: readonly string[] = ['/healthz', '/metrics', '/', '/index.asmx.bak'];

describe('§9 deprecation headers, all configured', () => {
  const proxy = useProxy({
    server: { bodyLimitBytes: 1024 },
    deprecation: {
      deprecatedAt: '2026-01-01T00:00:00Z',
      sunsetAt: '2027-06-30T00:00:00Z',
      policyUrl: 'https://example.com/deprecation',
      successorUrl: 'https://example.com/api',
    },
  });

  it.each(EVERY_KIND_OF_ANSWER)('$kind ($status)', async ({ req, status, answered }) => {
    const res = await proxy().send(req);
    expect(res.status).toBe(status);
    // RFC 9745 sf-date; RFC 8594 IMF-fixdate.
    expect(res.headers.deprecation).toBe('@1767225600');
    expect(res.headers.sunset).toBe('Wed, 30 Jun 2027 00:00:00 GMT');
    // One comma-joined header or repeated ones (§9).
    const links = [res.headers.link ?? []].flat().flatMap((value) => value.split(/,\s*(?=<)/));
    expect(links).toContain('<https://example.com/deprecation>; rel="deprecation"; type="text/html"');
    expect(links).toContainEqual(expect.stringMatching(/^<https:\/\/[^>]+>; rel="sunset"(;|$)/));
    // A call that was answered links its own replacement request as the successor-version: the configured one is then the service-doc.
    expect(links).toContain(`<https://example.com/api>; rel="${answered ? 'service-doc' : 'successor-version'}"`);
    expect(links.filter((link) => link.endsWith('rel="successor-version"'))).toHaveLength(1);
  });

  it.each(NOT_THE_SERVICE)('none on %s', async (path) => {
    const res = await proxy().send(path);
    expect([res.headers.deprecation, res.headers.sunset, res.headers.link]).toEqual([undefined, undefined, undefined]);
  });
});

describe('§9 deprecation headers, defaults (no sunset, no configured links)', () => {
  const proxy = useProxy();

  it.each(EVERY_KIND_OF_ANSWER.filter(({ status }) => status !== 413))(
    '$kind: Deprecation, and a link to its replacement when it is a call that was answered',
    async ({ req, answered }) => {
      const res = await proxy().send(req);
      expect(res.headers.deprecation).toBe('@1767225600');
      expect(res.headers.sunset).toBeUndefined();
      // Only a translated call has a replacement request of its own (src/translate/plan.ts successorOf); every answer
      // points the caller at its own self-service page (issue 31, item 4).
      const links = [res.headers.link ?? []].flat().flatMap((value) => value.split(/,\s*(?=<)/));
      if (answered)
        expect(links).toEqual([
          expect.stringMatching(/^<[^>]*\/product\.search\.cp\?v=3&query=dog>; rel="successor-version"$/),
          SELF_SERVICE_LINK,
        ]);
      else expect(links).toEqual([SELF_SERVICE_LINK]);
    },
  );
});

describe('§9 deprecation headers, with deprecation.selfService off and no policyUrl', () => {
  const proxy = useProxy({ deprecation: { selfService: false } });

  it.each(EVERY_KIND_OF_ANSWER.filter(({ status }) => status !== 413))('$kind: no deprecation link', async ({ req, answered }) => {
    const res = await proxy().send(req);
    expect(res.headers.deprecation).toBe('@1767225600');
    if (answered) expect(res.headers.link).toMatch(/^<[^>]*\/product\.search\.cp\?v=3&query=dog>; rel="successor-version"$/);
    else expect(res.headers.link).toBeUndefined();
  });
});

describe('help samples use the public address', () => {
  it('shows the path of server.publicBaseUrl in the ?op= sample requests', async () => {
    const proxy = await startProxy({ server: { publicBaseUrl: 'https://catalog.example.com/legacy' } });
    try {
      const html = await (await fetch(`${proxy.url}/index.asmx?op=Search`)).text();
      expect(html).toContain('POST /legacy/index.asmx HTTP/1.1');
      expect(html).toContain('Host: catalog.example.com');
    } finally {
      await proxy.stop();
    }
  });
});
