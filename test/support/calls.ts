import { SERVICE_NAMESPACE, SOAP11_ENV, SOAP12_CONTENT_TYPE, SOAP12_ENV, XML_CONTENT_TYPE, XML_DECLARATION } from './wire.js';

/** The four ways a legacy call arrives, as the hit and the metrics name them. */
export type CallBinding = 'soap11' | 'soap12' | 'httpGet' | 'httpPost';
export const CALL_BINDINGS: readonly CallBinding[] = ['soap11', 'soap12', 'httpGet', 'httpPost'];

/**
 * `op` called at `base` over `binding` with `params` (in declaration order), as a client of that
 * binding sends it (docs/wire.md §8): a .NET-style envelope and action, a query string, or a form;
 * `signal` gives it up.
 */
export function legacyCall(
  base: string,
  binding: CallBinding,
  op: string,
  params: Readonly<Record<string, string>>,
  headers: Readonly<Record<string, string>> = {},
  signal?: AbortSignal,
): Promise<Response> {
  const fields = Object.entries(params);
  if (binding === 'httpGet') return fetch(`${base}/index.asmx/${op}?${new URLSearchParams(fields)}`, { headers, signal });
  if (binding === 'httpPost') {
    return fetch(`${base}/index.asmx/${op}`, {
      method: 'POST',
      signal,
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
  const children = fields.map(([name, value]) => `<${name}>${value}</${name}>`).join('');
  const envelope =
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${binding === 'soap11' ? SOAP11_ENV : SOAP12_ENV}"><soap:Body><${op} ` +
    `xmlns="${SERVICE_NAMESPACE}">${children}</${op}></soap:Body></soap:Envelope>`;
  const action = `${SERVICE_NAMESPACE}${op}`;
  const soapHeaders: Record<string, string> =
    binding === 'soap11'
      ? { 'content-type': XML_CONTENT_TYPE, soapaction: `"${action}"` }
      : { 'content-type': `${SOAP12_CONTENT_TYPE}; action="${action}"` };
  return fetch(`${base}/index.asmx`, { method: 'POST', headers: { ...headers, ...soapHeaders }, body: envelope, signal });
}
