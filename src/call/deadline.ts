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
  return new CallDeadline(timeoutMs);
}

/**
 * The signal and its timer are made when something first waits on them (a page fetched, the budget, a
 * coalesced request): a call the page cache answers whole from one page never does, and the two cost
 * such a hit about a tenth of its own work on Node 20 (an AbortController, a timer set and cleared).
 */
class CallDeadline implements Deadline {
  readonly at: number;
  readonly #timeoutMs: number;
  /** performance.now() at the start: the time left is read on a clock that does not step. */
  readonly #started = performance.now();
  #cancel: AbortController | null = null;
  #timer: NodeJS.Timeout | null = null;
  #hungUp = false;
  #cleared = false;

  constructor(timeoutMs: number) {
    this.at = Date.now() + timeoutMs;
    this.#timeoutMs = timeoutMs;
  }

  get signal(): AbortSignal {
    if (this.#cancel === null) {
      const cancel = new AbortController();
      this.#cancel = cancel;
      if (this.#hungUp) cancel.abort(new ClientClosedError());
      else if (!this.#cleared) {
        const timedOut = (): void => cancel.abort(new UpstreamError({ code: 'timeout' }));
        // Whole milliseconds up: a timer of a fraction would fire that fraction early.
        const left = Math.ceil(this.#timeoutMs - (performance.now() - this.#started));
        if (left > 0) this.#timer = setTimeout(timedOut, left);
        else timedOut();
      }
    }
    return this.#cancel.signal;
  }

  hungUp(): void {
    this.#hungUp = true;
    this.#cancel?.abort(new ClientClosedError());
  }

  clear(): void {
    this.#cleared = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
  }
}
