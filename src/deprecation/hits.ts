import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { UpstreamOutcome } from '../outbound/client.js';

/**
 * Every legacy call is a deprecation hit: one structured log event with a stable schema for the ops
 * dashboards, and Prometheus metrics. Keys never appear here: callers are named by a fingerprint.
 */

export type Binding = 'soap11' | 'soap12' | 'httpGet' | 'httpPost';

export interface DeprecationHit {
  readonly operation: string;
  readonly binding: Binding;
  /** `sha256:` + 12 hex digits of the apiKey, or `anonymous`. */
  readonly client: string;
  readonly legacyVersion: string | null;
  readonly replacement: string;
  readonly outcome: 'ok' | 'fault';
  readonly reason: string | null;
  readonly status: number;
  readonly durationMs: number;
  readonly upstreamRequests: number;
  readonly remoteAddress: string;
  readonly userAgent: string | null;
}

/** Bump when a field of DeprecationHit changes meaning or goes away; dashboards key on it. */
export const HIT_SCHEMA_VERSION = 1;

export function clientFingerprint(apiKey: string | null): string {
  if (apiKey === null || apiKey === '') return 'anonymous';
  return `sha256:${createHash('sha256').update(apiKey).digest('hex').slice(0, 12)}`;
}

export interface HitRecorder {
  readonly registry: Registry;
  record(hit: DeprecationHit): void;
  observeUpstream(outcome: UpstreamOutcome): void;
}

export function createHitRecorder(log: FastifyBaseLogger): HitRecorder {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const calls = new Counter({
    name: 'legacy_calls_total',
    help: 'Calls of deprecated legacy operations, by operation, binding and outcome.',
    labelNames: ['operation', 'binding', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'legacy_call_duration_seconds',
    help: 'Time to answer a legacy call, upstream requests included.',
    labelNames: ['operation', 'binding'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const upstream = new Histogram({
    name: 'upstream_request_duration_seconds',
    help: 'Requests to the .cp upstream, by endpoint and outcome.',
    labelNames: ['path', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  return {
    registry,
    record(hit) {
      calls.inc({ operation: hit.operation, binding: hit.binding, outcome: hit.outcome });
      duration.observe({ operation: hit.operation, binding: hit.binding }, hit.durationMs / 1000);
      log.info({ event: 'deprecated_call', schema: HIT_SCHEMA_VERSION, ...hit }, `deprecated call ${hit.operation} (${hit.binding})`);
    },
    observeUpstream(outcome) {
      upstream.observe({ path: outcome.path, outcome: outcome.outcome }, outcome.seconds);
    },
  };
}
