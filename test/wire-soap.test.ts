import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../src/start/main.js';
import { startProxy, startUnreachableProxy } from './support/proxy.js';
import { rawRequest, type RawResponse } from './support/raw-http.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';
import {
  ENV_NS,
  INT32_OUT_OF_RANGE,
  NOT_AN_INT32,
  REFUSED_CONNECTION_FAULT,
  SERVICE_NAMESPACE,
  SOAP12_CONTENT_TYPE,
  UNABLE_TO_PROCESS,
  UNABLE_TO_READ,
  XML_CONTENT_TYPE,
  XML_DECLARATION,
  XSD_NS,
  XSI_NS,
  envelopeStart,
  escapeText,
  expectedFault,
  type FaultCode,
  type Version,
} from './support/wire.js';

/**
 * Golden wire tests of the SOAP bindings (docs/wire.md §2–§5, §8): raw requests, exact bytes and
 * headers, sent over loopback to the whole product as `npm start` runs it (embedded demo upstream).
 * Every expected answer is written here from the spec text, never produced by the product's own
 * writers. The demo upstream echoes Search's `query` in `<searchString>`, which makes routing,
 * parameter binding and request decoding visible on the wire.
 */

type RequestHeaders = Readonly<Record<string, string>>;

const ACTION = `${SERVICE_NAMESPACE}Search`;

// --- The answers, written from the spec ------------------------------------------------------

/** §4, §5.2: every answer's Content-Type, never with an action parameter. */
const CONTENT_TYPE: Readonly<Record<Version, string>> = { '1.1': XML_CONTENT_TYPE, '1.2': SOAP12_CONTENT_TYPE };

/** §4: what surrounds `{result}` in a success envelope. */
function successFrame(version: Version, op: string): readonly [head: string, tail: string] {
  return [
    `${XML_DECLARATION}${envelopeStart(version)}<soap:Body><${op}Response xmlns="${SERVICE_NAMESPACE}"><${op}Result>`,
    `</${op}Result></${op}Response></soap:Body></soap:Envelope>`,
  ];
}

const NO_ACTION = 'Unable to handle request without a valid action parameter. Please supply a valid soap action.';
const notRecognized = (action: string): string => `Unable to handle request. The action '${action}' was not recognized.`;
const unknownSoapAction = (value: string): string => `Server did not recognize the value of HTTP Header SOAPAction: ${value}.`;
const versionMismatch = (ns: string): string =>
  `Possible SOAP version mismatch: Envelope namespace ${ns} was unexpected. Expecting http://schemas.xmlsoap.org/soap/envelope/.`;
const missing = (element: 'Envelope' | 'Body'): string => `Request format is invalid: Missing required soap:${element} element.`;

// --- What is expected of one request ---------------------------------------------------------

/** 200 with an envelope for `op`; for Search, `echo` is the `<searchString>` content as written on the wire. */
interface Answered {
  readonly kind: 'answer';
  readonly version: Version;
  readonly op: string;
  readonly echo: string | null;
}
/** 500 with exactly this fault; `text` unescaped as the spec writes it, or only its known start. */
interface Faulted {
  readonly kind: 'fault';
  readonly version: Version;
  readonly code: FaultCode;
  readonly text: string | { readonly startsWith: string };
}
/** 400 or 415 with an empty body. */
interface Empty {
  readonly kind: 'empty';
  readonly status: 400 | 415;
  readonly version: Version;
}
type Outcome = Answered | Faulted | Empty;

const QUERY = 'routed';
const answered = (version: Version, echo: string | null = QUERY, op = 'Search'): Answered => ({ kind: 'answer', version, op, echo });
const fault = (version: Version, code: FaultCode, text: Faulted['text']): Faulted => ({ kind: 'fault', version, code, text });
const empty = (status: 400 | 415, version: Version): Empty => ({ kind: 'empty', status, version });

interface Row {
  /** The spec row or rule, in its own words where it has some. */
  readonly row: string;
  readonly headers: RequestHeaders;
  readonly body: string | Buffer;
  readonly outcome: Outcome;
}

// --- Requests --------------------------------------------------------------------------------

/** A request envelope as .NET's client writes it (§8): declaration, `soap`/`xsi`/`xsd`, no header. */
const envelope = (version: Version, body: string): string =>
  `${XML_DECLARATION}<soap:Envelope xmlns:soap="${ENV_NS[version]}" xmlns:xsi="${XSI_NS}" ` +
  `xmlns:xsd="${XSD_NS}"><soap:Body>${body}</soap:Body></soap:Envelope>`;
const search = (query: string = QUERY): string => `<Search xmlns="${SERVICE_NAMESPACE}"><query>${query}</query></Search>`;
const UNKNOWN_BODY = `<Nope xmlns="${SERVICE_NAMESPACE}" />`;

/** SOAP 1.1 headers as .NET sends them (§8), with the given SOAPAction. */
const soap11 = (soapAction = `"${ACTION}"`, contentType = XML_CONTENT_TYPE): RequestHeaders => ({
  'Content-Type': contentType,
  SOAPAction: soapAction,
});
/** SOAP 1.2 as .NET sends it (§8): the action in the Content-Type, no SOAPAction. */
const soap12 = (contentType = `${SOAP12_CONTENT_TYPE}; action="${ACTION}"`): RequestHeaders => ({ 'Content-Type': contentType });

interface RawOptions {
  /** Another proxy than the main one. */
  readonly base?: string;
  readonly agent?: Agent;
}

let proxy: Running;

/**
 * `POST /index.asmx` with exactly these headers, in this order, plus Content-Length (no
 * Content-Type, no SOAPAction unless given). With `Expect: 100-continue` the body waits for the
 * interim response, as .NET's client does.
 */
const raw = (headers: RequestHeaders, body: string | Buffer = '', { base = proxy.url, agent }: RawOptions = {}): Promise<RawResponse> =>
  rawRequest(base, { method: 'POST', path: '/index.asmx', headers, body, agent });

/** The `{result}` of a success envelope after checking every byte around it (§4). */
function resultOf(response: RawResponse, version: Version, op: string): string {
  const [head, tail] = successFrame(version, op);
  expect(response.status).toBe(200);
  expect(response.headers['content-type']).toBe(CONTENT_TYPE[version]);
  expect(response.headers['cache-control']).toBe('private, max-age=0');
  expect(response.text.slice(0, head.length)).toBe(head);
  expect(response.text.slice(-tail.length)).toBe(tail);
  // One line, no trailing newline, UTF-8 without BOM (the first byte is the declaration's `<`).
  expect(response.text).not.toMatch(/[\r\n]/);
  expect(Buffer.from(response.text, 'utf8').equals(response.bytes)).toBe(true);
  const result = response.text.slice(head.length, -tail.length);
  // The un-namespaced result root gets xmlns="" under the wrapper's default namespace.
  expect(result).toMatch(/^<searchResultSet xmlns="" /);
  return result;
}

/** What the demo upstream echoed of Search's `query`, as written on the wire. */
function echoOf(result: string): string {
  if (result.includes('<searchString />')) return '';
  const match = /<searchString>([^<]*)<\/searchString>/.exec(result);
  expect(match).not.toBeNull();
  return match?.[1] ?? '';
}

function expectOutcome(response: RawResponse, outcome: Outcome): void {
  switch (outcome.kind) {
    case 'answer': {
      const result = resultOf(response, outcome.version, outcome.op);
      if (outcome.echo !== null) expect(echoOf(result)).toBe(outcome.echo);
      return;
    }
    case 'fault': {
      expect(response.status).toBe(500);
      expect(response.headers['content-type']).toBe(CONTENT_TYPE[outcome.version]);
      // §5.2: headers are cleared before a fault is written, so no max-age=0.
      expect(response.headers['cache-control']).toBe('private');
      if (typeof outcome.text === 'string') {
        expect(response.text).toBe(expectedFault(outcome.version, outcome.code, outcome.text));
        expect(response.bytes.equals(Buffer.from(response.text, 'utf8'))).toBe(true);
      } else {
        // Only the start of the text is specified: check everything else byte for byte.
        const marker = '\u0000';
        const [head = '', tail = ''] = expectedFault(outcome.version, outcome.code, marker).split(marker);
        expect(response.text.slice(0, head.length)).toBe(head);
        expect(response.text.slice(head.length)).toMatch(
          new RegExp(`^${escapeRegExp(escapeText(outcome.text.startsWith))}[^<]*${escapeRegExp(tail)}$`),
        );
      }
      return;
    }
    case 'empty':
      expect(response.status).toBe(outcome.status);
      expect(response.headers['content-type']).toBe(CONTENT_TYPE[outcome.version]);
      expect(response.headers['cache-control']).toBe('private');
      expect(response.headers['content-length']).toBe('0');
      expect(response.bytes.length).toBe(0);
      return;
  }
}

/**
 * 1-based line and column of the character just after the first `end` in `text`: where §11.9's
 * baseline puts the reader after a failing element. Columns count UTF-16 units, as .NET chars do.
 */
function positionAfter(text: string, end: string): readonly [number, number] {
  const lines = text.slice(0, text.indexOf(end) + end.length).split(/\r\n|\r|\n/);
  return [lines.length, (lines.at(-1) ?? '').length + 1];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const sendRow = async ({ headers, body, outcome }: Row): Promise<void> => expectOutcome(await raw(headers, body), outcome);

// --- Fixtures ---------------------------------------------------------------------------------

/** A proxy whose upstream refuses connections (§5.4, last row). */
let unreachable: Running;
/** Records every request: a DTD or external entity the reader resolved would show up here (§3). */
let sentinel: StubUpstream;

beforeAll(async () => {
  [proxy, unreachable, sentinel] = await Promise.all([
    startProxy(),
    startUnreachableProxy(),
    startStubUpstream((_req, res) => res.end('<!ENTITY leak "leaked">')),
  ]);
});

afterAll(async () => {
  await Promise.all([proxy.stop(), unreachable.stop(), sentinel.close()]);
});

// --- §2.4 --------------------------------------------------------------------------------------

describe('§2.4 decision table', () => {
  const ROWS: readonly Row[] = [
    // Row 1: not application/soap+xml, SOAPAction known (quoted or not) → routed.
    { row: '1 · known SOAPAction, quoted', headers: soap11(`"${ACTION}"`), body: envelope('1.1', search()), outcome: answered('1.1') },
    { row: '1 · known SOAPAction, unquoted', headers: soap11(ACTION), body: envelope('1.1', search()), outcome: answered('1.1') },
    {
      row: '1 · known SOAPAction, URL-encoded',
      headers: soap11('http%3A%2F%2Ftempuri.org%2FSearch'),
      body: envelope('1.1', search()),
      outcome: answered('1.1'),
    },
    {
      row: '1 · known SOAPAction, quoted and URL-encoded',
      headers: soap11('"http%3a%2f%2ftempuri.org%2fSearch"'),
      body: envelope('1.1', search()),
      outcome: answered('1.1'),
    },
    // Row 2: `""` or empty → 500, 1.1 soap:Client.
    {
      row: '2 · SOAPAction ""',
      headers: soap11('""'),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('')),
    },
    {
      row: '2 · SOAPAction empty',
      headers: soap11(''),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('')),
    },
    // Row 3: unknown X → 500, 1.1 soap:Client, X unquoted and decoded.
    {
      row: '3 · unknown SOAPAction',
      headers: soap11('urn:unknown'),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('urn:unknown')),
    },
    {
      row: '3 · actions are case-sensitive; X shown unquoted',
      headers: soap11(`"${SERVICE_NAMESPACE}search"`),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction(`${SERVICE_NAMESPACE}search`)),
    },
    {
      row: '3 · X shown decoded (`+` is a space)',
      headers: soap11('"urn%3Ax+y"'),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('urn:x y')),
    },
    {
      row: '3 · a value quoted at one end only is kept',
      headers: soap11(`"${ACTION}`),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction(`"${ACTION}`)),
    },
    {
      row: '3 · the 1.1 router reads no envelope: a 1.2 envelope still gets a 1.1 fault',
      headers: soap11('urn:unknown'),
      body: envelope('1.2', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('urn:unknown')),
    },
    // Row 4: exactly `"` → 500, 1.1 soap:Server.
    {
      row: '4 · SOAPAction exactly "',
      headers: soap11('"'),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Server', `${UNABLE_TO_PROCESS}Length cannot be less than zero.\r\nParameter name: length`),
    },
    // Row 5: SOAPAction absent or type application/soap+xml, known action parameter → routed.
    { row: '5 · action="…" (the .NET form)', headers: soap12(), body: envelope('1.2', search()), outcome: answered('1.2') },
    {
      row: '5 · action unquoted',
      headers: soap12(`application/soap+xml; charset=utf-8; action=${ACTION}`),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · action single-quoted',
      headers: soap12(`application/soap+xml; action='${ACTION}'; charset=utf-8`),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · ACTION= (name case-insensitive)',
      headers: soap12(`application/soap+xml; charset=utf-8; ACTION="${ACTION}"`),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · spaces and tabs trimmed',
      headers: soap12(`application/soap+xml;charset=utf-8;\t action = \t" ${ACTION}\t"`),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · action URL-encoded',
      headers: soap12('application/soap+xml; charset=utf-8; action="http%3A%2F%2Ftempuri.org%2FSearch"'),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · type application/soap+xml: a SOAPAction header is ignored',
      headers: { ...soap12(), SOAPAction: '"urn:ignored"' },
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '5 · SOAPAction absent, action parameter on text/xml, 1.1 envelope',
      headers: soap12(`text/xml; charset=utf-8; action="${ACTION}"`),
      body: envelope('1.1', search()),
      outcome: answered('1.1'),
    },
    {
      row: '5 · a repeated action parameter: the first counts (ContentType.GetParameter)',
      headers: soap12(`application/soap+xml; action="urn:first"; action="${ACTION}"`),
      body: envelope('1.2', UNKNOWN_BODY),
      outcome: fault('1.2', 'soap:Sender', notRecognized('urn:first')),
    },
    // Row 6: no or unknown action, body child {ns}{Op} → routed.
    {
      row: '6 · a 1.1 envelope without SOAPAction',
      headers: { 'Content-Type': 'text/xml; charset=utf-8' },
      body: envelope('1.1', search()),
      outcome: answered('1.1'),
    },
    {
      row: '6 · a 1.2 envelope without action parameter',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '6 · an unknown action with a known body element',
      headers: soap12('application/soap+xml; charset=utf-8; action="urn:unknown"'),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: '6 · the body element matches by qualified name, not prefix',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: envelope('1.2', `<t:Search xmlns:t="${SERVICE_NAMESPACE}"><t:query>${QUERY}</t:query></t:Search>`),
      outcome: answered('1.2'),
    },
    // Row 7: no action, unknown body child → 500, soap:Client / soap:Sender.
    {
      row: '7 · 1.1 form',
      headers: { 'Content-Type': 'text/xml; charset=utf-8' },
      body: envelope('1.1', UNKNOWN_BODY),
      outcome: fault('1.1', 'soap:Client', NO_ACTION),
    },
    {
      row: '7 · 1.2 form',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: envelope('1.2', UNKNOWN_BODY),
      outcome: fault('1.2', 'soap:Sender', NO_ACTION),
    },
    {
      row: '7 · the fault follows the envelope the router read (1.1 envelope under application/soap+xml)',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: envelope('1.1', UNKNOWN_BODY),
      outcome: fault('1.1', 'soap:Client', NO_ACTION),
    },
    {
      row: '7 · the right name in another namespace is an unknown body child',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: envelope('1.2', `<Search xmlns="urn:other"><query>x</query></Search>`),
      outcome: fault('1.2', 'soap:Sender', NO_ACTION),
    },
    {
      row: '7 · an empty Body',
      headers: soap12('application/soap+xml'),
      body: envelope('1.2', ''),
      outcome: fault('1.2', 'soap:Sender', NO_ACTION),
    },
    // Row 8: unknown action X, unknown body child → 500, soap:Client / soap:Sender.
    {
      row: '8 · 1.1 form',
      headers: soap12('text/xml; charset=utf-8; action="urn:nope"'),
      body: envelope('1.1', UNKNOWN_BODY),
      outcome: fault('1.1', 'soap:Client', notRecognized('urn:nope')),
    },
    {
      row: '8 · 1.2 form',
      headers: soap12('application/soap+xml; charset=utf-8; action="urn:nope"'),
      body: envelope('1.2', UNKNOWN_BODY),
      outcome: fault('1.2', 'soap:Sender', notRecognized('urn:nope')),
    },
    {
      row: '8 · X is the trimmed, decoded action',
      headers: soap12("application/soap+xml; action= 'urn%3Anope'"),
      body: envelope('1.2', UNKNOWN_BODY),
      outcome: fault('1.2', 'soap:Sender', notRecognized('urn:nope')),
    },
    // Row 9: body not XML → 500, SOAP 1.2 soap:Receiver.
    {
      row: '9 · a form post without SOAPAction',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `query=dog&apiKey=k`,
      outcome: fault('1.2', 'soap:Receiver', `${UNABLE_TO_PROCESS}Data at the root level is invalid. Line 1, position 1.`),
    },
    {
      row: '9 · an empty form post',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: '',
      outcome: fault('1.2', 'soap:Receiver', `${UNABLE_TO_PROCESS}Root element is missing.`),
    },
    {
      row: '9 · text/xml without SOAPAction: still the guessed SOAP 1.2',
      headers: { 'Content-Type': 'text/xml; charset=utf-8' },
      body: 'hello',
      outcome: fault('1.2', 'soap:Receiver', `${UNABLE_TO_PROCESS}Data at the root level is invalid. Line 1, position 1.`),
    },
    // Row 10: root outside both SOAP namespaces → 500, 1.1 soap:VersionMismatch.
    {
      row: '10 · root in another namespace',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: '<Envelope xmlns="urn:other"><Body /></Envelope>',
      outcome: fault('1.1', 'soap:VersionMismatch', versionMismatch('urn:other')),
    },
    {
      row: '10 · root in no namespace',
      headers: { 'Content-Type': 'text/xml; charset=utf-8' },
      body: '<Envelope><Body /></Envelope>',
      outcome: fault('1.1', 'soap:VersionMismatch', versionMismatch('')),
    },
  ];

  it.each(ROWS)('row $row', sendRow);

  it('covers rows 1 to 10', () => {
    expect(new Set(ROWS.map(({ row }) => row.split(' ')[0]))).toEqual(new Set(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']));
  });

  it('row 10 is written byte for byte with the Upgrade header (§5.4)', async () => {
    const response = await raw(soap12('application/soap+xml'), '<e:Envelope xmlns:e="urn:x"/>');
    expect(response.text).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" ' +
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Header><soap12:Upgrade ' +
        'xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:SupportedEnvelope qname="soap:Envelope" ' +
        'xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" /><soap12:SupportedEnvelope qname="soap12:Envelope" ' +
        'xmlns:soap12="http://www.w3.org/2003/05/soap-envelope" ' +
        '/></soap12:Upgrade></soap:Header><soap:Body><soap:Fault><faultcode>soap:VersionMismatch</faultcode><faultstring>Possible SOAP ' +
        'version mismatch: Envelope namespace urn:x was unexpected. Expecting ' +
        'http://schemas.xmlsoap.org/soap/envelope/.</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>',
    );
  });

  it('row 9 is written byte for byte with ---&gt;', async () => {
    const response = await raw({ 'Content-Type': 'application/x-www-form-urlencoded' }, 'storeId=1');
    expect(response.text).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope" ' +
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><soap:Fault>' +
        '<soap:Code><soap:Value>soap:Receiver</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">' +
        'Server was unable to process request. ---&gt; Data at the root level is invalid. Line 1, position 1.</soap:Text></soap:Reason>' +
        '<soap:Detail /></soap:Fault></soap:Body></soap:Envelope>',
    );
  });
});

// --- §2.5 --------------------------------------------------------------------------------------

describe('§2.5 checks after routing, in order', () => {
  const TRUNCATED =
    '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>';
  const OTHER_NS = '<Envelope xmlns="urn:other"><Body /></Envelope>';
  const bare = (version: Version, inner = ''): string => `<soap:Envelope xmlns:soap="${ENV_NS[version]}">${inner}</soap:Envelope>`;
  const ROWS: readonly Row[] = [
    // 1. Content-Type base neither text/xml nor application/soap+xml → 415, empty body.
    {
      row: '1 · routed by SOAPAction, application/json',
      headers: soap11(`"${ACTION}"`, 'application/json'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: '1 · routed by SOAPAction, no Content-Type at all',
      headers: { SOAPAction: `"${ACTION}"` },
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: '1 · routed by SOAPAction, a form post: the type is checked before the body is read',
      headers: soap11(`"${ACTION}"`, 'application/x-www-form-urlencoded'),
      body: 'query=dog',
      outcome: empty(415, '1.1'),
    },
    {
      row: '1 · body-routed 1.2 envelope under application/xml',
      headers: { 'Content-Type': 'application/xml' },
      body: envelope('1.2', search()),
      outcome: empty(415, '1.2'),
    },
    { row: '1 · body-routed 1.1 envelope without Content-Type', headers: {}, body: envelope('1.1', search()), outcome: empty(415, '1.1') },
    {
      row: '1 · routed by a known action on text/plain (no envelope read: the guess, 1.2)',
      headers: soap12(`text/plain; action="${ACTION}"`),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.2'),
    },
    {
      row: '1 · comes before VersionMismatch',
      headers: soap11(`"${ACTION}"`, 'application/json'),
      body: OTHER_NS,
      outcome: empty(415, '1.1'),
    },
    // 2. First element unreadable (malformed XML) → 400, empty body.
    { row: '2 · truncated envelope, SOAP 1.1', headers: soap11(), body: TRUNCATED, outcome: empty(400, '1.1') },
    { row: '2 · truncated envelope, routed by the action parameter', headers: soap12(), body: TRUNCATED, outcome: empty(400, '1.2') },
    { row: '2 · a form body under text/xml, routed by SOAPAction', headers: soap11(), body: 'query=dog', outcome: empty(400, '1.1') },
    { row: '2 · an empty body, routed by SOAPAction', headers: soap11(), body: '', outcome: empty(400, '1.1') },
    // 3. Envelope namespace unknown → 500 soap:VersionMismatch.
    {
      row: '3 · routed by SOAPAction',
      headers: soap11(),
      body: OTHER_NS,
      outcome: fault('1.1', 'soap:VersionMismatch', versionMismatch('urn:other')),
    },
    {
      row: '3 · routed by the action parameter',
      headers: soap12(),
      body: OTHER_NS,
      outcome: fault('1.1', 'soap:VersionMismatch', versionMismatch('urn:other')),
    },
    // 4. SOAP 1.1 envelope with a base other than text/xml → 415; SOAP 1.2 under text/xml answered as 1.2.
    {
      row: '4 · 1.1 envelope under application/soap+xml, known action',
      headers: soap12(),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: '4 · 1.1 envelope with SOAPAction under application/soap+xml (1.2 router, body-routed)',
      headers: soap11(`"${ACTION}"`, 'application/soap+xml; charset=utf-8'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: '4 · 1.2 envelope under text/xml with SOAPAction: answered as 1.2',
      headers: soap11(),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    // 5. Root not Envelope, or no Body → 500 "Missing required" faults.
    {
      row: '5 · <soap:Envelope/>',
      headers: soap11(),
      body: `<soap:Envelope xmlns:soap="${ENV_NS['1.1']}"/>`,
      outcome: fault('1.1', 'soap:Client', UNABLE_TO_READ + missing('Body')),
    },
    {
      row: '5 · Header but no Body',
      headers: soap11(),
      body: bare('1.1', '<soap:Header />'),
      outcome: fault('1.1', 'soap:Client', UNABLE_TO_READ + missing('Body')),
    },
    {
      row: '5 · Body in no namespace',
      headers: soap11(),
      body: bare('1.1', `<Body>${search()}</Body>`),
      outcome: fault('1.1', 'soap:Client', UNABLE_TO_READ + missing('Body')),
    },
    {
      row: '5 · root not Envelope',
      headers: soap11(),
      body: `<soap:Body xmlns:soap="${ENV_NS['1.1']}">${search()}</soap:Body>`,
      outcome: fault('1.1', 'soap:Client', UNABLE_TO_READ + missing('Envelope')),
    },
    {
      row: '5 · a soap:Header before the Body is read past',
      headers: soap11(),
      body: bare('1.1', `<soap:Header><a:Trace xmlns:a="urn:a">1</a:Trace></soap:Header><soap:Body>${search()}</soap:Body>`),
      outcome: answered('1.1'),
    },
    {
      row: '5 · SOAP 1.2 <soap:Envelope/>',
      headers: soap12(),
      body: bare('1.2'),
      outcome: fault('1.2', 'soap:Sender', UNABLE_TO_READ + missing('Body')),
    },
    {
      row: '5 · body-element routing: soap:Receiver, "unable to process"',
      headers: soap12('application/soap+xml; charset=utf-8'),
      body: bare('1.2'),
      outcome: fault('1.2', 'soap:Receiver', UNABLE_TO_PROCESS + missing('Body')),
    },
    {
      row: '5 · body-element routing: soap:Server, "unable to process"',
      headers: { 'Content-Type': 'text/xml; charset=utf-8' },
      body: bare('1.1'),
      outcome: fault('1.1', 'soap:Server', UNABLE_TO_PROCESS + missing('Body')),
    },
    {
      row: '5 · body-element routing, root not Envelope',
      headers: soap12('application/soap+xml'),
      body: `<soap:Header xmlns:soap="${ENV_NS['1.2']}" />`,
      outcome: fault('1.2', 'soap:Receiver', UNABLE_TO_PROCESS + missing('Envelope')),
    },
  ];

  it.each(ROWS)('check $row', sendRow);

  /** A request laid out over lines the way people indent by hand, `element` alone on line 5. */
  function multiline(version: Version, eol: string, element: string): string {
    return [
      XML_DECLARATION,
      `<soap:Envelope xmlns:soap="${ENV_NS[version]}">`,
      '  <soap:Body>',
      `    <ProductLookup xmlns="${SERVICE_NAMESPACE}">`,
      `      ${element}`,
      '      <apiKey>k</apiKey>',
      '    </ProductLookup>',
      '  </soap:Body>',
      '</soap:Envelope>',
    ].join(eol);
  }

  // 6. Parameters: bad int → 500 `There is an error in XML document (L, C).`
  it.each([
    { row: 'not a number, LF', version: '1.1', eol: '\n', element: '<productNumber>abc</productNumber>', at: [5, 41], inner: NOT_AN_INT32 },
    {
      row: 'not a number, CRLF',
      version: '1.1',
      eol: '\r\n',
      element: '<productNumber>abc</productNumber>',
      at: [5, 41],
      inner: NOT_AN_INT32,
    },
    {
      row: 'not a number, SOAP 1.2',
      version: '1.2',
      eol: '\n',
      element: '<productNumber>12a</productNumber>',
      at: [5, 41],
      inner: NOT_AN_INT32,
    },
    { row: 'decimal', version: '1.1', eol: '\n', element: '<productNumber>1.5</productNumber>', at: [5, 41], inner: NOT_AN_INT32 },
    { row: 'empty element', version: '1.1', eol: '\n', element: '<productNumber />', at: [5, 24], inner: NOT_AN_INT32 },
    {
      row: 'columns count UTF-16 units, as .NET chars',
      version: '1.1',
      eol: '\n',
      element: '<!--\u{1F600}--><productNumber>x</productNumber>',
      at: [5, 48],
      inner: NOT_AN_INT32,
    },
    {
      row: 'out of range, above',
      version: '1.1',
      eol: '\n',
      element: '<productNumber>2147483648</productNumber>',
      at: [5, 48],
      inner: INT32_OUT_OF_RANGE,
    },
    {
      row: 'out of range, below, SOAP 1.2',
      version: '1.2',
      eol: '\r\n',
      element: '<productNumber>-2147483649</productNumber>',
      at: [5, 49],
      inner: INT32_OUT_OF_RANGE,
    },
  ] as const)('check 6 · bad int: $row', async ({ version, eol, element, at, inner }) => {
    const body = multiline(version, eol, element);
    // The expected position is the one just after the failing element's end tag.
    expect(positionAfter(body, element)).toEqual(at);
    const headers =
      version === '1.1'
        ? soap11(`"${SERVICE_NAMESPACE}ProductLookup"`)
        : soap12(`application/soap+xml; charset=utf-8; action="${SERVICE_NAMESPACE}ProductLookup"`);
    const code = version === '1.1' ? 'soap:Client' : 'soap:Sender';
    expectOutcome(
      await raw(headers, body),
      fault(version, code, `${UNABLE_TO_READ}There is an error in XML document (${at[0]}, ${at[1]}). ---> ${inner}`),
    );
  });

  it.each(['2147483647', '-2147483648', ' +42 '])('check 6 · int %j is in range and binds', async (value) => {
    const body = envelope('1.1', `<ProductLookup xmlns="${SERVICE_NAMESPACE}"><productNumber>${value}</productNumber></ProductLookup>`);
    const response = await raw(soap11(`"${SERVICE_NAMESPACE}ProductLookup"`), body);
    expect(resultOf(response, '1.1', 'ProductLookup')).toContain('<mainResults />');
  });
});

// --- §3 ----------------------------------------------------------------------------------------

describe('§3 content types and charsets', () => {
  const CAFE = 'caf\u00e9';
  const utf16le = (text: string): Buffer => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
  const utf16be = (text: string): Buffer => Buffer.from(utf16le(text).swap16());
  const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');
  const utf8Bom = (text: string): Buffer => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
  const declaring = (encoding: string, version: Version, body: string): string =>
    envelope(version, body).replace('encoding="utf-8"', `encoding="${encoding}"`);

  const ROWS: readonly Row[] = [
    {
      row: 'base type case-insensitive: TEXT/XML',
      headers: soap11(`"${ACTION}"`, 'TEXT/XML; charset=utf-8'),
      body: envelope('1.1', search()),
      outcome: answered('1.1'),
    },
    {
      row: 'base type case-insensitive: Application/SOAP+XML',
      headers: soap12(`Application/SOAP+XML; Charset=UTF-8; Action="${ACTION}"`),
      body: envelope('1.2', search()),
      outcome: answered('1.2'),
    },
    {
      row: 'non-SOAP type once routed → 415: text/plain',
      headers: soap11(`"${ACTION}"`, 'text/plain; charset=utf-8'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: 'non-SOAP type once routed → 415: application/xml',
      headers: soap11(`"${ACTION}"`, 'application/xml'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: 'the base is the text before the first ";": "text/xml " is not text/xml',
      headers: soap11(`"${ACTION}"`, 'text/xml ; charset=utf-8'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: 'an unparseable type, once routed → 415',
      headers: soap11(`"${ACTION}"`, 'foo'),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    {
      row: 'an empty Content-Type, once routed → 415',
      headers: soap11(`"${ACTION}"`, ''),
      body: envelope('1.1', search()),
      outcome: empty(415, '1.1'),
    },
    // Decoding.
    {
      row: 'text/xml without charset reads ASCII: UTF-8 é is two ?',
      headers: soap11(`"${ACTION}"`, 'text/xml'),
      body: envelope('1.1', search(CAFE)),
      outcome: answered('1.1', 'caf??'),
    },
    {
      row: 'text/xml; charset=utf-8 round-trips é',
      headers: soap11(),
      body: envelope('1.1', search(CAFE)),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'a quoted charset',
      headers: soap11(`"${ACTION}"`, 'text/xml; charset="utf-8"'),
      body: envelope('1.1', search(CAFE)),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'an unknown charset on text/xml reads ASCII',
      headers: soap11(`"${ACTION}"`, 'text/xml; charset=x-unknown'),
      body: envelope('1.1', search(CAFE)),
      outcome: answered('1.1', 'caf??'),
    },
    {
      row: 'text/xml without charset ignores the XML declaration',
      headers: soap11(`"${ACTION}"`, 'text/xml'),
      body: latin1(declaring('iso-8859-1', '1.1', search(CAFE))),
      outcome: answered('1.1', 'caf?'),
    },
    {
      row: 'a known charset as given: iso-8859-1',
      headers: soap11(`"${ACTION}"`, 'text/xml; charset=iso-8859-1'),
      body: latin1(declaring('iso-8859-1', '1.1', search(CAFE))),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'iso-8859-1 maps every byte to the same code point (0x80 is U+0080, not €)',
      headers: soap11(`"${ACTION}"`, 'text/xml; charset=ISO-8859-1'),
      body: latin1(declaring('iso-8859-1', '1.1', search('a\u0080b'))),
      outcome: answered('1.1', 'a\u0080b'),
    },
    {
      row: 'UTF-16 with BOM, charset=utf-16',
      headers: soap11(`"${ACTION}"`, 'text/xml; charset=utf-16'),
      body: utf16le(declaring('utf-16', '1.1', search(CAFE))),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'UTF-16LE BOM wins over text/xml without charset',
      headers: soap11(`"${ACTION}"`, 'text/xml'),
      body: utf16le(declaring('utf-16', '1.1', search(CAFE))),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'UTF-16BE BOM wins over text/xml without charset',
      headers: soap11(`"${ACTION}"`, 'text/xml'),
      body: utf16be(declaring('utf-16', '1.1', search(CAFE))),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'UTF-8 BOM wins over text/xml without charset',
      headers: soap11(`"${ACTION}"`, 'text/xml'),
      body: utf8Bom(envelope('1.1', search(CAFE))),
      outcome: answered('1.1', CAFE),
    },
    {
      row: 'application/soap+xml without charset: UTF-8',
      headers: soap12(`application/soap+xml; action="${ACTION}"`),
      body: envelope('1.2', search(CAFE)),
      outcome: answered('1.2', CAFE),
    },
    {
      row: 'application/soap+xml without charset: the XML declaration',
      headers: soap12(`application/soap+xml; action="${ACTION}"`),
      body: latin1(declaring('iso-8859-1', '1.2', search(CAFE))),
      outcome: answered('1.2', CAFE),
    },
    // Reader: DTDs prohibited, character checking on → XML errors after routing are 400.
    {
      row: 'a DTD is prohibited',
      headers: soap11(),
      body: `<!DOCTYPE soap:Envelope [<!ENTITY e "dog">]>${envelope('1.1', search('&e;')).replace(/^<\?xml[^>]*>/, '')}`,
      outcome: empty(400, '1.1'),
    },
    { row: '&#x1D; is an XML error', headers: soap11(), body: envelope('1.1', search('a&#x1D;b')), outcome: empty(400, '1.1') },
    { row: 'a raw U+001D is an XML error', headers: soap11(), body: envelope('1.1', search('a\u001db')), outcome: empty(400, '1.1') },
    { row: 'an undeclared entity is an XML error', headers: soap11(), body: envelope('1.1', search('&nbsp;')), outcome: empty(400, '1.1') },
  ];

  it.each(ROWS)('$row', sendRow);

  it('answers é as UTF-8 bytes without BOM', async () => {
    const response = await raw(soap11(), envelope('1.1', search(CAFE)));
    expect(response.bytes.subarray(0, 5).toString('latin1')).toBe('<?xml');
    expect(response.bytes.includes(Buffer.from(`<searchString>${CAFE}</searchString>`, 'utf8'))).toBe(true);
  });

  it.each([
    {
      row: 'external DTD, SOAP 1.1',
      headers: soap11(),
      doctype: (url: string) => `<!DOCTYPE soap:Envelope SYSTEM "${url}/dtd">`,
      outcome: empty(400, '1.1'),
    },
    {
      row: 'external entity, SOAP 1.1',
      headers: soap11(),
      doctype: (url: string) => `<!DOCTYPE soap:Envelope [<!ENTITY leak SYSTEM "${url}/entity">]>`,
      outcome: empty(400, '1.1'),
    },
    {
      // Not XML before routing (§2.4 row 9); the XmlException text for a DTD is not in the spec.
      row: 'external entity during body-element routing',
      headers: soap12('application/soap+xml; charset=utf-8'),
      doctype: (url: string) => `<!DOCTYPE soap:Envelope [<!ENTITY leak SYSTEM "${url}/entity">]>`,
      outcome: fault('1.2', 'soap:Receiver', { startsWith: UNABLE_TO_PROCESS }),
    },
  ])('an $row is never resolved', async ({ headers, doctype, outcome }) => {
    const before = sentinel.requests.length;
    const body =
      `${XML_DECLARATION}${doctype(sentinel.origin)}<soap:Envelope ` +
      `xmlns:soap="${ENV_NS['1.1']}"><soap:Body>${search('&leak;')}</soap:Body></soap:Envelope>`;
    expectOutcome(await raw(headers, body), outcome);
    expect(sentinel.requests.length).toBe(before);
  });
});

// --- §4 ----------------------------------------------------------------------------------------

describe('§4 success envelopes', () => {
  /** The demo upstream's answer to a query that matches nothing, as the wrapper carries it. */
  const nothingFound = (query: string): string =>
    `<searchResultSet xmlns="" totalDesigns="0" totalProducts="0" startResult="0" resultLength="0" version="3" ` +
    `sort="by_score_desc"><mainResults /><searchQuery><searchString>${query}</searchString></searchQuery><subtopics /></searchResultSet>`;

  it.each([
    { version: '1.1', headers: soap11() },
    { version: '1.2', headers: soap12() },
  ] as const)('SOAP $version, byte for byte', async ({ version, headers }) => {
    const response = await raw(headers, envelope(version, search('zzqx')));
    const [head, tail] = successFrame(version, 'Search');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe(CONTENT_TYPE[version]);
    expect(response.headers['cache-control']).toBe('private, max-age=0');
    expect(response.bytes.equals(Buffer.from(`${head}${nothingFound('zzqx')}${tail}`, 'utf8'))).toBe(true);
  });

  it.each(['1.1', '1.2'] as const)('SOAP %s framing of a real result: one line, <x /> empty elements, no soap:Header', async (version) => {
    const response = await raw(version === '1.1' ? soap11() : soap12(), envelope(version, search('dog')));
    const result = resultOf(response, version, 'Search');
    expect(result).toContain('<searchResultItem ');
    expect(response.text).not.toContain('soap:Header');
    expect(response.text).not.toMatch(/[^ ]\/>/);
    expect(response.headers['content-type']).not.toContain('action');
  });

  it('escapes & < > in text, and only those', async () => {
    const response = await raw(soap11(), envelope('1.1', search(`a&lt;b&amp;c&gt;d "e" 'f'`)));
    expect(echoOf(resultOf(response, '1.1', 'Search'))).toBe(`a&lt;b&amp;c&gt;d "e" 'f'`);
  });
});

// --- §5 ----------------------------------------------------------------------------------------

describe('§5.4 exact fault strings, §5.2 statuses and headers', () => {
  const both = (make: (version: Version) => Row): Row[] => [make('1.1'), make('1.2')];
  const headersFor = (version: Version, op = 'Search'): RequestHeaders =>
    version === '1.1'
      ? soap11(`"${SERVICE_NAMESPACE}${op}"`)
      : soap12(`application/soap+xml; charset=utf-8; action="${SERVICE_NAMESPACE}${op}"`);
  const client = (version: Version): FaultCode => (version === '1.1' ? 'soap:Client' : 'soap:Sender');
  const server = (version: Version): FaultCode => (version === '1.1' ? 'soap:Server' : 'soap:Receiver');
  const productLookup = (version: Version, value: string): string =>
    envelope(version, `<ProductLookup xmlns="${SERVICE_NAMESPACE}"><productNumber>${value}</productNumber></ProductLookup>`);
  const xmlDocumentError = (body: string, inner: string): string => {
    const [line, column] = positionAfter(body, '</productNumber>');
    return `${UNABLE_TO_READ}There is an error in XML document (${line}, ${column}). ---> ${inner}`;
  };

  const ROWS: readonly Row[] = [
    {
      row: 'Unknown or empty SOAPAction (1.1 only)',
      headers: soap11('"urn:x"'),
      body: envelope('1.1', search()),
      outcome: fault('1.1', 'soap:Client', unknownSoapAction('urn:x')),
    },
    ...both((v) => ({
      row: `No action, body unroutable (${v})`,
      headers: soap12(v === '1.1' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8'),
      body: envelope(v, UNKNOWN_BODY),
      outcome: fault(v, client(v), NO_ACTION),
    })),
    ...both((v) => ({
      row: `Unknown action, body unroutable (${v})`,
      headers: soap12(`${v === '1.1' ? 'text/xml' : 'application/soap+xml'}; action="urn:x"`),
      body: envelope(v, UNKNOWN_BODY),
      outcome: fault(v, client(v), notRecognized('urn:x')),
    })),
    {
      row: 'Body not XML before routing (1.2 only)',
      headers: soap12('application/soap+xml'),
      body: 'not xml',
      outcome: fault('1.2', 'soap:Receiver', `${UNABLE_TO_PROCESS}Data at the root level is invalid. Line 1, position 1.`),
    },
    {
      row: 'Envelope namespace unknown (1.1 only)',
      headers: soap12('application/soap+xml'),
      body: '<x:Envelope xmlns:x="urn:v3"><x:Body /></x:Envelope>',
      outcome: fault('1.1', 'soap:VersionMismatch', versionMismatch('urn:v3')),
    },
    ...both((v) => ({
      row: `Missing Envelope (${v})`,
      headers: headersFor(v),
      body: `<soap:Body xmlns:soap="${ENV_NS[v]}" />`,
      outcome: fault(v, client(v), UNABLE_TO_READ + missing('Envelope')),
    })),
    ...both((v) => ({
      row: `Missing Body (${v})`,
      headers: headersFor(v),
      body: `<soap:Envelope xmlns:soap="${ENV_NS[v]}" />`,
      outcome: fault(v, client(v), UNABLE_TO_READ + missing('Body')),
    })),
    ...both((v) => ({
      row: `Malformed XML after routing (${v})`,
      headers: headersFor(v),
      body: `<soap:Envelope xmlns:soap="${ENV_NS[v]}">`,
      outcome: empty(400, v),
    })),
    ...both((v) => ({
      row: `Non-SOAP Content-Type, routed (${v})`,
      headers: { ...headersFor(v), 'Content-Type': `application/json; action="${ACTION}"` },
      body: envelope(v, search()),
      outcome: empty(415, v),
    })),
    ...both((v) => ({
      row: `int element not a number (${v})`,
      headers: headersFor(v, 'ProductLookup'),
      body: productLookup(v, 'x'),
      outcome: fault(v, client(v), xmlDocumentError(productLookup(v, 'x'), NOT_AN_INT32)),
    })),
    ...both((v) => ({
      row: `int element out of range (${v})`,
      headers: headersFor(v, 'ProductLookup'),
      body: productLookup(v, '99999999999'),
      outcome: fault(v, client(v), xmlDocumentError(productLookup(v, '99999999999'), INT32_OUT_OF_RANGE)),
    })),
    ...both((v) => ({
      row: `Operation throws: an upstream error document (${v})`,
      headers: headersFor(v, 'AdvancedSearch'),
      body: envelope(v, `<AdvancedSearch xmlns="${SERVICE_NAMESPACE}"><query>dog</query><sort>cheapest</sort></AdvancedSearch>`),
      outcome: fault(v, server(v), `${UNABLE_TO_PROCESS}Invalid sort value 'cheapest'. Acceptable values: by_score_desc, by_date_desc.`),
    })),
  ];

  it.each(ROWS)('$row', sendRow);

  it.each(['1.1', '1.2'] as const)('Operation throws: upstream unreachable (%s)', async (version) => {
    const response = await raw(headersFor(version), envelope(version, search('dog')), { base: unreachable.url });
    expectOutcome(response, fault(version, server(version), REFUSED_CONNECTION_FAULT));
    expect(response.text).toContain('Server was unable to process request. ---&gt; Unable to connect to the remote server</');
  });
});

describe('§5.5 SOAP parameter binding', () => {
  const searchWith = (inner: string, wrapper = 'Search', ns = SERVICE_NAMESPACE): string =>
    envelope('1.1', `<${wrapper} xmlns="${ns}">${inner}</${wrapper}>`);
  const paged = (inner: string, wrapper = 'StoreLookupPaged'): string =>
    envelope('1.1', `<${wrapper} xmlns="${SERVICE_NAMESPACE}"><storeId>s</storeId>${inner}</${wrapper}>`);

  it.each([
    { row: 'a string element binds', body: searchWith('<query>dog</query>'), echo: 'dog' },
    { row: 'xsi:nil="true" → null', body: searchWith('<query xsi:nil="true" />'), echo: '' },
    { row: '<a/> → ""', body: searchWith('<query/>'), echo: '' },
    { row: '<a></a> → ""', body: searchWith('<query></query>'), echo: '' },
    { row: 'missing element → null', body: searchWith('<apiKey>k</apiKey>'), echo: '' },
    { row: 'wrong case is skipped', body: searchWith('<Query>dog</Query>'), echo: '' },
    { row: 'wrong namespace is skipped', body: searchWith('<query xmlns="urn:other">dog</query>'), echo: '' },
    { row: 'the namespace counts, not the prefix', body: searchWith(`<q:query xmlns:q="${SERVICE_NAMESPACE}">dog</q:query>`), echo: 'dog' },
    { row: 'unknown elements are skipped', body: searchWith('<unknown>x</unknown><query>dog</query>'), echo: 'dog' },
    { row: 'another wrapper: parameters null, the operation still runs', body: searchWith('<query>dog</query>', 'Other'), echo: '' },
    { row: 'the wrapper in another namespace: parameters null', body: searchWith('<query>dog</query>', 'Search', 'urn:other'), echo: '' },
  ])('$row', async ({ body, echo }) => {
    expectOutcome(await raw(soap11(), body), answered('1.1', echo));
  });

  // The ints reach StoreLookupPaged, whose own client error shows the values it got.
  it.each([
    {
      row: 'another wrapper: ints are 0 and the operation still runs',
      body: paged('<pageIndex>2</pageIndex><pageSize>5</pageSize>', 'StoreLookup'),
      text: 'pageSize must be 1 or greater; got 0.',
    },
    { row: 'a missing int is 0', body: paged('<pageIndex>1</pageIndex>'), text: 'pageSize must be 1 or greater; got 0.' },
    {
      row: 'int: surrounding XML whitespace and a sign',
      body: paged('<pageIndex>\n\t-3 </pageIndex><pageSize> +7\r\n</pageSize>'),
      text: 'pageIndex must be 0 or greater; got -3.',
    },
  ])('$row', async ({ body, text }) => {
    expectOutcome(await raw(soap11(`"${SERVICE_NAMESPACE}StoreLookupPaged"`), body), fault('1.1', 'soap:Client', text));
  });
});

// --- §8 ----------------------------------------------------------------------------------------

describe('§8 what real clients send', () => {
  const dotnetAgent = 'Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 4.0.30319.42000)';

  it('.NET SOAP 1.1: quoted SOAPAction, Expect: 100-continue', async () => {
    const response = await raw(
      { 'User-Agent': dotnetAgent, 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: `"${ACTION}"`, Expect: '100-continue' },
      envelope('1.1', search()),
    );
    expect(response.continued).toBe(true);
    expectOutcome(response, answered('1.1'));
  });

  it('.NET SOAP 1.2: action in the Content-Type, soap12 prefix, Expect: 100-continue', async () => {
    const body =
      `${XML_DECLARATION}<soap12:Envelope xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}" ` +
      `xmlns:soap12="${ENV_NS['1.2']}"><soap12:Body>${search()}</soap12:Body></soap12:Envelope>`;
    const response = await raw(
      { 'User-Agent': dotnetAgent, 'Content-Type': `application/soap+xml; charset=utf-8; action="${ACTION}"`, Expect: '100-continue' },
      body,
    );
    expect(response.continued).toBe(true);
    expectOutcome(response, answered('1.2'));
  });

  const phpEnvelope = (version: Version): string =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<SOAP-ENV:Envelope xmlns:SOAP-ENV="${ENV_NS[version]}" ` +
    `xmlns:ns1="${SERVICE_NAMESPACE}"><SOAP-ENV:Body><ns1:Search><ns1:query>${QUERY}</ns1:query></ns1:Search></SOAP-ENV:Body>` +
    '</SOAP-ENV:Envelope>\n';

  it('PHP-style SOAP 1.1: unquoted SOAPAction, SOAP-ENV and ns1 prefixes', async () => {
    expectOutcome(
      await raw({ 'User-Agent': 'PHP-SOAP/8.2.0', 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: ACTION }, phpEnvelope('1.1')),
      answered('1.1'),
    );
  });

  it('PHP-style SOAP 1.2: action parameter', async () => {
    expectOutcome(
      await raw(
        { 'User-Agent': 'PHP-SOAP/8.2.0', 'Content-Type': `application/soap+xml; charset=utf-8; action="${ACTION}"` },
        phpEnvelope('1.2'),
      ),
      answered('1.2'),
    );
  });
});

describe('robustness', () => {
  it('keeps serving on the same keep-alive connection after malformed requests', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const garbage: readonly [RequestHeaders, string | Buffer][] = [
        [soap11(), '<soap:Envelope'],
        [soap11(), Buffer.from([0xff, 0xfe, 0x00, 0xd8, 0x3c, 0x00])],
        [soap11(), '<!DOCTYPE x [<!ENTITY a "&a;&a;">]><x>&a;</x>'],
        [soap12('application/soap+xml'), '<'.repeat(10_000)],
        [soap11('"'), ''],
        [{}, ''],
      ];
      for (const [headers, body] of garbage) {
        const response = await raw(headers, body, { agent });
        expect(response.status).toBeGreaterThanOrEqual(400);
      }
      expectOutcome(await raw(soap11(), envelope('1.1', search()), { agent }), answered('1.1'));
    } finally {
      agent.destroy();
    }
  });
});
