import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../src/memo/bounded.js';

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
