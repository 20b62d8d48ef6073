import { describe, expect, it } from 'vitest';
import { giveBack, joined, lend } from '../src/xml/pool.js';

describe('the byte pool (src/xml/pool.ts)', () => {
  it('lends exactly the length asked, and lends a buffer given back again', () => {
    const first = lend(125_000);
    expect(first.length).toBe(125_000);
    giveBack(first);
    const second = lend(120_000);
    expect(second.length).toBe(120_000);
    expect(second.buffer).toBe(first.buffer);
  });

  it('takes back a buffer once, and nothing it did not lend', () => {
    const lent = lend(100_000);
    giveBack(lent);
    giveBack(lent);
    const [a, b] = [lend(100_000), lend(100_000)];
    expect(a.buffer).not.toBe(b.buffer);
    const own = Buffer.allocUnsafeSlow(100_000);
    giveBack(own);
    expect([lend(100_000).buffer, lend(100_000).buffer]).not.toContain(own.buffer);
  });

  it('joins parts as Buffer.concat does, in a buffer of its own for anything but the smallest', () => {
    const parts = [Buffer.from('<a>'), Buffer.alloc(70_000, 'x'), Buffer.from('</a>')];
    const bytes = joined(parts);
    expect(bytes.equals(Buffer.concat(parts))).toBe(true);
    expect(joined([Buffer.from('small')]).toString()).toBe('small');
  });
});
