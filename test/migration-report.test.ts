import { constants } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerJson } from '../src/deprecation/ledger-page.js';
import { HitCollector } from '../src/report/collect.js';
import type { MigrationReport } from '../src/report/report.js';
import { runReport } from '../src/report/run-report.js';
import { skipBrowserSuite, startBrowser, type HeadlessBrowser } from './support/browser.js';
import { OPERATOR_LINE, hitLine } from './support/hit-log.js';
import { startRecordedApp } from './support/recorded-app.js';

/**
 * `npm run report` over a log whose numbers are known: plain, gzipped and on stdin, with operator lines
 * between the hits, a blank and a malformed line, schema 1 and schema 2 lines of the same client.
 */

const dir = mkdtempSync(join(tmpdir(), 'report-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const day = (d: number, minutes = 0): string =>
  new Date(Date.parse('2026-11-01T08:00:00.000Z') + (d - 1) * 86_400_000 + minutes * 60_000).toISOString();
/** When the reports are made: a day after the fixture's last call. */
const REPORT_AT = Date.parse(day(21, 45));
const WAREHOUSE = { client: 'warehouse-app', fingerprint: 'sha256:0123456789ab', team: 'Logistics', contact: 'logistics@example.com' };
const UNKNOWN = 'sha256:fedcba987654';
const searchFor = (d: number): string => `/product.search.cp?v=3&query=day+${d}`;

/**
 * warehouse-app (schema 2): Search over SOAP 1.1 twice a day for 20 days, one failed Search over
 * HTTP GET on day 20, and (schema 1, under its fingerprint) StoreLookupPaged over HTTP POST on days
 * 1 to 5. An unknown caller (schema 1): ProductLookup over SOAP 1.2 on days 1 to 14, and one call
 * shed on day 3.
 */
function fixtureLines(): string[] {
  const hits: string[] = [];
  for (let d = 1; d <= 20; d++) {
    for (const minutes of [0, 30])
      hits.push(
        hitLine({ time: day(d, minutes), operation: 'Search', binding: 'soap11', ...WAREHOUSE, outcome: 'ok', successor: searchFor(d) }),
      );
    if (d <= 5)
      hits.push(
        hitLine({
          time: day(d, 5),
          operation: 'StoreLookupPaged',
          binding: 'httpPost',
          client: WAREHOUSE.fingerprint,
          outcome: 'ok',
          schema: 1,
        }),
      );
    if (d <= 14)
      hits.push(hitLine({ time: day(d, 10), operation: 'ProductLookup', binding: 'soap12', client: UNKNOWN, outcome: 'ok', schema: 1 }));
  }
  hits.push(
    hitLine({
      time: day(20, 45),
      operation: 'Search',
      binding: 'httpGet',
      ...WAREHOUSE,
      outcome: 'fault',
      successor: '/product.search.cp?v=3&query=failed',
    }),
  );
  hits.push(hitLine({ time: day(3, 20), operation: 'ProductLookup', binding: 'soap12', client: UNKNOWN, outcome: 'shed', schema: 1 }));
  // An operator line after every ten hits, a blank line, and a line cut short in the middle.
  const lines = hits.flatMap((line, i) => (i % 10 === 9 ? [line, OPERATOR_LINE] : [line]));
  lines.splice(20, 0, '', '{"level":"info","time":"2026-11-02T08:00:00.000Z","event":"deprecated_call","schema":2,"operation":"Sea');
  return lines;
}

const LINES = fixtureLines();
const HITS = 40 + 1 + 5 + 14 + 1;
const LOG = `${LINES.join('\n')}\n`;
const plainFile = join(dir, 'hits.log');
const gzFile = join(dir, 'hits.log.1');
writeFileSync(plainFile, LOG);
// Named without .gz: the magic bytes decide.
writeFileSync(gzFile, gzipSync(LOG));

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function report(args: readonly string[], stdin: string | Buffer | Readable = '', env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const input = stdin instanceof Readable ? stdin : Readable.from([Buffer.from(stdin)]);
  const code = await runReport({ args, env, stdin: input, stdout, stderr, now: () => REPORT_AT });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

async function jsonReport(args: readonly string[], stdin?: string | Buffer): Promise<MigrationReport> {
  const run = await report(['--format', 'json', ...args], stdin);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as MigrationReport;
}

const ZERO = { ok: 0, fault: 0, shed: 0, refused: 0 };

function expectFixtureNumbers(result: MigrationReport, sourceName: string): void {
  expect(result.input).toEqual({
    sources: [{ name: sourceName, lines: LINES.length, hits: HITS, error: null }],
    lines: LINES.length,
    hits: HITS,
    otherLines: Math.floor(HITS / 10) + 1,
    malformed: 1,
    skipped: [{ source: sourceName, line: 22, reason: 'not JSON' }],
  });
  expect(result.period).toEqual({ from: day(1), to: day(20, 45) });
  expect(result.days).toHaveLength(20);
  expect(result.folded).toBe(0);
  expect(result.clients).toEqual([
    {
      client: 'warehouse-app',
      fingerprint: 'sha256:0123456789ab',
      team: 'Logistics',
      contact: 'logistics@example.com',
      calls: 46,
      faults: 1,
      outcomes: { ...ZERO, ok: 45, fault: 1 },
      firstSeen: day(1),
      lastSeen: day(20, 45),
      // Days 14 to 20 against 7 to 13: 15 calls against 14, within the flat band.
      trend: { last7: 15, previous7: 14, direction: 'flat' },
      recentDays: [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3],
      // It calls and no sunset is set; its lines are of a version that named no stack.
      status: 'deprecated',
      fixBy: null,
      urgency: null,
      stack: null,
      stackVersion: null,
      operations: [
        {
          operation: 'Search',
          replacement: '/product.search.cp',
          calls: 41,
          faults: 1,
          outcomes: { ...ZERO, ok: 40, fault: 1 },
          firstSeen: day(1),
          lastSeen: day(20, 45),
          // The latest ok call's successor; the later failed call's is not an example.
          example: searchFor(20),
          examplePaging: null,
          bindings: [
            { binding: 'soap11', calls: 40, faults: 0, outcomes: { ...ZERO, ok: 40 }, firstSeen: day(1), lastSeen: day(20, 30) },
            { binding: 'httpGet', calls: 1, faults: 1, outcomes: { ...ZERO, fault: 1 }, firstSeen: day(20, 45), lastSeen: day(20, 45) },
          ],
        },
        {
          operation: 'StoreLookupPaged',
          replacement: '/product.searchForProductsOfStore.cp',
          calls: 5,
          faults: 0,
          outcomes: { ...ZERO, ok: 5 },
          firstSeen: day(1, 5),
          lastSeen: day(5, 5),
          // Schema 1 lines: no successor recorded.
          example: null,
          examplePaging: null,
          bindings: [{ binding: 'httpPost', calls: 5, faults: 0, outcomes: { ...ZERO, ok: 5 }, firstSeen: day(1, 5), lastSeen: day(5, 5) }],
        },
      ],
    },
    expect.objectContaining({
      client: UNKNOWN,
      fingerprint: null,
      team: null,
      calls: 15,
      outcomes: { ...ZERO, ok: 14, shed: 1 },
      trend: { last7: 1, previous7: 7, direction: 'falling' },
      operations: [
        expect.objectContaining({
          operation: 'ProductLookup',
          calls: 15,
          example: null,
          bindings: [expect.objectContaining({ binding: 'soap12', calls: 15 })],
        }),
      ],
    }),
  ]);
  expect(result.perDay.byOperation.map((series) => [series.name, series.counts.reduce((a, b) => a + b, 0), series.counts.length])).toEqual([
    ['Search', 41, 20],
    ['ProductLookup', 15, 20],
    ['StoreLookupPaged', 5, 20],
  ]);
  expect(result.perDay.byClient.map((series) => series.name)).toEqual(['warehouse-app', UNKNOWN]);
}

describe('the migration report', () => {
  it('reads a plain log: every number per client, operation and binding, the malformed line counted and named', async () => {
    expectFixtureNumbers(await jsonReport([plainFile]), plainFile);
  });

  it('reads a gzipped log, known by its magic bytes', async () => {
    expectFixtureNumbers(await jsonReport([gzFile]), gzFile);
  });

  it('reads stdin with no file or with -, plain or gzipped', async () => {
    expectFixtureNumbers(await jsonReport([], LOG), '-');
    expectFixtureNumbers(await jsonReport(['-'], gzipSync(LOG)), '-');
  });

  it('adds up several logs', async () => {
    const result = await jsonReport([plainFile, gzFile]);
    expect(result.input.hits).toBe(2 * HITS);
    expect(result.clients.map((client) => [client.client, client.calls])).toEqual([
      ['warehouse-app', 92],
      [UNKNOWN, 30],
    ]);
  });

  it(
    'counts a configured client under its name however many unnamed callers came first, and those past the cap under ' + '"other"',
    async () => {
      const junk = Array.from({ length: 10_001 }, (_, i) =>
        hitLine({
          time: day(1),
          operation: 'Search',
          binding: 'soap11',
          client: `sha256:${i.toString(16).padStart(12, '0')}`,
          outcome: 'ok',
        }),
      );
      const result = await jsonReport([], `${[...junk, ...LINES].join('\n')}\n`);
      expect(result.folded).toBe(1);
      expect(result.clients.slice(0, 3).map((client) => [client.client, client.calls])).toEqual([
        ['warehouse-app', 46],
        [UNKNOWN, 15],
        ['other', 1],
      ]);
    },
  );

  it('keeps calls per day only for the callers its ledger holds: those pushed out take theirs to "other"', () => {
    const collector = new HitCollector(100);
    const hit = (client: string, time: number) => ({
      time,
      client,
      clientLabel: 'other',
      clientFingerprint: client,
      team: null,
      contact: null,
      operation: 'Search',
      binding: 'soap11',
      outcome: 'ok' as const,
      successor: null,
    });
    for (let i = 0; i < 10_000; i++) collector.add(hit(`hmac:${i.toString(16).padStart(12, '0')}`, Date.UTC(2026, 10, 1 + (i % 20))));
    const { byClient, ledger } = collector.result();
    expect(byClient.size).toBe(101);
    const days = (client: string): number => [...(byClient.get(client)?.values() ?? [])].reduce((sum, calls) => sum + calls, 0);
    expect(days('other')).toBe(ledger.folded);
    expect([...byClient.keys()].reduce((sum, client) => sum + days(client), 0)).toBe(10_000);
  });

  it(
    'skips a hit whose client name is longer than a name can be, and cuts a long team or contact: the cap counts entries, not ' + 'bytes',
    async () => {
      const lines = [
        hitLine({ time: day(1), operation: 'Search', binding: 'soap11', client: 'x'.repeat(300_000), outcome: 'ok' }),
        hitLine({
          time: day(1),
          operation: 'Search',
          binding: 'soap11',
          ...WAREHOUSE,
          team: 'T'.repeat(10_000),
          outcome: 'ok',
          successor: `/product.search.cp?v=3&query=${'q'.repeat(5000)}`,
        }),
      ];
      const result = await jsonReport([], `${lines.join('\n')}\n`);
      expect(result.input).toMatchObject({ hits: 1, malformed: 1 });
      expect(result.input.skipped).toEqual([{ source: '-', line: 1, reason: 'a hit whose client is longer than 64 characters' }]);
      expect(result.clients.map((client) => [client.client, client.team, client.operations[0]!.example])).toEqual([
        ['warehouse-app', `${'T'.repeat(256)}…`, null],
      ]);
    },
  );

  it(
    'keeps keyless unknown callers a client of their own, apart from a client named by its address (whose hits say ' + '"anonymous")',
    async () => {
      const shop = { client: 'shop', fingerprint: 'anonymous', team: 'Shop', contact: 'shop@example.com' };
      const lines = [
        hitLine({ time: day(1), operation: 'Search', binding: 'httpGet', client: 'anonymous', outcome: 'ok' }),
        hitLine({ time: day(1, 1), operation: 'Search', binding: 'httpGet', client: 'anonymous', outcome: 'ok' }),
        hitLine({ time: day(1, 2), operation: 'Search', binding: 'httpGet', ...shop, outcome: 'ok' }),
        hitLine({ time: day(1, 3), operation: 'Search', binding: 'httpGet', client: 'anonymous', outcome: 'ok' }),
        // A key sent from the shop's addresses is the shop's; sent from elsewhere, it is an unknown caller's.
        hitLine({ time: day(1, 4), operation: 'Search', binding: 'httpGet', ...shop, fingerprint: UNKNOWN, outcome: 'ok' }),
        hitLine({ time: day(1, 5), operation: 'Search', binding: 'httpGet', client: UNKNOWN, outcome: 'ok' }),
        // Schema 1 had no names: its anonymous callers stay anonymous.
        hitLine({ time: day(1, 6), operation: 'Search', binding: 'httpGet', client: 'anonymous', outcome: 'ok', schema: 1 }),
      ];
      const result = await jsonReport([], `${lines.join('\n')}\n`);
      expect(result.clients.map((client) => [client.client, client.calls, client.team, client.fingerprint])).toEqual([
        ['anonymous', 4, null, null],
        ['shop', 2, 'Shop', UNKNOWN],
        [UNKNOWN, 1, null, null],
      ]);
    },
  );

  it('gives each operation its replacement and parameter mapping, with the paging profile of CONFIG_FILE', async () => {
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({ paging: { profiles: { '/product.searchForProductsOfStore.cp': { pageParam: 'pageNo', sizeParam: 'perPage' } } } }),
    );
    const run = await report(['--format', 'json', plainFile], '', { CONFIG_FILE: config });
    const result = JSON.parse(run.stdout) as MigrationReport;
    expect(result.replacements.map((replacement) => [replacement.operation, replacement.replacement])).toEqual([
      ['StoreLookupPaged', '/product.searchForProductsOfStore.cp'],
      ['ProductLookup', '/product.searchForProduct.cp'],
      ['Search', '/product.search.cp'],
    ]);
    expect(result.replacements[0]?.mapping).toContainEqual({ legacy: 'pageIndex', replacement: 'pageNo', note: expect.any(String) });
    expect(result.replacements[0]?.mapping).toContainEqual({ legacy: 'pageSize', replacement: 'perPage', note: expect.any(String) });
    expect(result.replacements[2]?.mapping).toContainEqual({ legacy: 'apiKey', replacement: 'appKey', note: expect.any(String) });
  });

  it('gives each client its status at the sunset of CONFIG_FILE and its stack, in every format', async () => {
    const config = join(dir, 'sunset.json');
    const STACKED_HIT = { time: day(20, 50), operation: 'Search', binding: 'soap11', ...WAREHOUSE, outcome: 'ok' };
    // Ten days after the report: red; warehouse-app called the day before; the unknown caller last on day 14, 7 days before.
    writeFileSync(config, JSON.stringify({ deprecation: { sunsetAt: day(31, 45), quietDays: 7 } }));
    const log = join(dir, 'stacks.log');
    writeFileSync(log, `${LOG}${hitLine({ ...STACKED_HIT, clientStack: 'php-soapclient', clientStackVersion: '8.2.7' })}\n`);
    const env = { CONFIG_FILE: config };
    const json = JSON.parse((await report(['--format', 'json', log], '', env)).stdout) as MigrationReport;
    expect(
      json.clients.map(({ client, status, fixBy, urgency, stack, stackVersion }) => ({
        client,
        status,
        fixBy,
        urgency,
        stack,
        stackVersion,
      })),
    ).toEqual([
      { client: 'warehouse-app', status: 'fix-by', fixBy: day(31, 45), urgency: 'red', stack: 'php-soapclient', stackVersion: '8.2.7' },
      { client: UNKNOWN, status: 'ok', fixBy: null, urgency: null, stack: null, stackVersion: null },
    ]);
    const table = (await report(['--format', 'table', log], '', env)).stdout;
    expect(table).toContain(`status: fix by ${day(31).slice(0, 10)} (red); stack: php-soapclient 8.2.7`);
    expect(table).toContain('status: ok; stack: not known');
    const html = (await report(['--format', 'html', log], '', env)).stdout;
    expect(html).toContain(`<td class="red">fix by ${day(31).slice(0, 10)}</td><td>php-soapclient 8.2.7</td>`);
  });

  it('writes the migration notice of one client: its calls, deadline, replacements and the code of its stack', async () => {
    const config = join(dir, 'notice.json');
    writeFileSync(config, JSON.stringify({ deprecation: { sunsetAt: day(31, 45), successorBaseUrl: 'https://open-api.example.com' } }));
    const log = join(dir, 'notice.log');
    const stacked = { time: day(20, 50), operation: 'Search', binding: 'soap11', ...WAREHOUSE, outcome: 'ok', successor: searchFor(21) };
    writeFileSync(log, `${LOG}${hitLine({ ...stacked, clientStack: 'php-soapclient', clientStackVersion: '8.2.7' })}\n`);
    const env = { CONFIG_FILE: config };
    const text = await report(['--client', 'warehouse-app', '--notice', log], '', env);
    expect(text.code).toBe(0);
    const date = day(31).slice(0, 10);
    expect(text.stdout).toContain(`Subject: warehouse-app: move off the legacy catalog service by ${date}\n\nHello Logistics,`);
    expect(text.stdout).toContain(`is switched off on ${date}.\nStatus: fix by ${date} (red). Stack: php-soapclient 8.2.7.`);
    expect(text.stdout).toContain('warehouse-app made 47 legacy calls from 2026-11-01 08:00 to 2026-11-20 08:50 (1 failed).');
    expect(text.stdout).toContain('  Search: 42 calls (soap11 41, httpGet 1), last 2026-11-20 08:50');
    expect(text.stdout).toContain(`  Search: https://open-api.example.com${searchFor(21)}`);
    expect(text.stdout).toContain(
      '  StoreLookupPaged: /product.searchForProductsOfStore.cp (no successful call of yours recorded its request)',
    );
    // The code of its stack, filled with its own request, the key a placeholder.
    expect(text.stdout).toContain(`Search in php:\n\n<?php`);
    expect(text.stdout).toContain(`$base = 'https://open-api.example.com${searchFor(21)}';`);
    expect(text.stdout).toContain("getenv('CP_APP_KEY') ?: 'YOUR_APP_KEY'");
    const html = await report(['--client', 'warehouse-app', '--notice', '--format', 'html', log], '', env);
    expect(html.stdout).toMatch(/^<!DOCTYPE html>/);
    expect(html.stdout).toContain(`<h1>warehouse-app: move off the legacy catalog service by ${date}</h1>`);
    expect(html.stdout).toContain('<pre><code>&lt;?php');
  });

  it('refuses a notice without a client, as JSON, or for a client the logs do not hold', async () => {
    expect((await report(['--notice', plainFile])).code).toBe(2);
    expect((await report(['--client', 'warehouse-app', plainFile])).code).toBe(2);
    expect((await report(['--client', 'warehouse-app', '--notice', '--format', 'json', plainFile])).code).toBe(2);
    const missing = await report(['--client', 'nobody', '--notice', plainFile]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no call of "nobody" is in the logs read');
  });

  it('reports the logs it could read when a file is missing, names it, and exits 1', async () => {
    const run = await report(['--format', 'json', join(dir, 'missing.log'), plainFile]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`report: ${join(dir, 'missing.log')}: no such file\n`);
    const result = JSON.parse(run.stdout) as MigrationReport;
    expect(result.input.sources[0]).toEqual({ name: join(dir, 'missing.log'), lines: 0, hits: 0, error: 'no such file' });
    expect(result.input.hits).toBe(HITS);
  });

  it('reports the lines before the end of a truncated gzip file, says so, and exits 1', async () => {
    const many = Array.from({ length: 40 }, () => LOG).join('');
    const compressed = gzipSync(many);
    const truncated = join(dir, 'truncated.gz');
    writeFileSync(truncated, compressed.subarray(0, compressed.length - 100));
    const run = await report(['--format', 'json', truncated]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^report: .*truncated\.gz: not a complete gzip stream \(unexpected end of file\)\n$/);
    const result = JSON.parse(run.stdout) as MigrationReport;
    expect(result.input.sources[0]?.error).toBe('not a complete gzip stream (unexpected end of file)');
    expect(result.input.hits).toBeGreaterThan(30 * HITS);
  });

  it('skips a hit whose time no clock of the service wrote (a forged or corrupt line) rather than fail on it', async () => {
    const times: unknown[] = [1e300, -8.64e15, 8.64e15, '+275760-09-13T00:00:00.000Z', '1970-01-01T00:00:00.000Z'];
    const forged = times.map((time) =>
      JSON.stringify({
        ...JSON.parse(hitLine({ time: day(1), operation: 'Search', binding: 'soap11', client: UNKNOWN, outcome: 'ok' })),
        time,
      }),
    );
    const run = await report(['--format', 'json'], `${[...forged, ...LINES].join('\n')}\n`);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as MigrationReport;
    expect(result.input.malformed).toBe(1 + times.length);
    expect(result.input.skipped.slice(0, times.length).map((line) => line.reason)).toEqual(times.map(() => 'a hit without a valid time'));
    expect(result.period).toEqual({ from: day(1), to: day(20, 45) });
    expect(result.days).toHaveLength(20);
  });

  it(
    'skips a hit naming an operation or binding the service does not have: the memory and charts of the report stay bounded by ' + 'them',
    async () => {
      const forged = Array.from({ length: 50 }, (_, i) =>
        hitLine({
          time: day(1),
          operation: i % 2 === 0 ? `Op${i}` : 'Search',
          binding: i % 2 === 0 ? 'soap11' : `b${i}`,
          client: UNKNOWN,
          outcome: 'ok',
        }),
      );
      const result = await jsonReport([], `${[...forged, ...LINES].join('\n')}\n`);
      expect(result.input.malformed).toBe(1 + forged.length);
      expect(result.input.skipped[0]?.reason).toBe('a hit with operation "Op0"');
      expect(result.input.skipped[1]?.reason).toBe('a hit with binding "b1"');
      expect(result.perDay.byOperation.map((series) => series.name)).toEqual(['Search', 'ProductLookup', 'StoreLookupPaged']);
    },
  );

  it('skips a line longer than the longest string V8 holds as malformed, never holding it, and reads on', async () => {
    const mib = Buffer.alloc(1024 * 1024, 'x');
    const overlong = constants.MAX_STRING_LENGTH + 1;
    async function* log(): AsyncGenerator<Buffer> {
      yield Buffer.from(`${LINES[0]}\n`);
      for (let sent = 0; sent < overlong; sent += mib.length) yield mib.subarray(0, Math.min(mib.length, overlong - sent));
      yield Buffer.from(`\n${LOG}`);
    }
    const run = await report(['--format', 'json'], Readable.from(log(), { objectMode: false }));
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as MigrationReport;
    expect(result.input).toMatchObject({ lines: 2 + LINES.length, hits: 1 + HITS, malformed: 2 });
    expect(result.input.skipped[0]).toEqual({ source: '-', line: 2, reason: 'a line longer than 1 MiB' });
  });

  it('charts the last 366 days of the log, and says which days and how many calls it left out, in every format', async () => {
    // Two stray times a century apart, around the log's twenty days.
    const stray = (time: string): string => hitLine({ time, operation: 'Search', binding: 'soap11', client: UNKNOWN, outcome: 'ok' });
    const log = `${[stray('2000-01-01T00:00:00.000Z'), ...LINES, stray('2099-12-31T23:00:00.000Z')].join('\n')}\n`;
    const result = await jsonReport([], log);
    expect(result.period).toEqual({ from: '2000-01-01T00:00:00.000Z', to: '2099-12-31T23:00:00.000Z' });
    expect(result.days).toHaveLength(366);
    expect(result.days[0]).toBe('2098-12-31');
    expect(result.perDay.byOperation.every((series) => series.counts.length === 366)).toBe(true);
    expect(result.uncharted).toEqual({ from: '2000-01-01', to: '2098-12-30', days: 36_159, calls: 1 + HITS });
    const leftOut =
      'Calls per day cover the last 366 days; the 36,159 days before, 2000-01-01 to 2098-12-30, with 62 calls, are counted in the ' +
      'totals only.';
    const table = await report([], log);
    expect(table.stdout).toContain(leftOut);
    expect(table.stdout.split('\n')[0]).toMatch(/\(36,525 days\)$/);
    const html = await report(['--format', 'html'], log);
    expect(html.stdout).toContain(leftOut);
    expect(html.stdout.length).toBeLessThan(1_000_000);
  });

  it('writes no control character from a log line raw: a terminal would take ESC, OSC or CSI sequences as commands', async () => {
    const hostile = {
      client: 'evil\x1b]0;pwned\x07app',
      fingerprint: 'sha256:\x9b2J',
      team: 'Team\x1b[2J',
      contact: 'a\u0085b\x7fc\td\ne',
    };
    const lines = [
      hitLine({
        time: day(1),
        operation: 'Search',
        binding: 'soap11',
        ...hostile,
        outcome: 'ok',
        successor: '/product.search.cp?v=3&query=\x1b[31mred',
      }),
      hitLine({ time: day(1), operation: 'Search', binding: 'soap11', client: 'sha256:\x1bP+q\x1b\\', outcome: 'ok' }),
    ];
    const log = `${lines.join('\n')}\n`;
    const controls = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;
    const table = await report([], log);
    expect(table.stdout).not.toMatch(controls);
    expect(table.stdout).toContain('evil\\x1b]0;pwned\\x07app · Team\\x1b[2J · a\\x85b\\x7fc\\x09d\\x0ae · sha256:\\x9b2J');
    expect(table.stdout).toContain('Search → /product.search.cp?v=3&query=\\x1b[31mred');
    const html = await report(['--format', 'html'], log);
    expect(html.stdout).not.toMatch(controls);
    const json = await report(['--format', 'json'], log);
    expect(json.stdout).not.toMatch(controls);
    // The JSON still says what the log said, escaped as JSON escapes it.
    const result = JSON.parse(json.stdout) as MigrationReport;
    expect(result.clients.map((client) => client.client).sort()).toEqual(['evil\x1b]0;pwned\x07app', 'sha256:\x1bP+q\x1b\\']);
    expect(result.clients.find((client) => client.team !== null)).toMatchObject({
      fingerprint: hostile.fingerprint,
      contact: hostile.contact,
    });
  });

  it('prints a plain-text table by default, without escapes when stdout is no terminal', async () => {
    const run = await report([plainFile]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('\x1b');
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`Migration report: ${HITS} deprecated calls by 2 clients, 2026-11-01 08:00 to 2026-11-20 08:45 UTC (20 days)`);
    expect(lines).toContain('warehouse-app · Logistics · logistics@example.com · sha256:0123456789ab');
    expect(lines).toContain('  Search            soap11       40  40      0     0        0  2026-11-01 08:00  2026-11-20 08:30');
    expect(lines).toContain(`  Search → ${searchFor(20)}`);
    expect(run.stdout).toMatch(/^ {2}StoreLookupPaged → no example: .*schema 1/m);
    expect(run.stdout).toContain('flat (14 → 15 calls a week) ▆▆▆▆▆▆▆▆▆▆▆▆▆█');
    expect(run.stdout).toContain('falling (7 → 1 calls a week) ████████······');
    expect(run.stdout).toContain('1 malformed lines skipped');
    expect(run.stdout).toContain(`Skipped: ${plainFile}:22 not JSON`);
  });

  it('refuses an unknown format with its usage, exit code 2', async () => {
    const run = await report(['--format', 'pdf', plainFile]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--format must be one of table, json, html/);
  });

  it('runs as the compiled command, reading stdin', () => {
    const run = spawnSync(process.execPath, ['dist/src/bin/report.js', '--format', 'json'], { input: LOG, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect((JSON.parse(run.stdout) as MigrationReport).input.hits).toBe(HITS);
  });
});

describe("the report over several instances' logs", () => {
  it('counts what their live ledgers count, summed: keyless unknown callers apart from the client named by its address', async () => {
    const clients = [{ name: 'shop', addresses: ['10.20.0.0/16'] }];
    const instances = await Promise.all([0, 1].map(() => startRecordedApp({ server: { trustProxy: 1 }, clients })));
    try {
      // The load balancer in front appends the address it saw: the shop's, or a caller's elsewhere.
      const search = async (instance: number, from: string, apiKey: string | null): Promise<void> => {
        const key = apiKey === null ? '' : `&apiKey=${apiKey}`;
        const headers = { 'x-forwarded-for': from };
        const response = await fetch(`${instances[instance]!.base}/index.asmx/Search?query=dog${key}`, { headers });
        await response.text();
      };
      for (const [instance, from, apiKey] of [
        [0, '203.0.113.5', null],
        [0, '10.20.1.1', null],
        [0, '203.0.113.5', 'team-key'],
        [0, '10.20.1.1', 'team-key'],
        [1, '203.0.113.5', null],
        [1, '203.0.113.5', null],
        [1, '10.20.1.1', 'team-key'],
        [1, '10.20.1.1', null],
      ] as const)
        await search(instance, from, apiKey);

      const summed = new Map<string, number>();
      for (const { admin } of instances) {
        const ledger = (await (await fetch(`${admin}/ledger?limit=1000`)).json()) as LedgerJson;
        for (const { client, operation, binding, calls } of ledger.entries) {
          const key = `${client} ${operation} ${binding}`;
          summed.set(key, (summed.get(key) ?? 0) + calls);
        }
      }
      const logs = instances.map((instance, i) => {
        const file = join(dir, `instance-${i}.log`);
        writeFileSync(file, instance.lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
        return file;
      });
      const reported = new Map<string, number>();
      for (const { client, operations } of (await jsonReport(logs)).clients) {
        for (const { operation, bindings } of operations) {
          for (const { binding, calls } of bindings) reported.set(`${client} ${operation} ${binding}`, calls);
        }
      }
      expect(reported).toEqual(summed);
      expect(summed.get('anonymous Search httpGet')).toBe(3);
      expect(summed.get('shop Search httpGet')).toBe(4);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  });
});

describe.skipIf(skipBrowserSuite)('the HTML report in headless Chromium', () => {
  let chromium: HeadlessBrowser;
  const page = join(dir, 'report.html');

  beforeAll(async () => {
    chromium = await startBrowser();
    expect((await report(['--format', 'html', '--out', page, plainFile])).code).toBe(0);
  });

  afterAll(async () => chromium?.close());

  it('shows the clients, their counts and a chart bar per day, and fetches nothing from anywhere', async () => {
    const tab = await chromium.browser.newPage();
    const fetched: string[] = [];
    await tab.setRequestInterception(true);
    tab.on('request', (request) => {
      const url = request.url();
      if (url.startsWith('file:') || url.startsWith('data:')) return void request.continue();
      fetched.push(url);
      void request.abort();
    });
    await tab.goto(`file://${page}`, { waitUntil: 'load' });
    // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, which is what a person reads.
    const text = await tab.$eval('body', (body) => body.innerText);
    expect(text).toContain('warehouse-app');
    expect(text).toContain(UNKNOWN);
    const clientRows = await tab.$$eval('table', (tables) =>
      [...(tables[0]?.querySelectorAll('tbody tr') ?? [])].map((row) =>
        [...row.querySelectorAll('td')].slice(0, 6).map((cell) => cell.textContent),
      ),
    );
    expect(clientRows).toEqual([
      ['warehouse-app', 'Logistics', 'deprecated', 'not known', '46', '1'],
      [UNKNOWN, '', 'deprecated', 'not known', '15', '0'],
    ]);
    const charts = await tab.$$eval('figure.chart', (figures) =>
      figures.map((figure) => ({
        series: figure.getAttribute('data-series'),
        section: figure.parentElement?.id,
        bars: [...figure.querySelectorAll('svg rect.bar')].map((bar) => bar.querySelector('title')?.textContent),
        width: figure.querySelector('svg')?.getBoundingClientRect().width,
      })),
    );
    expect(charts.map(({ section, series }) => [section, series])).toEqual([
      ['by-operation', 'Search'],
      ['by-operation', 'ProductLookup'],
      ['by-operation', 'StoreLookupPaged'],
      ['by-client', 'warehouse-app'],
      ['by-client', UNKNOWN],
    ]);
    for (const chart of charts) {
      expect(chart.bars).toHaveLength(20);
      expect(chart.width).toBeGreaterThan(0);
    }
    expect(charts[0]?.bars[0]).toBe('2026-11-01: 2 calls');
    expect(charts[0]?.bars[19]).toBe('2026-11-20: 3 calls');
    const example = await tab.$eval('section[data-client="warehouse-app"] li code', (code) => code.textContent);
    expect(example).toBe(searchFor(20));
    expect(fetched).toEqual([]);
    await tab.close();
  });
});
