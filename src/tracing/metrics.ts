import { Counter, type Registry } from 'prom-client';
import type { DropReason } from './export-queue.js';
import type { Tracing } from './setup.js';

/** `tracing_spans_dropped_total`: what the trace collector did not get, read from the tracing's own count at each scrape. */
export function registerTracingMetrics(registry: Registry, tracing: Tracing): void {
  const counted: Record<DropReason, number> = { queue_full: 0, export_failed: 0 };
  new Counter({
    name: 'tracing_spans_dropped_total',
    help:
      'Spans not sent to the trace collector: reason "queue_full", more waiting than the export queue holds (a collector slow or ' +
      'down); "export_failed", an export the collector refused, or that failed or timed out.',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      for (const reason of Object.keys(counted) as DropReason[]) {
        this.inc({ reason }, tracing.dropped[reason] - counted[reason]);
        counted[reason] = tracing.dropped[reason];
      }
    },
  });
}
