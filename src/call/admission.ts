import { SERVER_TOO_BUSY } from '../messages.js';
import { errorPage, type Reply } from '../inbound/reply.js';

/**
 * At most `server.maxConcurrentCalls` calls in flight: past that a call is shed with ASP.NET's 503
 * Server Too Busy and a Retry-After (docs/wire.md §8), before any upstream request.
 */
export interface Admission {
  /** Whether the call may go on; if so, `leave` once it is done. */
  enter(): boolean;
  leave(): void;
  readonly shedReply: Reply;
}

export function createAdmission(maxConcurrentCalls: number, retryAfterSeconds: number): Admission {
  let inFlight = 0;
  return {
    enter() {
      if (inFlight >= maxConcurrentCalls) return false;
      inFlight++;
      return true;
    },
    leave() {
      inFlight--;
    },
    shedReply: shedReply(retryAfterSeconds),
  };
}

/** ASP.NET's 503 Server Too Busy, with when to try again. */
export function shedReply(retryAfterSeconds: number): Reply {
  return { ...errorPage(503, SERVER_TOO_BUSY), headers: { 'retry-after': String(retryAfterSeconds) } };
}
