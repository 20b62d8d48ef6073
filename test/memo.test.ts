import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../src/memo/bounded.js';
import { RecencyMap } from '../src/memo/recency.js';
import { replyFrom } from '../src/memo/replies.js';

describe('BoundedMemo', () => {
  /** A memo of `bound` entries of `length` characters at most, and the inputs it made values for, in order. */
  function counted(bound: number, length = 100) {
    const memo = new BoundedMemo<number>(bound, length);
    const made: string[] = [];
    const of = (input: string): number =>
      memo.of(input, () => {
        made.push(input);
        return input.length;
      });
    return { of, made };
  }

  it('makes a value once per input while it is remembered', () => {
    const { of, made } = counted(4);
    expect(of('a')).toBe(1);
    expect(of('a')).toBe(1);
    expect(made).toEqual(['a']);
  });

  it('holds at most its bound, forgetting the least recently used first', () => {
    const { of, made } = counted(3);
    for (const input of ['a', 'bb', 'ccc']) of(input);
    of('a');
    of('dddd');
    of('a');
    of('ccc');
    of('bb');
    expect(made).toEqual(['a', 'bb', 'ccc', 'dddd', 'bb']);
  });

  it('remembers no input longer than its bound, whatever callers send', () => {
    const { of, made } = counted(3, 8);
    of('x'.repeat(9));
    of('x'.repeat(9));
    of('y'.repeat(8));
    of('y'.repeat(8));
    expect(made).toEqual(['x'.repeat(9), 'x'.repeat(9), 'y'.repeat(8)]);
  });

  it('remembers nothing when making the value throws, and forgets nothing for it', () => {
    const memo = new BoundedMemo<number>(2, 100);
    memo.of('a', () => 1);
    memo.of('bb', () => 2);
    const refused = (): number => {
      throw new Error('refused');
    };
    expect(() => memo.of('ccc', refused)).toThrow('refused');
    expect(memo.of('a', () => 10)).toBe(1);
    expect(memo.of('bb', () => 20)).toBe(2);
    expect(memo.of('ccc', () => 3)).toBe(3);
  });
});

describe('RecencyMap', () => {
  /** Its entries, the least recently used first, as eviction takes them. */
  function order(map: RecencyMap<number>): string[] {
    const keys: string[] = [];
    const values: [string, number][] = [];
    for (let oldest = map.oldest(); oldest !== undefined; oldest = map.oldest()) {
      keys.push(oldest[0]);
      values.push(oldest);
      map.delete(oldest[0]);
    }
    for (const [key, value] of values) map.set(key, value);
    return keys;
  }

  it('orders its entries by last use, whether the entry read is already the newest or not', () => {
    const map = new RecencyMap<number>();
    for (const [key, value] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      map.set(key, value);
    expect(map.get('c')).toBe(3);
    expect(order(map)).toEqual(['a', 'b', 'c']);
    expect(map.get('a')).toBe(1);
    expect(map.get('a')).toBe(1);
    expect(order(map)).toEqual(['b', 'c', 'a']);
    expect(map.peek('b')).toBe(2);
    expect(order(map)).toEqual(['b', 'c', 'a']);
  });

  it('moves an entry read after the newest was deleted, and one set again to the end', () => {
    const map = new RecencyMap<number>();
    map.set('a', 1);
    map.set('b', 2);
    map.delete('b');
    map.set('c', 3);
    map.delete('c');
    expect(map.get('a')).toBe(1);
    map.set('b', 20);
    map.set('a', 10);
    expect(order(map)).toEqual(['b', 'a']);
    expect([map.size, map.get('a'), map.get('missing')]).toEqual([2, 10, undefined]);
  });
});

describe('replyFrom', () => {
  it("writes a page's reply in a form once, each form apart, each page apart", () => {
    const [page, samePage, other] = [Buffer.from('<a />'), Buffer.from('<a />'), Buffer.from('<b />')];
    const writes: string[] = [];
    const write = (what: string) => (): Buffer => {
      writes.push(what);
      return Buffer.from(what);
    };
    const first = replyFrom(page, 'soap 1.1', write('page 1.1'));
    expect(replyFrom(page, 'soap 1.1', write('again'))).toBe(first);
    expect(replyFrom(page, 'soap 1.2', write('page 1.2')).toString()).toBe('page 1.2');
    expect(replyFrom(samePage, 'soap 1.1', write('same bytes, another page')).toString()).toBe('same bytes, another page');
    expect(replyFrom(other, 'soap 1.1', write('other 1.1')).toString()).toBe('other 1.1');
    expect(writes).toEqual(['page 1.1', 'page 1.2', 'same bytes, another page', 'other 1.1']);
  });

  it('keeps three forms a page at most, the oldest replaced first', () => {
    const page = Buffer.from('<a />');
    let writes = 0;
    const write = (): Buffer => {
      writes += 1;
      return Buffer.from(String(writes));
    };
    for (const form of ['one', 'two', 'three', 'four']) replyFrom(page, form, write);
    expect(writes).toBe(4);
    for (const form of ['two', 'three', 'four']) replyFrom(page, form, write);
    expect(writes).toBe(4);
    replyFrom(page, 'one', write);
    expect(writes).toBe(5);
  });
});
