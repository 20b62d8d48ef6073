import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import type { BindingName } from '../inbound/binding.js';
import type { OperationName } from '../operations.js';
import { compareReplies, type ComparedReply } from './compare.js';

/**
 * Shadow routes (docs/migration.md §6): the two paths' replies to one call, compared in the background
 * once both are in, each result counted per operation and each mismatch logged with its diff. Bounded:
 * past `legacy.maxShadowsInFlight` comparisons under way, a call is not shadowed (counted `skipped`).
 */

export type ShadowResult = 'match' | 'mismatch' | 'error' | 'skipped';

/** One path's answer to the call, or why there is none to compare (the origin failed, the caller left). */
export type Side = ComparedReply | { readonly failed: string };

export interface ShadowedCall {
  readonly operation: OperationName;
  readonly binding: BindingName;
  /** As the hit names the caller: a configured client's name, else the fingerprint. */
  readonly client: string;
  readonly requestId: string;
  /** The call's trace and span while tracing is on, for the lines written here. */
  readonly trace: { readonly traceId: string; readonly spanId: string } | null;
  /** Sent to both paths, kept out of every line written here. */
  readonly apiKey: string | null;
}

/** Compares the two sides once both settle; promises that never reject. */
export type Comparison = (translated: Promise<Side>, legacy: Promise<Side>) => void;

export interface Shadows {
  /** A place for one comparison, or null, counted `skipped`, when `legacy.maxShadowsInFlight` are under way. */
  admit(call: ShadowedCall): Comparison | null;
}

export function createShadows(maxInFlight: number, registry: Registry, log: FastifyBaseLogger): Shadows {
  const comparisons = new Counter({
    name: 'legacy_shadow_comparisons_total',
    help:
      'Shadowed legacy calls by operation and result: the translated and the legacy replies agree (match), differ (mismatch), one ' +
      'could not be had (error), or the call was not shadowed because legacy.maxShadowsInFlight were under way (skipped).',
    labelNames: ['operation', 'result'] as const,
    registers: [registry],
  });
  let inFlight = 0;

  async function compare(call: ShadowedCall, translatedSide: Promise<Side>, originSide: Promise<Side>): Promise<ShadowResult> {
    const [translated, legacy] = await Promise.all([translatedSide, originSide]);
    const context = { operation: call.operation, binding: call.binding, client: call.client, requestId: call.requestId, ...call.trace };
    if ('failed' in translated || 'failed' in legacy) {
      const failed = { translated: 'failed' in translated ? translated.failed : null, legacy: 'failed' in legacy ? legacy.failed : null };
      log.warn({ event: 'shadow_error', ...context, failed }, `shadow ${call.operation}: no answer to compare`);
      return 'error';
    }
    const diff = compareReplies(call.binding, translated, legacy, call.apiKey === null ? [] : [call.apiKey]);
    if (diff === null) return 'match';
    log.warn({ event: 'shadow_mismatch', ...context, diff }, `shadow ${call.operation}: the answers differ at ${diff.path}`);
    return 'mismatch';
  }

  return {
    admit(call) {
      if (inFlight >= maxInFlight) {
        comparisons.inc({ operation: call.operation, result: 'skipped' });
        return null;
      }
      inFlight++;
      return (translated, legacy) => {
        compare(call, translated, legacy)
          .catch((err: unknown) => {
            log.error({ err, event: 'shadow_defect', requestId: call.requestId, ...call.trace }, 'shadow comparison failed unexpectedly');
            return 'error' as const;
          })
          .then((result) => comparisons.inc({ operation: call.operation, result }))
          .finally(() => inFlight--);
      };
    },
  };
}
