import { context, type Link, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, type SpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from './support/otlp-receiver.js';

/**
 * The test-side OTLP receiver decodes what the real SDK exporters send, in both encodings: every id,
 * kind, time, attribute type, event, link, status, resource and scope comes back as the SDK made it.
 */

const ENCODINGS = [
  {
    name: 'http/protobuf',
    contentType: 'application/x-protobuf',
    exporter: (url: string, timeoutMillis?: number) => new ProtobufTraceExporter({ url, timeoutMillis }),
  },
  {
    name: 'http/json',
    contentType: 'application/json',
    exporter: (url: string, timeoutMillis?: number) => new JsonTraceExporter({ url, timeoutMillis }),
  },
] as const;

const LINKED = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
/** Past 2^53 ns, so a time that went through a double would come back wrong. */
const START: [number, number] = [1_700_000_000, 123_456_789];
const END: [number, number] = [1_700_000_001, 987_654_321];

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

function provider(exporter: SpanExporter): TracerProvider {
  return new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'otlp-receiver-test', 'service.version': '1.2.3' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
}

describe.each(ENCODINGS)('the OTLP receiver, $name', ({ contentType, exporter }) => {
  it('decodes a server span and its client child exactly as the SDK made them', async () => {
    receiver = await startOtlpReceiver();
    const tracerProvider = provider(exporter(`${receiver.url}/v1/traces`));
    const tracer = tracerProvider.getTracer('legacy-catalog-proxy', '0.1.0');

    const server = tracer.startSpan('GET /index.asmx', { kind: SpanKind.SERVER, startTime: START });
    const link: Link = { context: LINKED, attributes: { 'link.reason': 'retry of' } };
    const client = tracer.startSpan(
      'GET .cp',
      {
        kind: SpanKind.CLIENT,
        startTime: START,
        links: [link],
        attributes: CLIENT_ATTRIBUTES,
      },
      trace.setSpan(context.active(), server),
    );
    client.addEvent('retry', { 'retry.attempt': 2 }, START);
    client.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream answered 502' });
    client.end(END);
    server.end(END);
    await tracerProvider.forceFlush();
    const spans = await receiver.waitForSpans((all) => all.length === 2);
    await tracerProvider.shutdown();

    const traceId = server.spanContext().traceId;
    const common = {
      traceId,
      traceState: '',
      startTimeUnixNano: 1_700_000_000_123_456_789n,
      endTimeUnixNano: 1_700_000_001_987_654_321n,
      resource: expect.objectContaining({ 'service.name': 'otlp-receiver-test', 'service.version': '1.2.3' }),
      scope: 'legacy-catalog-proxy',
      scopeVersion: '0.1.0',
    };
    // The processor exports each span as it ends: the child first.
    expect(spans).toEqual([
      {
        ...common,
        spanId: client.spanContext().spanId,
        parentSpanId: server.spanContext().spanId,
        name: 'GET .cp',
        kind: 3,
        attributes: CLIENT_ATTRIBUTES,
        events: [{ name: 'retry', timeUnixNano: 1_700_000_000_123_456_789n, attributes: { 'retry.attempt': 2 } }],
        links: [{ traceId: LINKED.traceId, spanId: LINKED.spanId, traceState: '', attributes: { 'link.reason': 'retry of' } }],
        status: { code: 2, message: 'upstream answered 502' },
      },
      {
        ...common,
        spanId: server.spanContext().spanId,
        parentSpanId: null,
        name: 'GET /index.asmx',
        kind: 2,
        attributes: {},
        events: [],
        links: [],
        status: { code: 0, message: '' },
      },
    ]);
    expect(spans[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(spans[0]!.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(receiver.requests.map((r) => [r.method, r.path, r.contentType, r.error])).toEqual([
      ['POST', '/v1/traces', contentType, undefined],
      ['POST', '/v1/traces', contentType, undefined],
    ]);
    expect(receiver.requests[0]!.headers['content-type']).toBe(contentType);
  });

  it('records a refused export, keeps its spans out of `spans`, and the exporter reports a failure', async () => {
    receiver = await startOtlpReceiver({ status: 503 });
    const memory = new InMemorySpanExporter();
    const tracerProvider = provider(memory);
    tracerProvider.getTracer('legacy-catalog-proxy').startSpan('refused').end();
    // A short timeout: 503 is retryable, and the first backoff (about a second) outlasts it, so no retry.
    const otlp = exporter(`${receiver.url}/v1/traces`, 500);
    const result = await new Promise<ExportResult>((resolve) => otlp.export(memory.getFinishedSpans(), resolve));
    await otlp.shutdown();
    await tracerProvider.shutdown();

    expect(result.code).toBe(ExportResultCode.FAILED);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.contentType).toBe(contentType);
    expect(receiver.requests[0]!.spans.map((span) => span.name)).toEqual(['refused']);
    expect(receiver.spans).toEqual([]);
  });
});

/** Every kind of attribute value the exporters encode. */
const CLIENT_ATTRIBUTES = {
  'http.request.method': 'GET',
  'http.response.status_code': 502,
  'retry.delta': -3,
  'cache.ratio': 0.25,
  'cache.hit': false,
  'catalog.ids': ['a', 'b'],
};

describe('the OTLP receiver, OTLP/JSON as other senders write it', () => {
  it('reads int64 as strings, enums by name, base64 ids and snake_case names', async () => {
    receiver = await startOtlpReceiver();
    const body = {
      resource_spans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'other' } }] },
          scopeSpans: [
            {
              scope: { name: 'other-scope' },
              spans: [
                {
                  traceId: Buffer.from(LINKED.traceId, 'hex').toString('base64'),
                  spanId: LINKED.spanId,
                  name: 'x',
                  kind: 'SPAN_KIND_PRODUCER',
                  startTimeUnixNano: '9007199254740993',
                  endTimeUnixNano: 9_007_199_254_740_000,
                  attributes: [
                    { key: 'big', value: { intValue: '9223372036854775807' } },
                    { key: 'small', value: { intValue: '-7' } },
                  ],
                  status: { code: 1 },
                },
              ],
            },
          ],
        },
      ],
    };
    const response = await fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    expect(receiver.spans).toMatchObject([
      {
        traceId: LINKED.traceId,
        spanId: LINKED.spanId,
        parentSpanId: null,
        kind: 4,
        startTimeUnixNano: 9_007_199_254_740_993n,
        endTimeUnixNano: 9_007_199_254_740_000n,
        attributes: { big: 9_223_372_036_854_775_807n, small: -7 },
        status: { code: 1, message: '' },
        resource: { 'service.name': 'other' },
        scope: 'other-scope',
      },
    ]);
  });

  it('answers 400 to a body it cannot decode, and records why', async () => {
    receiver = await startOtlpReceiver();
    const response = await fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: new Uint8Array([0x0a, 0x05, 0x01]),
    });
    expect(response.status).toBe(400);
    expect(receiver.requests[0]!.error).toMatch(/truncated/);
    expect(receiver.spans).toEqual([]);
  });
});
