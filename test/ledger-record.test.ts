import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../src/deprecation/ledger.js';
import { MAX_RECORD_BYTES, entryOfRecord, recordOf } from '../src/deprecation/ledger-record.js';

/** A ledger entry read back from Redis is checked as if written now: one out of bounds is not an entry (issue 27, item 3). */

const NOW = Date.parse('2026-11-27T09:00:00.000Z');
const ENTRY: LedgerEntry = {
  client: 'hmac:0123456789ab',
  configured: false,
  operation: 'Search',
  binding: 'soap11',
  firstSeen: NOW - 60_000,
  lastSeen: NOW,
  calls: 3,
  outcomes: { ok: 2, fault: 1, shed: 0, refused: 0 },
  example: { at: NOW, successor: '/product.search.cp?v=3&query=dog', paging: { pages: 2, skip: 40, take: 60 } },
  stack: { at: NOW - 1000, name: 'php-soapclient', version: '8.2.7' },
};
const read = (changes: Record<string, unknown>): LedgerEntry | null =>
  entryOfRecord(Buffer.from(JSON.stringify({ ...ENTRY, ...changes })), NOW);

describe('a ledger entry read back', () => {
  it('is the entry written', () => {
    expect(entryOfRecord(recordOf(ENTRY), NOW)).toEqual(ENTRY);
    expect(read({ example: null, client: 'warehouse-app', configured: true })).toMatchObject({ client: 'warehouse-app', example: null });
    expect(read({ stack: { at: NOW, name: 'curl', version: null } })?.stack).toEqual({ at: NOW, name: 'curl', version: null });
  });

  it('is the entry written by a version that knew no stacks, with none', () => {
    expect(read({ stack: undefined })).toEqual({ ...ENTRY, stack: null });
  });

  it('is the entry written by a version that kept no paging of its example, with none', () => {
    expect(read({ example: { at: NOW, successor: '/product.search.cp?v=3&query=dog' } })?.example).toEqual({
      at: NOW,
      successor: '/product.search.cp?v=3&query=dog',
      paging: null,
    });
  });

  it.each([
    ['firstSeen "abc"', { firstSeen: 'abc' }],
    ['a date an hour ahead of this clock', { lastSeen: NOW + 3_600_000 }],
    ['a date before 2000', { firstSeen: Date.UTC(1999, 11, 31) }],
    ['firstSeen after lastSeen', { firstSeen: NOW + 1, lastSeen: NOW }],
    ['a negative count', { calls: 1, outcomes: { ok: 2, fault: -1, shed: 0, refused: 0 } }],
    ['a count that is not a whole number', { calls: 2.5, outcomes: { ok: 2.5, fault: 0, shed: 0, refused: 0 } }],
    ['a count past safe integers', { calls: 2 ** 53, outcomes: { ok: 2 ** 53, fault: 0, shed: 0, refused: 0 } }],
    ['calls that are not the sum of the outcomes', { calls: 4 }],
    ['an operation the service does not have', { operation: 'DropTables' }],
    ['a binding the service does not have', { binding: 'soap13' }],
    ['a client name of 65 characters', { client: 'a'.repeat(65) }],
    ['a client name with a control character', { client: 'warehouse\u001b[2J' }],
    ['an example longer than a successor can be', { example: { at: NOW, successor: `/${'x'.repeat(2000)}` } }],
    ['an example that is not a path', { example: { at: NOW, successor: 'https://evil.example/' } }],
    ['configured as text', { configured: 'yes' }],
    ['an example of no page', { example: { at: NOW, successor: '/x', paging: { pages: 0, skip: 0, take: null } } }],
    ['an example skipping a negative count', { example: { at: NOW, successor: '/x', paging: { pages: 1, skip: -1, take: null } } }],
    [
      'an example taking more than a legacy call can ask',
      { example: { at: NOW, successor: '/x', paging: { pages: 1, skip: 0, take: 2 ** 40 } } },
    ],
    [
      'an example of more pages than a call may make',
      { example: { at: NOW, successor: '/x', paging: { pages: 10_001, skip: 0, take: null } } },
    ],
    [
      'an example whose slice ends past Int32',
      { example: { at: NOW, successor: '/x', paging: { pages: 1, skip: 100, take: 2 ** 31 - 100 } } },
    ],
    ['an example whose paging is text', { example: { at: NOW, successor: '/x', paging: '2 pages' } }],
    ['a stack this service does not know', { stack: { at: NOW, name: 'cobol-soap', version: null } }],
    ['a stack version that is not one', { stack: { at: NOW, name: 'curl', version: '8.0 <script>' } }],
    ['a stack version of 41 characters', { stack: { at: NOW, name: 'curl', version: `8.${'1'.repeat(39)}` } }],
    ['a stack seen an hour ahead of this clock', { stack: { at: NOW + 3_600_000, name: 'curl', version: '8.0.1' } }],
    ['a stack as text', { stack: 'curl/8.0.1' }],
  ])('is refused with %s', (_, changes) => {
    expect(read(changes)).toBeNull();
  });

  it('is refused larger than its bound, or not JSON', () => {
    expect(entryOfRecord(Buffer.alloc(MAX_RECORD_BYTES + 1, 0x20), NOW)).toBeNull();
    expect(entryOfRecord(Buffer.from('{"client":'), NOW)).toBeNull();
    expect(entryOfRecord(Buffer.from('null'), NOW)).toBeNull();
  });
});
