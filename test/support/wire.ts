/**
 * Names and texts of the original service's wire format that several test files expect, written
 * out from the specs (docs/wire.md) rather than taken from src, so that a drift in the product shows
 * up as a failure.
 */

/** The service namespace: the `{Op}` body elements, their `{Op}Response`, and the SOAPAction prefix. */
export const SERVICE_NAMESPACE = 'http://tempuri.org/';
export const SOAP11_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_ENV = 'http://www.w3.org/2003/05/soap-envelope';
/** The `xsi` and `xsd` namespaces .NET declares on every envelope it writes (docs/wire.md §4, §8). */
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

/** The declaration every XML answer starts with, and .NET's requests too. */
export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
/** SOAP 1.1 requests and answers; HTTP GET and POST documents, the WSDL and disco (docs/wire.md §0). */
export const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
/** SOAP 1.2 answers, success and fault alike; requests add `; action="…"` (docs/wire.md §0, §8). */
export const SOAP12_CONTENT_TYPE = 'application/soap+xml; charset=utf-8';

/** The outer texts of faults, joined to the inner one by ` ---> ` (docs/wire.md §5.4). */
export const UNABLE_TO_PROCESS = 'Server was unable to process request. ---> ';
export const UNABLE_TO_READ = 'Server was unable to read request. ---> ';
/** Int32 parsing: an int parameter that is not a number, or out of range (docs/wire.md §5.4, §6.3). */
export const NOT_AN_INT32 = 'Input string was not in a correct format.';
export const INT32_OUT_OF_RANGE = 'Value was either too large or too small for an Int32.';

export type Version = '1.1' | '1.2';
export const ENV_NS: Readonly<Record<Version, string>> = { '1.1': SOAP11_ENV, '1.2': SOAP12_ENV };

/** §4: the envelope start tag, `soap`/`xsi`/`xsd` in this order. */
export const envelopeStart = (version: Version): string =>
  `<soap:Envelope xmlns:soap="${ENV_NS[version]}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}">`;

/** §5.4: the Upgrade header of VersionMismatch faults, verbatim. */
const UPGRADE_HEADER =
  '<soap:Header><soap12:Upgrade xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:SupportedEnvelope qname="soap:Envelope" ' +
  'xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" /><soap12:SupportedEnvelope qname="soap12:Envelope" ' +
  'xmlns:soap12="http://www.w3.org/2003/05/soap-envelope" /></soap12:Upgrade></soap:Header>';

/** §5.1 codes as they appear on the wire: 1.1 Client/Server/VersionMismatch, 1.2 Sender/Receiver. */
export type FaultCode = 'soap:Client' | 'soap:Server' | 'soap:VersionMismatch' | 'soap:Sender' | 'soap:Receiver';

/** §4 escaping of text content: `&`, `<`, `>` only (so `--->` is `---&gt;`, CR LF stay raw). */
export const escapeText = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** §5.1 shapes with the §4 prolog, one line, no trailing newline. */
export function expectedFault(version: Version, code: FaultCode, text: string): string {
  const fault =
    version === '1.1'
      ? `<soap:Fault><faultcode>${code}</faultcode><faultstring>${escapeText(text)}</faultstring><detail /></soap:Fault>`
      : `<soap:Fault><soap:Code><soap:Value>${code}</soap:Value></soap:Code><soap:Reason><soap:Text ` +
        `xml:lang="en">${escapeText(text)}</soap:Text></soap:Reason><soap:Detail /></soap:Fault>`;
  const header = code === 'soap:VersionMismatch' ? UPGRADE_HEADER : '';
  return `${XML_DECLARATION}${envelopeStart(version)}${header}<soap:Body>${fault}</soap:Body></soap:Envelope>`;
}

/** What docs/wire.md fixes for one SOAP version, whichever client sends the request. */
export interface SoapVersionWire {
  readonly name: 'SOAP 1.1' | 'SOAP 1.2';
  readonly version: '1.1' | '1.2';
  readonly envelopeNs: string;
  /** The request's Content-Type for the operation whose SOAPAction is `action` (docs/wire.md §8). */
  readonly requestContentType: (action: string) => string;
  /** The response's Content-Type, success and fault alike (docs/wire.md §4, §5). */
  readonly responseContentType: string;
}

export const SOAP11_WIRE: SoapVersionWire = {
  name: 'SOAP 1.1',
  version: '1.1',
  envelopeNs: SOAP11_ENV,
  requestContentType: () => XML_CONTENT_TYPE,
  responseContentType: XML_CONTENT_TYPE,
};

export const SOAP12_WIRE: SoapVersionWire = {
  name: 'SOAP 1.2',
  version: '1.2',
  envelopeNs: SOAP12_ENV,
  requestContentType: (action) => `${SOAP12_CONTENT_TYPE}; action="${action}"`,
  responseContentType: SOAP12_CONTENT_TYPE,
};

/** The five web methods, in the service's method order (docs/wire.md §0). */
export const OPERATIONS = ['StoreLookup', 'StoreLookupPaged', 'ProductLookup', 'Search', 'AdvancedSearch'] as const;
export type OperationName = (typeof OPERATIONS)[number];

/** A client fault: AdvancedSearch with `productTypes=Hovercraft`, a name no merchandise has. */
export const UNKNOWN_PRODUCT_TYPE_HOVERCRAFT =
  "Unknown product type 'Hovercraft'. Use merchandise ids or product type names such as 'Mug' or 'White T-Shirt'.";
/** A server fault: StoreLookup of `nosuchstore`, which the upstream answers with an error document. */
export const NO_SUCH_STORE_FAULT = `${UNABLE_TO_PROCESS}Store 'nosuchstore' was not found.`;
/** A server fault: any call while the upstream refuses connections. */
export const REFUSED_CONNECTION_FAULT = `${UNABLE_TO_PROCESS}Unable to connect to the remote server`;

/** The deprecation Link relation while no deprecation.policyUrl is set: the caller's own self-service page. */
export const SELF_SERVICE_LINK = '</deprecation/status>; rel="deprecation"; type="text/html"';
