import { collectDefaultMetrics, type OpenMetricsContentType, Registry } from 'prom-client';

/**
 * The Prometheus registry of one app: every module that counts registers its metrics here, and the
 * operator listener's `/metrics` reads it (src/metrics/exposition.ts, which renders either format).
 * The process's own metrics (CPU, memory, event loop) first.
 *
 * prom-client keeps exemplars only in a registry made for OpenMetrics, and ties a registry's type to
 * the format it was made with: such a registry is typed as the default one here, since every module
 * only registers in it.
 */
export function createRegistry(exemplars = false): Registry {
  const registry = new Registry();
  if (exemplars) (registry as unknown as Registry<OpenMetricsContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  collectDefaultMetrics({ register: registry });
  return registry;
}
