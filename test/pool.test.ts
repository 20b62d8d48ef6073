import { describe, expect, it } from 'vitest';
import { ownedPage } from '../src/xml/compact.js';
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

  it('keeps lending a size in use after a burst of another size filled the pool', () => {
    // 16 MB of 64 KB buffers given back at once (a burst of calls on pages of that size)...
    const burst = Array.from({ length: 300 }, () => lend(60_000));
    for (const bytes of burst) giveBack(bytes);
    // ...then pages of 125 KB, one call after another: each lends the buffer the call before gave back.
    const first = lend(125_000);
    giveBack(first);
    for (let call = 0; call < 5; call++) {
      const page = lend(125_000);
      expect(page.buffer).toBe(first.buffer);
      giveBack(page);
    }
  });

  it('joins parts as Buffer.concat does, in a buffer of its own for anything but the smallest', () => {
    const parts = [Buffer.from('<a>'), Buffer.alloc(70_000, 'x'), Buffer.from('</a>')];
    const bytes = joined(parts);
    expect(bytes.equals(Buffer.concat(parts))).toBe(true);
    expect(joined([Buffer.from('small')]).toString()).toBe('small');
  });

  it('a page kept past its call owns exactly its bytes, and the buffer it was lent goes back', () => {
    const lentBytes = lend(70_000).fill(0x61);
    const kept = ownedPage({ type: 'compact', bytes: lentBytes, rootName: 'searchResultSet' });
    if (kept.type !== 'compact') throw new Error('a compact page stays compact');
    expect(kept.bytes.buffer.byteLength).toBe(70_000);
    expect(kept.bytes.equals(Buffer.alloc(70_000, 0x61))).toBe(true);
    // The pool lends its buffer again, and writing it leaves the kept page as it was.
    const next = lend(70_000).fill(0x62);
    expect(next.buffer).toBe(lentBytes.buffer);
    expect(kept.bytes[0]).toBe(0x61);
  });
});
