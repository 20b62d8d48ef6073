import { createHmac } from 'node:crypto';
import { PROCESS_KEY } from './process-key.js';

/**
 * The fingerprint of every call without an apiKey, and so the client of those
 * no configured client's address claims. Many callers, but none that a key names: never a fingerprint
 * to give a configured client's name, though a client named by its address has it in its hits too.
 */
export const ANONYMOUS = 'anonymous';

/** Names a caller without its key: an HMAC with `key` (deprecation.clientIdKey), else the process's own. */
export function clientFingerprint(apiKey: string | null, key: string | null = null): string {
  if (apiKey === null || apiKey === '') return ANONYMOUS;
  return `hmac:${createHmac('sha256', key ?? PROCESS_KEY)
    .update(apiKey)
    .digest('hex')
    .slice(0, 12)}`;
}
