import { BoundedMemo } from '../memo/bounded.js';
import type { Config } from '../config/schema.js';

/**
 * Deprecation (RFC 9745), Sunset (RFC 8594) and Link headers, sent on every reply from the legacy
 * service path (docs/wire.md §9). Computed once from the configuration; only a translated call's
 * own `successor-version` link differs from answer to answer, and with it the relation of
 * `deprecation.successorUrl`.
 */
/** Where a caller reads its own migration (src/server/self-service.ts), outside the service path. */
export const SELF_SERVICE_PATH = '/deprecation/status';

export interface DeprecationSignals {
  readonly headers: Readonly<Record<string, string>>;
  /** The Link header of a call whose replacement is `successor` (`successorOf`, a path and query). */
  linkFor(successor: string): string;
}

/**
 * Link headers remembered, by successor (`successorOf` cuts one at 2,000 characters, its appKey left
 * out): with the header each makes, a few MiB at most.
 */
const LINKS_REMEMBERED = 1024;
const MAX_REMEMBERED_SUCCESSOR_LENGTH = 2048;

export function deprecationSignals(config: Pick<Config, 'deprecation' | 'upstream' | 'server'>): DeprecationSignals {
  const { deprecation } = config;
  const headers: Record<string, string> = {
    deprecation: `@${Math.floor(Date.parse(deprecation.deprecatedAt) / 1000)}`,
  };
  if (deprecation.sunsetAt !== null) headers.sunset = new Date(deprecation.sunsetAt).toUTCString();
  const links: string[] = [];
  if (deprecation.policyUrl !== null) {
    links.push(`<${deprecation.policyUrl}>; rel="deprecation"; type="text/html"`);
    if (deprecation.sunsetAt !== null) links.push(`<${deprecation.policyUrl}>; rel="sunset"; type="text/html"`);
  } else if (deprecation.selfService) {
    // Without a policy page of the operator's, the caller's own migration is the page to read: at the
    // public address where one is set, else on the host the caller called.
    const base = config.server.publicBaseUrl?.replace(/\/+$/, '') ?? '';
    links.push(`<${base}${SELF_SERVICE_PATH}>; rel="deprecation"; type="text/html"`);
  }
  const successorUrlAs = (relation: string): string[] =>
    deprecation.successorUrl === null ? [] : [`<${deprecation.successorUrl}>; rel="${relation}"`];
  const general = [...links, ...successorUrlAs('successor-version')];
  if (general.length > 0) headers.link = general.join(', ');
  // The call's own replacement first, and the only successor-version: a client that follows one
  // follows the exact one. The configured URL then goes under the relation that says what it is to
  // that client, the replacement's documentation for people (RFC 8631 service-doc; docs/wire.md §9).
  const successorBase = successorBaseOf(config);
  const after = [...links, ...successorUrlAs('service-doc')].map((link) => `, ${link}`).join('');
  // Written once per successor: a client asks the same thing again and again, and the header is the same each time.
  const written = new BoundedMemo<string>(LINKS_REMEMBERED, MAX_REMEMBERED_SUCCESSOR_LENGTH);
  return {
    headers,
    linkFor: (successor) => written.of(successor, () => `<${successorBase}${successor}>; rel="successor-version"${after}`),
  };
}

/**
 * Where callers reach the `.cp` endpoints: `deprecation.successorBaseUrl`, else the upstream's base;
 * either without credentials (the header goes to every caller) or a trailing slash (the successor
 * starts with one). With neither (the demo upstream), the link is a path on the same host.
 */
export function successorBaseOf({ deprecation, upstream }: Pick<Config, 'deprecation' | 'upstream'>): string {
  const configured = deprecation.successorBaseUrl ?? upstream.baseUrl;
  if (configured === null) return '';
  const base = new URL(configured);
  base.username = '';
  base.password = '';
  return base.href.replace(/\/+$/, '');
}
