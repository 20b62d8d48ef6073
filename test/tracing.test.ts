import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BuiltProxy, startBuilt } from './support/built-proxy.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.js';
import { pageDocument, SEARCH_PAGES, STORE_PAGES } from './support/pages.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';
import { SERVICE_NAMESPACE, SOAP11_ENV, SOAP12_CONTENT_TYPE, SOAP12_ENV, XML_CONTENT_TYPE, XML_DECLARATION } from './support/wire.js';

/**
 * Traces (issue 29), from outside: the built proxy, configured by the OpenTelemetry variables alone,
 * exports to an OTLP/HTTP receiver on loopback; a stub upstream shows the traceparent of each page.
 */

const KEY = 'Trace7CanaryKey';
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

/**
 * The stub: pages of 600 items (3 store pages of 256); a query `fail` answers 500; `slow` takes 400 ms;
 * `stale` is fresh for a second, then stale for a minute while it is refreshed.
 */
async function upstream(): Promise<StubUpstream> {
  return startStubUpstream((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const query = url.searchParams.get('query');
    const answer = (): void => {
      if (query === 'fail') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('down');
        return;
      }
      const naming = url.pathname.endsWith('/product.searchForProductsOfStore.cp') ? STORE_PAGES : SEARCH_PAGES;
      const caching = query === 'stale' ? { 'cache-control': 'max-age=1, stale-while-revalidate=60' } : {};
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8', ...caching });
      res.end(pageDocument(600, new Map(url.searchParams), naming));
    };
    if (query === 'slow') setTimeout(answer, 400);
    else answer();
  });
}

function soapSearch(query: string, headers: Record<string, string> = {}): RequestInit {
  const body =
    `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP11_ENV}"><soap:Body><Search xmlns="${SERVICE_NAMESPACE}">` +
    `<query>${query}</query><apiKey>${KEY}</apiKey><version>1</version></Search></soap:Body></soap:Envelope>`;
  return { method: 'POST', body, headers: { 'content-type': XML_CONTENT_TYPE, soapaction: `"${SERVICE_NAMESPACE}Search"`, ...headers } };
}

/** A request, its reply read whole: a reply left unread holds its connection, and the proxy's stop waits for it. */
async function call(url: string, init?: RequestInit): Promise<number> {
  const reply = await fetch(url, init);
  await reply.arrayBuffer();
  return reply.status;
}

const hitsOf = (proxy: BuiltProxy) =>
  proxy.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === 'deprecated_call');

const childrenOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan) => spans.filter((span) => span.parentSpanId === parent.spanId);

describe.each(['http/protobuf', 'http/json'])('traces over OTLP %s', (protocol) => {
  let receiver: OtlpReceiver;
  let stub: StubUpstream;
  /** The legacy ASMX service, which a passthrough route sends ProductLookup to. */
  let origin: StubUpstream;
  let proxy: BuiltProxy;
  /** Hits already taken by a test. */
  let consumed = 0;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stub = await upstream();
    origin = await startStubUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': XML_CONTENT_TYPE });
      res.end(`${XML_DECLARATION}<searchResultSet />`);
    });
    const config = join(tmpdir(), `tracing-${process.pid}-${protocol.replace('/', '-')}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        server: { maxConcurrentCalls: 1 },
        legacy: {
          origin: origin.origin,
          routes: [
            { mode: 'passthrough', operations: ['ProductLookup'] },
            { mode: 'shadow', operations: ['StoreLookupPaged'] },
          ],
        },
      }),
    );
    proxy = await startBuilt({
      UPSTREAM_URL: stub.origin,
      CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
      CONFIG_FILE: config,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'proxy-under-test',
    });
  });
  afterAll(async () => {
    await proxy?.stop();
    await stub?.close();
    await origin?.close();
    await receiver?.close();
  });
  afterEach(() => {
    receiver.spans.length = 0;
    stub.requests.length = 0;
    origin.requests.length = 0;
  });

  async function until(done: () => boolean): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The server span of the call whose hit is the last one logged, once it and `children` spans under it arrived. */
  async function callSpans(children: number): Promise<{ server: ReceivedSpan; pages: ReceivedSpan[]; hit: Record<string, unknown> }> {
    // The hit line comes on the proxy's stdout, which may trail its reply.
    await until(() => hitsOf(proxy).length > consumed);
    consumed = hitsOf(proxy).length;
    const hit = hitsOf(proxy).at(-1) as Record<string, unknown>;
    const spans = await receiver.waitForSpans((all) => {
      const server = all.find((span) => span.spanId === hit.spanId);
      return server !== undefined && childrenOf(all, server).length >= children;
    });
    const server = spans.find((span) => span.spanId === hit.spanId) as ReceivedSpan;
    return { server, pages: childrenOf(spans, server), hit };
  }

  it('a SOAP 1.1 Search: a server span joined to its hit, one client span for its page, its traceparent sent upstream', async () => {
    expect(await call(`${proxy.url}/index.asmx`, soapSearch('dog'))).toBe(200);
    const { server, pages, hit } = await callSpans(1);
    expect(hit.traceId).toBe(server.traceId);
    expect(server).toMatchObject({
      kind: SERVER,
      name: 'Search soap11',
      parentSpanId: null,
      attributes: {
        'http.request.method': 'POST',
        'url.path': '/index.asmx',
        'http.response.status_code': 200,
        'legacy.operation': 'Search',
        'legacy.binding': 'soap11',
        'legacy.request_id': hit.requestId,
        'deprecation.outcome': 'ok',
        'legacy.upstream_requests': 1,
      },
      resource: { 'service.name': 'proxy-under-test' },
    });
    expect(pages).toHaveLength(1);
    const [page] = pages as [ReceivedSpan];
    expect(page).toMatchObject({
      kind: CLIENT,
      name: 'GET /product.search.cp',
      attributes: { 'url.path': '/product.search.cp', 'legacy.page.source': 'miss', 'http.response.status_code': 200 },
    });
    expect(stub.requests.map((request) => request.headers.traceparent)).toEqual([`00-${server.traceId}-${page.spanId}-01`]);
    // No key in any spelling, anywhere in what was exported.
    expect(JSON.stringify(receiver.spans, (_key, value) => (typeof value === 'bigint' ? String(value) : value))).not.toMatch(
      new RegExp(KEY, 'i'),
    );
  });

  it('the same Search again: its page a short span served from the cache, no upstream request', async () => {
    await call(`${proxy.url}/index.asmx`, soapSearch('dog'));
    const { pages } = await callSpans(1);
    expect(pages.map((page) => page.attributes['legacy.page.source'])).toEqual(['hit']);
    expect(stub.requests).toHaveLength(0);
  });

  it('a StoreLookup over 3 pages: 3 client spans, and each page request carries its own', async () => {
    expect(await call(`${proxy.url}/index.asmx/StoreLookup?storeId=s&apiKey=${KEY}&version=1&productTypes=`)).toBe(200);
    const { server, pages } = await callSpans(3);
    expect(pages.map((page) => page.name)).toEqual(Array(3).fill('GET /product.searchForProductsOfStore.cp'));
    expect(stub.requests.map((request) => request.headers.traceparent).sort()).toEqual(
      pages.map((page) => `00-${server.traceId}-${page.spanId}-01`).sort(),
    );
  });

  it('a fault: the server span and the page span are errors, with the reason', async () => {
    expect(await call(`${proxy.url}/index.asmx`, soapSearch('fail'))).toBe(500);
    const { server, pages, hit } = await callSpans(1);
    expect(server.status.code).toBe(ERROR);
    expect(server.attributes).toMatchObject({
      'deprecation.outcome': 'fault',
      'deprecation.reason': hit.reason,
      'legacy.fault_code': 'soap:Server',
    });
    expect(pages[0]).toMatchObject({ status: { code: ERROR }, attributes: { 'error.type': 'upstream_status' } });
  });

  it("a caller's fault in SOAP 1.2 carries the code its envelope did; an HTTP GET error has none", async () => {
    const body =
      `${XML_DECLARATION}<soap:Envelope xmlns:soap="${SOAP12_ENV}"><soap:Body><StoreLookupPaged xmlns="${SERVICE_NAMESPACE}">` +
      `<storeId>s</storeId><apiKey>${KEY}</apiKey><version>1</version><productTypes /><pageIndex>ten</pageIndex><pageSize>10</pageSize>` +
      '</StoreLookupPaged></soap:Body></soap:Envelope>';
    const init = { method: 'POST', body, headers: { 'content-type': SOAP12_CONTENT_TYPE } };
    expect(await call(`${proxy.url}/index.asmx`, init)).toBe(500);
    const soap = await callSpans(0);
    expect(soap.server.attributes).toMatchObject({ 'deprecation.outcome': 'fault', 'legacy.fault_code': 'soap:Sender' });
    expect(
      await call(`${proxy.url}/index.asmx/StoreLookupPaged?storeId=s&productTypes=&pageIndex=ten&pageSize=10&apiKey=${KEY}&version=1`),
    ).toBe(500);
    const get = await callSpans(0);
    expect(get.server.attributes['deprecation.outcome']).toBe('fault');
    expect(get.server.attributes).not.toHaveProperty('legacy.fault_code');
  });

  it('a shed call (past server.maxConcurrentCalls) is a span too', async () => {
    const slow = call(`${proxy.url}/index.asmx`, soapSearch('slow'));
    await until(() => stub.requests.some((request) => request.url.includes('query=slow')));
    expect(await call(`${proxy.url}/index.asmx`, soapSearch('other'))).toBe(503);
    await until(() => hitsOf(proxy).some((hit) => hit.outcome === 'shed'));
    const shedHit = hitsOf(proxy).find((hit) => hit.outcome === 'shed') as Record<string, unknown>;
    await slow;
    await until(() => hitsOf(proxy).length >= consumed + 2);
    consumed = hitsOf(proxy).length;
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.spanId === shedHit.spanId));
    expect(spans.find((span) => span.spanId === shedHit.spanId)?.attributes).toMatchObject({
      'deprecation.outcome': 'shed',
      'http.response.status_code': 503,
    });
  });

  it("a call that arrives with a traceparent continues the caller's trace", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const baggage = 'tenant=shop-42';
    await call(`${proxy.url}/index.asmx`, soapSearch('cat', { traceparent: `00-${traceId}-${callerSpan}-01`, baggage }));
    const { server } = await callSpans(1);
    expect(server.traceId).toBe(traceId);
    expect(server.parentSpanId).toBe(callerSpan);
    expect(stub.requests[0]?.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // The caller's baggage stays here: the upstream request carries the proxy's appKey.
    expect(stub.requests[0]?.headers.baggage).toBeUndefined();
  });

  it('a passthrough to the legacy origin is a client span, its traceparent sent to the origin', async () => {
    expect(await call(`${proxy.url}/index.asmx/ProductLookup?productNumber=1&apiKey=${KEY}&version=1`)).toBe(200);
    const { server, pages } = await callSpans(1);
    expect(server.attributes['legacy.route']).toBe('passthrough');
    expect(pages).toEqual([
      expect.objectContaining({
        kind: CLIENT,
        name: 'GET legacy origin',
        attributes: expect.objectContaining({ 'http.response.status_code': 200 }),
      }),
    ]);
    expect(origin.requests.map((request) => request.headers.traceparent)).toEqual([`00-${server.traceId}-${pages[0]?.spanId}-01`]);
  });

  it("a shadowed call: the origin's request a client span of the call; the comparison's line carries the trace", async () => {
    const url = `${proxy.url}/index.asmx/StoreLookupPaged?storeId=s&pageIndex=0&pageSize=10&apiKey=${KEY}&version=1&productTypes=`;
    expect(await call(url)).toBe(200);
    const { server, pages, hit } = await callSpans(2);
    expect(pages.map((page) => page.name).sort()).toEqual(['GET /product.searchForProductsOfStore.cp', 'GET legacy origin']);
    const ofThisCall = (line: string): boolean => line.includes('"shadow_mismatch"') && line.includes(`"${hit.requestId}"`);
    await until(() => proxy.lines.some(ofThisCall));
    const mismatch = JSON.parse(proxy.lines.find(ofThisCall) as string) as Record<string, unknown>;
    expect(mismatch).toMatchObject({ requestId: hit.requestId, traceId: server.traceId, spanId: server.spanId });
  });

  it('a background refresh of a stale page is a span of its own, linked to the page that set it off', async () => {
    await call(`${proxy.url}/index.asmx`, soapSearch('stale'));
    await callSpans(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await call(`${proxy.url}/index.asmx`, soapSearch('stale'));
    const { pages } = await callSpans(1);
    expect(pages.map((page) => page.attributes['legacy.page.source'])).toEqual(['stale']);
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.name === 'refresh GET /product.search.cp'));
    const refresh = spans.find((span) => span.name === 'refresh GET /product.search.cp') as ReceivedSpan;
    expect(refresh).toMatchObject({ parentSpanId: null, links: [expect.objectContaining({ spanId: pages[0]?.spanId })] });
    expect(stub.requests.at(-1)?.headers.traceparent).toBe(`00-${refresh.traceId}-${refresh.spanId}-01`);
  });

  it('the call-duration histogram carries exemplars with the trace id, in OpenMetrics; Prometheus text as before', async () => {
    await call(`${proxy.url}/index.asmx`, soapSearch('exemplar'));
    const { hit } = await callSpans(1);
    const scrape = async (accept: string) => {
      const reply = await fetch(`${proxy.adminUrl}/metrics`, { headers: { accept } });
      return { contentType: reply.headers.get('content-type'), text: await reply.text() };
    };
    const open = await scrape('application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5');
    expect(open.contentType).toMatch(/^application\/openmetrics-text/);
    expect(open.text).toMatch(
      new RegExp(`^legacy_call_duration_seconds_bucket\\{[^}]*\\} \\d+ # \\{trace_id="${hit.traceId}",span_id="${hit.spanId}"\\} `, 'm'),
    );
    expect(open.text.trimEnd().endsWith('# EOF')).toBe(true);
    // The Prometheus text format after it, names and all, without exemplars; OpenMetrics refused (q=0) is not asked for.
    const plain = await scrape('application/openmetrics-text;q=0, text/plain');
    expect(plain.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(plain.text).toMatch(/^# TYPE legacy_calls_total counter$/m);
    expect(plain.text).not.toContain('trace_id=');
  });

  it('a description page is a server span of its own kind', async () => {
    await call(`${proxy.url}/index.asmx?WSDL`);
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.attributes['legacy.description'] === 'wsdl'));
    expect(spans.find((span) => span.attributes['legacy.description'] === 'wsdl')).toMatchObject({ kind: SERVER });
  });
});

describe('a collector that is down', () => {
  it('fails and slows no call; what could not be sent is counted and said once', async () => {
    const receiver = await startOtlpReceiver();
    const endpoint = receiver.url;
    await receiver.close();
    const stub = await upstream();
    const proxy = await startBuilt({
      UPSTREAM_URL: stub.origin,
      CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_TIMEOUT: '500',
    });
    try {
      const started = performance.now();
      const statuses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => call(`${proxy.url}/index.asmx/Search?query=q${i}&apiKey=${KEY}&version=1`)),
      );
      expect(statuses).toEqual(Array(20).fill(200));
      expect(performance.now() - started).toBeLessThan(2000);
      const deadline = Date.now() + 10_000;
      let dropped = 0;
      while (dropped === 0 && Date.now() < deadline) {
        const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
        dropped = Number(/^tracing_spans_dropped_total\{reason="export_failed"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
        if (dropped === 0) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(dropped).toBeGreaterThanOrEqual(40);
      const warnings = proxy.lines.filter((line) => line.includes('"tracing_spans_dropped"'));
      expect(warnings).toHaveLength(1);
    } finally {
      await proxy.stop();
      await stub.close();
    }
  });
});

describe('tracing off', () => {
  it('sends no traceparent, logs no trace, and /metrics is the Prometheus text whatever the scraper asks', async () => {
    const stub = await upstream();
    const proxy = await startBuilt({ UPSTREAM_URL: stub.origin, CLIENT_ID_KEY: TEST_CLIENT_ID_KEY });
    try {
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      expect(await call(`${proxy.url}/index.asmx`, soapSearch('off', { traceparent }))).toBe(200);
      expect(stub.requests.map((request) => request.headers.traceparent)).toEqual([undefined]);
      const reply = await fetch(`${proxy.adminUrl}/metrics`, { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
      expect(reply.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await reply.text()).not.toContain('# EOF');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(hitsOf(proxy)).toEqual([expect.not.objectContaining({ traceId: expect.anything() })]);
    } finally {
      await proxy.stop();
      await stub.close();
    }
  });
});

/** The built proxy over a fresh stub, exporting to a fresh receiver, with `env` besides. */
async function traced(
  env: NodeJS.ProcessEnv,
): Promise<{ receiver: OtlpReceiver; stub: StubUpstream; proxy: BuiltProxy; close(): Promise<void> }> {
  const receiver = await startOtlpReceiver();
  const stub = await upstream();
  const proxy = await startBuilt({
    UPSTREAM_URL: stub.origin,
    CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    ...env,
  });
  return {
    receiver,
    stub,
    proxy,
    async close() {
      await proxy.stop();
      await stub.close();
      await receiver.close();
    },
  };
}

describe('a stop', () => {
  it('sends the spans of the last calls before the process ends', async () => {
    const { receiver, proxy, close } = await traced({});
    try {
      expect(await call(`${proxy.url}/index.asmx/Search?query=last&apiKey=${KEY}&version=1`)).toBe(200);
      // At once: well within the queue's second, so only the stop's flush can have sent them.
      await proxy.stop();
      expect(receiver.spans.map((span) => span.kind).sort()).toEqual([SERVER, CLIENT].sort());
    } finally {
      await close();
    }
  });
});

describe('a parent-based ratio sampler at 0', () => {
  it("samples no new trace, and follows a caller's sampled one", async () => {
    const { receiver, stub, proxy, close } = await traced({
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    });
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      expect(await call(`${proxy.url}/index.asmx/Search?query=unsampled&apiKey=${KEY}&version=1`)).toBe(200);
      const sampled = { traceparent: `00-${traceId}-00f067aa0ba902b7-01` };
      expect(await call(`${proxy.url}/index.asmx/Search?query=sampled&apiKey=${KEY}&version=1`, { headers: sampled })).toBe(200);
      const spans = await receiver.waitForSpans((all) => all.length >= 2);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(new Set(receiver.spans.map((span) => span.traceId))).toEqual(new Set([traceId]));
      expect(spans.map((span) => span.kind).sort()).toEqual([SERVER, CLIENT].sort());
      // Unsampled, the upstream request says so: the upstream does not sample it either.
      expect(stub.requests.map((request) => request.headers.traceparent?.slice(-2))).toEqual(['00', '01']);
    } finally {
      await close();
    }
  });
});

describe('tracing settings the proxy cannot follow', () => {
  it('refuse the start, naming the variable', async () => {
    await expect(startBuilt({ OTEL_TRACES_EXPORTER: 'zipkin' })).rejects.toThrow(/OTEL_TRACES_EXPORTER=zipkin is not supported/);
    await expect(startBuilt({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).rejects.toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/,
    );
  });
});
