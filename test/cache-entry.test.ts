import { describe, expect, it } from 'vitest';
import { MAX_HEADER_BYTES, openEntry, sealEntry, type CachedPage, type EntryBounds } from '../src/cache/entry.js';
import { createSeal } from '../src/redis/seal.js';
import { markedPage } from './support/cached-app.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';

/**
 * A page entry as Redis holds it (src/cache/entry.ts): sealed for its key, bounded as if written now.
 * The fleet's tests (test/page-cache-fleet.test.ts) try the same against a real Redis.
 */

const seal = createSeal(TEST_CLIENT_ID_KEY);
const KEY = 'catalog-proxy:page:abc';
const NOW = 1_800_000_000_000;
const bytes = Buffer.from(markedPage('v1'));
const page: CachedPage = {
  bytes,
  rootName: 'searchResultSet',
  storedAt: NOW - 10_000,
  etag: '"1"',
  lastModified: null,
  cacheControl: null,
  ageSeconds: 0,
  freshUntil: NOW + 50_000,
  staleWhileRevalidateUntil: NOW + 110_000,
  staleIfErrorUntil: NOW + 3_650_000,
};
/** 60 s fresh, 60 s stale-while-revalidate, an hour stale-if-error, whatever the page came with. */
const bounds: EntryBounds = {
  maxPageBytes: 4096,
  now: NOW,
  deadlines: (storedAt) => ({
    freshUntil: storedAt + 60_000,
    staleWhileRevalidateUntil: storedAt + 120_000,
    staleIfErrorUntil: storedAt + 3_660_000,
  }),
};
const sealed = sealEntry(seal, KEY, page) as Buffer;

describe('a page entry in Redis', () => {
  it('opens to the page it sealed, its deadlines those of the configuration now', () => {
    expect(openEntry(seal, KEY, sealed, bounds)).toEqual({ kind: 'page', page });
    const shorter = {
      ...bounds,
      deadlines: (storedAt: number) => ({ freshUntil: storedAt, staleWhileRevalidateUntil: storedAt, staleIfErrorUntil: storedAt }),
    };
    expect(openEntry(seal, KEY, sealed, shorter)).toMatchObject({ kind: 'page', page: { freshUntil: NOW - 10_000 } });
  });

  it('is refused as forged under another key, with another secret, or with one byte changed', () => {
    expect(openEntry(seal, 'catalog-proxy:page:abd', sealed, bounds)).toEqual({ kind: 'refused', reason: 'forged' });
    expect(openEntry(createSeal('another-secret-of-32-characters!!'), KEY, sealed, bounds)).toEqual({ kind: 'refused', reason: 'forged' });
    const changed = Buffer.from(sealed);
    changed.writeUInt8(changed.readUInt8(changed.length - 20) ^ 1, changed.length - 20);
    expect(openEntry(seal, KEY, changed, bounds)).toEqual({ kind: 'refused', reason: 'forged' });
  });

  it('is refused as out of bounds when larger than any page may be, stored later than now, or not kept now', () => {
    expect(openEntry(seal, KEY, sealed, { ...bounds, maxPageBytes: bytes.length - 1 })).toEqual({ kind: 'refused', reason: 'bounds' });
    const huge = Buffer.alloc(32 + 4 + MAX_HEADER_BYTES + bounds.maxPageBytes + 1);
    expect(openEntry(seal, KEY, huge, bounds)).toEqual({ kind: 'refused', reason: 'bounds' });
    const later = sealEntry(seal, KEY, { ...page, storedAt: NOW + 86_400_000 }) as Buffer;
    expect(openEntry(seal, KEY, later, bounds)).toEqual({ kind: 'refused', reason: 'bounds' });
    expect(openEntry(seal, KEY, sealed, { ...bounds, deadlines: () => null })).toEqual({ kind: 'refused', reason: 'bounds' });
  });

  it('is not written when its headers are over their bound', () => {
    expect(sealEntry(seal, KEY, { ...page, etag: 'x'.repeat(MAX_HEADER_BYTES) })).toBeNull();
  });
});
