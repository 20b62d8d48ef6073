import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClientAsync } from 'soap';
import { describe, expect, it } from 'vitest';
import { renderDisco } from '../src/inbound/description/disco.js';
import { SCHEMA_NOT_FOUND, WSDL_NOT_FOUND } from '../src/messages.js';
import { renderWsdl } from '../src/inbound/description/wsdl.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute, childElements, innerText, type XmlElement } from '../src/xml/tree.js';
import { testConfig, testService } from './support/config.js';
import { XSD_NS } from './support/wire.js';

// Expected values are written out from the specs (docs/wire.md §0, §7.2/§7.3),
// not derived from the operation table, so a drift in either shows up here.

const URL = 'https://legacy.example.com/index.asmx';
const service = testService;
const profiles = testConfig().paging.profiles;

const WSDL = 'http://schemas.xmlsoap.org/wsdl/';
const SOAP11 = 'http://schemas.xmlsoap.org/wsdl/soap/';
const SOAP12 = 'http://schemas.xmlsoap.org/wsdl/soap12/';
const HTTP = 'http://schemas.xmlsoap.org/wsdl/http/';
const MIME = 'http://schemas.xmlsoap.org/wsdl/mime/';

/** docs/wire.md §0: operations in method order, parameters in declaration order. */
const SPEC_OPERATIONS: readonly { name: string; params: readonly [string, 'string' | 'int'][]; replacement: string }[] = [
  {
    name: 'StoreLookup',
    params: [
      ['storeId', 'string'],
      ['apiKey', 'string'],
      ['version', 'string'],
      ['productTypes', 'string'],
    ],
    replacement: '/product.searchForProductsOfStore.cp',
  },
  {
    name: 'StoreLookupPaged',
    params: [
      ['storeId', 'string'],
      ['apiKey', 'string'],
      ['version', 'string'],
      ['productTypes', 'string'],
      ['pageIndex', 'int'],
      ['pageSize', 'int'],
    ],
    replacement: '/product.searchForProductsOfStore.cp',
  },
  {
    name: 'ProductLookup',
    params: [
      ['productNumber', 'int'],
      ['apiKey', 'string'],
      ['version', 'string'],
    ],
    replacement: '/product.searchForProduct.cp',
  },
  {
    name: 'Search',
    params: [
      ['query', 'string'],
      ['apiKey', 'string'],
      ['version', 'string'],
    ],
    replacement: '/product.search.cp',
  },
  {
    name: 'AdvancedSearch',
    params: [
      ['query', 'string'],
      ['apiKey', 'string'],
      ['version', 'string'],
      ['productTypes', 'string'],
      ['startResults', 'string'],
      ['maxResults', 'string'],
      ['maxProductsPerDesign', 'string'],
      ['sort', 'string'],
    ],
    replacement: '/product.search.cp',
  },
];
const OP_NAMES = SPEC_OPERATIONS.map((op) => op.name);

const children = (node: XmlElement, local?: string): XmlElement[] =>
  childElements(node).filter((child) => local === undefined || child.local === local);

function only(node: XmlElement, local: string): XmlElement {
  const found = children(node, local);
  expect(found, `exactly one ${local} in ${node.name}`).toHaveLength(1);
  return found[0]!;
}

const names = (nodes: XmlElement[]): (string | undefined)[] => nodes.map((node) => attribute(node, 'name'));

function attributesOf(node: XmlElement): Record<string, string> {
  return Object.fromEntries(node.attributes.map((attr) => [attr.name, attr.value]));
}

describe('renderWsdl', () => {
  const text = renderWsdl(service(), URL, profiles);
  const root = parseXml(text);

  it('is an indented UTF-8 document with CRLF line breaks', () => {
    expect(text.startsWith('<?xml version="1.0" encoding="utf-8"?>\r\n<wsdl:definitions ')).toBe(true);
    expect(text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(text.endsWith('</wsdl:definitions>')).toBe(true);
    const lines = text.split('\r\n');
    let previous = 0;
    for (const line of lines.slice(1)) {
      const indent = /^ */.exec(line)![0].length;
      expect(line[indent], `line starts with a tag: ${line}`).toBe('<');
      expect(indent % 2, `two spaces per level: ${line}`).toBe(0);
      expect(indent, `at most one level deeper: ${line}`).toBeLessThanOrEqual(previous + 2);
      previous = indent;
    }
    expect(lines[2]).toBe('  <wsdl:types>');
    expect(lines[3]).toBe('    <s:schema elementFormDefault="qualified" targetNamespace="http://tempuri.org/">');
    expect(lines[4]).toBe('      <s:element name="StoreLookup">');
  });

  it('opens with the root start tag of §7.2, declarations in that order', () => {
    const start = text.slice(text.indexOf('<wsdl:definitions'), text.indexOf('>', text.indexOf('<wsdl:definitions')) + 1);
    expect(start).toBe(
      '<wsdl:definitions xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:tm="http://microsoft.com/wsdl/mime/textMatching/" ' +
        'xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:mime="http://schemas.xmlsoap.org/wsdl/mime/" ' +
        'xmlns:tns="http://tempuri.org/" xmlns:s="http://www.w3.org/2001/XMLSchema" ' +
        'xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/" ' +
        'xmlns:http="http://schemas.xmlsoap.org/wsdl/http/" targetNamespace="http://tempuri.org/" ' +
        'xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/">',
    );
  });

  it('has types, messages, three portTypes, four bindings and the service, in that order', () => {
    expect(root.uri).toBe(WSDL);
    expect(root.local).toBe('definitions');
    const locals = childElements(root).map((node) => node.local);
    expect(locals).toEqual([
      'types',
      ...Array<string>(SPEC_OPERATIONS.length * 6).fill('message'),
      'portType',
      'portType',
      'portType',
      'binding',
      'binding',
      'binding',
      'binding',
      'service',
    ]);
    expect(childElements(root).every((node) => node.uri === WSDL)).toBe(true);
  });

  it('declares per operation the request element, then the response element', () => {
    const schema = only(only(root, 'types'), 'schema');
    expect(schema.uri).toBe(XSD_NS);
    expect(attributesOf(schema)).toEqual({ elementFormDefault: 'qualified', targetNamespace: 'http://tempuri.org/' });
    expect(names(children(schema))).toEqual(OP_NAMES.flatMap((name) => [name, `${name}Response`]));

    const byName = new Map(children(schema).map((node) => [attribute(node, 'name'), node]));
    for (const op of SPEC_OPERATIONS) {
      const request = byName.get(op.name);
      const response = byName.get(`${op.name}Response`);
      const fields = children(only(only(request!, 'complexType'), 'sequence'));
      expect(fields.map(attributesOf)).toEqual(
        op.params.map(([name, type]) =>
          type === 'int'
            ? { minOccurs: '1', maxOccurs: '1', name, type: 's:int' }
            : { minOccurs: '0', maxOccurs: '1', name, type: 's:string' },
        ),
      );
      const result = only(only(only(response!, 'complexType'), 'sequence'), 'element');
      expect(attributesOf(result)).toEqual({ minOccurs: '0', maxOccurs: '1', name: `${op.name}Result` });
      const mixed = only(result, 'complexType');
      expect(attributesOf(mixed)).toEqual({ mixed: 'true' });
      expect(children(only(mixed, 'sequence')).map((node) => [node.uri, node.local, node.attributes.length])).toEqual([[XSD_NS, 'any', 0]]);
    }
    expect(text).toContain(
      '<s:element minOccurs="0" maxOccurs="1" name="StoreLookupResult">\r\n' +
        '              <s:complexType mixed="true">\r\n' +
        '                <s:sequence>\r\n' +
        '                  <s:any />\r\n',
    );
  });

  it('lists all SOAP messages, then all HTTP GET, then all HTTP POST messages', () => {
    const messages = children(root, 'message');
    expect(names(messages)).toEqual(
      ['Soap', 'HttpGet', 'HttpPost'].flatMap((protocol) => OP_NAMES.flatMap((name) => [`${name}${protocol}In`, `${name}${protocol}Out`])),
    );
    const byName = new Map(messages.map((message) => [attribute(message, 'name'), message]));
    for (const op of SPEC_OPERATIONS) {
      expect(children(byName.get(`${op.name}SoapIn`)!).map(attributesOf)).toEqual([{ name: 'parameters', element: `tns:${op.name}` }]);
      expect(children(byName.get(`${op.name}SoapOut`)!).map(attributesOf)).toEqual([
        { name: 'parameters', element: `tns:${op.name}Response` },
      ]);
      for (const protocol of ['HttpGet', 'HttpPost']) {
        // Every HTTP parameter is a string, the ints included.
        expect(children(byName.get(`${op.name}${protocol}In`)!).map(attributesOf)).toEqual(
          op.params.map(([name]) => ({ name, type: 's:string' })),
        );
        // The XmlNode answer is a bare MIME part: no element, no type.
        expect(children(byName.get(`${op.name}${protocol}Out`)!).map(attributesOf)).toEqual([{ name: 'Body' }]);
      }
    }
  });

  it('has exactly three portTypes, each operation documented with its deprecation and parameter mapping', () => {
    const portTypes = children(root, 'portType');
    expect(names(portTypes)).toEqual(['CatalogServiceSoap', 'CatalogServiceHttpGet', 'CatalogServiceHttpPost']);
    for (const portType of portTypes) {
      const protocol = attribute(portType, 'name')!.slice('CatalogService'.length);
      const operations = children(portType);
      expect(names(operations)).toEqual(OP_NAMES);
      operations.forEach((operation, index) => {
        const op = SPEC_OPERATIONS[index]!;
        const [documentation, input, output, ...rest] = children(operation);
        expect(rest).toEqual([]);
        expect(documentation!.name).toBe('wsdl:documentation');
        expect(attributesOf(documentation!)).toEqual({ 'xmlns:wsdl': WSDL });
        expect(innerText(documentation!).startsWith(`Deprecated. Use ${op.replacement} instead.`)).toBe(true);
        // The mapping follows the sentence (and migration note), starting with the first parameter.
        expect(innerText(documentation!)).toContain(`. Parameters: ${op.params[0]![0]} → `);
        expect([input!.name, attribute(input!, 'message')]).toEqual(['wsdl:input', `tns:${op.name}${protocol}In`]);
        expect([output!.name, attribute(output!, 'message')]).toEqual(['wsdl:output', `tns:${op.name}${protocol}Out`]);
      });
    }
    expect(text).toContain(
      '<wsdl:documentation xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/">Deprecated. Use /product.searchForProduct.cp instead.' +
        ' Parameters: productNumber → productId (the same number); apiKey → appKey (the application key of the caller);' +
        ' version → v (the API version of the replacement endpoint, not of the legacy service).</wsdl:documentation>',
    );
  });

  it('names the page parameters of the configured paging profile in the mapping', () => {
    const renamed = { ...profiles, '/product.search.cp': { ...profiles['/product.search.cp'], pageParam: 'p', sizeParam: 'n' } };
    const advanced = children(children(parseXml(renderWsdl(service(), URL, renamed)), 'portType')[0]!).find(
      (operation) => attribute(operation, 'name') === 'AdvancedSearch',
    )!;
    expect(innerText(only(advanced, 'documentation'))).toBe(
      'Deprecated. Use /product.search.cp instead. Use page-based requesting instead of startResults and maxResults; parameter ' +
        'merchandiseIds replaces productTypes.' +
        ' Parameters: query → query (the same text);' +
        ' productTypes → merchandiseIds (the ids of the product types, comma-separated (mapping.merchandise));' +
        ' startResults, maxResults → p, n (request the pages that cover the items from startResults on, and keep maxResults of them);' +
        ' maxProductsPerDesign → maxProductsPerDesign (the same number);' +
        ' sort → sort (the sort names of the replacement (by_score_desc, by_date_desc));' +
        ' apiKey → appKey (the application key of the caller);' +
        ' version → v (the API version of the replacement endpoint, not of the legacy service).',
    );
  });

  it('binds SOAP 1.1 and SOAP 1.2 to the one Soap portType, document/literal, with bare actions', () => {
    const bindings = children(root, 'binding');
    expect(bindings.map(attributesOf)).toEqual([
      { name: 'CatalogServiceSoap', type: 'tns:CatalogServiceSoap' },
      { name: 'CatalogServiceSoap12', type: 'tns:CatalogServiceSoap' },
      { name: 'CatalogServiceHttpGet', type: 'tns:CatalogServiceHttpGet' },
      { name: 'CatalogServiceHttpPost', type: 'tns:CatalogServiceHttpPost' },
    ]);
    for (const [binding, ns] of [
      [bindings[0]!, SOAP11],
      [bindings[1]!, SOAP12],
    ] as const) {
      const [transport, ...operations] = children(binding);
      expect([transport!.uri, transport!.local]).toEqual([ns, 'binding']);
      expect(attributesOf(transport!)).toEqual({ transport: 'http://schemas.xmlsoap.org/soap/http' });
      expect(names(operations)).toEqual(OP_NAMES);
      for (const operation of operations) {
        const [soapOperation, input, output] = children(operation);
        expect([soapOperation!.uri, soapOperation!.local]).toEqual([ns, 'operation']);
        expect(attributesOf(soapOperation!)).toEqual({
          soapAction: `http://tempuri.org/${attribute(operation, 'name')}`,
          style: 'document',
        });
        for (const message of [input!, output!]) {
          const body = only(message, 'body');
          expect([body.uri, attributesOf(body)]).toEqual([ns, { use: 'literal' }]);
        }
        expect([input!.local, output!.local]).toEqual(['input', 'output']);
      }
    }
    expect(text).toContain('<soap:operation soapAction="http://tempuri.org/StoreLookup" style="document" />');
    expect(text).toContain('<soap12:operation soapAction="http://tempuri.org/StoreLookup" style="document" />');
    expect(text).not.toContain('soapActionRequired');
  });

  it('binds HTTP GET and POST with urlEncoded / form input and a text/xml Body output', () => {
    const [, , get, post] = children(root, 'binding');
    for (const [binding, verb, input] of [
      [get!, 'GET', [HTTP, 'urlEncoded', {}]],
      [post!, 'POST', [MIME, 'content', { type: 'application/x-www-form-urlencoded' }]],
    ] as const) {
      const [httpBinding, ...operations] = children(binding);
      expect([httpBinding!.uri, httpBinding!.local, attributesOf(httpBinding!)]).toEqual([HTTP, 'binding', { verb }]);
      expect(names(operations)).toEqual(OP_NAMES);
      for (const operation of operations) {
        const [httpOperation, inputElement, outputElement] = children(operation);
        expect([httpOperation!.uri, httpOperation!.local, attributesOf(httpOperation!)]).toEqual([
          HTTP,
          'operation',
          { location: `/${attribute(operation, 'name')}` },
        ]);
        const [inputContent] = children(inputElement!);
        expect([inputContent!.uri, inputContent!.local, attributesOf(inputContent!)]).toEqual(input);
        const [outputContent] = children(outputElement!);
        expect([outputContent!.uri, outputContent!.local, attributesOf(outputContent!)]).toEqual([
          MIME,
          'content',
          { part: 'Body', type: 'text/xml' },
        ]);
      }
    }
  });

  it('exposes four ports at the service URL', () => {
    const serviceElement = only(root, 'service');
    expect(attribute(serviceElement, 'name')).toBe('CatalogService');
    const ports = children(serviceElement);
    expect(ports.map(attributesOf)).toEqual(
      ['Soap', 'Soap12', 'HttpGet', 'HttpPost'].map((protocol) => ({
        name: `CatalogService${protocol}`,
        binding: `tns:CatalogService${protocol}`,
      })),
    );
    expect(ports.map((port) => children(port).map((address) => [address.uri, address.local, attributesOf(address)]))).toEqual(
      [SOAP11, SOAP12, HTTP, HTTP].map((ns) => [[ns, 'address', { location: URL }]]),
    );
  });

  it('takes the namespace and service name from configuration', () => {
    const custom = parseXml(renderWsdl(service({ namespace: 'urn:example:catalog', name: 'Legacy' }), URL, profiles));
    expect(attribute(custom, 'targetNamespace')).toBe('urn:example:catalog');
    expect(attribute(custom, 'xmlns:tns')).toBe('urn:example:catalog');
    expect(names(children(custom, 'portType'))).toEqual(['LegacySoap', 'LegacyHttpGet', 'LegacyHttpPost']);
    // {ns} + '/' + {Op}: a namespace without a trailing slash gets exactly one.
    const soapOperation = only(children(children(custom, 'binding')[0]!, 'operation')[0]!, 'operation');
    expect(attribute(soapOperation, 'soapAction')).toBe('urn:example:catalog/StoreLookup');

    const slashed = renderWsdl(service({ namespace: 'http://example.com/catalog/' }), URL, profiles);
    expect(slashed).toContain('soapAction="http://example.com/catalog/Search"');
    expect(slashed).not.toContain('catalog//');
  });

  it('escapes attribute values', () => {
    expect(renderWsdl(service(), 'https://h.example/index.asmx?a=1&b="2"', profiles)).toContain(
      '<soap:address location="https://h.example/index.asmx?a=1&amp;b=&quot;2&quot;" />',
    );
  });

  it('is understood by a WSDL-driven SOAP client', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wsdl-'));
    try {
      const file = join(dir, 'service.wsdl');
      await writeFile(file, text);
      const description = (await createClientAsync(file)).describe() as Record<string, Record<string, Record<string, { input: object }>>>;
      expect(Object.keys(description)).toEqual(['CatalogService']);
      const ports = description.CatalogService!;
      expect(Object.keys(ports)).toEqual(['CatalogServiceSoap', 'CatalogServiceSoap12']);
      for (const port of Object.values(ports)) {
        expect(Object.keys(port)).toEqual(OP_NAMES);
        for (const op of SPEC_OPERATIONS) {
          expect(Object.entries(port[op.name]!.input)).toEqual(op.params.map(([name, type]) => [name, `s:${type}`]));
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exports the texts of the not-found answers', () => {
    expect(WSDL_NOT_FOUND).toBe('XML Web service description was not found.');
    expect(SCHEMA_NOT_FOUND).toBe('Schema not found.');
  });
});

describe('renderDisco', () => {
  it('is the §7.3 document byte for byte', () => {
    expect(renderDisco(service(), URL)).toBe(
      [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<discovery xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
          'xmlns="http://schemas.xmlsoap.org/disco/">',
        '  <contractRef ref="https://legacy.example.com/index.asmx?wsdl" docRef="https://legacy.example.com/index.asmx" ' +
          'xmlns="http://schemas.xmlsoap.org/disco/scl/" />',
        '  <soap address="https://legacy.example.com/index.asmx" xmlns:q1="http://tempuri.org/" binding="q1:CatalogServiceSoap" ' +
          'xmlns="http://schemas.xmlsoap.org/disco/soap/" />',
        '  <soap address="https://legacy.example.com/index.asmx" xmlns:q2="http://tempuri.org/" binding="q2:CatalogServiceSoap12" ' +
          'xmlns="http://schemas.xmlsoap.org/disco/soap/" />',
        '</discovery>',
      ].join('\r\n'),
    );
  });

  it('uses the configured namespace and service name', () => {
    const disco = parseXml(renderDisco(service({ namespace: 'urn:example:catalog', name: 'Legacy' }), URL));
    const soap = children(disco, 'soap');
    expect(soap.map((node) => [node.uri, attribute(node, 'binding')])).toEqual([
      ['http://schemas.xmlsoap.org/disco/soap/', 'q1:LegacySoap'],
      ['http://schemas.xmlsoap.org/disco/soap/', 'q2:LegacySoap12'],
    ]);
    expect(soap.map((node) => attribute(node, `xmlns:${attribute(node, 'binding')!.split(':')[0]}`))).toEqual([
      'urn:example:catalog',
      'urn:example:catalog',
    ]);
  });
});
