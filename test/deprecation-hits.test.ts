import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { clientFingerprint } from '../src/deprecation/hits.js';
import { buildApp, type App } from '../src/server/app.js';
import { recordingUpstream } from './support/pages.js';
import type { StubUpstream } from './support/stub-upstream.js';
import { SERVICE_NAMESPACE, SOAP11_ENV, SOAP12_CONTENT_TYPE, SOAP12_ENV, XML_CONTENT_TYPE, XML_DECLARATION } from './support/wire.js';

/**
 * Every call is one deprecation hit with the same fields, whichever binding it came in on: the
 * dashboards count callers per operation and binding from these lines and from `legacy_calls_total`.
 */

let upstream: StubUpstream;
let app: App;
let base: string;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  upstream = await recordingUpstream(100);
  const config = loadConfig({ UPSTREAM_URL: upstream.origin }, { log: { level: 'info' } });
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  app = await buildApp(config, { logger });
  base = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app.fastify.close();
  await upstream.close();
});

beforeEach(() => {
  lines.length = 0;
});

type Binding = 'soap11' | 'soap12' | 'httpGet' | 'httpPost';

/** `op` called over `binding` with `params` (in declaration order), as a client of that binding sends it. */
function call(binding: Binding, op: string, params: Readonly<Record<string, string>>): Promise<Response> {
  const fields = Object.entries(params);
  const headers = { 'user-agent': `hits-test/${binding}` };
  if (binding === 'httpGet') return fetch(`${base}/index.asmx/${op}?${new URLSearchParams(fields)}`, { headers });
  if (binding === 'httpPost') {
    return fetch(`${base}/index.asmx/${op}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  }
  const children = fields.map(([name, value]) => `<${name}>${value}</${name}>`).join('');
  const envelope = `${XML_DECLARATION}<soap:Envelope xmlns:soap="${binding === 'soap11' ? SOAP11_ENV : SOAP12_ENV}"><soap:Body><${op} xmlns="${SERVICE_NAMESPACE}">${children}</${op}></soap:Body></soap:Envelope>`;
  const action = `${SERVICE_NAMESPACE}${op}`;
  const soapHeaders: Record<string, string> =
    binding === 'soap11'
      ? { 'content-type': XML_CONTENT_TYPE, soapaction: `"${action}"` }
      : { 'content-type': `${SOAP12_CONTENT_TYPE}; action="${action}"` };
  return fetch(`${base}/index.asmx`, { method: 'POST', headers: { ...headers, ...soapHeaders }, body: envelope });
}

async function hitOf(response: Response): Promise<Record<string, unknown>> {
  await response.text();
  const hits = lines.filter((line) => line.event === 'deprecated_call');
  expect(hits).toHaveLength(1);
  return hits[0] as Record<string, unknown>;
}

const BINDINGS: readonly Binding[] = ['soap11', 'soap12', 'httpGet', 'httpPost'];

describe('the deprecation hit', () => {
  it.each(BINDINGS)('%s: a successful call records every field of the schema', async (binding) => {
    const hit = await hitOf(await call(binding, 'Search', { query: 'dog', apiKey: 'caller-key-1', version: '2.0' }));
    expect(hit).toMatchObject({
      event: 'deprecated_call',
      schema: 1,
      operation: 'Search',
      binding,
      client: clientFingerprint('caller-key-1'),
      legacyVersion: '2.0',
      replacement: '/product.search.cp',
      outcome: 'ok',
      reason: null,
      status: 200,
      upstreamRequests: 1,
      remoteAddress: '127.0.0.1',
      userAgent: `hits-test/${binding}`,
    });
    expect(hit.durationMs).toBeTypeOf('number');
    expect(JSON.stringify(hit)).not.toContain('caller-key-1');
  });

  it.each(BINDINGS)('%s: a call with a bad int is recorded under its operation, as a fault of the request', async (binding) => {
    const response = await call(binding, 'ProductLookup', { productNumber: 'abc', apiKey: 'caller-key-2' });
    expect(response.status).toBe(500);
    const hit = await hitOf(response);
    expect(hit).toMatchObject({
      operation: 'ProductLookup',
      binding,
      replacement: '/product.searchForProduct.cp',
      outcome: 'fault',
      reason: 'bad_request',
      status: 500,
      upstreamRequests: 0,
    });
  });

  it.each(BINDINGS)('%s: a value the translation refuses is a client_input fault of the caller', async (binding) => {
    const hit = await hitOf(await call(binding, 'AdvancedSearch', { query: 'dog', apiKey: 'caller-key-3', productTypes: 'Hovercraft' }));
    expect(hit).toMatchObject({ operation: 'AdvancedSearch', binding, client: clientFingerprint('caller-key-3'), outcome: 'fault', reason: 'client_input', upstreamRequests: 0 });
  });

  it('a method that does not exist is recorded as operation "unknown"', async () => {
    const hit = await hitOf(await call('httpGet', 'NoSuchMethod', {}));
    expect(hit).toMatchObject({ operation: 'unknown', binding: 'httpGet', replacement: '', outcome: 'fault', reason: 'bad_request' });
  });

  it('legacy_calls_total counts SOAP faults under the operation called', async () => {
    await (await call('soap11', 'ProductLookup', { productNumber: '1x' })).text();
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^legacy_calls_total\{operation="ProductLookup",binding="soap11",outcome="fault"\} [1-9]/m);
    expect(metrics).not.toMatch(/^legacy_calls_total\{operation="unknown",binding="soap11"/m);
  });
});
