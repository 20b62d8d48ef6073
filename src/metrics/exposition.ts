import { type OpenMetricsContentType, type PrometheusContentType, Registry } from 'prom-client';

/**
 * `/metrics` in the format the scraper asks for: OpenMetrics (with exemplars, which only it can carry)
 * to one whose Accept names `application/openmetrics-text`, as Prometheus does when exemplar storage is
 * on; the Prometheus text format to everyone else. prom-client renders a registry in one format at a
 * time, renaming its counters for OpenMetrics as it goes (`x_total` to `x`): each render sets the
 * format it needs and puts the registry back as it was, names included, one render at a time.
 */

export interface Exposition {
  readonly contentType: string;
  readonly text: string;
}

const OPENMETRICS = 'application/openmetrics-text';

export function createExposition(registry: Registry): (accept: string | undefined) => Promise<Exposition> {
  const own = registry.contentType;
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
  return (accept) => {
    const contentType = accept?.includes(OPENMETRICS) ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE;
    const rendered = rendering.then(
      () => render(contentType),
      () => render(contentType),
    );
    rendering = rendered.catch(() => {});
    return rendered;
  };
}
