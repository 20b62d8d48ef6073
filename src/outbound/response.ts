import { UpstreamError } from '../errors.js';
import { redact } from '../redaction/redact.js';
import { compactDocument, decodeBody, type Page } from '../xml/compact.js';
import { parseXml, XmlSyntaxError } from '../xml/parse.js';
import { childElements, innerText, type XmlElement } from '../xml/tree.js';

/** The root of the upstream's error document, whose `exception-message` a fault quotes. */
const ERROR_ROOT = 'help';

/**
 * Status and body in, page or a named failure out. A 2xx page in the canonical subset passes through
 * as bytes (src/xml/compact.ts); anything else is decoded, parsed and checked whole. An upstream error
 * message that echoes one of `secrets` (the appKey sent), in any spelling, or quotes a key parameter
 * or element has it redacted: it goes to legacy clients as a fault. Only a whole token is a secret
 * there, so that a short key does not mangle the words around it.
 */
export function readResponse(
  statusCode: number,
  body: Uint8Array | readonly Uint8Array[],
  expectedRoot: string,
  secrets: readonly string[] = [],
): Page {
  if (statusCode >= 200 && statusCode <= 299) {
    const compact = compactDocument(body, expectedRoot);
    if (compact !== null) return compact;
  }
  let root: XmlElement | undefined;
  try {
    // Positions only serve error texts the client never sees for an upstream response.
    root = parseXml(decodeBody(body), { positions: false });
  } catch (err) {
    if (!(err instanceof XmlSyntaxError)) throw err;
  }
  const echoed = root?.local === ERROR_ROOT ? helpMessage(root) : undefined;
  const message = echoed === undefined ? undefined : redact(echoed, secrets, { wholeTokens: true });
  if (message !== undefined) throw new UpstreamError({ code: 'error_document', status: statusCode, message });
  if (statusCode < 200 || statusCode > 299) throw new UpstreamError({ code: 'status', status: statusCode });
  if (root === undefined) throw new UpstreamError({ code: 'not_xml' });
  if (root.local !== expectedRoot) throw new UpstreamError({ code: 'wrong_root', root: root.name, expected: expectedRoot });
  return root;
}

function helpMessage(help: XmlElement): string | undefined {
  const message = childElements(help).find((child) => child.local === 'exception-message');
  const text = message === undefined ? '' : innerText(message).trim();
  return text === '' ? undefined : text;
}
