import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FOLDED_CLIENT, Ledger, OUTCOMES, mergeLedgers, type LedgerHit } from '../src/deprecation/ledger.js';
import { MAX_PAGE_SIZE, ledgerJson, ledgerPage, type LedgerJson } from '../src/deprecation/ledger-page.js';

/** The ledger is pure: hits in, entries out, and two instances' ledgers merge into the ledger of all their hits. */

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const MINUTE = 60_000;

const hit = (client: string, outcome: LedgerHit['outcome'] = 'ok', successor: string | null = null): LedgerHit => ({
  client,
  operation: 'Search',
  binding: 'soap11',
  outcome,
  successor,
});
/** A hit of a client of the `clients` table, as the hit recorder gives it. */
const configuredHit = (client: string): LedgerHit => ({ ...hit(client), clientLabel: client });
/** A hit of a caller the table does not name. */
const unnamedHit = (client: string): LedgerHit => ({ ...hit(client), clientLabel: FOLDED_CLIENT });

/** Every entry, however many: the ledger as a whole, to compare. */
const wholeLedger = (ledger: Ledger): LedgerJson => ledgerJson(ledger, { client: null, offset: 0, limit: MAX_PAGE_SIZE });

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
      version: 2,
      maxEntries: 10_000,
      folded: 0,
      total: { entries: 3, calls: 6 },
      matched: { entries: 3, calls: 6 },
      offset: 0,
      limit: 100,
      nextOffset: null,
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
          clientStack: null,
          clientStackVersion: null,
        },
        expect.objectContaining({ client: 'sha256:0123456789ab', binding: 'soap11', calls: 1, firstSeen: '2026-11-23T10:04:00.000Z' }),
        expect.objectContaining({
          client: 'warehouse-app',
          binding: 'httpGet',
          calls: 1,
          outcomes: { ok: 1, fault: 0, shed: 0, refused: 0 },
        }),
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
    expect(ledger.entries()[0]?.example).toEqual({ at: T0 + MINUTE, successor: '/product.search.cp?v=3&query=new', paging: null });
  });

  it('keeps the stack of the latest call that named one, whatever order the hits come in and however they ended', () => {
    const ledger = ledgerOf([
      [{ ...hit('a'), clientStack: 'php-soapclient', clientStackVersion: '8.2.36' }, T0 + 2 * MINUTE],
      [{ ...hit('a', 'fault'), clientStack: 'php-soapclient', clientStackVersion: '7.4.33' }, T0],
      // A line of a version that told no stacks says nothing of it.
      [hit('a'), T0 + 3 * MINUTE],
      [{ ...hit('a', 'shed'), clientStack: 'php-soapclient', clientStackVersion: '8.1.2' }, T0 + MINUTE],
    ]);
    expect(ledger.entries()[0]?.stack).toEqual({ at: T0 + 2 * MINUTE, name: 'php-soapclient', version: '8.2.36' });
    expect(ledgerJson(ledger).entries[0]).toMatchObject({ clientStack: 'php-soapclient', clientStackVersion: '8.2.36' });
    // One later call of a stack not known (a script of its own) does not hide the one behind it.
    ledger.add({ ...hit('a'), clientStack: 'unknown', clientStackVersion: null }, T0 + 4 * MINUTE);
    expect(ledger.entries()[0]?.stack).toMatchObject({ name: 'php-soapclient', version: '8.2.36' });
    ledger.add({ ...hit('a'), clientStack: 'node-soap', clientStackVersion: '1.13.0' }, T0 + 5 * MINUTE);
    expect(ledger.entries()[0]?.stack).toEqual({ at: T0 + 5 * MINUTE, name: 'node-soap', version: '1.13.0' });
  });

  it('keeps the unnamed callers that call most: a new one takes the place of the least counted, whose calls go to "other"', () => {
    const ledger = ledgerOf(
      [
        [hit('a'), T0],
        [hit('a'), T0],
        [hit('a'), T0],
        [hit('b'), T0 + MINUTE],
        [hit('c'), T0 + 2 * MINUTE],
        [hit('d', 'fault'), T0 + 3 * MINUTE],
      ],
      2,
    );
    const json = ledgerJson(ledger);
    // c took b's place (b: 1 call), d took c's (c counted 1 + b's 1): a, which calls most, stays.
    expect(json.folded).toBe(2);
    expect(json.entries.map((entry) => [entry.client, entry.calls])).toEqual([
      ['a', 3],
      [FOLDED_CLIENT, 2],
      ['d', 1],
    ]);
    expect(json.entries[1]).toMatchObject({
      outcomes: { ok: 2, fault: 0, shed: 0, refused: 0 },
      firstSeen: '2026-11-23T10:01:00.000Z',
      lastSeen: '2026-11-23T10:02:00.000Z',
    });
  });

  it('cannot be blinded: 10,000 one-call junk keys first, then a caller calling more often than any of them, which it shows', () => {
    const ledger = new Ledger(10_000);
    for (let i = 0; i < 10_000; i++) ledger.add(unnamedHit(`hmac:${i.toString(16).padStart(12, '0')}`), T0);
    for (let i = 0; i < 2; i++) ledger.add(unnamedHit('hmac:00000000beef'), T0 + MINUTE);
    // More junk after it: it stays, as long as it calls more than any one of them.
    for (let i = 10_000; i < 20_000; i++) ledger.add(unnamedHit(`hmac:${i.toString(16).padStart(12, '0')}`), T0 + 2 * MINUTE);
    ledger.add(unnamedHit('hmac:00000000beef'), T0 + 3 * MINUTE);
    const json = ledgerJson(ledger, { client: 'hmac:00000000beef', offset: 0, limit: 1 });
    expect(json.entries).toEqual([expect.objectContaining({ client: 'hmac:00000000beef', calls: 3 })]);
    expect(ledger.entries()).toHaveLength(10_001);
    // No call is lost: those of the junk pushed out are under "other".
    expect(ledger.entries().reduce((sum, entry) => sum + entry.calls, 0)).toBe(20_003);
  });

  it('stays within its cap however many unknown callers come (plus one folded entry per operation and binding)', () => {
    const ledger = new Ledger(100);
    for (let i = 0; i < 50_000; i++)
      ledger.add({ ...hit(`sha256:${i.toString(16).padStart(12, '0')}`), binding: i % 2 ? 'soap11' : 'httpGet' }, T0 + i);
    expect(ledger.entries()).toHaveLength(102);
    expect(ledger.folded).toBe(49_900);
  });

  it('never folds a configured client, however many unnamed callers filled it first', () => {
    const ledger = new Ledger(2);
    for (let i = 0; i < 5; i++) ledger.add(unnamedHit(`sha256:${String(i).padStart(12, '0')}`), T0 + i);
    ledger.add(configuredHit('warehouse-app'), T0 + MINUTE);
    ledger.add({ ...configuredHit('warehouse-app'), binding: 'httpGet' }, T0 + MINUTE);
    ledger.add(configuredHit('shop'), T0 + 2 * MINUTE);
    const json = wholeLedger(ledger);
    expect(json.entries.map((entry) => [entry.client, entry.binding, entry.calls])).toEqual([
      [FOLDED_CLIENT, 'soap11', 3],
      ['sha256:000000000003', 'soap11', 1],
      ['sha256:000000000004', 'soap11', 1],
      ['shop', 'soap11', 1],
      ['warehouse-app', 'httpGet', 1],
      ['warehouse-app', 'soap11', 1],
    ]);
    // The unnamed callers past the cap: their calls are all there, under "other", and counted.
    expect(json.folded).toBe(3);
  });

  it('keeps configured clients through a merge, and names a fingerprint as a configured client when merging', () => {
    const full = ledgerOf(
      [
        [unnamedHit('sha256:000000000001'), T0],
        [unnamedHit('sha256:000000000002'), T0],
      ],
      1,
    );
    const other = ledgerOf(
      [
        [configuredHit('warehouse-app'), T0],
        [unnamedHit('sha256:0123456789ab'), T0],
      ],
      1,
    );
    const merged = mergeLedgers([full, other], (client) => (client === 'sha256:0123456789ab' ? 'shop' : undefined));
    expect(wholeLedger(merged).entries.map((entry) => [entry.client, entry.calls])).toEqual([
      [FOLDED_CLIENT, 1],
      ['sha256:000000000002', 1],
      ['shop', 1],
      ['warehouse-app', 1],
    ]);
    // Full again (the cap of the merge is two unnamed callers' entries), it still counts a configured client under its name.
    for (const unnamed of ['sha256:000000000003', 'sha256:000000000004']) merged.add(unnamedHit(unnamed), T0);
    merged.add(configuredHit('later-app'), T0);
    expect(wholeLedger(merged).entries.map((entry) => [entry.client, entry.calls])).toEqual([
      [FOLDED_CLIENT, 2],
      ['later-app', 1],
      ['sha256:000000000003', 1],
      ['sha256:000000000004', 1],
      ['shop', 1],
      ['warehouse-app', 1],
    ]);
  });

  const arbitraryHit = fc
    .record({
      client: fc.constantFrom('warehouse-app', 'sha256:0123456789ab', 'anonymous', 'hmac:00000000beef'),
      operation: fc.constantFrom('Search', 'AdvancedSearch', 'ProductLookup', 'StoreLookup', 'StoreLookupPaged', 'unknown'),
      binding: fc.constantFrom('soap11', 'soap12', 'httpGet', 'httpPost', 'unknown'),
      outcome: fc.constantFrom(...OUTCOMES),
      successor: fc.option(fc.constantFrom('/product.search.cp?v=3&query=a', '/product.search.cp?v=3&query=b')),
    })
    .map((one): LedgerHit => ({ ...one, clientLabel: one.client === 'warehouse-app' ? one.client : FOLDED_CLIENT }));
  const timedHits = fc.array(fc.tuple(arbitraryHit, fc.integer({ min: T0, max: T0 + 7 * 86_400_000 })), { maxLength: 60 });

  it("merges two instances' ledgers into the ledger of all their hits", () => {
    fc.assert(
      fc.property(timedHits, timedHits, (first, second) => {
        const merged = mergeLedgers([ledgerOf(first), ledgerOf(second)]);
        expect(wholeLedger(merged)).toEqual({ ...wholeLedger(ledgerOf([...first, ...second])), maxEntries: 20_000 });
      }),
    );
  });

  it('carries the calls each instance folded into the merge, and folds no more: its cap is the sum of theirs', () => {
    const merged = mergeLedgers([
      ledgerOf(
        [
          [hit('a'), T0],
          [hit('b'), T0],
        ],
        1,
      ),
      ledgerOf([[hit('c'), T0]], 1),
    ]);
    expect(merged.folded).toBe(1);
    expect(ledgerJson(merged).entries.map((entry) => [entry.client, entry.calls])).toEqual([
      ['b', 1],
      ['c', 1],
      [FOLDED_CLIENT, 1],
    ]);
  });

  it('renames clients in a merge, merging the entries that come to share a key', () => {
    const merged = mergeLedgers(
      [
        ledgerOf([
          [hit('sha256:0123456789ab', 'ok', '/product.search.cp?v=3&query=a'), T0],
          [hit('warehouse-app', 'fault'), T0 + MINUTE],
        ]),
      ],
      (client) => (client === 'sha256:0123456789ab' ? 'warehouse-app' : undefined),
    );
    expect(ledgerJson(merged).entries).toEqual([
      expect.objectContaining({
        client: 'warehouse-app',
        calls: 2,
        faults: 1,
        lastSeen: '2026-11-23T10:01:00.000Z',
        example: '/product.search.cp?v=3&query=a',
      }),
    ]);
  });
});

describe('a page of the ledger (GET /ledger)', () => {
  /** Five callers, the nth with n calls of Search over SOAP 1.1, and warehouse-app's one call over HTTP GET. */
  const ledger = ledgerOf([
    ...[1, 2, 3, 4, 5].flatMap((n) => Array.from({ length: n }, (_, i) => [unnamedHit(`sha256:00000000000${n}`), T0 + i] as const)),
    [{ ...configuredHit('warehouse-app'), binding: 'httpGet' }, T0],
  ]);
  const clientsOf = (json: LedgerJson): string[] => json.entries.map((entry) => entry.client);

  it('gives `limit` entries from `offset`, largest first, with the totals of what it leaves out and where the next page starts', () => {
    const first = ledgerPage(ledger, { limit: '2' });
    expect(first.status).toBe(200);
    const all = { entries: 6, calls: 16 };
    expect(first.body).toMatchObject({ total: all, matched: all, offset: 0, limit: 2, nextOffset: 2 });
    expect(clientsOf(first.body as LedgerJson)).toEqual(['sha256:000000000005', 'sha256:000000000004']);
    const last = ledgerPage(ledger, { limit: '2', offset: '4' }).body as LedgerJson;
    expect(clientsOf(last)).toEqual(['sha256:000000000001', 'warehouse-app']);
    expect(last.nextOffset).toBeNull();
    expect((ledgerPage(ledger, { offset: '99' }).body as LedgerJson).entries).toEqual([]);
  });

  it('gives 100 entries when no limit is asked for', () => {
    const big = new Ledger();
    for (let i = 0; i < 250; i++) big.add(unnamedHit(`sha256:${String(i).padStart(12, '0')}`), T0);
    expect(ledgerPage(big, {}).body).toMatchObject({ limit: 100, nextOffset: 100, matched: { entries: 250, calls: 250 } });
    expect((ledgerPage(big, {}).body as LedgerJson).entries).toHaveLength(100);
  });

  it("gives only the entries of `client`, with their totals and the whole ledger's", () => {
    const json = ledgerPage(ledger, { client: 'sha256:000000000003' }).body as LedgerJson;
    expect(json).toMatchObject({ total: { entries: 6, calls: 16 }, matched: { entries: 1, calls: 3 }, nextOffset: null });
    expect(clientsOf(json)).toEqual(['sha256:000000000003']);
    expect(ledgerPage(ledger, { client: 'nobody' }).body).toMatchObject({ matched: { entries: 0, calls: 0 }, entries: [] });
  });

  it.each([
    [{ limit: '0' }, 'limit must be a whole number from 1 to 1000, got "0"'],
    [{ limit: '1001' }, 'limit must be a whole number from 1 to 1000, got "1001"'],
    [{ limit: '10.5' }, 'limit must be a whole number from 1 to 1000, got "10.5"'],
    [{ limit: '' }, 'limit must be a whole number from 1 to 1000, got ""'],
    [{ offset: '-1' }, 'offset must be a whole number from 0, got "-1"'],
    [{ offset: '1e3' }, 'offset must be a whole number from 0, got "1e3"'],
    [{ offset: '99999999999999999' }, 'offset must be a whole number from 0, got "99999999999999999"'],
    [{ client: '' }, 'client must name a client (its name, or the fingerprint of an unnamed caller)'],
    [{ limit: ['1', '2'] }, 'limit is given more than once'],
    [{ clinet: 'warehouse-app' }, '/ledger takes client, limit and offset, not "clinet"'],
  ])('refuses %j with 400 and what is wrong', (query, message) => {
    expect(ledgerPage(ledger, query)).toEqual({ status: 400, body: { statusCode: 400, error: 'Bad Request', message } });
  });
});
