import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_STACK_NAMES, recognizeStack, stackOfRecord } from '../src/clients/stack.js';
import { readHitLine } from '../src/report/hit-line.js';
import { legacyCall } from './support/calls.js';
import { type RecordedApp, startRecordedApp } from './support/recorded-app.js';

/**
 * Each stack of docs/migration.md ("Each caller's stack") from the User-Agent its library sends as
 * shipped, and from the shape of a request where the User-Agent says nothing. The stacks the tests
 * drive for real (PHP, zeep, node-soap, .NET on Mono, Chromium) are checked in their own suites
 * against the hits of their calls.
 */

const soap = (headers: IncomingHttpHeaders) => recognizeStack({ headers, soap: true });
const http = (headers: IncomingHttpHeaders) => recognizeStack({ headers, soap: false });

describe('the stack of a call', () => {
  it.each([
    ['Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 4.0.30319.42000)', 'dotnet-wsdl', '4.0.30319.42000'],
    ['Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 2.0.50727.9179)', 'dotnet-wsdl', '2.0.50727.9179'],
    ['PHP-SOAP/8.2.36', 'php-soapclient', '8.2.36'],
    ['PHP-SOAP/7.4.33-nmm1', 'php-soapclient', '7.4.33-nmm1'],
    ['Zeep/4.2.1 (www.python-zeep.org)', 'python-zeep', '4.2.1'],
    ['JAX-WS RI 2.3.1 svn-revision#6ef5f7eb9a938dbc4562f25f8fa0b67cc4ff2dbb', 'java-jaxws', '2.3.1'],
    ['Apache-CXF/3.5.5', 'java-jaxws', '3.5.5'],
    ['Axis/1.4', 'java-axis1', '1.4'],
    ['gSOAP/2.8', 'gsoap', '2.8'],
    ['SOAP::Lite/Perl/1.27', 'perl-soaplite', '1.27'],
    ['SOAP::WSDL 3.004', 'perl-soapwsdl', '3.004'],
    ['node-soap/1.13.0', 'node-soap', '1.13.0'],
    ['curl/7.88.1', 'curl', '7.88.1'],
  ])('%s is %s %s', (userAgent, name, version) => {
    expect(soap({ 'user-agent': userAgent })).toEqual({ name, version });
  });

  it.each([
    [
      'Chrome',
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36',
      '131.0.0.0',
    ],
    ['Firefox', 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0', '121.0'],
    [
      'Safari',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15',
      '17.2',
    ],
    [
      'Edge',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91',
      '120.0.2210.91',
    ],
    [
      'Opera',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0',
      '106.0.0.0',
    ],
    [
      'Chrome on iOS',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1',
      '120.0.6099.119',
    ],
  ])('a browser: %s', (_, userAgent, version) => {
    expect(http({ 'user-agent': userAgent })).toEqual({ name: 'browser', version });
  });

  it("names a SOAP call by its HTTP library's User-Agent, without a version that would be the library's", () => {
    expect(soap({ 'user-agent': 'Python-urllib/3.11' })).toEqual({ name: 'python-suds', version: null });
    expect(soap({ 'user-agent': 'libwww-perl/6.68' })).toEqual({ name: 'perl-soapwsdl', version: null });
    expect(soap({ 'user-agent': 'Java/17.0.9' })).toEqual({ name: 'java-jaxws', version: null });
  });

  it('does not name an HTTP GET or POST call by those, which any script of the language sends', () => {
    for (const userAgent of ['Python-urllib/3.11', 'libwww-perl/6.68', 'Java/17.0.9']) {
      expect(http({ 'user-agent': userAgent })).toEqual({ name: 'unknown', version: null });
    }
  });

  it('tells .NET by its Expect: 100-continue and quoted SOAPAction where its User-Agent was changed', () => {
    const headers = { 'user-agent': 'WarehouseSync', expect: '100-continue', soapaction: '"http://open-api.example/Search"' };
    expect(soap(headers)).toEqual({ name: 'dotnet-wsdl', version: null });
    expect(soap({ ...headers, soapaction: 'http://open-api.example/Search' })).toEqual({ name: 'unknown', version: null });
    expect(soap({ ...headers, expect: undefined })).toEqual({ name: 'unknown', version: null });
  });

  it("takes no Sec-Fetch-Mode for a browser's: Node's fetch sends one too", () => {
    expect(http({ 'user-agent': 'node', 'sec-fetch-mode': 'cors' })).toEqual({ name: 'unknown', version: null });
  });

  it('is unknown for no User-Agent, one of no stack, and fetch', () => {
    expect(soap({})).toEqual({ name: 'unknown', version: null });
    expect(soap({ 'user-agent': 'WarehouseSync/2.0' })).toEqual({ name: 'unknown', version: null });
    expect(http({ 'user-agent': 'node' })).toEqual({ name: 'unknown', version: null });
  });

  it('keeps no version longer than 40 characters, and the stack still', () => {
    expect(soap({ 'user-agent': `curl/7.${'8'.repeat(40)}` })).toEqual({ name: 'curl', version: null });
    expect(soap({ 'user-agent': `curl/7.${'8'.repeat(38)}` })).toEqual({ name: 'curl', version: `7.${'8'.repeat(38)}` });
  });

  it('takes a User-Agent of 16 KB in a few milliseconds at most (no backtracking that grows with it)', () => {
    const long = `Mozilla/5.0 ${'Chrome/x Firefox/ Version/+ '.repeat(600)}`;
    const started = performance.now();
    for (let i = 0; i < 20; i++) expect(http({ 'user-agent': long }).name).toBe('unknown');
    expect((performance.now() - started) / 20).toBeLessThan(5);
  });
});

describe('a stack read back from a ledger record', () => {
  it('is one of the vocabulary, with a version that is one or none', () => {
    for (const name of CLIENT_STACK_NAMES) expect(stackOfRecord(name, null)).toEqual({ name, version: null });
    expect(stackOfRecord('curl', '8.5.0')).toEqual({ name: 'curl', version: '8.5.0' });
  });

  it.each([
    ['a name not in the vocabulary', 'cobol-soap', null],
    ['a name that is not text', 42, null],
    ['a version with a space', 'curl', '8.5.0 evil'],
    ['a version of markup', 'curl', '<b>8</b>'],
    ['a version that is not text', 'curl', 8],
    ['a version of 41 characters', 'curl', `8.${'1'.repeat(39)}`],
    ['a version for no known stack, which the proxy never writes', 'unknown', '1.0'],
  ])('is refused with %s', (_, name, version) => {
    expect(stackOfRecord(name, version)).toBeNull();
  });
});

describe('a stack read back from a hit line (npm run report)', () => {
  const line = (fields: object): string =>
    JSON.stringify({
      time: '2026-11-27T09:00:00.000Z',
      event: 'deprecated_call',
      client: 'a',
      operation: 'Search',
      binding: 'soap11',
      outcome: 'ok',
      ...fields,
    });
  const hitOf = (fields: object) => {
    const read = readHitLine(line(fields));
    if (read.kind !== 'hit') throw new Error(`not a hit: ${JSON.stringify(read)}`);
    return read.hit;
  };

  it('is the stack the line names', () => {
    expect(hitOf({ clientStack: 'gsoap', clientStackVersion: '2.8' })).toMatchObject({ clientStack: 'gsoap', clientStackVersion: '2.8' });
  });

  it('is none, and the hit still counted, for a line of an older version or a stack the proxy would not write', () => {
    expect(hitOf({})).not.toHaveProperty('clientStack');
    expect(hitOf({ clientStack: 'cobol-soap', clientStackVersion: null })).not.toHaveProperty('clientStack');
    expect(hitOf({ clientStack: 'curl', clientStackVersion: 'x'.repeat(1000) })).not.toHaveProperty('clientStack');
  });
});

describe('the stack in the hit of a call', () => {
  let app: RecordedApp;
  beforeAll(async () => {
    app = await startRecordedApp({});
  });
  afterAll(async () => {
    await app.close();
  });

  it('keeps no version that holds the caller key, in any binding, and the key nowhere in the line', async () => {
    const key = 'Wh7Qx29fKp31zD';
    for (const [binding, userAgent] of [
      ['soap11', `PHP-SOAP/8.2.7+${key}`],
      ['httpGet', `Mozilla/5.0 (X11) Gecko/20100101 Firefox/121.${key}`],
    ] as const) {
      app.lines.length = 0;
      await (await legacyCall(app.base, binding, 'Search', { query: 'dog', apiKey: key }, { 'user-agent': userAgent })).text();
      const hit = app.lines.find((line) => line.event === 'deprecated_call');
      expect(hit).toMatchObject({ clientStack: binding === 'soap11' ? 'php-soapclient' : 'browser', clientStackVersion: null });
      expect(JSON.stringify(app.lines)).not.toContain(key);
    }
  });

  it('keeps the version of a call whose key is not in it, as SOAP, or HTTP for the SOAP-only rows', async () => {
    app.lines.length = 0;
    await (await legacyCall(app.base, 'soap12', 'Search', { query: 'dog', apiKey: 'k1' }, { 'user-agent': 'Python-urllib/3.11' })).text();
    await (await legacyCall(app.base, 'httpPost', 'Search', { query: 'dog', apiKey: 'k1' }, { 'user-agent': 'Python-urllib/3.11' })).text();
    await (await legacyCall(app.base, 'soap11', 'Search', { query: 'dog', apiKey: 'k1' }, { 'user-agent': 'gSOAP/2.8' })).text();
    const hits = app.lines.filter((line) => line.event === 'deprecated_call');
    expect(hits.map((hit) => [hit.binding, hit.clientStack, hit.clientStackVersion])).toEqual([
      ['soap12', 'python-suds', null],
      ['httpPost', 'unknown', null],
      ['soap11', 'gsoap', '2.8'],
    ]);
  });
});
