import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * The Prometheus registry of one app: every module that counts registers its metrics here, and the
 * operator listener's `/metrics` reads it. The process's own metrics (CPU, memory, event loop) first.
 */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
