import { TraceFlags } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';

/**
 * The spans that ended, on their way to the exporter: a queue of at most `maxQueueSize`, sent in
 * batches, one export at a time. The SDK's BatchSpanProcessor does the same but drops silently (a
 * diagnostic line at most), and an operator must see what a collector that is down or slow costs:
 * every span not sent is told to `dropped`, with why. Nothing here waits on a call: a span ending is
 * a push or a drop.
 */

export type DropReason = 'queue_full' | 'export_failed';

export interface ExportQueueOptions {
  readonly exporter: SpanExporter;
  readonly maxQueueSize: number;
  readonly maxBatchSize: number;
  /** How long a span may wait for its batch to fill. */
  readonly delayMs: number;
  /** How long one export may take before its spans are counted lost and the next goes. */
  readonly exportTimeoutMs: number;
  readonly dropped: (reason: DropReason, count: number) => void;
}

export class ExportQueue implements SpanProcessor {
  readonly #options: ExportQueueOptions;
  #queue: ReadableSpan[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** The export under way, and any after it, until the queue is empty. */
  #draining: Promise<void> | null = null;

  constructor(options: ExportQueueOptions) {
    this.#options = options;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.#queue.length >= this.#options.maxQueueSize) {
      this.#options.dropped('queue_full', 1);
      return;
    }
    this.#queue.push(span);
    if (this.#queue.length >= this.#options.maxBatchSize) void this.#drain();
    else this.#timer ??= setTimeout(() => void this.#drain(), this.#options.delayMs).unref();
  }

  forceFlush(): Promise<void> {
    return this.#drain();
  }

  async shutdown(): Promise<void> {
    await this.#drain();
    await this.#options.exporter.shutdown();
  }

  #drain(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    // Cleared once done, never before it is set: a drain of an empty queue would otherwise stay "under way" for good.
    this.#draining ??= this.#exportAll().finally(() => {
      this.#draining = null;
    });
    return this.#draining;
  }

  async #exportAll(): Promise<void> {
    while (this.#queue.length > 0) await this.#export(this.#queue.splice(0, this.#options.maxBatchSize));
  }

  #export(batch: ReadableSpan[]): Promise<void> {
    const { exporter, exportTimeoutMs, dropped } = this.#options;
    return new Promise((resolve) => {
      let settled = false;
      const settle = (ok: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!ok) dropped('export_failed', batch.length);
        resolve();
      };
      const timer = setTimeout(() => settle(false), exportTimeoutMs).unref();
      try {
        exporter.export(batch, (result) => settle(result.code === ExportResultCode.SUCCESS));
      } catch {
        settle(false);
      }
    });
  }
}
