import { SoapFault, type SoapFaultCode, type SoapVersion } from '../faults.js';
import {
  LENGTH_BELOW_ZERO,
  MISSING_BODY,
  MISSING_ENVELOPE,
  NO_VALID_ACTION,
  UNABLE_TO_PROCESS,
  UNABLE_TO_READ,
  actionNotRecognized,
  soapActionNotRecognized,
  versionMismatch,
  xmlDocumentError,
} from '../../messages.js';
import { OPERATIONS, legacyCall, soapAction, type ArgValue, type LegacyCall, type OperationSpec } from '../../operations.js';
import { BoundedMemo } from '../../memo/bounded.js';
import { parseXml, XmlSyntaxError } from '../../xml/parse.js';
import { childElements, innerText, type XmlElement } from '../../xml/tree.js';
import { parseInt32 } from '../../aspnet/int32.js';
import { mediaParameter, parseMediaType, type MediaType } from '../../aspnet/media-type.js';
import { urlDecode } from '../../aspnet/url-decode.js';
import { SOAP11_NS, SOAP12_NS } from './write.js';

/**
 * Reads a SOAP request the way ASMX does (docs/wire.md §2, §3, §5.5): pick a router from the
 * headers, route by SOAPAction, the `action` parameter or the body element, then check the content
 * type and envelope and bind the parameters. Every refusal is a SoapFault carrying its status, and,
 * once routing found it, the operation.
 */

export interface SoapRequest {
  readonly contentType: string | undefined;
  readonly soapAction: string | undefined;
  readonly body: Buffer;
}

export interface SoapCall {
  readonly version: SoapVersion;
  readonly call: LegacyCall;
}

const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';

/**
 * Envelopes remembered as read: a client asks the same envelope again and again (the same query, page
 * or product), and reading one, routing, the XML parse and binding, was a tenth of a cache hit. What
 * was refused is read again each time. Remembered with their headers, up to 4096 characters in all;
 * the arguments read may hold on to the decoded body (V8 keeps a slice's parent), so at most about
 * 12 MiB whatever callers send. What is remembered is frozen, as every call shares it.
 */
const ENVELOPES_REMEMBERED = 1024;
const REMEMBERED_REQUEST_LENGTH = 4096;
const envelopesRead = new BoundedMemo<SoapCall>(ENVELOPES_REMEMBERED, REMEMBERED_REQUEST_LENGTH);

export function readSoapRequest(request: SoapRequest, namespace: string): SoapCall {
  // Not turned into a key at all when it could not be remembered.
  if (request.body.length > REMEMBERED_REQUEST_LENGTH) return readEnvelope(request, namespace);
  // Header values hold no NUL; an absent header is told from an empty one.
  const header = (value: string | undefined): string => (value === undefined ? '\u0000' : `\u0001${value}`);
  const headers = `${header(request.contentType)}\u0000${header(request.soapAction)}`;
  const input = `${namespace}\u0000${headers}\u0000${request.body.toString('latin1')}`;
  return envelopesRead.of(input, () => frozen(readEnvelope(request, namespace)));
}

function frozen({ version, call }: SoapCall): SoapCall {
  return Object.freeze({
    version,
    call: Object.freeze({ ...call, args: Object.freeze({ ...call.args }), credentials: Object.freeze({ ...call.credentials }) }),
  });
}

function readEnvelope(request: SoapRequest, namespace: string): SoapCall {
  const media = parseMediaType(request.contentType);
  const actions = actionsOf(namespace);
  const guess = versionGuessed(request.soapAction, media);

  let op: OperationSpec;
  let document: XmlElement | XmlSyntaxError | undefined;
  if (guess === '1.1') {
    op = routeBySoapAction(request.soapAction ?? '', actions);
  } else {
    const rawAction = mediaParameter(media, 'action');
    const action = rawAction === undefined ? undefined : urlDecode(rawAction);
    const known = action === undefined ? undefined : actions.get(action);
    if (known) {
      op = known;
    } else {
      document = readDocument(decodeBody(media, request.body));
      op = routeByBodyElement(document, action, namespace);
    }
  }

  // Checks after routing, in ASMX's order (§2.5); faults in the envelope's version once it was read.
  const fault = (code: SoapFaultCode, chain: readonly string[], version: SoapVersion, status?: 400 | 415 | 500): SoapFault =>
    new SoapFault(code, chain, version, status, op);
  const routedVersion = document instanceof XmlSyntaxError || document === undefined ? guess : (envelopeVersion(document) ?? guess);
  if (media.base !== 'text/xml' && media.base !== 'application/soap+xml') throw fault('Client', [], routedVersion, 415);
  document ??= readDocument(decodeBody(media, request.body));
  if (document instanceof XmlSyntaxError) throw fault('Client', [document.message], guess, 400);
  const version = envelopeVersion(document);
  if (version === undefined) throw versionMismatchFault(document, op);
  if (version === '1.1' && media.base !== 'text/xml') throw fault('Client', [], version, 415);
  const body = soapBody(document, (missing) => fault('Client', [UNABLE_TO_READ, missing], version));
  return {
    version,
    call: bindParameters(op, body, namespace, (line, column, error) =>
      fault('Client', [UNABLE_TO_READ, xmlDocumentError(line, column), error], version),
    ),
  };
}

/** The operations by SOAPAction, per service namespace: the same for every call. */
const actionMaps = new Map<string, ReadonlyMap<string, OperationSpec>>();

function actionsOf(namespace: string): ReadonlyMap<string, OperationSpec> {
  let actions = actionMaps.get(namespace);
  if (actions === undefined) {
    actions = new Map(OPERATIONS.map((op) => [soapAction(namespace, op), op]));
    actionMaps.set(namespace, actions);
  }
  return actions;
}

/** The first guess of §2.1, which picks the router (and the version of faults before the envelope is read). */
function versionGuessed(soapAction: string | undefined, media: MediaType): SoapVersion {
  return soapAction === undefined || media.base === 'application/soap+xml' ? '1.2' : '1.1';
}

function routeBySoapAction(header: string, actions: ReadonlyMap<string, OperationSpec>): OperationSpec {
  let value = header;
  if (value.startsWith('"') && value.endsWith('"')) {
    // ASMX strips the pair with Substring(1, Length - 2), which throws for a lone quote.
    if (value.length === 1) {
      throw new SoapFault('Server', [UNABLE_TO_PROCESS, LENGTH_BELOW_ZERO], '1.1');
    }
    value = value.slice(1, -1);
  }
  value = urlDecode(value);
  const op = actions.get(value);
  if (!op) throw new SoapFault('Client', [soapActionNotRecognized(value)], '1.1');
  return op;
}

function routeByBodyElement(document: XmlElement | XmlSyntaxError, action: string | undefined, namespace: string): OperationSpec {
  if (document instanceof XmlSyntaxError) throw new SoapFault('Server', [UNABLE_TO_PROCESS, document.message], '1.2');
  const version = envelopeVersion(document);
  if (version === undefined) throw versionMismatchFault(document, null);
  const body = soapBody(document, (missing) => new SoapFault('Server', [UNABLE_TO_PROCESS, missing], version));
  const first = childElements(body)[0];
  const op = first?.uri === namespace ? OPERATIONS.find((candidate) => candidate.name === first.local) : undefined;
  if (op) return op;
  if (action === undefined) {
    throw new SoapFault('Client', [NO_VALID_ACTION], version);
  }
  throw new SoapFault('Client', [actionNotRecognized(action)], version);
}

function readDocument(text: string): XmlElement | XmlSyntaxError {
  try {
    return parseXml(text);
  } catch (err) {
    if (err instanceof XmlSyntaxError) return err;
    throw err;
  }
}

function envelopeVersion(root: XmlElement): SoapVersion | undefined {
  if (root.uri === SOAP11_NS) return '1.1';
  if (root.uri === SOAP12_NS) return '1.2';
  return undefined;
}

function versionMismatchFault(root: XmlElement, op: OperationSpec | null): SoapFault {
  return new SoapFault('VersionMismatch', [versionMismatch(root.uri, SOAP11_NS)], '1.1', 500, op);
}

function soapBody(root: XmlElement, missing: (text: string) => SoapFault): XmlElement {
  const ns = root.uri;
  if (root.local !== 'Envelope') throw missing(MISSING_ENVELOPE);
  const body = childElements(root).find((child) => child.uri === ns && child.local === 'Body');
  if (!body) throw missing(MISSING_BODY);
  return body;
}

/**
 * The XmlSerializer reads the first Body child only if it is the operation's own element; any other
 * wrapper leaves every parameter null or 0 (docs/wire.md §2.2). Inside it, parameter elements
 * match by exact name and namespace, the first occurrence wins, anything else is skipped.
 */
function bindParameters(
  op: OperationSpec,
  body: XmlElement,
  namespace: string,
  badInt: (line: number, column: number, error: string) => SoapFault,
): LegacyCall {
  const args: Record<string, ArgValue> = Object.fromEntries(op.params.map((p) => [p.name, p.type === 'int' ? 0 : null]));
  const wrapper = childElements(body)[0];
  if (wrapper === undefined || wrapper.uri !== namespace || wrapper.local !== op.name) return legacyCall(op, args);

  const seen = new Set<string>();
  for (const child of childElements(wrapper)) {
    const param = child.uri === namespace ? op.params.find((p) => p.name === child.local) : undefined;
    if (!param || seen.has(param.name)) continue;
    seen.add(param.name);
    if (isNil(child)) continue;
    const text = innerText(child);
    if (param.type === 'string') {
      args[param.name] = text;
      continue;
    }
    const parsed = parseInt32(text);
    if (typeof parsed !== 'number') {
      throw badInt(child.end.line, child.end.column, parsed.error);
    }
    args[param.name] = parsed;
  }
  return legacyCall(op, args);
}

function isNil(node: XmlElement): boolean {
  const nil = node.attributes.find((attr) => attr.uri === XSI_NS && attr.name.endsWith(':nil'));
  return nil !== undefined && ['true', '1'].includes(nil.value.trim());
}

const KNOWN_CHARSETS = new Set([
  'utf-8',
  'utf8',
  'utf-16',
  'utf-16le',
  'utf-16be',
  'us-ascii',
  'ascii',
  'iso-8859-1',
  'latin1',
  'windows-1252',
]);

/** Request bytes to text by ASMX's rules (docs/wire.md §3). */
export function decodeBody(media: MediaType, body: Buffer): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return new TextDecoder('utf-8').decode(body.subarray(3));
  if (body[0] === 0xff && body[1] === 0xfe) return new TextDecoder('utf-16le').decode(body.subarray(2));
  if (body[0] === 0xfe && body[1] === 0xff) return new TextDecoder('utf-16be').decode(body.subarray(2));
  const charset = mediaParameter(media, 'charset')?.toLowerCase();
  if (charset !== undefined && KNOWN_CHARSETS.has(charset)) return decodeAs(charset, body);
  // Only application/* falls back to the declaration; every other type (text/*, none at all) reads
  // as ASCII, `GetEncoding`'s default "per RFC 2376/3023".
  if (media.base.split('/')[0] !== 'application') return ascii(body);
  const declared = /^<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']/.exec(body.subarray(0, 200).toString('latin1'))?.[1]?.toLowerCase();
  return declared !== undefined && KNOWN_CHARSETS.has(declared) ? decodeAs(declared, body) : new TextDecoder('utf-8').decode(body);
}

function decodeAs(charset: string, body: Buffer): string {
  if (charset === 'us-ascii' || charset === 'ascii') return ascii(body);
  // .NET's iso-8859-1 maps every byte to the same code point. For TextDecoder the WHATWG label means
  // windows-1252 (0x80 → €), which Node versions honour differently: decode it directly.
  if (charset === 'iso-8859-1' || charset === 'latin1') return body.toString('latin1');
  return new TextDecoder(charset).decode(body);
}

function ascii(body: Buffer): string {
  return body.toString('latin1').replace(/[\u0080-\u00ff]/g, '?');
}
