/** The legacy calls the benchmark and the soak send, as autocannon takes them. */

export interface BenchRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

const NS = 'http://tempuri.org/';

/** `op` over SOAP `version`, its parameters written out as `params`, as .NET's client sends it. */
export function soapCall(version: '1.1' | '1.2', op: string, params: string): BenchRequest {
  const [envelopeNs, headers] =
    version === '1.1'
      ? ['http://schemas.xmlsoap.org/soap/envelope/', { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}${op}"` }]
      : ['http://www.w3.org/2003/05/soap-envelope', { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}${op}"` }];
  return {
    method: 'POST',
    path: '/index.asmx',
    headers,
    body:
      `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${envelopeNs}"><soap:Body><${op} ` +
      `xmlns="${NS}">${params}</${op}></soap:Body></soap:Envelope>`,
  };
}
