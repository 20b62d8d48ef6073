import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { RESULTS } from './children.js';
import { OPERATOR_LINE, hitLine } from '../test/support/hit-log.js';

/**
 * `npm run bench:report [-- --lines 1000000]`: writes a realistic hit log (30 days, 8 configured
 * clients and 40 unknown callers, every operation and binding, schema 1 lines for the first ten days,
 * an operator line every fifty) to a temporary file, and times `npm run report` over it in a process
 * of its own, as an operator runs it. The target: a million lines in under 30 s. Written to
 * bench/results/report.{json,md}.
 */

const { values } = parseArgs({ options: { lines: { type: 'string', default: '1000000' } } });
const LINES = Number(values.lines);
const DAYS = 30;
const START = Date.parse('2026-10-25T00:00:00.000Z');
const TARGET_SECONDS = 30;

/** The same log on every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const next = random(20261123);
const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
const hex = (n: number): string => n.toString(16).padStart(12, '0').slice(-12);

const TEAMS = ['Logistics', 'Storefront', 'Marketing', 'Mobile', 'Partners', 'Support', 'Finance', 'Search'];
const CONFIGURED = TEAMS.map((team, i) => ({
  client: `${team.toLowerCase()}-app`,
  fingerprint: `hmac:${hex(0xa1b2c3d4e5 + i * 7919)}`,
  team,
  contact: `${team.toLowerCase()}@example.com`,
}));
const UNKNOWN = Array.from({ length: 40 }, (_, i) => ({
  client: `hmac:${hex(0x5f3759df + i * 104729)}`,
  fingerprint: undefined,
  team: undefined,
  contact: undefined,
}));
const CALLERS = [...CONFIGURED, ...UNKNOWN, { client: 'anonymous', fingerprint: undefined, team: undefined, contact: undefined }];
const OPERATIONS = ['Search', 'Search', 'Search', 'AdvancedSearch', 'AdvancedSearch', 'ProductLookup', 'StoreLookupPaged', 'StoreLookup'];
const BINDINGS = ['soap11', 'soap11', 'soap11', 'soap12', 'httpGet', 'httpPost'];
const QUERIES = ['shoes', 'dog', 'coffee mug', 't-shirt', 'hoodie', 'poster', 'sticker', 'cat'];

function successor(operation: string): string {
  const query = encodeURIComponent(pick(QUERIES)).replace(/%20/g, '+');
  if (operation === 'ProductLookup') return `/product.searchForProduct.cp?v=3&productId=${30003000 + Math.floor(next() * 1000)}`;
  if (operation.startsWith('StoreLookup'))
    return `/product.searchForProductsOfStore.cp?v=3&storeId=teeshack&page=${Math.floor(next() * 4)}&pageSize=64`;
  return `/product.search.cp?v=3&query=${query}&pageNumber=1&resultsPerPage=60`;
}

function outcome(): string {
  const roll = next();
  return roll < 0.95 ? 'ok' : roll < 0.99 ? 'fault' : roll < 0.998 ? 'shed' : 'refused';
}

async function writeLog(file: string): Promise<void> {
  const out = createWriteStream(file);
  const step = (DAYS * 86_400_000) / LINES;
  for (let i = 0; i < LINES; i++) {
    const at = START + Math.floor(i * step);
    const caller = pick(CALLERS);
    const operation = pick(OPERATIONS);
    const result = outcome();
    const line =
      i % 50 === 49
        ? OPERATOR_LINE
        : hitLine({
            time: new Date(at).toISOString(),
            operation,
            binding: pick(BINDINGS),
            ...caller,
            outcome: result,
            schema: at < START + 10 * 86_400_000 ? 1 : 2,
            successor: result === 'ok' ? successor(operation) : null,
          });
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'report-bench-'));
  try {
    const file = join(dir, 'hits.log');
    await writeLog(file);
    const bytes = statSync(file).size;
    const started = performance.now();
    const run = spawnSync(process.execPath, ['dist/src/migration/report-cli.js', '--out', join(dir, 'report.txt'), file], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const seconds = (performance.now() - started) / 1000;
    if (run.status !== 0) throw new Error(`the report exited with ${run.status}`);
    const result = {
      date: new Date().toISOString().slice(0, 10),
      node: process.version,
      lines: LINES,
      mib: bytes / 1024 / 1024,
      seconds,
      target: TARGET_SECONDS,
      met: seconds < TARGET_SECONDS,
    };
    const markdown =
      `Report benchmark of ${result.date}: ${LINES.toLocaleString('en')} lines (${result.mib.toFixed(0)} MiB) in ` +
      `${seconds.toFixed(1)} s, node ${process.version} (target: under ${TARGET_SECONDS} s, ${result.met ? 'met' : '**not met**'}).\n`;
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(join(RESULTS, 'report.json'), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(RESULTS, 'report.md'), markdown);
    process.stdout.write(markdown);
    if (!result.met) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
