import { createHash, createHmac } from 'node:crypto';
import { SECRET_PARAMS, type UpstreamRequest } from '../translate/plan.js';

/**
 * The key of a page: its exact upstream request (the upstream, the path, the query as sent, which
 * the translators make deterministic), the appKey left out only when `cache.shareAcrossKeys`. Hashed
 * (HMAC-SHA-256 with `deprecation.clientIdKey`, which every instance of a fleet shares), so no appKey
 * is ever held, stored in Redis or logged in clear.
 */
export type PageKey = (request: UpstreamRequest, shareAcrossKeys: boolean) => string;

export interface PageKeyOptions {
  /** `upstream.baseUrl`: two upstreams sharing one Redis never share pages. */
  readonly baseUrl: string;
  /** `deprecation.clientIdKey`; null: a plain SHA-256 (set one in production, where it is required anyway). */
  readonly secret: string | null;
}

/** `shareAcrossKeys` (`cache.shareAcrossKeys`) is given per request: a reload may change it. */
export function pageKey({ baseUrl, secret }: PageKeyOptions): PageKey {
  return (request, shareAcrossKeys) => {
    const params = shareAcrossKeys ? request.params.filter(([name]) => !SECRET_PARAMS.has(name)) : request.params;
    const query = new URLSearchParams(params as [string, string][]).toString();
    const hash = secret === null ? createHash('sha256') : createHmac('sha256', secret);
    return hash.update(`page-cache\n${baseUrl}\n${request.path}?${query}`).digest('base64url');
  };
}
