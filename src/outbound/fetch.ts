import type { Context } from '@opentelemetry/api';
import type { UpstreamRequest } from '../translate/plan.js';
import type { Page } from '../xml/compact.js';

/**
 * The upstream fetch path as one pipeline, in the style of undici's `compose`: the upstream client is
 * the innermost `FetchPage`, and each layer (counting, the budget, the page cache) is an `Interceptor`
 * that wraps the one inside it. Every layer gets one `FetchOptions` per fetch and hands it on whole;
 * a layer that adds something to it (the cache's revalidation, a narrower signal) derives new options
 * with `fetchOptionsWith`.
 */

/** Where the page cache took one page of a call from: a call's hit counts them (`pages`), as do the cache's metrics. */
export const PAGE_SOURCES = ['hit', 'miss', 'stale', 'revalidated', 'coalesced'] as const;
export type PageSource = (typeof PAGE_SOURCES)[number];

/** What a call's hit says of its upstream requests and pages; heard from the layers as each page is served. */
export interface CallTally {
  /** One request of the call went to the upstream (past the cache and the budget). */
  upstreamRequest(): void;
  /** How one page of the call was served. */
  page(source: PageSource): void;
}

/**
 * What the page cache asks of one fetch beyond the page, and hears of its response. Dropped, it would
 * cost the cache its validators and the upstream's Cache-Control, never a wrong page.
 */
export interface Revalidation {
  /**
   * The page the cache holds and its validators: sent as If-None-Match and If-Modified-Since, and a
   * 304 Not Modified is answered with `page` as it is.
   */
  readonly conditional?: { readonly etag: string | null; readonly lastModified: string | null; readonly page: Page };
  /** Hears the caching headers of the response the page came from (the 304's, when it was one). */
  readonly responded?: (caching: ResponseCaching) => void;
}

/** The headers of a response that say how long its page may be kept and how to revalidate it. */
export interface ResponseCaching {
  readonly status: number;
  readonly cacheControl: string | null;
  readonly etag: string | null;
  readonly lastModified: string | null;
  /** Seconds the response already spent in caches on the way (`Age`). */
  readonly ageSeconds: number;
}

export interface FetchOptions {
  /** The legacy call the request is made for, as its hit names it; a background refresh names the call that set it off. */
  readonly requestId: string;
  /** The appKey the request spends from (its budget); null when it carries none. Read once, from the call's plan. */
  readonly appKey: string | null;
  /** When the call's deadline passes (epoch ms): nothing is waited for past it. */
  readonly deadline: number;
  /** Aborts the request; a reason that is a CallError is what the fetch then throws. */
  readonly signal: AbortSignal;
  /** The call's hit, told of each request and page; null for a request no call counts (a background refresh, a shadow). */
  readonly tally: CallTally | null;
  /** The page cache's, for a conditional request. */
  readonly revalidation?: Revalidation;
  /** The span the fetch goes under, while tracing is on (src/tracing); absent, nothing is traced. */
  readonly trace?: FetchTrace;
}

/** The span a fetch goes under: the call's, then its page's (src/tracing/pages.ts). */
export interface FetchTrace {
  readonly context: Context;
  readonly traceId: string;
  readonly spanId: string;
  /** The span's `traceparent` (with its `tracestate` when there is one), sent with the upstream request; never a caller's baggage. */
  readonly headers: Readonly<Record<string, string>>;
  /** Hears the HTTP status of the upstream's response. */
  responded(status: number): void;
  /** Notes what happened to the fetch on the way: a wait for the budget, a pause of its appKey. */
  event(name: string, attributes: Readonly<Record<string, string | number>>): void;
  /** A span of its own for work this fetch sets off and does not wait for (a background refresh), linked to this one. */
  background(name: string): BackgroundTrace;
}

export interface BackgroundTrace {
  readonly trace: FetchTrace;
  /** Ends its span; `failure` names why it failed. */
  end(failure: string | null): void;
}

export type FetchPage = (request: UpstreamRequest, options: FetchOptions) => Promise<Page>;

/** Whatever holds a signal that is made when first read: a call's deadline (src/call/deadline.ts), or other options. */
interface SignalSource {
  readonly signal: AbortSignal;
}

/**
 * The options of a fetch, whose signal is read from `signalFrom` only when something asks for it: a
 * call's signal is made when something first waits on it (src/call/deadline.ts), and a call the cache
 * answers never does.
 */
export function fetchOptionsOf(fields: Omit<FetchOptions, 'signal'>, signalFrom: SignalSource): FetchOptions {
  return new LazySignalFetchOptions(fields, signalFrom);
}

/**
 * `options` with `changes`. Every layer derives its options this way, never by spreading them: a spread
 * would read the signal at once, or, of the options made here, lose it.
 */
export function fetchOptionsWith(options: FetchOptions, changes: Partial<FetchOptions>): FetchOptions {
  const fields = {
    requestId: changes.requestId ?? options.requestId,
    appKey: 'appKey' in changes ? (changes.appKey ?? null) : options.appKey,
    deadline: changes.deadline ?? options.deadline,
    tally: 'tally' in changes ? (changes.tally ?? null) : options.tally,
    revalidation: 'revalidation' in changes ? changes.revalidation : options.revalidation,
    trace: 'trace' in changes ? changes.trace : options.trace,
  };
  return new LazySignalFetchOptions(fields, changes.signal === undefined ? options : { signal: changes.signal });
}

/**
 * A class, not an object literal with a getter (which V8 makes some 20 times slower) nor property
 * descriptors copied onto an object (14 µs a traced call, and a dictionary every layer then read
 * slowly): one is made for every call and every page of a traced call.
 */
class LazySignalFetchOptions implements FetchOptions {
  readonly requestId: string;
  readonly appKey: string | null;
  readonly deadline: number;
  readonly tally: CallTally | null;
  readonly revalidation: Revalidation | undefined;
  readonly trace: FetchTrace | undefined;
  readonly #signalFrom: SignalSource;

  constructor(fields: Omit<FetchOptions, 'signal'>, signalFrom: SignalSource) {
    this.requestId = fields.requestId;
    this.appKey = fields.appKey;
    this.deadline = fields.deadline;
    this.tally = fields.tally;
    this.revalidation = fields.revalidation;
    this.trace = fields.trace;
    this.#signalFrom = signalFrom;
  }

  get signal(): AbortSignal {
    return this.#signalFrom.signal;
  }
}

/** One layer of the pipeline: given the fetch inside it, the fetch it makes of it. */
export type Interceptor = (next: FetchPage) => FetchPage;

/** `upstream` wrapped by each interceptor in turn, listed from the upstream outward: the last is the one a call meets first. */
export function composeFetch(upstream: FetchPage, ...interceptors: readonly Interceptor[]): FetchPage {
  return interceptors.reduce<FetchPage>((next, intercept) => intercept(next), upstream);
}

/** Counts each request that reaches it in its call's hit: placed just outside the upstream, it counts what went out. */
export const countRequests: Interceptor = (next) => (request, options) => {
  options.tally?.upstreamRequest();
  return next(request, options);
};
