import { UpstreamError, UpstreamOverLimit } from '../errors.js';
import type { Interceptor } from '../outbound/fetch.js';
import { createRefusedKeys, type RefusedKeysOptions } from './refused-keys.js';

/**
 * Who may be served a page shared across keys (`cache.shareAcrossKeys`). A shared page skips the
 * upstream's check of the key until it expires, so it is never served to a request without an appKey
 * (a call without a key in `forward` mode, which the upstream refuses), nor to one whose appKey the
 * upstream refused lately (a key revoked, or never valid): those are asked of the cache under their own
 * key, so that the upstream checks them. A refused key is remembered by its keyed hash, by the fleet
 * (src/cache/refused-keys.ts), for `memoryMs` (the longest a page may be served) or until a request
 * with it succeeds.
 */
export interface KeySharing {
  /** Whether a request with `appKey` may be served a page shared across keys. */
  mayShare(appKey: string | null): boolean;
  /** A layer that hears of each request whether the upstream refused its appKey or took it. */
  readonly watch: Interceptor;
  close(): void;
}

/** As the refused keys': `active` says whether pages are shared across keys now (`cache.shareAcrossKeys`). */
export type KeySharingOptions = RefusedKeysOptions;

/** The upstream's answer to a key it does not take: 401 or 403, but for the gateway's over-limit (a valid key). */
function refusesTheKey(err: unknown): boolean {
  return err instanceof UpstreamError && !(err instanceof UpstreamOverLimit) && (err.status === 401 || err.status === 403);
}

export function createKeySharing({ shared, memoryMs, active, now }: KeySharingOptions): KeySharing {
  const refused = createRefusedKeys({ shared, memoryMs, active, now });
  return {
    mayShare(appKey) {
      if (appKey === null) return false;
      return refused.size === 0 || !refused.has(shared.hashOf(appKey));
    },
    watch: (next) => async (request, options) => {
      const { appKey } = options;
      try {
        const page = await next(request, options);
        if (appKey !== null && refused.size > 0) refused.delete(shared.hashOf(appKey));
        return page;
      } catch (err) {
        if (appKey !== null && active() && refusesTheKey(err)) refused.add(shared.hashOf(appKey));
        throw err;
      }
    },
    close: () => refused.close(),
  };
}
