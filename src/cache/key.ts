import { BoundedMemo } from '../memo/bounded.js';
import { SECRET_PARAMS, type UpstreamRequest } from '../translate/plan.js';

/**
 * The key of a page: its exact upstream request (the upstream, the path, the query as sent, which
 * the translators make deterministic), the appKey left out only when the page is shared across keys.
 * Hashed with the fleet's keyed hash (Shared.hashOf: the fleet's secret, else the process's own key),
 * so no appKey is ever stored in Redis or logged in clear, nor can a guess be checked against it (the
 * requests whose keys are remembered stay in this process's memory, as the requests themselves did).
 */
export type PageKey = (request: UpstreamRequest, shareAcrossKeys: boolean) => string;

export interface PageKeyOptions {
  /** `upstream.baseUrl`: two upstreams sharing one Redis never share pages. */
  readonly baseUrl: string;
  readonly hashOf: (text: string) => string;
}

/**
 * Requests whose keys are remembered: the same requests come again and again, and the keyed hash is an
 * HMAC a call. Inputs of up to 512 characters (the path and query as sent: a Search for a few words),
 * so at most about 2 MiB whatever the queries.
 */
const KEYS_REMEMBERED = 4096;
const REMEMBERED_INPUT_LENGTH = 512;

/** `shareAcrossKeys` is given per request: a reload may change it, and not every request may share. */
export function pageKey({ baseUrl, hashOf }: PageKeyOptions): PageKey {
  const remembered = new BoundedMemo<string>(KEYS_REMEMBERED, REMEMBERED_INPUT_LENGTH);
  // The keys of the requests of remembered plans (frozen, src/call/plan.ts), by the request itself:
  // a cache hit then writes no query again to find its key.
  const ownKeys = new WeakMap<UpstreamRequest, string>();
  const keysAcross = new WeakMap<UpstreamRequest, string>();
  return (request, shareAcrossKeys) => {
    if (!Object.isFrozen(request)) return keyOf(request, shareAcrossKeys);
    const keys = shareAcrossKeys ? keysAcross : ownKeys;
    const known = keys.get(request);
    if (known !== undefined) return known;
    const key = keyOf(request, shareAcrossKeys);
    keys.set(request, key);
    return key;
  };

  function keyOf(request: UpstreamRequest, shareAcrossKeys: boolean): string {
    const params = shareAcrossKeys ? request.params.filter(([name]) => !SECRET_PARAMS.has(name)) : request.params;
    const query = new URLSearchParams(params as [string, string][]).toString();
    // Told apart: a request without an appKey asked as its own must never find a page shared across keys.
    const mode = shareAcrossKeys ? 'across keys' : 'own key';
    const target = `${request.path}?${query}`;
    // Remembered by what differs between requests: the upstream is the same for all of them.
    return remembered.of(`${mode}\n${target}`, () => hashOf(`page-cache\n${mode}\n${baseUrl}\n${target}`));
  }
}
