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
  /** The exports under way, one after the other. */
  #draining: Promise<void> | null = null;
  /** Whether the drain under way sends a partial batch too. */
  #sendAll = false;

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
    if (this.#queue.length >= this.#options.maxBatchSize) void this.#drain(false);
    else this.#timer ??= setTimeout(() => void this.#drain(true), this.#options.delayMs).unref();
  }

  /** Everything queued sent, or given up: again while spans are left (one that came as a drain was ending). */
  async forceFlush(): Promise<void> {
    do await this.#drain(true);
    while (this.#queue.length > 0);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    await this.#options.exporter.shutdown();
  }

  /**
   * Sends full batches, and with `all` what is left too (the delay passed, a flush, a stop): an export
   * costs about the same for ten spans as for hundreds, so a partial batch waits for its delay. One
   * export at a time; a drain asked for while one runs joins it.
   */
  #drain(all: boolean): Promise<void> {
    if (all) {
      this.#sendAll = true;
      if (this.#timer !== null) {
        clearTimeout(this.#timer);
        this.#timer = null;
      }
    }
    // Cleared once done, never before it is set: a drain of an empty queue would otherwise stay "under way" for good.
    this.#draining ??= this.#send().finally(() => {
      this.#draining = null;
    });
    return this.#draining;
  }

  async #send(): Promise<void> {
    const { maxBatchSize } = this.#options;
    for (;;) {
      const full = this.#queue.length >= maxBatchSize;
      // A partial batch once per asking: spans that come meanwhile wait for their own delay.
      if (!full && !(this.#sendAll && this.#queue.length > 0)) break;
      if (!full) this.#sendAll = false;
      await this.#export(this.#queue.splice(0, maxBatchSize));
    }
    this.#sendAll = false;
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
