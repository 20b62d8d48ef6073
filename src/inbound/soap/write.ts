import type { SoapFaultCode, SoapVersion } from '../faults.js';
import type { OperationSpec } from '../../operations.js';
import { replyFrom } from '../../memo/replies.js';
import { soapContent, type Page } from '../../xml/compact.js';
import { joined } from '../../xml/pool.js';
import { XML_DECLARATION, escapeText, writeXml } from '../../xml/write.js';

/** SOAP replies byte for byte as ASMX writes them (docs/wire.md §4, §5.1): one line, no trailing newline. */

export const SOAP11_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_NS = 'http://www.w3.org/2003/05/soap-envelope';

export function soapNamespace(version: SoapVersion): string {
  return version === '1.1' ? SOAP11_NS : SOAP12_NS;
}

export function soapContentType(version: SoapVersion): string {
  return version === '1.1' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8';
}

function envelopeHead(version: SoapVersion, header: string): string {
  return (
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${soapNamespace(version)}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
    `xmlns:xsd="http://www.w3.org/2001/XMLSchema">${header}<soap:Body>`
  );
}

const ENVELOPE_TAIL = '</soap:Body></soap:Envelope>';

function envelope(version: SoapVersion, header: string, body: string): string {
  return envelopeHead(version, header) + body + ENVELOPE_TAIL;
}

/**
 * A compact page goes in as bytes, joined once with the envelope around it in a lent buffer (given
 * back once the reply is sent, src/xml/pool.ts), so that the page is never a string on its way to the
 * client; a page the cache keeps, into a buffer kept with it for the next hit (src/memo/replies.ts); a
 * tree is written as text.
 */
export function successEnvelope(version: SoapVersion, namespace: string, op: OperationSpec, result: Page): string | Buffer {
  const open = `<${op.name}Response xmlns="${namespace}"><${op.name}Result>`;
  const close = `</${op.name}Result></${op.name}Response>`;
  if (result.type !== 'compact')
    return envelope(version, '', open + writeXml(result, { indent: false, defaultNamespace: namespace }) + close);
  const parts = (): Uint8Array[] => [
    Buffer.from(envelopeHead(version, '') + open),
    ...soapContent(result),
    Buffer.from(close + ENVELOPE_TAIL),
  ];
  if (result.kept !== true) return joined(parts());
  return replyFrom(result.bytes, `soap ${version} ${namespace} ${op.name} ${result.rootName}`, () => Buffer.concat(parts()));
}

const FAULT_CODES: Readonly<Record<SoapVersion, Readonly<Record<SoapFaultCode, string>>>> = {
  '1.1': { Client: 'soap:Client', Server: 'soap:Server', VersionMismatch: 'soap:VersionMismatch' },
  '1.2': { Client: 'soap:Sender', Server: 'soap:Receiver', VersionMismatch: 'soap:VersionMismatch' },
};

/** The SOAP 1.2 Upgrade header ASMX adds to VersionMismatch faults (docs/wire.md §5.4). */
const UPGRADE_HEADER =
  '<soap:Header><soap12:Upgrade xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:SupportedEnvelope qname="soap:Envelope" ' +
  'xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" /><soap12:SupportedEnvelope qname="soap12:Envelope" ' +
  'xmlns:soap12="http://www.w3.org/2003/05/soap-envelope" /></soap12:Upgrade></soap:Header>';

/** A fault code as the envelope of `version` writes it: `soap:Client` in 1.1 is `soap:Sender` in 1.2. */
export function wireFaultCode(version: SoapVersion, code: SoapFaultCode): string {
  return FAULT_CODES[version][code];
}

export function faultEnvelope(version: SoapVersion, code: SoapFaultCode, chain: readonly string[]): string {
  const text = escapeText(chain.join(' ---> '));
  const value = wireFaultCode(version, code);
  const header = code === 'VersionMismatch' ? UPGRADE_HEADER : '';
  const fault =
    version === '1.1'
      ? `<soap:Fault><faultcode>${value}</faultcode><faultstring>${text}</faultstring><detail /></soap:Fault>`
      : `<soap:Fault><soap:Code><soap:Value>${value}</soap:Value></soap:Code><soap:Reason><soap:Text ` +
        `xml:lang="en">${text}</soap:Text></soap:Reason><soap:Detail /></soap:Fault>`;
  return envelope(version, header, fault);
}
