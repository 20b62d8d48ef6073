/**
 * Names and texts of the original service's wire format that several test files expect, written
 * out from the specs (legacy-interface.md, asmx-wire.md) rather than taken from src, so that a drift
 * in the product shows up as a failure.
 */

/** The service namespace: the `{Op}` body elements, their `{Op}Response`, and the SOAPAction prefix. */
export const SERVICE_NAMESPACE = 'http://tempuri.org/';
export const SOAP11_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_ENV = 'http://www.w3.org/2003/05/soap-envelope';

/** What asmx-wire.md fixes for one SOAP version, whichever client sends the request. */
export interface SoapVersionWire {
  readonly name: 'SOAP 1.1' | 'SOAP 1.2';
  readonly version: '1.1' | '1.2';
  readonly envelopeNs: string;
  /** The request's Content-Type for the operation whose SOAPAction is `action` (asmx-wire.md §8). */
  readonly requestContentType: (action: string) => string;
  /** The response's Content-Type, success and fault alike (asmx-wire.md §4, §5). */
  readonly responseContentType: string;
}

export const SOAP11_WIRE: SoapVersionWire = {
  name: 'SOAP 1.1',
  version: '1.1',
  envelopeNs: SOAP11_ENV,
  requestContentType: () => 'text/xml; charset=utf-8',
  responseContentType: 'text/xml; charset=utf-8',
};

export const SOAP12_WIRE: SoapVersionWire = {
  name: 'SOAP 1.2',
  version: '1.2',
  envelopeNs: SOAP12_ENV,
  requestContentType: (action) => `application/soap+xml; charset=utf-8; action="${action}"`,
  responseContentType: 'application/soap+xml; charset=utf-8',
};

/** The five web methods, in the service's method order (legacy-interface.md §4). */
export const OPERATIONS = ['StoreLookup', 'StoreLookupPaged', 'ProductLookup', 'Search', 'AdvancedSearch'] as const;
export type OperationName = (typeof OPERATIONS)[number];

/** A client fault: AdvancedSearch with `productTypes=Hovercraft`, a name no merchandise has. */
export const UNKNOWN_PRODUCT_TYPE_HOVERCRAFT =
  "Unknown product type 'Hovercraft'. Use merchandise ids or product type names such as 'Mug' or 'White T-Shirt'.";
/** A server fault: StoreLookup of `nosuchstore`, which the upstream answers with an error document. */
export const NO_SUCH_STORE_FAULT = "Server was unable to process request. ---> Store 'nosuchstore' was not found.";
/** A server fault: any call while the upstream refuses connections. */
export const REFUSED_CONNECTION_FAULT = 'Server was unable to process request. ---> Unable to connect to the remote server';
