import { type OpenMetricsContentType, type PrometheusContentType, Registry } from 'prom-client';

/**
 * `/metrics` in the format the scraper asks for while exemplars are kept (tracing on): OpenMetrics,
 * which alone can carry them, to one whose Accept names `application/openmetrics-text`, as Prometheus
 * does; the Prometheus text format to everyone else, and to everyone while tracing is off.
 * prom-client renders a registry in one format at a time, renaming its counters for OpenMetrics as it
 * goes (`x_total` to `x`): each render sets the format it needs and puts the registry back as it was,
 * names included, one render at a time.
 */

export interface Exposition {
  readonly contentType: string;
  readonly text: string;
}

const OPENMETRICS = 'application/openmetrics-text';

/** Whether `accept` names OpenMetrics with a quality above 0. */
function acceptsOpenMetrics(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((range) => {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    return type === OPENMETRICS && !params.some((param) => /^q=0(\.0*)?$/.test(param));
  });
}

export function createExposition(registry: Registry): (accept: string | undefined) => Promise<Exposition> {
  // Typed as Prometheus's whatever it was made for (src/metrics/registry.ts).
  const own = registry.contentType as PrometheusContentType | OpenMetricsContentType;
  // One registry in both formats: its type names only the one it was made with.
  const switchable = registry as unknown as { setContentType(type: PrometheusContentType | OpenMetricsContentType): void };
  let rendering: Promise<unknown> = Promise.resolve();
  const render = async (contentType: PrometheusContentType | OpenMetricsContentType): Promise<Exposition> => {
    const metrics = registry.getMetricsAsArray() as unknown as { name: string }[];
    const names = metrics.map((metric) => metric.name);
    switchable.setContentType(contentType);
    try {
      return { contentType, text: await registry.metrics() };
    } finally {
      switchable.setContentType(own);
      for (const [at, metric] of metrics.entries()) metric.name = names[at] as string;
    }
  };
  // Without exemplars (tracing off) the registry is Prometheus's, rendered as it always was.
  if (own !== Registry.OPENMETRICS_CONTENT_TYPE) return async () => ({ contentType: own, text: await registry.metrics() });
  return (accept) => {
    const contentType = acceptsOpenMetrics(accept) ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE;
    const rendered = rendering.then(
      () => render(contentType),
      () => render(contentType),
    );
    rendering = rendered.catch(() => {});
    return rendered;
  };
}
