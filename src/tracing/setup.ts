import type { TextMapPropagator, Tracer } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ConsoleSpanExporter,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { type DropReason, ExportQueue } from './export-queue.js';
import type { SamplerSettings, TracingSettings } from './settings.js';

/**
 * Tracing while it is on (src/tracing/settings.ts): a tracer provider of its own, handed to the app
 * rather than registered globally, so that nothing else in the process (no library's own
 * instrumentation) starts spans, and tracing off is a null the code skips.
 */

export interface Tracing {
  readonly tracer: Tracer;
  /** Reads a caller's trace (OTEL_PROPAGATORS). */
  readonly propagator: TextMapPropagator;
  /**
   * Writes a span's trace on a request the proxy sends: `traceparent` and `tracestate` only. A caller's
   * baggage is not sent on, to a gateway that sees the proxy's appKey.
   */
  readonly outward: TextMapPropagator;
  /** Spans not sent, by why, since start. */
  readonly dropped: Readonly<Record<DropReason, number>>;
  /** Sends what is queued, within `timeoutMs`; what is left then is lost. */
  shutdown(timeoutMs: number): Promise<void>;
}

export interface TracingLog {
  warn(fields: object, message: string): void;
}

/** The service name when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names none. */
export const DEFAULT_SERVICE_NAME = 'catalog-proxy';
export const TRACER_NAME = 'catalog-proxy';

/** Spans held for the exporter at most; past it they are dropped and counted. */
const MAX_QUEUE_SIZE = 2048;
const MAX_BATCH_SIZE = 512;
const EXPORT_DELAY_MS = 1000;
const EXPORT_TIMEOUT_MS = 30_000;

export function createTracing(settings: TracingSettings, log: TracingLog): Tracing {
  const dropped: Record<DropReason, number> = { queue_full: 0, export_failed: 0 };
  const queue = new ExportQueue({
    exporter: exporterOf(settings),
    maxQueueSize: MAX_QUEUE_SIZE,
    maxBatchSize: MAX_BATCH_SIZE,
    delayMs: EXPORT_DELAY_MS,
    exportTimeoutMs: EXPORT_TIMEOUT_MS,
    dropped: (reason, count) => {
      // Said once: the metric (tracing_spans_dropped_total) counts every one after it.
      if (dropped.queue_full + dropped.export_failed === 0) {
        log.warn(
          { event: 'tracing_spans_dropped', reason, count },
          'Spans are being dropped: the trace collector is down, slow or refusing (tracing_spans_dropped_total counts them); calls go on',
        );
      }
      dropped[reason] += count;
    },
  });
  const provider = new TracerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
      .merge(detectResources({ detectors: [envDetector] })),
    sampler: samplerOf(settings.sampler),
    spanProcessors: [queue],
  });
  const propagators = settings.propagators.map((name) =>
    name === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
  );
  return {
    tracer: provider.getTracer(TRACER_NAME),
    propagator: new CompositePropagator({ propagators }),
    outward: new CompositePropagator({ propagators: propagators.filter((one) => one instanceof W3CTraceContextPropagator) }),
    dropped,
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs).unref();
      });
      await Promise.race([provider.shutdown().catch(() => {}), late]);
      clearTimeout(timer);
    },
  };
}

function exporterOf({ exporter, protocol }: TracingSettings): SpanExporter {
  if (exporter === 'console') return new ConsoleSpanExporter();
  return protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter();
}

function samplerOf(sampler: SamplerSettings): Sampler {
  switch (sampler.kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(sampler.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(sampler.ratio) });
  }
}
