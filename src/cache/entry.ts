import { SEAL_BYTES, type Seal } from '../redis/seal.js';
import type { RefusedValue } from '../redis/shared.js';
import { compactDocument, releasePage } from '../xml/compact.js';
import type { Deadlines, PageCaching } from './freshness.js';

/**
 * A page as Redis holds it: sealed (src/redis/seal.ts) with the fleet's secret over its Redis key and
 * every byte, so that a page forged, altered or moved to another key (another appKey's) is refused;
 * and bounded as if written now, so that a sealed page still gets no more than the configuration
 * allows: its deadlines are not stored but worked out again when it is read, from when it came and
 * the upstream's caching headers it came with, under the endpoint's configured ages of the moment.
 *
 * After the MAC: four bytes giving the length of a JSON header (`EntryHeader`), the header, then the
 * page's bytes as they are. Pure, but for the HMAC.
 */

/** A page of the cache: its compact bytes, when it came, how the upstream said it may be kept. */
export interface CachedPage extends Deadlines, PageCaching {
  /** Compact bytes as the fast path checked them (src/xml/compact.ts). */
  readonly bytes: Buffer;
  readonly rootName: string;
  /** Epoch milliseconds: when the upstream's response for it came. */
  readonly storedAt: number;
  readonly etag: string | null;
  readonly lastModified: string | null;
}

/** What an entry says besides the page's bytes. */
interface EntryHeader extends PageCaching {
  readonly storedAt: number;
  readonly rootName: string;
  readonly etag: string | null;
  readonly lastModified: string | null;
  /** The page's bytes: what follows the header, exactly. */
  readonly length: number;
}

/** A header's bytes at most: the root's name and the upstream's caching headers, and then some. */
export const MAX_HEADER_BYTES = 8192;
const LENGTH_BYTES = 4;
/** How far ahead of this instance's clock another instance's may be: a page stored later is refused. */
const MAX_CLOCK_SKEW_MS = 5000;

/** What an entry read back may hold now. */
export interface EntryBounds {
  /** `upstream.maxResponseBytes`: no page the upstream sent is larger. */
  readonly maxPageBytes: number;
  /** Epoch milliseconds. */
  readonly now: number;
  /** The deadlines of a page that came at `storedAt` with `caching`, by the configuration now; null: not kept. */
  readonly deadlines: (storedAt: number, caching: PageCaching) => Deadlines | null;
}

export type OpenedEntry =
  | { readonly kind: 'page'; readonly page: CachedPage }
  | { readonly kind: 'refused'; readonly reason: RefusedValue };

/** `page` as it is stored under `redisKey`; null when its header is over its bound (then it is not shared). */
export function sealEntry(seal: Seal, redisKey: string, page: CachedPage): Buffer | null {
  const header: EntryHeader = {
    storedAt: page.storedAt,
    rootName: page.rootName,
    etag: page.etag,
    lastModified: page.lastModified,
    cacheControl: page.cacheControl,
    ageSeconds: page.ageSeconds,
    length: page.bytes.length,
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  if (json.length > MAX_HEADER_BYTES) return null;
  const length = Buffer.alloc(LENGTH_BYTES);
  length.writeUInt32BE(json.length);
  return seal.close(redisKey, Buffer.concat([length, json, page.bytes]));
}

const refused = (reason: RefusedValue): OpenedEntry => ({ kind: 'refused', reason });

/** The most bytes a stored page of at most `maxPageBytes` takes: a larger value is not read from Redis. */
export const largestEntry = (maxPageBytes: number): number => SEAL_BYTES + LENGTH_BYTES + MAX_HEADER_BYTES + maxPageBytes;

/**
 * The page stored under `redisKey`, or why it is refused: `forged` when the fleet did not seal it for
 * that key, `bounds` when it is larger than any page may be, or cannot be read as one now (another
 * version's, a date that is none, a root or page that is not what the header says). Its bytes go into
 * replies as they are, so they are checked again as the upstream's were: whole, well-formed, its root.
 */
export function openEntry(seal: Seal, redisKey: string, stored: Buffer, bounds: EntryBounds): OpenedEntry {
  // Before the MAC, which would read all of it.
  if (stored.length > largestEntry(bounds.maxPageBytes)) return refused('bounds');
  const value = seal.open(redisKey, stored);
  if (value === null) return refused('forged');
  const header = headerOf(value);
  if (header === null) return refused('bounds');
  const bytes = value.subarray(LENGTH_BYTES + value.readUInt32BE(0));
  if (bytes.length !== header.length || bytes.length > bounds.maxPageBytes) return refused('bounds');
  // Later than now: from an instance whose clock is ahead (taken as now), or never (forever fresh).
  if (header.storedAt > bounds.now + MAX_CLOCK_SKEW_MS) return refused('bounds');
  const storedAt = Math.min(header.storedAt, bounds.now);
  const deadlines = bounds.deadlines(storedAt, header);
  if (deadlines === null) return refused('bounds');
  const checked = compactDocument(bytes, header.rootName);
  if (checked === null) return refused('bounds');
  releasePage(checked);
  const { etag, lastModified, cacheControl, ageSeconds, rootName } = header;
  return { kind: 'page', page: { ...deadlines, bytes, rootName, storedAt, etag, lastModified, cacheControl, ageSeconds } };
}

/** The header of a sealed value, each field of its type and range; null when it is none. */
function headerOf(value: Buffer): EntryHeader | null {
  if (value.length < LENGTH_BYTES) return null;
  const headerLength = value.readUInt32BE(0);
  if (headerLength > MAX_HEADER_BYTES || LENGTH_BYTES + headerLength > value.length) return null;
  let header: Partial<Record<keyof EntryHeader, unknown>>;
  try {
    header = JSON.parse(value.toString('utf8', LENGTH_BYTES, LENGTH_BYTES + headerLength)) as typeof header;
  } catch {
    return null;
  }
  const { storedAt, rootName, etag, lastModified, cacheControl, ageSeconds, length } = header ?? {};
  const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
  const text = (s: unknown): s is string | null => s === null || typeof s === 'string';
  if (!count(storedAt) || !count(ageSeconds) || !count(length) || typeof rootName !== 'string') return null;
  if (!text(etag) || !text(lastModified) || !text(cacheControl)) return null;
  return { storedAt, rootName, etag, lastModified, cacheControl, ageSeconds, length };
}
