import type { FetchOptions, FetchPage } from '../../src/outbound/fetch.js';

/** What a test's upstream stands in for: the innermost layer of the fetch pipeline. */
export interface TestUpstream {
  readonly fetch: FetchPage;
}

/** The options of a fetch no call counts, with a minute to its deadline; a test overrides what it looks at. */
export function fetchOptions(overrides: Partial<FetchOptions> = {}): FetchOptions {
  return {
    requestId: 'test-call',
    appKey: null,
    deadline: Date.now() + 60_000,
    signal: new AbortController().signal,
    tally: null,
    ...overrides,
  };
}
