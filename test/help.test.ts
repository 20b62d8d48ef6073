import { describe, expect, it } from 'vitest';
import { renderMethodNotFound, renderOperationHelp, renderServiceHelp } from '../src/inbound/description/help.js';
import { OPERATIONS, type OperationSpec } from '../src/operations.js';
import { parseXml } from '../src/xml/parse.js';
import { childElements, innerText, type XmlElement } from '../src/xml/tree.js';
import { testConfig, testService } from './support/config.js';
import { SOAP11_ENV, SOAP12_ENV } from './support/wire.js';

// Expected texts are copied from docs/wire.md §0, §7.2 (the deprecation notices) and §7.4.

const URL = 'https://legacy.example.com/index.asmx';
const service = testService;
const profiles = testConfig().paging.profiles;

function operation(name: string): OperationSpec {
  const op = OPERATIONS.find((candidate) => candidate.name === name);
  if (!op) throw new Error(`no operation ${name}`);
  return op;
}

/** The `<pre>` blocks of a page, in order. */
const preBlocks = (html: string): string[] => [...html.matchAll(/<pre>([\s\S]*?)<\/pre>/g)].map((match) => match[1]!);

/** What a browser shows for a `<pre>`: markup dropped, references decoded. */
function shown(pre: string): string {
  return pre
    .replace(/<font class=(?:value|key)>(.*?)<\/font>/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The XML document of a SOAP sample, after the blank line that ends the headers. */
function sampleEnvelope(pre: string): XmlElement {
  const text = shown(pre);
  return parseXml(text.slice(text.indexOf('\r\n\r\n') + 4));
}

/** The cells of the replacement table, header first, as written (HTML-encoded). */
const mappingRows = (html: string): string[][] =>
  [.../<table class="mapping">([\s\S]*?)<\/table>/.exec(html)![1]!.matchAll(/<tr>(.*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<t[hd]>(.*?)<\/t[hd]>/g)].map((cell) => cell[1]!),
  );

const PLACEHOLDERS_SENTENCE = (protocol: string): string =>
  `<p>The following is a sample ${protocol} request and response.  The <font class=value>placeholders</font> shown need to be replaced ` +
  `with actual values.</p>`;

describe('renderServiceHelp', () => {
  const html = renderServiceHelp(service(), URL);

  it('names the service and points at the service description', () => {
    expect(html).toContain('<title>CatalogService Web Service</title>');
    expect(html).toContain('CatalogService</p>');
    expect(html).toContain(
      'The following operations are supported.  For a formal definition, please review the <a href="?WSDL">Service Description</a>.',
    );
  });

  it('lists all five operations with their deprecation notice and replacement', () => {
    const items = [...html.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((match) => match[1]!);
    // ASMX sorts the list ordinally by name.
    expect(items.map((item) => /\?op=(\w+)">(\w+)</.exec(item)?.slice(1))).toEqual(
      ['AdvancedSearch', 'ProductLookup', 'Search', 'StoreLookup', 'StoreLookupPaged'].map((name) => [name, name]),
    );
    const replacements: Record<string, string> = {
      AdvancedSearch: '/product.search.cp',
      ProductLookup: '/product.searchForProduct.cp',
      Search: '/product.search.cp',
      StoreLookup: '/product.searchForProductsOfStore.cp',
      StoreLookupPaged: '/product.searchForProductsOfStore.cp',
    };
    for (const item of items) {
      const name = /\?op=(\w+)/.exec(item)![1]!;
      expect(item).toContain(`<a href="index.asmx?op=${name}">${name}</a>`);
      expect(item).toContain('Deprecated');
      expect(item).toContain(replacements[name]);
    }
    expect(html).toContain('merchandiseIds replaces productTypes');
  });

  it('recommends changing the tempuri namespace only while it is in use', () => {
    const warning = 'This web service is using http://tempuri.org/ as its default namespace.';
    const recommendation = 'Recommendation: Change the default namespace before the XML Web service is made public.';
    expect(html).toContain(warning);
    expect(html).toContain(recommendation);
    const custom = renderServiceHelp(service({ namespace: 'urn:example:catalog' }), URL);
    expect(custom).not.toContain(warning);
    expect(custom).not.toContain(recommendation);
  });

  it('HTML-encodes configured values and the requested path', () => {
    const encoded = renderServiceHelp(service({ name: `A&B "<x>"` }), `https://h.example/a&b'c.asmx`);
    expect(encoded).toContain('<title>A&amp;B &quot;&lt;x&gt;&quot; Web Service</title>');
    expect(encoded).toContain('<a href="a&amp;b&#39;c.asmx?op=Search">Search</a>');
    expect(encoded).not.toContain('<x>');
  });

  it('uses CRLF line breaks', () => {
    expect(html.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
  });
});

describe('renderOperationHelp', () => {
  const html = renderOperationHelp(service(), URL, operation('StoreLookupPaged'), profiles);
  const [soapRequest, soapResponse, soap12Request, soap12Response, getRequest, getResponse, postRequest, postResponse] = preBlocks(html);

  it('has the relative link back, the operation and its notice', () => {
    expect(html).toContain('<title>CatalogService Web Service</title>');
    expect(html).toContain('Click <a href="index.asmx">here</a> for a complete list of operations.');
    expect(html).toContain('<h2>StoreLookupPaged</h2>');
    expect(html).toContain('Deprecated. Use /product.searchForProductsOfStore.cp instead.');
  });

  it('offers every caller the HTTP POST test form: a text field per parameter, in order, and Invoke', () => {
    expect(html).toContain("<h3>Test</h3>\r\nTo test the operation using the HTTP POST protocol, click the 'Invoke' button.\r\n");
    const form = /<form ([^>]*)>([\s\S]*?)<\/form>/.exec(html);
    expect(form![1]).toBe('target="_blank" action="index.asmx/StoreLookupPaged" method="POST"');
    const fields = [
      ...form![2]!.matchAll(/<td class="frmText">(\w+):<\/td><td><input class="frmInput" type="text" size="50" name="(\w+)"><\/td>/g),
    ];
    expect(fields.map((field) => [field[1], field[2]])).toEqual(
      ['storeId', 'apiKey', 'version', 'productTypes', 'pageIndex', 'pageSize'].map((name) => [name, name]),
    );
    expect(form![2]).toContain('<input type="submit" value="Invoke" class="button">');
    expect(html).not.toContain('only available for requests from the local machine');
  });

  it('shows the replacement and how each parameter maps, page parameters from the paging profile', () => {
    expect(mappingRows(html)).toEqual([
      ['Parameter', 'Replacement parameter', 'Note'],
      ['storeId', 'storeId', 'the same id'],
      ['productTypes', 'merchandiseIds', 'the ids of the product types, comma-separated (mapping.merchandise)'],
      ['pageIndex', 'page', 'the same page; the legacy pageIndex counts from paging.legacyPageIndexBase'],
      ['pageSize', 'pageSize', 'the same size, up to the endpoint&#39;s largest page'],
      ['apiKey', 'appKey', 'the application key of the caller'],
      ['version', 'v', 'the API version of the replacement endpoint, not of the legacy service'],
    ]);
    const renamed = {
      ...profiles,
      '/product.searchForProductsOfStore.cp': { ...profiles['/product.searchForProductsOfStore.cp'], pageParam: 'p<1>', sizeParam: 'n' },
    };
    const store = mappingRows(renderOperationHelp(service(), URL, operation('StoreLookup'), renamed));
    // StoreLookup has no page parameters of its own: the replacement's pages have no legacy counterpart.
    expect(store[3]).toEqual([
      '—',
      'p&lt;1&gt;, n',
      'one legacy call returned the whole store: request its pages until the total is reached',
    ]);
  });

  it('has the replacement, the test and the four protocol sections in order, each protocol with its sentence and two samples', () => {
    const titles = [...html.matchAll(/<h3>([^<]*)<\/h3>/g)].map((match) => match[1]);
    expect(titles).toEqual(['Replacement: /product.searchForProductsOfStore.cp', 'Test', 'SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST']);
    for (const protocol of ['SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST']) {
      expect(html).toContain(`<h3>${protocol}</h3>\r\n${PLACEHOLDERS_SENTENCE(protocol)}`);
    }
    expect(preBlocks(html)).toHaveLength(8);
  });

  it('shows the SOAP 1.1 request with its quoted action and the parameters in order', () => {
    expect(soapRequest!.split('\r\n\r\n')[0]).toBe(
      [
        'POST /index.asmx HTTP/1.1',
        'Host: legacy.example.com',
        'Content-Type: text/xml; charset=utf-8',
        'Content-Length: <font class=value>length</font>',
        'SOAPAction: "http://tempuri.org/StoreLookupPaged"',
      ].join('\r\n'),
    );
    expect(soapRequest).toContain(
      '&lt;?xml version="1.0" encoding="utf-8"?&gt;\r\n' +
        '&lt;soap:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" ' +
        'xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"&gt;\r\n' +
        '  &lt;soap:Body&gt;\r\n' +
        '    &lt;StoreLookupPaged xmlns="http://tempuri.org/"&gt;\r\n' +
        '      &lt;storeId&gt;<font class=value>string</font>&lt;/storeId&gt;\r\n',
    );
    expect(soapRequest).toContain('&lt;pageIndex&gt;<font class=value>int</font>&lt;/pageIndex&gt;');
    expect(soapRequest!.endsWith('&lt;/soap:Envelope&gt;')).toBe(true);

    const envelope = sampleEnvelope(soapRequest!);
    expect([envelope.uri, envelope.local]).toEqual([SOAP11_ENV, 'Envelope']);
    const [call] = childElements(childElements(envelope)[0]!);
    expect([call!.uri, call!.local]).toEqual(['http://tempuri.org/', 'StoreLookupPaged']);
    expect(childElements(call!).map((field) => [field.uri, field.local, innerText(field)])).toEqual([
      ['http://tempuri.org/', 'storeId', 'string'],
      ['http://tempuri.org/', 'apiKey', 'string'],
      ['http://tempuri.org/', 'version', 'string'],
      ['http://tempuri.org/', 'productTypes', 'string'],
      ['http://tempuri.org/', 'pageIndex', 'int'],
      ['http://tempuri.org/', 'pageSize', 'int'],
    ]);
  });

  it('shows the SOAP 1.1 response with the xml placeholder in the result', () => {
    expect(
      soapResponse!.startsWith(
        'HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: <font class=value>length</font>\r\n\r\n',
      ),
    ).toBe(true);
    expect(soapResponse).toContain(
      '    &lt;StoreLookupPagedResponse xmlns="http://tempuri.org/"&gt;\r\n' +
        '      &lt;StoreLookupPagedResult&gt;<font class=value>xml</font>&lt;/StoreLookupPagedResult&gt;\r\n' +
        '    &lt;/StoreLookupPagedResponse&gt;',
    );
    const envelope = sampleEnvelope(soapResponse!);
    expect([envelope.uri, envelope.local]).toEqual([SOAP11_ENV, 'Envelope']);
  });

  it('shows SOAP 1.2 with its content type and envelope, and no SOAPAction header', () => {
    expect(soap12Request!.split('\r\n\r\n')[0]).toBe(
      [
        'POST /index.asmx HTTP/1.1',
        'Host: legacy.example.com',
        'Content-Type: application/soap+xml; charset=utf-8',
        'Content-Length: <font class=value>length</font>',
      ].join('\r\n'),
    );
    expect(soap12Response).toContain('Content-Type: application/soap+xml; charset=utf-8');
    for (const pre of [soap12Request!, soap12Response!]) {
      const envelope = sampleEnvelope(pre);
      expect([envelope.uri, envelope.local]).toEqual([SOAP12_ENV, 'Envelope']);
      expect(envelope.attributes.map((attr) => attr.name)).toEqual(['xmlns:xsi', 'xmlns:xsd', 'xmlns:soap12']);
    }
    expect(childElements(childElements(sampleEnvelope(soap12Request!))[0]!)[0]!.local).toBe('StoreLookupPaged');
  });

  it('shows HTTP GET with every parameter as a string, in order', () => {
    expect(getRequest).toBe(
      'GET /index.asmx/StoreLookupPaged?' +
        ['storeId', 'apiKey', 'version', 'productTypes', 'pageIndex', 'pageSize']
          .map((name) => `<font class=key>${name}</font>=<font class=value>string</font>`)
          .join('&amp;') +
        ' HTTP/1.1\r\nHost: legacy.example.com\r\n',
    );
    expect(shown(getRequest!)).toBe(
      'GET /index.asmx/StoreLookupPaged?storeId=string&apiKey=string&version=string&productTypes=string&pageIndex=string&pageSize=string ' +
        'HTTP/1.1\r\nHost: legacy.example.com\r\n',
    );
  });

  it('shows HTTP POST with the urlencoded form body', () => {
    expect(shown(postRequest!)).toBe(
      [
        'POST /index.asmx/StoreLookupPaged HTTP/1.1',
        'Host: legacy.example.com',
        'Content-Type: application/x-www-form-urlencoded',
        'Content-Length: length',
        '',
        'storeId=string&apiKey=string&version=string&productTypes=string&pageIndex=string&pageSize=string',
      ].join('\r\n'),
    );
  });

  it('shows the XML document answer of GET and POST', () => {
    for (const pre of [getResponse!, postResponse!]) {
      expect(shown(pre)).toBe(
        ['HTTP/1.1 200 OK', 'Content-Type: text/xml; charset=utf-8', 'Content-Length: length', '', '<?xml version="1.0"?>', 'xml'].join(
          '\r\n',
        ),
      );
    }
  });

  it('escapes all XML in the samples', () => {
    for (const pre of preBlocks(html)) {
      expect(pre.replace(/<\/?font[^>]*>/g, '')).not.toMatch(/[<>]/);
    }
  });

  it('builds the action from the namespace with a single slash', () => {
    const custom = renderOperationHelp(service({ namespace: 'urn:example:catalog' }), URL, operation('Search'), profiles);
    expect(custom).toContain('SOAPAction: "urn:example:catalog/Search"');
    expect(custom).toContain('&lt;Search xmlns="urn:example:catalog"&gt;');
    const slashed = renderOperationHelp(service(), URL, operation('ProductLookup'), profiles);
    expect(slashed).toContain('SOAPAction: "http://tempuri.org/ProductLookup"');
    expect(slashed).toContain('&lt;productNumber&gt;<font class=value>int</font>&lt;/productNumber&gt;');
  });

  it('takes the host from the URL and the path as requested; links and form stay relative to the page', () => {
    const custom = renderOperationHelp(service(), 'http://10.0.0.7:8080/legacy/Index.ASMX', operation('Search'), profiles);
    expect(custom).toContain('POST /legacy/Index.ASMX HTTP/1.1\r\nHost: 10.0.0.7\r\n');
    expect(custom).toContain('GET /legacy/Index.ASMX/Search?');
    expect(custom).toContain('<a href="Index.ASMX">here</a>');
    expect(custom).toContain('action="Index.ASMX/Search"');
  });
});

describe('links', () => {
  it('are relative on every page, the form action included, so they hold whatever scheme and host the browser used', () => {
    const pages = [
      renderServiceHelp(service(), URL),
      ...OPERATIONS.map((op) => renderOperationHelp(service(), URL, op, profiles)),
      renderMethodNotFound(service(), URL, 'Nope'),
    ];
    for (const html of pages) {
      const targets = [...html.matchAll(/ (?:href|action)="([^"]*)"/g)].map((match) => match[1]);
      expect(targets.length).toBeGreaterThan(0);
      for (const target of targets) expect(target).toMatch(/^(index\.asmx([?/]|$)|\?WSDL$)/);
    }
  });
});

describe('renderMethodNotFound', () => {
  it('says the method was not found, with the name HTML-encoded', () => {
    const html = renderMethodNotFound(service(), URL, '<script>alert(1)</script>');
    expect(html).toContain('<title>CatalogService Web Service</title>');
    expect(html).toContain('<h2>Method Not Found</h2>');
    expect(html).toContain("Method '&lt;script&gt;alert(1)&lt;/script&gt;' was not found in service CatalogService.");
    expect(html).toContain('Click <a href="index.asmx">here</a> for a complete list of operations.');
    expect(html).not.toContain('<script>');
  });

  it('encodes quotes and ampersands too', () => {
    expect(renderMethodNotFound(service(), URL, `a"b'c&d`)).toContain(
      "Method 'a&quot;b&#39;c&amp;d' was not found in service CatalogService.",
    );
  });
});
