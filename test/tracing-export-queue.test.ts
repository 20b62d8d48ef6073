import { ExportResultCode } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { type DropReason, ExportQueue } from '../src/tracing/export-queue.js';

/** The spans' way to the collector (src/tracing/export-queue.ts): bounded, counted, never stuck. */

function queued(exporter: SpanExporter, limits: { maxQueueSize?: number; maxBatchSize?: number; exportTimeoutMs?: number } = {}) {
  const dropped: Record<DropReason, number> = { queue_full: 0, export_failed: 0 };
  const queue = new ExportQueue({
    exporter,
    maxQueueSize: limits.maxQueueSize ?? 100,
    maxBatchSize: limits.maxBatchSize ?? 10,
    delayMs: 20,
    exportTimeoutMs: limits.exportTimeoutMs ?? 1000,
    dropped: (reason, count) => {
      dropped[reason] += count;
    },
  });
  const tracer = new TracerProvider({ spanProcessors: [queue] }).getTracer('test');
  const end = (count: number): void => {
    for (let i = 0; i < count; i++) tracer.startSpan(`span ${i}`).end();
  };
  return { queue, end, dropped };
}

describe('the export queue', () => {
  it('sends in batches, and keeps sending after a drain found the queue empty', async () => {
    const exporter = new InMemorySpanExporter();
    const { queue, end } = queued(exporter);
    await queue.forceFlush();
    end(25);
    await queue.forceFlush();
    expect(exporter.getFinishedSpans()).toHaveLength(25);
    // The timer's drain, with nothing left to send, must not leave the queue stuck either.
    await new Promise((resolve) => setTimeout(resolve, 50));
    end(3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(exporter.getFinishedSpans()).toHaveLength(28);
  });

  it('sends full batches at once, and a partial one only once its delay has passed', async () => {
    const batches: number[] = [];
    const counting: SpanExporter = {
      export: (spans, done) => {
        batches.push(spans.length);
        done({ code: ExportResultCode.SUCCESS });
      },
      shutdown: async () => {},
    };
    const { end } = queued(counting);
    end(25);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(batches).toEqual([10, 10]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(batches).toEqual([10, 10, 5]);
  });

  it('drops past its bound, counting each, while an export hangs; a hung export is given up and counted', async () => {
    const batches: ReadableSpan[][] = [];
    const hanging: SpanExporter = { export: (spans) => void batches.push(spans), shutdown: async () => {} };
    const { queue, end, dropped } = queued(hanging, { maxQueueSize: 30, maxBatchSize: 10, exportTimeoutMs: 100 });
    end(45);
    expect(dropped.queue_full).toBe(5);
    await queue.forceFlush();
    expect(batches.map((batch) => batch.length)).toEqual([10, 10, 10, 10]);
    expect(dropped.export_failed).toBe(40);
  });

  it('counts an export the collector refused', async () => {
    const refusing: SpanExporter = {
      export: (_spans, done) => done({ code: ExportResultCode.FAILED }),
      shutdown: async () => {},
    };
    const { queue, end, dropped } = queued(refusing);
    end(12);
    await queue.forceFlush();
    expect(dropped).toEqual({ queue_full: 0, export_failed: 12 });
  });
});
