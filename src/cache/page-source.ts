/**
 * Where the page cache took a page from, for a call's hit (`pages`) and the cache's metrics: the words
 * of src/cache/page-cache.ts. A type of its own, so that what counts pages does not import the cache.
 */
export const PAGE_SOURCES = ['hit', 'miss', 'stale', 'revalidated', 'coalesced'] as const;
export type PageSource = (typeof PAGE_SOURCES)[number];
