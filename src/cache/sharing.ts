import { UpstreamError, UpstreamOverLimit } from '../errors.js';
import type { Fetcher } from '../outbound/upstream.js';
import { appKeyOf, type UpstreamRequest } from '../translate/plan.js';

/**
 * Who may be served a page shared across keys (`cache.shareAcrossKeys`). A shared page skips the
 * upstream's check of the key until it expires, so it is never served to a request without an appKey
 * (a call without a key in `forward` mode, which the upstream refuses), nor to one whose appKey the
 * upstream refused lately (a key revoked, or never valid): those are asked of the cache under their own
 * key, so that the upstream checks them. A refused key is remembered by its keyed hash in this instance
 * only, for `memoryMs` (the longest a page may be served) or until a request with it succeeds; at most
 * MAX_REFUSED_KEYS of them, the oldest forgotten first.
 */
export interface KeySharing {
  /** Whether `request` may be served a page shared across keys. */
  mayShare(request: UpstreamRequest): boolean;
  /** `fetcher`, hearing of each request whether the upstream refused its appKey or took it. */
  watch(fetcher: Fetcher): Fetcher;
}

export interface KeySharingOptions {
  readonly hashOf: (text: string) => string;
  /** How long a refused key is remembered: read for each refusal, a reload may change it. */
  readonly memoryMs: () => number;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

/** Keys remembered at most: one who sends made-up keys must not fill the memory. */
const MAX_REFUSED_KEYS = 10_000;

/** The upstream's answer to a key it does not take: 401 or 403, but for the gateway's over-limit (a valid key). */
function refusesTheKey(err: unknown): boolean {
  return err instanceof UpstreamError && !(err instanceof UpstreamOverLimit) && (err.status === 401 || err.status === 403);
}

export function createKeySharing({ hashOf, memoryMs, now }: KeySharingOptions): KeySharing {
  /** Keyed hashes of the refused appKeys, each with when it is forgotten; the oldest first. */
  const refused = new Map<string, number>();

  const remember = (appKey: string): void => {
    const hash = hashOf(appKey);
    refused.delete(hash);
    refused.set(hash, now() + memoryMs());
    if (refused.size > MAX_REFUSED_KEYS) refused.delete(refused.keys().next().value as string);
  };

  return {
    mayShare(request) {
      const appKey = appKeyOf(request);
      if (appKey === null) return false;
      if (refused.size === 0) return true;
      const hash = hashOf(appKey);
      const until = refused.get(hash);
      if (until === undefined) return true;
      if (until > now()) return false;
      refused.delete(hash);
      return true;
    },
    watch: (fetcher) => ({
      async fetch(request, signal, requestId, exchange) {
        const appKey = appKeyOf(request);
        try {
          const page = await fetcher.fetch(request, signal, requestId, exchange);
          if (appKey !== null && refused.size > 0) refused.delete(hashOf(appKey));
          return page;
        } catch (err) {
          if (appKey !== null && refusesTheKey(err)) remember(appKey);
          throw err;
        }
      },
    }),
  };
}
