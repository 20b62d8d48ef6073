import { STATUS_CODES } from 'node:http';
import type { OperationName, UpstreamPath } from './operations.js';

/**
 * The message catalogue: every text a legacy client can read in a fault, an error text or an error
 * page, in one place. Most are .NET's own wording, kept to the letter because old clients and their
 * owners match on it (docs/wire.md §5.4, §6, docs/upstream.md §11.8); the rest are the proxy's own
 * words for input the original never had to translate (docs/upstream.md §3, §11.4).
 *
 * The failures are data here (an upstream failure, a translation detail, a refusal): errors carry
 * them (src/errors.ts), and the bindings ask this file for their words.
 */

// --- ASMX: SOAP ------------------------------------------------------------------------------------

export const UNABLE_TO_PROCESS = 'Server was unable to process request.';
export const UNABLE_TO_READ = 'Server was unable to read request.';
/** `Substring(1, Length - 2)` of a SOAPAction that is a lone `"`. */
export const LENGTH_BELOW_ZERO = 'Length cannot be less than zero.\r\nParameter name: length';
export const NO_VALID_ACTION = 'Unable to handle request without a valid action parameter. Please supply a valid soap action.';
export const MISSING_ENVELOPE = 'Request format is invalid: Missing required soap:Envelope element.';
export const MISSING_BODY = 'Request format is invalid: Missing required soap:Body element.';

export const soapActionNotRecognized = (action: string): string =>
  `Server did not recognize the value of HTTP Header SOAPAction: ${action}.`;
export const actionNotRecognized = (action: string): string => `Unable to handle request. The action '${action}' was not recognized.`;
export const versionMismatch = (found: string, expected: string): string =>
  `Possible SOAP version mismatch: Envelope namespace ${found} was unexpected. Expecting ${expected}.`;
export const xmlDocumentError = (line: number, column: number): string => `There is an error in XML document (${line}, ${column}).`;

// --- ASMX: HTTP GET and POST -----------------------------------------------------------------------

export const methodNameCase = (given: string, actual: string): string =>
  `Invalid method name '${given}',  method names are case sensitive.   The method name '${actual}' with the same name but different ` +
  `casing was found.\r\nParameter name: methodName`;
export const methodNameInvalid = (given: string): string => `${given} Web Service method name is not valid.`;
export const requestFormatInvalid = (contentType: string): string => `Request format is invalid: ${contentType}.`;
export const missingParameter = (name: string): string => `Missing parameter: ${name}.`;
export const cannotConvertInt32 = (value: string): string => `Cannot convert ${value} to System.Int32.\r\nParameter name: type`;

/** .NET Int32 parsing failures, as the XmlSerializer and the HTTP binder word them. */
export const INT32_FORMAT = 'Input string was not in a correct format.';
export const INT32_RANGE = 'Value was either too large or too small for an Int32.';

// --- ASMX: service descriptions --------------------------------------------------------------------

export const WSDL_NOT_FOUND = 'XML Web service description was not found.';
export const SCHEMA_NOT_FOUND = 'Schema not found.';

// --- ASP.NET error pages ---------------------------------------------------------------------------

export const REQUEST_FORMAT_UNRECOGNIZED = 'Request format is unrecognized.';
export const urlUnexpectedlyEnding = (pathInfo: string): string =>
  `Request format is unrecognized for URL unexpectedly ending in '${pathInfo}'.`;
export const MAX_REQUEST_LENGTH = 'Maximum request length exceeded.';
export const SERVER_TOO_BUSY = 'Server Too Busy';
/** What HTTP.sys answered before IIS saw the request. */
export const BAD_REQUEST = 'Bad Request';
export const INVALID_HOSTNAME = 'Bad Request - Invalid Hostname';
/** An exception the proxy did not expect: never its own message, which may say anything. */
export const INTERNAL_ERROR = 'An internal error occurred.';

// --- XmlReader (XmlException messages) -------------------------------------------------------------

export const XML_ROOT_MISSING = 'Root element is missing.';
export const XML_ROOT_DATA = 'Data at the root level is invalid.';
export const XML_DTD_PROHIBITED =
  'For security reasons DTD is prohibited in this XML document. To enable DTD processing set the DtdProcessing property on ' +
  'XmlReaderSettings to Parse and pass the settings to XmlReader.Create method.';
export const xmlTooDeep = (maxDepth: number): string => `The document nests elements deeper than ${maxDepth}.`;

// --- The proxy's own: a passthrough whose legacy origin failed (docs/migration.md §6) ---------------

/** The text of the 502 answer: the old service is behind the proxy here, so the proxy speaks as a gateway. */
export const legacyOriginFailed = (code: string): string => `502 Bad Gateway: the legacy service did not answer (${code}).`;

// --- The upstream, as .NET's HttpWebRequest would have reported it ---------------------------------

export const TIMED_OUT = 'The operation has timed out';
export const UNABLE_TO_CONNECT = 'Unable to connect to the remote server';
export const CONNECTION_CLOSED = 'The underlying connection was closed: The connection was closed unexpectedly.';
export const TOO_MANY_REDIRECTS = 'Too many automatic redirections were attempted.';

/**
 * The reason .NET's WebException gives for a status: its own text where it has one
 * (`net_httpstatuscode_*`), else the status description, here the standard phrase.
 */
const DOTNET_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Server Unavailable',
  504: 'Gateway Timeout',
  505: 'Http Version Not Supported',
};

/**
 * What went wrong with the upstream, at the transport or document level. The outbound side never
 * words these for the legacy client; upstreamText gives each code the text .NET would have shown.
 */
export type UpstreamFailure =
  /** `<help><exception-message>` (secrets already redacted), with its status. */
  | { readonly code: 'error_document'; readonly status: number; readonly message: string }
  /** A status outside 2xx without an error document. */
  | { readonly code: 'status'; readonly status: number }
  | { readonly code: 'too_many_redirects' }
  /** A connect, headers or body timeout, or the call's own deadline. */
  | { readonly code: 'timeout' }
  | { readonly code: 'unreachable' }
  /** A kept-alive connection closed under the request, after the retries. */
  | { readonly code: 'connection_closed' }
  /** The response could not be read as HTTP: its status line, a header, or its chunked body. */
  | { readonly code: 'protocol_violation'; readonly section: 'ResponseStatusLine' | 'ResponseHeader' | 'ResponseBody' }
  | { readonly code: 'name_not_resolved'; readonly host: string }
  /** The upstream's certificate is not trusted (expired, self-signed, another name). */
  | { readonly code: 'tls_untrusted' }
  | { readonly code: 'tls_failed' }
  | { readonly code: 'too_large' }
  | { readonly code: 'not_xml' }
  | { readonly code: 'wrong_root'; readonly root: string; readonly expected: string }
  | { readonly code: 'no_items'; readonly container: string }
  | { readonly code: 'bad_total' }
  /** A page that does not start where it was asked to, or is short before the last page. */
  | {
      readonly code: 'misaligned_page';
      readonly offset: number;
      readonly startResult: string | undefined;
      readonly items: number;
      readonly pageSize: number;
    }
  /** The last page holds fewer items than asked for while its total says more exist: the upstream caps its pages. */
  | { readonly code: 'short_page'; readonly offset: number; readonly items: number; readonly pageSize: number; readonly total: number }
  /** All pages of a list together hold a different number of items than the last one reports. */
  | { readonly code: 'count_mismatch'; readonly items: number; readonly total: number };

export type UpstreamFailureCode = UpstreamFailure['code'];

export function upstreamText(failure: UpstreamFailure): string {
  switch (failure.code) {
    case 'error_document':
      return failure.message;
    case 'status':
      return (
        `The remote server returned an error: (${failure.status}) ` +
        `${DOTNET_STATUS_TEXT[failure.status] ?? STATUS_CODES[failure.status] ?? 'Unknown'}.`
      );
    case 'too_many_redirects':
      return TOO_MANY_REDIRECTS;
    case 'timeout':
      return TIMED_OUT;
    case 'unreachable':
      return UNABLE_TO_CONNECT;
    case 'connection_closed':
      return CONNECTION_CLOSED;
    case 'protocol_violation':
      return (
        `The server committed a protocol violation. ` +
        `Section=${failure.section}${failure.section === 'ResponseBody' ? ' Detail=Response chunk format is invalid' : ''}`
      );
    case 'name_not_resolved':
      return `The remote name could not be resolved: '${failure.host}'`;
    case 'tls_untrusted':
      return 'The underlying connection was closed: Could not establish trust relationship for the SSL/TLS secure channel.';
    case 'tls_failed':
      return 'The request was aborted: Could not create SSL/TLS secure channel.';
    case 'too_large':
      return 'The upstream answer exceeded the maximum response size.';
    case 'not_xml':
      return 'The upstream answer is not well-formed XML.';
    case 'wrong_root':
      return `The upstream answer has root element '${failure.root}', expected '${failure.expected}'.`;
    case 'no_items':
      return `The upstream answer has no ${failure.container} element.`;
    case 'bad_total':
      return 'The upstream answer has no valid totalDesigns attribute.';
    case 'misaligned_page':
      return (
        `The upstream page at item ${failure.offset} has startResult ${failure.startResult ?? '(none)'} and ${failure.items} items ` +
        `of ${failure.pageSize}.`
      );
    case 'short_page':
      return (
        `The upstream page at item ${failure.offset} holds ${failure.items} items of the ${failure.pageSize} asked for, though it ` +
        `reports ${failure.total} in all: the upstream caps its pages below the configured maximum page size.`
      );
    case 'count_mismatch':
      return `The upstream pages hold ${failure.items} items, but report ${failure.total}.`;
  }
}

// --- Brownouts and sunset: the proxy's own words for a call it refuses on purpose (docs/migration.md §5) ---

/** Why a call is refused: an open brownout window (which closes at `until`), or the sunset since `since`. */
export type Refusal =
  | { readonly reason: 'brownout'; readonly brownout: string; readonly until: number }
  | { readonly reason: 'sunset'; readonly since: number };

/** A refusal with what its text names: the operation, its replacement, the call's own successor request, the sunset. */
export type RefusalDetail = Refusal & {
  readonly operation: OperationName;
  readonly replacement: UpstreamPath;
  /** `successorOf` the call's plan; null when the call does not translate. */
  readonly successor: string | null;
  /** `deprecation.sunsetAt`, when set. */
  readonly sunsetAt: number | null;
  /** When the call was refused: a brownout may come after the sunset, when refuseAfterSunset is off. */
  readonly at: number;
};

export function refusalText(detail: RefusalDetail): string {
  const instead = `Use ${detail.replacement} instead${detail.successor === null ? '.' : `: ${detail.successor}`}`;
  if (detail.reason === 'sunset')
    return `This operation is no longer available: ${detail.operation} was switched off on ${instant(detail.since)}. ${instead}`;
  return (
    `This operation is temporarily unavailable (scheduled brownout "${detail.brownout}" until ${instant(detail.until)}): ` +
    `${detail.operation} is deprecated${sunsetClause(detail)}. ${instead}`
  );
}

/** What a brownout's text says of the sunset: to come, or gone by while the operation still answers outside its windows. */
function sunsetClause({ sunsetAt, at }: RefusalDetail): string {
  if (sunsetAt === null) return '';
  return at < sunsetAt ? ` and will be switched off on ${instant(sunsetAt)}` : ` and was due to be switched off on ${instant(sunsetAt)}`;
}

/** An instant as UTC ISO 8601, milliseconds only when there are some: the form the configuration takes. */
function instant(ms: number): string {
  return new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

// --- Translation: the proxy's own words for input it cannot translate ------------------------------

export type TranslationDetail =
  | { readonly code: 'unknown_product_type'; readonly productType: string }
  /** The key is never echoed: it would end up in faults and logs. */
  | { readonly code: 'unknown_api_key' }
  | { readonly code: 'invalid_paging_value'; readonly name: string; readonly value: string }
  | { readonly code: 'page_index_below_base'; readonly pageIndex: number; readonly base: number }
  | { readonly code: 'page_size_below_one'; readonly pageSize: number }
  | { readonly code: 'window_too_large' }
  /** A translator's window from values that are no item range (a negative offset or count). */
  | { readonly code: 'invalid_window'; readonly offset: number; readonly count: number }
  | { readonly code: 'window_page_cap'; readonly count: number; readonly pageCount: number; readonly maxPages: number }
  | {
      readonly code: 'store_page_cap';
      readonly total: number;
      readonly pageCount: number;
      readonly pageSize: number;
      readonly maxPages: number;
    };

export function translationText(detail: TranslationDetail): string {
  switch (detail.code) {
    case 'unknown_product_type':
      return `Unknown product type '${detail.productType}'. Use merchandise ids or product type names such as 'Mug' or 'White T-Shirt'.`;
    case 'unknown_api_key':
      return 'The apiKey is not recognized.';
    case 'invalid_paging_value':
      return `Invalid value '${detail.value}' for ${detail.name}: expected a whole number from 0 to 999999999.`;
    case 'page_index_below_base':
      return `pageIndex must be ${detail.base} or greater; got ${detail.pageIndex}.`;
    case 'page_size_below_one':
      return `pageSize must be 1 or greater; got ${detail.pageSize}.`;
    case 'window_too_large':
      return 'The requested window is too large.';
    case 'invalid_window':
      return `The requested window of ${detail.count} items from item ${detail.offset} is not a range of items.`;
    case 'window_page_cap':
      return (
        `The requested window of ${detail.count} items needs ${detail.pageCount} upstream pages; one call fetches at most ` +
        `${detail.maxPages}. Ask for fewer items.`
      );
    case 'store_page_cap':
      return (
        `The store has ${detail.total} designs, which take ${detail.pageCount} upstream pages of ${detail.pageSize}; one ` +
        `StoreLookup fetches at most ${detail.maxPages} pages. Use StoreLookupPaged.`
      );
  }
}
