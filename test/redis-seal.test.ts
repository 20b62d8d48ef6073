import { describe, expect, it } from 'vitest';
import { createSeal, SEAL_BYTES } from '../src/redis/seal.js';

/** What one who can write to Redis, without the fleet's secret, tries with a sealed value (issue 27). */
describe('sealed Redis values', () => {
  const seal = createSeal(`${'s'.repeat(32)}fleet`);
  const page = Buffer.from('<searchResultSet>…</searchResultSet>');
  const sealed = seal.close('proxy:page:key-a', page);

  it('opens to the value it sealed, under the key it was sealed for', () => {
    expect(sealed.length).toBe(SEAL_BYTES + page.length);
    expect(seal.open('proxy:page:key-a', sealed)?.equals(page)).toBe(true);
  });

  it('refuses a value moved to another key', () => {
    expect(seal.open('proxy:page:key-b', sealed)).toBeNull();
  });

  it('refuses a value altered by one byte of the same length, wherever that byte is', () => {
    for (let at = 0; at < sealed.length; at++) {
      const altered = Buffer.from(sealed);
      altered[at] = (altered[at] as number) ^ 1;
      expect(seal.open('proxy:page:key-a', altered)).toBeNull();
    }
  });

  it('refuses a value sealed with another secret, cut short, or empty', () => {
    const other = createSeal(`${'o'.repeat(32)}other`).close('proxy:page:key-a', page);
    expect(seal.open('proxy:page:key-a', other)).toBeNull();
    expect(seal.open('proxy:page:key-a', sealed.subarray(0, sealed.length - 1))).toBeNull();
    expect(seal.open('proxy:page:key-a', Buffer.alloc(0))).toBeNull();
    expect(seal.open('proxy:page:key-a', sealed.subarray(0, SEAL_BYTES))).toBeNull();
  });

  it('does not read a key and value as another split of the same bytes', () => {
    const joined = seal.close('ab', Buffer.from('c'));
    expect(seal.open('a', Buffer.concat([joined.subarray(0, SEAL_BYTES), Buffer.from('bc')]))).toBeNull();
  });
});
