import { describe, expect, it } from 'vitest';
import { SoapFault } from '../src/inbound/faults.js';
import { readSoapRequest, type SoapRequest } from '../src/inbound/soap/read.js';
import { faultEnvelope, successEnvelope } from '../src/inbound/soap/write.js';
import { findOperation } from '../src/operations.js';
import { parseXml } from '../src/xml/parse.js';
import {
  INT32_OUT_OF_RANGE,
  NOT_AN_INT32,
  SERVICE_NAMESPACE,
  SOAP11_ENV,
  SOAP12_CONTENT_TYPE,
  SOAP12_ENV,
  UNABLE_TO_PROCESS,
  UNABLE_TO_READ,
  XML_CONTENT_TYPE,
  XML_DECLARATION,
  XSI_NS,
} from './support/wire.js';

function envelope(envNs: string, body: string): Buffer {
  return Buffer.from(
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${envNs}" xmlns:xsi="${XSI_NS}"><soap:Body>${body}</soap:Body></soap:Envelope>`,
  );
}

const storeLookupPaged =
  `<StoreLookupPaged ` +
  `xmlns="${SERVICE_NAMESPACE}"><storeId>cybersprocket</storeId><pageIndex>2</pageIndex><pageSize> 25 </pageSize></StoreLookupPaged>`;

function read(request: Partial<SoapRequest> & { body: Buffer }) {
  return readSoapRequest({ contentType: XML_CONTENT_TYPE, soapAction: undefined, ...request }, SERVICE_NAMESPACE);
}

function faultOf(request: Partial<SoapRequest> & { body: Buffer }): SoapFault {
  try {
    read(request);
  } catch (err) {
    if (err instanceof SoapFault) return err;
    throw err;
  }
  throw new Error('expected a SoapFault');
}

describe('SOAP 1.1 routing by SOAPAction (docs/wire.md §2.2)', () => {
  it.each(['"http://tempuri.org/StoreLookupPaged"', 'http://tempuri.org/StoreLookupPaged', 'http%3A%2F%2Ftempuri.org%2FStoreLookupPaged'])(
    'routes %s and binds the parameters',
    (soapAction) => {
      const { version, call } = read({ soapAction, body: envelope(SOAP11_ENV, storeLookupPaged) });
      expect(version).toBe('1.1');
      expect(call.operation.name).toBe('StoreLookupPaged');
      expect(call.args).toEqual({ storeId: 'cybersprocket', apiKey: null, version: null, productTypes: null, pageIndex: 2, pageSize: 25 });
    },
  );

  it.each([
    ['""', ''],
    ['', ''],
    ['"http://tempuri.org/storelookup"', 'http://tempuri.org/storelookup'],
    ['urn:x+y', 'urn:x y'],
  ])('SOAPAction %j is not recognized', (soapAction, shown) => {
    const fault = faultOf({ soapAction, body: envelope(SOAP11_ENV, storeLookupPaged) });
    expect(fault).toMatchObject({ code: 'Client', version: '1.1', status: 500 });
    expect(fault.chain).toEqual([`Server did not recognize the value of HTTP Header SOAPAction: ${shown}.`]);
  });

  it('a lone quote fails the way Substring does', () => {
    const fault = faultOf({ soapAction: '"', body: envelope(SOAP11_ENV, storeLookupPaged) });
    expect(fault).toMatchObject({ code: 'Server', version: '1.1' });
    expect(fault.chain.join(' ---> ')).toBe(`${UNABLE_TO_PROCESS}Length cannot be less than zero.\r\nParameter name: length`);
  });

  it('never checks the body element: another wrapper leaves parameters null and 0', () => {
    const { call } = read({
      soapAction: `${SERVICE_NAMESPACE}StoreLookupPaged`,
      body: envelope(SOAP11_ENV, `<Other xmlns="${SERVICE_NAMESPACE}"><storeId>x</storeId></Other>`),
    });
    expect(call.args).toEqual({ storeId: null, apiKey: null, version: null, productTypes: null, pageIndex: 0, pageSize: 0 });
  });
});

describe('SOAP 1.2 routing (docs/wire.md §2.3)', () => {
  it('routes by the action parameter of the content type', () => {
    const { version, call } = read({
      contentType: `${SOAP12_CONTENT_TYPE}; action="${SERVICE_NAMESPACE}StoreLookupPaged"`,
      body: envelope(SOAP12_ENV, storeLookupPaged),
    });
    expect(version).toBe('1.2');
    expect(call.operation.name).toBe('StoreLookupPaged');
    expect(call.args.pageIndex).toBe(2);
  });

  it('routes by the body element when there is no action, answering in the envelope version', () => {
    const { version, call } = read({ contentType: XML_CONTENT_TYPE, body: envelope(SOAP11_ENV, storeLookupPaged) });
    expect(version).toBe('1.1');
    expect(call.operation.name).toBe('StoreLookupPaged');
  });

  it('no action and an unknown body element', () => {
    const fault = faultOf({ contentType: 'application/soap+xml', body: envelope(SOAP12_ENV, `<Nope xmlns="${SERVICE_NAMESPACE}"/>`) });
    expect(fault).toMatchObject({ code: 'Client', version: '1.2', status: 500 });
    expect(fault.chain).toEqual(['Unable to handle request without a valid action parameter. Please supply a valid soap action.']);
  });

  it('an unknown action and an unknown body element', () => {
    const fault = faultOf({
      contentType: 'application/soap+xml; action="urn:nope"',
      body: envelope(SOAP12_ENV, `<Nope xmlns="${SERVICE_NAMESPACE}"/>`),
    });
    expect(fault.chain).toEqual(["Unable to handle request. The action 'urn:nope' was not recognized."]);
  });

  it('a body that is not XML is a SOAP 1.2 Receiver fault', () => {
    const fault = faultOf({ contentType: 'application/x-www-form-urlencoded', body: Buffer.from('storeId=1') });
    expect(fault).toMatchObject({ code: 'Server', version: '1.2', status: 500 });
    expect(fault.chain).toEqual(['Server was unable to process request.', 'Data at the root level is invalid. Line 1, position 1.']);
  });

  it('an empty body: Root element is missing.', () => {
    const fault = faultOf({ contentType: 'application/soap+xml', body: Buffer.alloc(0) });
    expect(fault.chain).toEqual(['Server was unable to process request.', 'Root element is missing.']);
  });

  it('a root outside both SOAP namespaces is a VersionMismatch', () => {
    const fault = faultOf({ contentType: 'application/soap+xml', body: Buffer.from('<Envelope xmlns="urn:other"><Body/></Envelope>') });
    expect(fault).toMatchObject({ code: 'VersionMismatch', version: '1.1', status: 500 });
    expect(fault.chain).toEqual([
      'Possible SOAP version mismatch: Envelope namespace urn:other was unexpected. Expecting http://schemas.xmlsoap.org/soap/envelope/.',
    ]);
  });
});

describe('checks after routing (docs/wire.md §2.5)', () => {
  const soapAction = `"${SERVICE_NAMESPACE}StoreLookupPaged"`;

  it('a routed request with a non-SOAP content type is a 415', () => {
    expect(faultOf({ soapAction, contentType: 'application/json', body: envelope(SOAP11_ENV, storeLookupPaged) }).status).toBe(415);
  });

  it('a SOAP 1.1 envelope under application/soap+xml is a 415', () => {
    const fault = faultOf({
      contentType: `application/soap+xml; action="${SERVICE_NAMESPACE}StoreLookupPaged"`,
      body: envelope(SOAP11_ENV, storeLookupPaged),
    });
    expect(fault.status).toBe(415);
  });

  it('malformed XML after routing is a 400', () => {
    expect(faultOf({ soapAction, body: Buffer.from('<soap:Envelope xmlns:soap="x"><soap:Body>') }).status).toBe(400);
  });

  it('a DOCTYPE is refused, its entities never expanded', () => {
    const body = Buffer.from(
      `<!DOCTYPE x [<!ENTITY e "boom">]><soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body>&e;</soap:Body></soap:Envelope>`,
    );
    expect(faultOf({ soapAction, body }).status).toBe(400);
  });

  it('a missing Body', () => {
    const fault = faultOf({ soapAction, body: Buffer.from(`<soap:Envelope xmlns:soap="${SOAP11_ENV}"/>`) });
    expect(fault).toMatchObject({ code: 'Client', status: 500 });
    expect(fault.chain.join(' ---> ')).toBe(`${UNABLE_TO_READ}Request format is invalid: Missing required soap:Body element.`);
  });

  it.each([
    ['abc', NOT_AN_INT32],
    ['', NOT_AN_INT32],
    ['1.5', NOT_AN_INT32],
    ['2147483648', INT32_OUT_OF_RANGE],
  ])('int %j fails with the XmlSerializer text', (value, inner) => {
    const body = envelope(SOAP11_ENV, `<StoreLookupPaged xmlns="${SERVICE_NAMESPACE}"><pageIndex>${value}</pageIndex></StoreLookupPaged>`);
    const fault = faultOf({ soapAction, body });
    expect(fault).toMatchObject({ code: 'Client', status: 500, version: '1.1' });
    expect(fault.chain[0]).toBe('Server was unable to read request.');
    expect(fault.chain[1]).toMatch(/^There is an error in XML document \(1, \d+\)\.$/);
    expect(fault.chain[2]).toBe(inner);
  });

  it('xsi:nil, empty elements and unknown elements (docs/wire.md §5.5)', () => {
    const body = envelope(
      SOAP11_ENV,
      `<StoreLookupPaged xmlns="${SERVICE_NAMESPACE}"><storeId ` +
        `xsi:nil="true"/><apiKey/><Version>x</Version><other>y</other><pageIndex>-7</pageIndex><pageSize>+3</pageSize></StoreLookupPaged>`,
    );
    const { call } = read({ soapAction, body });
    expect(call.args).toEqual({ storeId: null, apiKey: '', version: null, productTypes: null, pageIndex: -7, pageSize: 3 });
  });

  it('text/xml without a charset reads as ASCII', () => {
    const body = envelope(SOAP11_ENV, `<StoreLookupPaged xmlns="${SERVICE_NAMESPACE}"><storeId>caf\u00e9</storeId></StoreLookupPaged>`);
    expect(read({ soapAction, contentType: 'text/xml', body }).call.args.storeId).toBe('caf??');
    expect(read({ soapAction, contentType: XML_CONTENT_TYPE, body }).call.args.storeId).toBe('caf\u00e9');
  });
});

describe('SOAP answers (docs/wire.md §4, §5.1)', () => {
  const result = parseXml(
    '<searchResultSet totalDesigns="1" sort="by_score_desc">\n  <mainResults>\n    <searchResultItem mediaId="7" />\n  ' +
      '</mainResults>\n</searchResultSet>',
  );

  it('success envelope, byte for byte', () => {
    expect(successEnvelope('1.1', SERVICE_NAMESPACE, findOperation('Search')!, result)).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" ' +
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><SearchResponse ' +
        'xmlns="http://tempuri.org/"><SearchResult><searchResultSet xmlns="" totalDesigns="1" ' +
        'sort="by_score_desc"><mainResults><searchResultItem mediaId="7" ' +
        '/></mainResults></searchResultSet></SearchResult></SearchResponse></soap:Body></soap:Envelope>',
    );
  });

  it('SOAP 1.2 uses the 1.2 namespace with the same prefix', () => {
    expect(successEnvelope('1.2', SERVICE_NAMESPACE, findOperation('Search')!, result)).toContain(
      '<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope" xmlns:xsi=',
    );
  });

  it('SOAP 1.1 fault, byte for byte, with ---&gt;', () => {
    expect(faultEnvelope('1.1', 'Server', ['Server was unable to process request.', 'The operation has timed out'])).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" ' +
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>Server ' +
        'was unable to process request. ---&gt; The operation has timed out</faultstring><detail ' +
        '/></soap:Fault></soap:Body></soap:Envelope>',
    );
  });

  it('SOAP 1.2 fault, byte for byte', () => {
    expect(
      faultEnvelope('1.2', 'Client', ['Unable to handle request without a valid action parameter. Please supply a valid soap action.']),
    ).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope" ' +
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><soap:Fault>' +
        '<soap:Code><soap:Value>soap:Sender</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">' +
        'Unable to handle request without a valid action parameter. Please supply a valid soap action.</soap:Text></soap:Reason>' +
        '<soap:Detail /></soap:Fault></soap:Body></soap:Envelope>',
    );
  });

  it('VersionMismatch carries the Upgrade header', () => {
    expect(faultEnvelope('1.1', 'VersionMismatch', ['x'])).toContain(
      '<soap:Header><soap12:Upgrade xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:SupportedEnvelope ' +
        'qname="soap:Envelope" xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" /><soap12:SupportedEnvelope ' +
        'qname="soap12:Envelope" xmlns:soap12="http://www.w3.org/2003/05/soap-envelope" ' +
        '/></soap12:Upgrade></soap:Header><soap:Body><soap:Fault><faultcode>soap:VersionMismatch</faultcode>',
    );
  });
});

describe('an envelope read again (remembered as read, src/inbound/soap/read.ts)', () => {
  it('is routed by its own headers each time: the same body under another SOAPAction is another call, or its fault', () => {
    const body = envelope(SOAP11_ENV, storeLookupPaged);
    expect(read({ soapAction: `"${SERVICE_NAMESPACE}StoreLookupPaged"`, body }).call.operation.name).toBe('StoreLookupPaged');
    expect(read({ soapAction: `"${SERVICE_NAMESPACE}ProductLookup"`, body }).call.operation.name).toBe('ProductLookup');
    expect(faultOf({ soapAction: '"urn:other"', body }).chain).toEqual([
      'Server did not recognize the value of HTTP Header SOAPAction: urn:other.',
    ]);
    expect(read({ soapAction: `"${SERVICE_NAMESPACE}StoreLookupPaged"`, body: Buffer.from(body) }).call.args).toMatchObject({
      pageIndex: 2,
    });
  });

  it('under another content type is refused as it always was, after the same envelope was read', () => {
    const body = envelope(SOAP11_ENV, storeLookupPaged);
    const soapAction = `"${SERVICE_NAMESPACE}StoreLookupPaged"`;
    expect(read({ soapAction, body }).version).toBe('1.1');
    expect(faultOf({ soapAction, body, contentType: 'text/plain' }).status).toBe(415);
    expect(faultOf({ soapAction, body, contentType: undefined }).status).toBe(415);
  });

  it('is refused again when it was refused: a fault is never remembered as a call', () => {
    const body = envelope(SOAP11_ENV, `<StoreLookupPaged xmlns="${SERVICE_NAMESPACE}"><pageIndex>x</pageIndex></StoreLookupPaged>`);
    const soapAction = `"${SERVICE_NAMESPACE}StoreLookupPaged"`;
    const first = faultOf({ soapAction, body });
    expect(faultOf({ soapAction, body })).toMatchObject({ code: first.code, status: first.status, chain: first.chain });
  });

  it('too long to be remembered, by its body or its headers, is read as any other', () => {
    const padding = `<!-- ${'x'.repeat(5000)} -->`;
    const long = envelope(SOAP11_ENV, `${padding}${storeLookupPaged}`);
    const soapAction = `"${SERVICE_NAMESPACE}StoreLookupPaged"`;
    for (let i = 0; i < 2; i++) {
      expect(read({ soapAction, body: long }).call.args).toMatchObject({ storeId: 'cybersprocket', pageSize: 25 });
      const body = envelope(SOAP11_ENV, storeLookupPaged);
      const fault = faultOf({ soapAction: `"urn:${'a'.repeat(5000)}"`, body });
      expect(fault.chain[0]).toContain('Server did not recognize the value of HTTP Header SOAPAction: urn:aaa');
      expect(read({ soapAction, body, contentType: `${XML_CONTENT_TYPE}; x=${'y'.repeat(5000)}` }).call.args).toMatchObject({
        pageIndex: 2,
      });
    }
  });
});
