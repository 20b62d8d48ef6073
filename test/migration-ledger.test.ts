import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FOLDED_CLIENT, Ledger, OUTCOMES, ledgerJson, mergeLedgers, type LedgerHit } from '../src/migration/ledger.js';

/** The ledger is pure: hits in, entries out, and two instances' ledgers merge into the ledger of all their hits. */

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const MINUTE = 60_000;

const hit = (client: string, outcome: LedgerHit['outcome'] = 'ok', successor: string | null = null): LedgerHit => ({ client, operation: 'Search', binding: 'soap11', outcome, successor });

function ledgerOf(hits: readonly (readonly [LedgerHit, number])[], maxEntries?: number): Ledger {
  const ledger = new Ledger(maxEntries);
  for (const [one, at] of hits) ledger.add(one, at);
  return ledger;
}

describe('the ledger', () => {
  it('counts calls and each outcome per client, operation and binding, with the first and last time seen', () => {
    const ledger = ledgerOf([
      [hit('warehouse-app'), T0 + 2 * MINUTE],
      [hit('warehouse-app', 'fault'), T0],
      [hit('warehouse-app', 'shed'), T0 + 5 * MINUTE],
      [hit('warehouse-app', 'refused'), T0 + MINUTE],
      [{ ...hit('warehouse-app'), binding: 'httpGet' }, T0 + 3 * MINUTE],
      [hit('sha256:0123456789ab'), T0 + 4 * MINUTE],
    ]);
    expect(ledgerJson(ledger)).toEqual({
      maxEntries: 10_000,
      folded: 0,
      entries: [
        {
          client: 'warehouse-app',
          operation: 'Search',
          binding: 'soap11',
          firstSeen: '2026-11-23T10:00:00.000Z',
          lastSeen: '2026-11-23T10:05:00.000Z',
          calls: 4,
          faults: 1,
          outcomes: { ok: 1, fault: 1, shed: 1, refused: 1 },
          example: null,
        },
        expect.objectContaining({ client: 'sha256:0123456789ab', binding: 'soap11', calls: 1, firstSeen: '2026-11-23T10:04:00.000Z' }),
        expect.objectContaining({ client: 'warehouse-app', binding: 'httpGet', calls: 1, outcomes: { ok: 1, fault: 0, shed: 0, refused: 0 } }),
      ],
    });
  });

  it('keeps the successor of the latest ok call as the example, whatever order the hits come in', () => {
    const ledger = ledgerOf([
      [hit('a', 'ok', '/product.search.cp?v=3&query=new'), T0 + MINUTE],
      [hit('a', 'ok', '/product.search.cp?v=3&query=old'), T0],
      [hit('a', 'fault', '/product.search.cp?v=3&query=failed'), T0 + 2 * MINUTE],
      [hit('a', 'ok', null), T0 + 3 * MINUTE],
    ]);
    expect(ledger.entries()[0]?.example).toEqual({ at: T0 + MINUTE, successor: '/product.search.cp?v=3&query=new' });
  });

  it('folds new callers into "other" once it holds maxEntries entries, and counts the calls folded', () => {
    const ledger = ledgerOf(
      [
        [hit('a'), T0],
        [hit('b'), T0],
        [hit('c'), T0 + MINUTE],
        [hit('d', 'fault'), T0 + 2 * MINUTE],
        [hit('a'), T0 + 3 * MINUTE],
      ],
      2,
    );
    const json = ledgerJson(ledger);
    expect(json.folded).toBe(2);
    expect(json.entries.map((entry) => [entry.client, entry.calls])).toEqual([
      ['a', 2],
      [FOLDED_CLIENT, 2],
      ['b', 1],
    ]);
    expect(json.entries[1]).toMatchObject({ outcomes: { ok: 1, fault: 1, shed: 0, refused: 0 }, firstSeen: '2026-11-23T10:01:00.000Z', lastSeen: '2026-11-23T10:02:00.000Z' });
  });

  it('stays within its cap however many unknown callers come (plus one folded entry per operation and binding)', () => {
    const ledger = new Ledger(100);
    for (let i = 0; i < 50_000; i++) ledger.add({ ...hit(`sha256:${i.toString(16).padStart(12, '0')}`), binding: i % 2 ? 'soap11' : 'httpGet' }, T0 + i);
    expect(ledger.entries()).toHaveLength(102);
    expect(ledger.folded).toBe(49_900);
  });

  const arbitraryHit = fc.record({
    client: fc.constantFrom('warehouse-app', 'sha256:0123456789ab', 'anonymous', 'hmac:00000000beef'),
    operation: fc.constantFrom('Search', 'AdvancedSearch', 'ProductLookup', 'StoreLookup', 'StoreLookupPaged', 'unknown'),
    binding: fc.constantFrom('soap11', 'soap12', 'httpGet', 'httpPost', 'unknown'),
    outcome: fc.constantFrom(...OUTCOMES),
    successor: fc.option(fc.constantFrom('/product.search.cp?v=3&query=a', '/product.search.cp?v=3&query=b')),
  });
  const timedHits = fc.array(fc.tuple(arbitraryHit, fc.integer({ min: T0, max: T0 + 7 * 86_400_000 })), { maxLength: 60 });

  it('merges two instances\' ledgers into the ledger of all their hits', () => {
    fc.assert(
      fc.property(timedHits, timedHits, (first, second) => {
        expect(ledgerJson(mergeLedgers([ledgerOf(first), ledgerOf(second)]))).toEqual(ledgerJson(ledgerOf([...first, ...second])));
      }),
    );
  });

  it('carries the calls each instance folded into the merge', () => {
    const merged = mergeLedgers([ledgerOf([[hit('a'), T0], [hit('b'), T0]], 1), ledgerOf([[hit('c'), T0]], 1)]);
    expect(merged.folded).toBe(2);
    expect(ledgerJson(merged).entries.map((entry) => [entry.client, entry.calls])).toEqual([
      [FOLDED_CLIENT, 2],
      ['a', 1],
    ]);
  });

  it('renames clients in a merge, merging the entries that come to share a key', () => {
    const merged = mergeLedgers([ledgerOf([[hit('sha256:0123456789ab', 'ok', '/product.search.cp?v=3&query=a'), T0], [hit('warehouse-app', 'fault'), T0 + MINUTE]])], (client) =>
      client === 'sha256:0123456789ab' ? 'warehouse-app' : client,
    );
    expect(ledgerJson(merged).entries).toEqual([
      expect.objectContaining({ client: 'warehouse-app', calls: 2, faults: 1, lastSeen: '2026-11-23T10:01:00.000Z', example: '/product.search.cp?v=3&query=a' }),
    ]);
  });
});
