import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../src/memo/bounded.js';
import { replyFrom } from '../src/memo/replies.js';

describe('BoundedMemo', () => {
  it('makes a value once per input while it is remembered', () => {
    const memo = new BoundedMemo<string>(4);
    let made = 0;
    const make = (input: string): string => {
      made += 1;
      return input.toUpperCase();
    };
    expect(memo.of('a', make)).toBe('A');
    expect(memo.of('a', make)).toBe('A');
    expect(made).toBe(1);
  });

  it('holds at most its bound, forgetting the oldest first', () => {
    const memo = new BoundedMemo<number>(3);
    const made: string[] = [];
    const make = (input: string): number => {
      made.push(input);
      return input.length;
    };
    for (const input of ['a', 'bb', 'ccc', 'dddd']) memo.of(input, make);
    expect(memo.size).toBe(3);
    memo.of('bb', make);
    memo.of('a', make);
    expect(made).toEqual(['a', 'bb', 'ccc', 'dddd', 'a']);
    expect(memo.size).toBe(3);
  });

  it('remembers nothing when making the value throws', () => {
    const memo = new BoundedMemo<string>(2);
    const failing = (): string => {
      throw new Error('refused');
    };
    expect(() => memo.of('x', failing)).toThrow('refused');
    expect(memo.size).toBe(0);
    expect(memo.of('x', () => 'made')).toBe('made');
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
