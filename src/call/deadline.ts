import { ClientClosedError, UpstreamError } from '../errors.js';

/**
 * What cancels a call's upstream requests: its deadline (`upstream.callTimeoutMs`, a timeout), or the
 * caller hanging up. Cleared once the reply is ready; a relayed reply is bounded by `legacy.timeoutMs`.
 */
export interface Deadline {
  /** When it passes, in epoch milliseconds. */
  readonly at: number;
  readonly signal: AbortSignal;
  hungUp(): void;
  clear(): void;
}

export function startDeadline(timeoutMs: number): Deadline {
  const cancel = new AbortController();
  const timer = setTimeout(() => cancel.abort(new UpstreamError({ code: 'timeout' })), timeoutMs);
  return {
    at: Date.now() + timeoutMs,
    signal: cancel.signal,
    hungUp: () => cancel.abort(new ClientClosedError()),
    clear: () => clearTimeout(timer),
  };
}
