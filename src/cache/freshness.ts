import { MAX_CACHE_SECONDS } from '../config/schema.js';
import type { ResponseCaching } from '../outbound/fetch.js';

/**
 * How long a page may be served from the cache, from the endpoint's configured freshness
 * (`cache.endpoints`) and the upstream's own `Cache-Control` where it sends one. Pure.
 *
 * - `no-store`, `private`: not kept (the cache is shared by the fleet, and by callers).
 * - `s-maxage`, else `max-age`, less the response's `Age`: its freshness; `no-cache`: none, every use
 *   revalidates.
 * - `stale-while-revalidate`, `stale-if-error`: the upstream's, else the configured ones, counted from
 *   the moment the page goes stale (RFC 5861).
 * - `must-revalidate`, `proxy-revalidate`, `no-cache` and `s-maxage` forbid serving it stale (RFC 9111
 *   §4.2.4, §5.2.2.10) unless the same response allows it with its own stale-* directive.
 */

export interface Freshness {
  readonly freshSeconds: number;
  readonly staleWhileRevalidateSeconds: number;
  readonly staleIfErrorSeconds: number;
}

/** What the upstream's response said of how long its page may be kept: all a page's deadlines need of it. */
export type PageCaching = Pick<ResponseCaching, 'cacheControl' | 'ageSeconds'>;

/** Epoch milliseconds. */
export interface Deadlines {
  /** Until then the page is served as it is. */
  readonly freshUntil: number;
  /** Until then a stale page is served while one background request refreshes it. */
  readonly staleWhileRevalidateUntil: number;
  /** Until then a stale page stands in for a failed upstream request. */
  readonly staleIfErrorUntil: number;
}

/** The directives of a Cache-Control header, names in lower case; a directive without a value is `true`. */
export function directivesOf(cacheControl: string | null): Map<string, string | true> {
  const directives = new Map<string, string | true>();
  if (cacheControl === null) return directives;
  for (const part of cacheControl.split(',')) {
    const [name = '', ...value] = part.split('=');
    const key = name.trim().toLowerCase();
    if (key === '') continue;
    directives.set(
      key,
      value.length === 0
        ? true
        : value
            .join('=')
            .trim()
            .replace(/^"(.*)"$/, '$1'),
    );
  }
  return directives;
}

/** A delta-seconds value, at most a week (MAX_CACHE_SECONDS): a century of max-age is a week. */
function seconds(value: string | true | undefined): number | null {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return null;
  return Math.min(Number(value), MAX_CACHE_SECONDS);
}

/** The deadlines of a page stored at `now`; null when it must not be kept at all. */
export function deadlinesOf(now: number, configured: Freshness, caching: PageCaching | null): Deadlines | null {
  const directives = directivesOf(caching?.cacheControl ?? null);
  if (directives.has('no-store') || directives.has('private')) return null;
  const sharedMaxAge = seconds(directives.get('s-maxage'));
  const maxAge = sharedMaxAge ?? seconds(directives.get('max-age'));
  const age = caching?.ageSeconds ?? 0;
  const fresh = directives.has('no-cache') ? 0 : Math.max(0, (maxAge ?? configured.freshSeconds) - age);
  const noStale =
    directives.has('no-cache') || directives.has('must-revalidate') || directives.has('proxy-revalidate') || sharedMaxAge !== null;
  const staleWhileRevalidate = seconds(directives.get('stale-while-revalidate')) ?? (noStale ? 0 : configured.staleWhileRevalidateSeconds);
  const staleIfError = seconds(directives.get('stale-if-error')) ?? (noStale ? 0 : configured.staleIfErrorSeconds);
  const freshUntil = now + fresh * 1000;
  return {
    freshUntil,
    staleWhileRevalidateUntil: freshUntil + staleWhileRevalidate * 1000,
    staleIfErrorUntil: freshUntil + staleIfError * 1000,
  };
}

/** The last moment a page with these deadlines may be served at all: how long a store keeps it. */
export function keepUntil(deadlines: Deadlines): number {
  return Math.max(deadlines.freshUntil, deadlines.staleWhileRevalidateUntil, deadlines.staleIfErrorUntil);
}

/** The longest a page may be served by these configured ages, fresh and then stale, in seconds. */
export function longestServedSeconds(endpoints: Readonly<Record<string, Freshness>>): number {
  return Math.max(
    0,
    ...Object.values(endpoints).map((ages) => ages.freshSeconds + Math.max(ages.staleWhileRevalidateSeconds, ages.staleIfErrorSeconds)),
  );
}
