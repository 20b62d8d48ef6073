import { TranslationError } from '../errors.js';
import { present } from '../operations.js';
import type { Config } from '../config/schema.js';

/**
 * The parameter mappings of docs/upstream.md §11: productTypes → merchandiseIds, legacy sort → sort,
 * apiKey → appKey. Pure functions of the value and the configuration.
 */

const NUMERIC_LIST = /^[-+]?\d+(?:\s+[-+]?\d+)*$/;

export type CaptionIndex = ReadonlyMap<string, number>;

/** Caption (trimmed, lower case) → merchandise id. */
export function captionIndex(merchandise: Readonly<Record<string, string>>): CaptionIndex {
  return new Map(Object.entries(merchandise).map(([id, caption]) => [caption.trim().toLowerCase(), Number(id)]));
}

/**
 * A comma- or space-separated list of merchandise ids or captions. Numbers (negatives too) pass
 * through; names are looked up case-insensitively, whole between commas first ("Large Mug"), then
 * word by word. A leading `-` negates a name as it does a number.
 */
export function merchandiseIds(productTypes: string | null, captions: CaptionIndex): string | null {
  const list = present(productTypes);
  if (list === null) return null;
  const ids: string[] = [];
  for (const part of list
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    if (NUMERIC_LIST.test(part)) {
      ids.push(...part.split(/\s+/).map(normalizeId));
      continue;
    }
    const whole = lookupCaption(part, captions);
    if (whole !== undefined) {
      ids.push(whole);
      continue;
    }
    for (const token of part.split(/\s+/)) {
      const id = /^[-+]?\d+$/.test(token) ? normalizeId(token) : lookupCaption(token, captions);
      if (id === undefined) {
        throw new TranslationError({ code: 'unknown_product_type', productType: part });
      }
      ids.push(id);
    }
  }
  return ids.length === 0 ? null : ids.join(',');
}

function lookupCaption(name: string, captions: CaptionIndex): string | undefined {
  const negated = name.startsWith('-');
  const id = captions.get((negated ? name.slice(1) : name).trim().toLowerCase());
  if (id === undefined) return undefined;
  // Written, not computed: `-0` (exclude mugs) must stay negative.
  return negated ? `-${id}` : String(id);
}

/** `+07` → `7`, `-0` stays `-0`. */
function normalizeId(token: string): string {
  const negative = token.startsWith('-');
  const digits = token.replace(/^[-+]/, '').replace(/^0+(?=\d)/, '');
  return negative ? `-${digits}` : digits;
}

/** Hyphen and underscore spellings are one value; mapped through the table, else passed unchanged. */
export function upstreamSort(sort: string | null, table: Readonly<Record<string, string>>): string | null {
  const value = present(sort);
  if (value === null) return null;
  return own(table, value.trim().replace(/-/g, '_')) ?? value;
}

/** The `appKey` to send for a call's legacy `apiKey`, by the configured mode. */
export function upstreamAppKey(apiKey: string | null, upstream: Config['upstream']): string | null {
  const key = present(apiKey);
  switch (upstream.apiKeyMode) {
    case 'fixed':
      return upstream.appKey;
    case 'forward':
      return key ?? upstream.appKey;
    case 'map': {
      const mapped = key === null ? undefined : own(upstream.apiKeyMap, key);
      // Never echo the key: it would end up in faults and logs.
      if (mapped === undefined) throw new TranslationError({ code: 'unknown_api_key' });
      return mapped;
    }
  }
}

/** A table entry, never one inherited from Object.prototype (`constructor`, `hasOwnProperty`, …). */
function own(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}
