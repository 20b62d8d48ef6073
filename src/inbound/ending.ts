import type { SuccessorPaging } from '../translate/plan.js';
import type { RelayedReply, Reply } from './reply.js';

/**
 * How a call ended, whatever path answered it: the reply to send, the error it failed with (null
 * when it did not), and its successor request, for the Link header and the hit.
 */
export interface Ending {
  readonly reply: Reply | RelayedReply;
  readonly failure: unknown;
  /** The `.cp` request that replaces the call (`successorOf`); null when it does not translate. */
  readonly successor: string | null;
  /** How the successor's pages make the call's result (`successorPagingOf`); absent or null: its one page is. */
  readonly successorPaging?: SuccessorPaging | null;
}

/** An ending the proxy wrote itself: its reply is whole. */
export interface WrittenEnding extends Ending {
  readonly reply: Reply;
}
