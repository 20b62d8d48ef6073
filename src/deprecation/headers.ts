import type { Config } from '../config.js';

/**
 * Deprecation (RFC 9745), Sunset (RFC 8594) and Link headers, sent on every answer from the legacy
 * service path (docs/wire.md §9). Computed once from the configuration.
 */
export function deprecationHeaders(deprecation: Config['deprecation']): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {
    deprecation: `@${Math.floor(Date.parse(deprecation.deprecatedAt) / 1000)}`,
  };
  if (deprecation.sunsetAt !== null) headers.sunset = new Date(deprecation.sunsetAt).toUTCString();
  const links: string[] = [];
  if (deprecation.policyUrl !== null) {
    links.push(`<${deprecation.policyUrl}>; rel="deprecation"; type="text/html"`);
    if (deprecation.sunsetAt !== null) links.push(`<${deprecation.policyUrl}>; rel="sunset"; type="text/html"`);
  }
  if (deprecation.successorUrl !== null) links.push(`<${deprecation.successorUrl}>; rel="successor-version"`);
  if (links.length > 0) headers.link = links.join(', ');
  return headers;
}
