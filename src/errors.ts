import {
  refusalText,
  translationText,
  upstreamText,
  type RefusalDetail,
  type TranslationDetail,
  type UpstreamFailure,
  type UpstreamFailureCode,
} from './messages.js';

/**
 * Errors as named values. Each one says why a call failed (`reason`, for logs and metrics) and carries
 * the data its legacy text is made from; the texts themselves are in src/messages.ts, and the
 * bindings turn an error into the fault or error text of their wire (docs/wire.md §5, §6.3).
 */

/** Why a call failed, as the deprecation hit and the metrics record it; never shown to the client. */
export type FailureReason =
  /** The binding could not read a call from the request (routing, content type, envelope, parameters). */
  | 'bad_request'
  /** The call's values cannot be translated (an unknown product type, a bad window). */
  | 'client_input'
  /** The call needs more upstream pages than one call may fetch. */
  | 'page_cap'
  /** The upstream answered with its `<help>` error document. */
  | 'upstream_error'
  /** The upstream answered with a status outside 2xx, or redirected too often. */
  | 'upstream_status'
  | 'upstream_timeout'
  | 'upstream_unreachable'
  /** The upstream answered something that cannot be embedded (not XML, wrong root, pages that do not line up). */
  | 'upstream_invalid'
  /** The legacy client went away before its reply was ready; the upstream requests were cancelled. */
  | 'client_closed'
  /** Refused in a scheduled brownout window (`brownouts`): the caller is to move to the replacement. */
  | 'brownout'
  /** Refused for good: `deprecation.sunsetAt` has passed and `deprecation.refuseAfterSunset` is on. */
  | 'sunset'
  /** A passthrough (`legacy.routes`): the legacy origin could not be reached, or its reply could not be relayed whole. */
  | 'legacy_origin'
  /** A passthrough: the legacy origin answered with a status of 400 or more, relayed as it is. */
  | 'legacy_fault'
  /**
   * Shed: the upstream's budget for the appKey (`upstream.budget`) had no room within its wait, or the
   * upstream said the key is over its limits (Mashery's 403 over QPS or rate) and no stale page could stand in.
   */
  | 'budget'
  /** A defect: something threw that is none of the above. */
  | 'internal';

/** The base of every error a call can end in on purpose; anything else is a defect (`internal`). */
export abstract class CallError extends Error {
  abstract readonly reason: FailureReason;
}

export function failureReason(err: unknown): FailureReason {
  return err instanceof CallError ? err.reason : 'internal';
}

// --- Translation -----------------------------------------------------------------------------------

/**
 * The call's values cannot be translated into upstream requests. `clientFault`: the caller's input is
 * wrong (a SOAP Client fault, as if the web method threw a SoapException with the Client code).
 */
export class TranslationError extends CallError {
  readonly reason: 'client_input' | 'page_cap';
  readonly clientFault: boolean;
  readonly detail: TranslationDetail;

  constructor(detail: TranslationDetail) {
    super(translationText(detail));
    this.name = 'TranslationError';
    this.detail = detail;
    this.reason = detail.code === 'window_page_cap' || detail.code === 'store_page_cap' ? 'page_cap' : 'client_input';
    // A store too big to fetch whole is not the caller's mistake: they asked for nothing unreasonable.
    this.clientFault = detail.code !== 'store_page_cap';
  }
}

// --- Upstream --------------------------------------------------------------------------------------

const UPSTREAM_REASONS: Readonly<Record<UpstreamFailureCode, FailureReason>> = {
  error_document: 'upstream_error',
  status: 'upstream_status',
  too_many_redirects: 'upstream_status',
  timeout: 'upstream_timeout',
  unreachable: 'upstream_unreachable',
  connection_closed: 'upstream_unreachable',
  protocol_violation: 'upstream_invalid',
  name_not_resolved: 'upstream_unreachable',
  tls_untrusted: 'upstream_unreachable',
  tls_failed: 'upstream_unreachable',
  too_large: 'upstream_invalid',
  not_xml: 'upstream_invalid',
  wrong_root: 'upstream_invalid',
  no_items: 'upstream_invalid',
  bad_total: 'upstream_invalid',
  misaligned_page: 'upstream_invalid',
  short_page: 'upstream_invalid',
  count_mismatch: 'upstream_invalid',
};

export class UpstreamError extends CallError {
  readonly reason: FailureReason;
  readonly failure: UpstreamFailure;

  constructor(failure: UpstreamFailure, options: { cause?: unknown } = {}) {
    super(upstreamText(failure), options);
    this.name = 'UpstreamError';
    this.failure = failure;
    this.reason =
      failure.code === 'error_document' && (failure.status < 200 || failure.status > 299)
        ? 'upstream_status'
        : UPSTREAM_REASONS[failure.code];
  }

  get code(): UpstreamFailureCode {
    return this.failure.code;
  }

  /** The upstream's HTTP status, where the failure is about one. */
  get status(): number | null {
    return 'status' in this.failure ? this.failure.status : null;
  }
}

/**
 * The upstream's gateway (Mashery) refused the appKey as over its limits: a 403 with
 * `X-Mashery-Error-Code` `ERR_403_DEVELOPER_OVER_QPS` or `…_OVER_RATE`, or a body that is exactly
 * `<h1>Developer Over Qps</h1>` or `<h1>Developer Over Rate</h1>` (docs/upstream.md §7.2), never one
 * that only holds those words. Worded and counted as the 403 it is (the same failure, text and reason as any other 403), so that without a
 * budget nothing
 * changes; the budget (src/budget) recognises it, pauses the key fleet-wide for `retryAfterSeconds`
 * and sheds the call instead.
 */
export class UpstreamOverLimit extends UpstreamError {
  /** `qps`: too many requests this second; `rate`: the plan's quota for its period is spent. */
  readonly limit: 'qps' | 'rate';
  /** The gateway's `Retry-After`, or the default pause for the limit (src/outbound/failures.ts). */
  readonly retryAfterSeconds: number;

  constructor(failure: UpstreamFailure, limit: 'qps' | 'rate', retryAfterSeconds: number) {
    super(failure);
    this.limit = limit;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * No upstream request could be made for the call within its budget (docs/fleet.md): the call is shed
 * with 503 Server Too Busy and `Retry-After`, as one past `server.maxConcurrentCalls` is, never
 * answered with a fault the caller would take for the catalog's.
 */
export class UpstreamBusy extends CallError {
  readonly reason = 'budget';
  /** When the budget (or the upstream's own pause) has room again; at least 1. */
  readonly retryAfterSeconds: number;
  /** What said no: the fleet's own budget, or the upstream's 403 over QPS or rate. */
  readonly source: 'budget' | 'upstream';

  constructor(retryAfterSeconds: number, source: 'budget' | 'upstream') {
    super(`The upstream budget of this appKey has no room for ${retryAfterSeconds} s (${source}).`);
    this.name = 'UpstreamBusy';
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
    this.source = source;
  }
}

/** The legacy client hung up; its upstream requests were cancelled and nobody reads the reply. */
export class ClientClosedError extends CallError {
  readonly reason = 'client_closed';

  constructor() {
    super('The client closed the connection.');
    this.name = 'ClientClosedError';
  }
}

// --- The legacy origin ----------------------------------------------------------------------------

/**
 * A call passed through to the old service (docs/migration.md §6) that did not end in a good reply: a
 * transport failure, classed as for the upstream (`failure`), or a status of 400 or more from the origin
 * (`{ code: 'status' }`, relayed to the caller as it is; the error only names it for the hit).
 */
export class LegacyOriginError extends CallError {
  readonly reason: 'legacy_origin' | 'legacy_fault';
  readonly failure: UpstreamFailure;

  constructor(failure: UpstreamFailure, options: { cause?: unknown } = {}) {
    super(`legacy origin: ${failure.code}`, options);
    this.name = 'LegacyOriginError';
    this.failure = failure;
    this.reason = failure.code === 'status' ? 'legacy_fault' : 'legacy_origin';
  }
}

// --- Brownouts and sunset ------------------------------------------------------------------------

/**
 * A call the proxy refuses on purpose, before translating it (docs/migration.md §5): its text names the
 * replacement, the call's own successor request and the sunset date. `retryAfterSeconds`: until the
 * brownout window closes; null after sunset, when retrying does not help.
 */
export class CallRefused extends CallError {
  readonly reason: 'brownout' | 'sunset';
  readonly detail: RefusalDetail;
  readonly retryAfterSeconds: number | null;

  constructor(detail: RefusalDetail, retryAfterSeconds: number | null) {
    super(refusalText(detail));
    this.name = 'CallRefused';
    this.detail = detail;
    this.reason = detail.reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
