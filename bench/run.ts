import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config/load.js';
import { catalogOptions, generateCatalog } from '../src/demo/catalog.js';
import { PINNING, RESULTS, startServer, type Server } from './children.js';
import { latencyAtRate, quantile, type LatencyRun } from './latency.js';
import { soapCall, type BenchRequest } from './requests.js';

/**
 * `npm run bench`: the proxy against (a) a bare fastify + undici passthrough with the same bytes and
 * (b) a facade written with the `soap` package, on one loopback upstream, in interleaved rounds.
 * Each server under test runs alone on core 1 (taskset), the load generator and the upstream on core
 * 0. Reported per scenario: req/s, p50/p99, CPU per request and peak RSS of the server, and the
 * ratios to (a) and (b); then the p99 of (a) and the proxy at half of (a)'s peak rate, measured open
 * loop in microseconds (bench/latency.ts); written to bench/results/latest.{json,md}. Machines are noisy: compare the
 * ratios, which are measured in the same run.
 *
 *   npm run bench                                  # 3 rounds of 5 s per scenario
 *   BENCH_ROUNDS=5 BENCH_SECONDS=10 npm run bench
 */

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 16;
/** Rounds of the added-latency measurement: a median of at least seven. */
const LATENCY_ROUNDS = Math.max(ROUNDS, 7);
const STORE_DELAY_MS = 20;
const STORE_PAGES = 10;
/** Enough that the largest store spans several pages and a Search for everything fills a 60-item page. */
const BENCH_DESIGNS = 1200;

// --- Scenarios -------------------------------------------------------------------------------------

interface Scenario {
  readonly name: string;
  readonly server: 'passthrough' | 'facade' | 'proxy';
  readonly request: BenchRequest;
  /** One connection: a latency scenario, not a throughput one. */
  readonly sequential?: boolean;
}

/** Search for everything: the upstream's first page of 60 items, about 125 KB. */
const SEARCH = '<query></query>';

function scenarios(storeId: string, storePageSize: number): Scenario[] {
  return [
    { name: '(a) passthrough: SOAP 1.1 Search', server: 'passthrough', request: soapCall('1.1', 'Search', SEARCH) },
    { name: '(b) soap facade: SOAP 1.1 Search', server: 'facade', request: soapCall('1.1', 'Search', SEARCH) },
    { name: 'proxy: SOAP 1.1 Search', server: 'proxy', request: soapCall('1.1', 'Search', SEARCH) },
    { name: 'proxy: SOAP 1.2 Search', server: 'proxy', request: soapCall('1.2', 'Search', SEARCH) },
    { name: 'proxy: HTTP GET Search', server: 'proxy', request: { method: 'GET', path: '/index.asmx/Search?query=' } },
    // The same 60 items as Search returns, but from two upstream pages of 34 (items 34 to 101).
    {
      name: 'proxy: AdvancedSearch, 60 items over 2 pages',
      server: 'proxy',
      request: soapCall('1.1', 'AdvancedSearch', '<startResults>41</startResults><maxResults>60</maxResults>'),
    },
    {
      name: `proxy: StoreLookupPaged, 1 page at ${STORE_DELAY_MS} ms`,
      server: 'proxy',
      request: { method: 'GET', path: `/index.asmx/StoreLookupPaged?storeId=${storeId}&pageIndex=0&pageSize=${storePageSize}` },
      sequential: true,
    },
    {
      name: `proxy: StoreLookup, ${STORE_PAGES} pages at ${STORE_DELAY_MS} ms`,
      server: 'proxy',
      request: { method: 'GET', path: `/index.asmx/StoreLookup?storeId=${storeId}` },
      sequential: true,
    },
  ];
}

interface Run {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  readonly cpuMsPerRequest: number;
  readonly maxRssMiB: number;
}

async function measure(base: string, server: Server, scenario: Scenario): Promise<Run> {
  const before = await server.usage();
  const { request } = scenario;
  const result = await autocannon({
    url: `${base}${request.path}`,
    method: request.method,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.body ? { body: request.body } : {}),
    connections: scenario.sequential ? 1 : CONNECTIONS,
    duration: SECONDS,
  });
  const after = await server.usage();
  const requests = Math.max(result.requests.total, 1);
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
    cpuMsPerRequest: (after.cpuMs - before.cpuMs) / requests,
    maxRssMiB: after.maxRssMiB,
  };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

interface Summary {
  readonly name: string;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerRequest: number;
  readonly peakRssMiB: number;
  readonly errors: number;
}

function summarise(name: string, runs: readonly Run[]): Summary {
  return {
    name,
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    cpuMsPerRequest: median(runs.map((r) => r.cpuMsPerRequest)),
    peakRssMiB: Math.max(...runs.map((r) => r.maxRssMiB)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
  };
}

// --- Main ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  // The load generator (this process, all its threads) shares core 0 with the upstream.
  if (PINNING) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)]);
  const upstream = await startServer('upstream', 0, { storeDelayMs: STORE_DELAY_MS, designs: BENCH_DESIGNS });
  // A store of some 250 designs, in STORE_PAGES pages.
  const { storeId, designs } = storeOfAbout(250);
  const storePageSize = Math.ceil(designs / STORE_PAGES);
  const options = { upstream: upstream.url, proxyConfig: { paging: { storeLookupPageSize: storePageSize } } };
  const servers: Record<Scenario['server'], Server> = {
    passthrough: await startServer('passthrough', 1, options),
    facade: await startServer('facade', 1, options),
    proxy: await startServer('proxy', 1, options),
  };
  const all = scenarios(storeId, storePageSize);
  const runs = new Map<string, Run[]>(all.map((s) => [s.name, []]));
  for (const scenario of all) await measure(servers[scenario.server].url, servers[scenario.server], scenario); // warm-up: JIT, pools, cache
  for (let round = 1; round <= ROUNDS; round++) {
    for (const scenario of all) {
      runs.get(scenario.name)?.push(await measure(servers[scenario.server].url, servers[scenario.server], scenario));
      process.stderr.write('.');
    }
  }
  process.stderr.write('\n');
  const summaries = all.map((s) => summarise(s.name, runs.get(s.name) ?? []));
  const [passthrough, facade, proxySoap11] = summaries as [Summary, Summary, Summary];

  // Added latency at half of the passthrough's peak rate, open loop in microseconds (bench/latency.ts),
  // in interleaved rounds like the rest: more of them, since a p99 of one round is a few dozen answers.
  const halfRate = Math.max(1, Math.round(passthrough.requestsPerSecond / 2));
  const atHalf = (scenario: Scenario): Promise<LatencyRun> =>
    latencyAtRate(servers[scenario.server].url, scenario.request, halfRate, SECONDS);
  const halfRatePair = async (proxyFirst: boolean): Promise<{ passthrough: LatencyRun; proxy: LatencyRun }> => {
    if (proxyFirst) {
      const proxy = await atHalf(all[2] as Scenario);
      return { proxy, passthrough: await atHalf(all[0] as Scenario) };
    }
    const passthrough = await atHalf(all[0] as Scenario);
    return { passthrough, proxy: await atHalf(all[2] as Scenario) };
  };
  // A first pair discarded (this client's own warm-up), then each round in the other order than the last.
  await halfRatePair(false);
  const halfRateRounds = await sequence(LATENCY_ROUNDS, (round) => halfRatePair(round % 2 === 1));
  const halfRateErrors = halfRateRounds.reduce((sum, round) => sum + round.passthrough.errors + round.proxy.errors, 0);
  const halfRateP99s = {
    passthrough: halfRateRounds.map((round) => round.passthrough.p99Ms),
    proxy: halfRateRounds.map((round) => round.proxy.p99Ms),
  };
  const p99PassthroughAtHalf = median(halfRateP99s.passthrough);
  const p99ProxyAtHalf = median(halfRateP99s.proxy);
  const loadGeneratorLatenessP99Ms = median(
    halfRateRounds.flatMap((round) => [round.passthrough.sendLatenessP99Ms, round.proxy.sendLatenessP99Ms]),
  );
  // The p99 of every answer of every round together: a pause that spoils one round counts here in full.
  const pooledP99 = (runs: readonly LatencyRun[]): number =>
    quantile(
      runs.flatMap((run) => run.latenciesUs).sort((x, y) => x - y),
      0.99,
    ) / 1000;
  const pooledP99AtHalf = {
    passthrough: pooledP99(halfRateRounds.map((round) => round.passthrough)),
    proxy: pooledP99(halfRateRounds.map((round) => round.proxy)),
  };

  // Memory last, apart from every timed run: the live heap needs a forced full collection, after
  // which V8 sizes the heap for memory and this proxy ran at half its rate for tens of seconds.
  const heapGrowth = await liveHeapGrowth(
    servers.proxy,
    all.filter((s) => s.server === 'proxy' && !s.sequential),
  );

  const byName = (prefix: string): Summary => summaries.find((s) => s.name.startsWith(prefix)) as Summary;
  const onePage = byName('proxy: StoreLookupPaged');
  const tenPages = byName('proxy: StoreLookup,');
  const targets = [
    {
      target: 'Search over SOAP 1.1 ≥ 0.8 × (a) req/s',
      value: proxySoap11.requestsPerSecond / passthrough.requestsPerSecond,
      limit: 0.8,
      atLeast: true,
    },
    {
      target: 'Search over SOAP 1.1 ≥ 1.0 × (b) req/s',
      value: proxySoap11.requestsPerSecond / facade.requestsPerSecond,
      limit: 1.0,
      atLeast: true,
    },
    { target: `added p99 over (a) at ${halfRate} req/s ≤ 1 ms`, value: p99ProxyAtHalf - p99PassthroughAtHalf, limit: 1, atLeast: false },
    {
      target: 'AdvancedSearch, 60 items over 2 pages ≥ 0.5 × (a) req/s',
      value: byName('proxy: AdvancedSearch').requestsPerSecond / passthrough.requestsPerSecond,
      limit: 0.5,
      atLeast: true,
    },
    {
      target: `StoreLookup over ${STORE_PAGES} pages ≤ 1.5 × one page (p50)`,
      value: tenPages.p50Ms / Math.max(onePage.p50Ms, 1),
      limit: 1.5,
      atLeast: false,
    },
    {
      target: 'proxy memory flat: live heap growth from the second round to the last ≤ 10 %',
      value: heapGrowth,
      limit: 0.1,
      atLeast: false,
    },
  ].map((t) => ({ ...t, met: t.atLeast ? t.value >= t.limit : t.value <= t.limit }));

  const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}${PINNING ? ', servers pinned to core 1' : ', not pinned (no taskset)'}`;
  const report: Report = {
    date: new Date().toISOString(),
    machine,
    rounds: ROUNDS,
    secondsPerRun: SECONDS,
    connections: CONNECTIONS,
    summaries,
    p99PassthroughAtHalf,
    p99ProxyAtHalf,
    halfRate,
    halfRateRounds: LATENCY_ROUNDS,
    halfRateP99s,
    pooledP99AtHalf,
    loadGeneratorLatenessP99Ms,
    targets,
  };
  const markdown = renderMarkdown(report, passthrough, facade);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(RESULTS, 'latest.md'), markdown);
  process.stdout.write(markdown);

  for (const server of [...Object.values(servers), upstream]) server.stop();
  if (summaries.some((s) => s.errors > 0) || halfRateErrors > 0) process.exitCode = 1;
}

/**
 * The proxy's live heap (after a full collection) at the end of each of ROUNDS rounds of `scenarios`:
 * its growth from the second round (the first still fills caches and pools) to the last.
 */
async function liveHeapGrowth(proxy: Server, scenarios: readonly Scenario[]): Promise<number> {
  const heap: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const scenario of scenarios) await measure(proxy.url, proxy, scenario);
    heap.push((await proxy.usage(true)).heapMiB);
    process.stderr.write('.');
  }
  return (heap[heap.length - 1] as number) / (heap[Math.min(1, heap.length - 1)] as number) - 1;
}

async function sequence<T>(times: number, run: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < times; i++) results.push(await run(i));
  return results;
}

/** The store of the bench upstream's catalog (the same seed and size) whose size is nearest `designs`. */
function storeOfAbout(designs: number): { storeId: string; designs: number } {
  const catalog = generateCatalog(catalogOptions(loadConfig({}, { demo: { designs: BENCH_DESIGNS } })));
  const counts = catalog.stores.map((store) => ({ storeId: store.id, designs: catalog.designs.filter((d) => d.store === store).length }));
  return counts.reduce((a, b) => (Math.abs(b.designs - designs) < Math.abs(a.designs - designs) ? b : a));
}

const ms = (value: number): string => value.toFixed(2);

/** What bench/results/latest.json holds, and latest.md shows. */
interface Report {
  readonly date: string;
  readonly machine: string;
  readonly rounds: number;
  readonly secondsPerRun: number;
  readonly connections: number;
  readonly summaries: readonly Summary[];
  readonly p99PassthroughAtHalf: number;
  readonly p99ProxyAtHalf: number;
  readonly halfRate: number;
  readonly halfRateRounds: number;
  readonly halfRateP99s: { readonly passthrough: readonly number[]; readonly proxy: readonly number[] };
  readonly pooledP99AtHalf: { readonly passthrough: number; readonly proxy: number };
  readonly loadGeneratorLatenessP99Ms: number;
  readonly targets: readonly { target: string; value: number; limit: number; met: boolean }[];
}

function renderMarkdown(report: Report, passthrough: Summary, facade: Summary): string {
  const rows = report.summaries.map(
    (s) =>
      `| ${s.name} | ${Math.round(s.requestsPerSecond)} | ${(s.requestsPerSecond / passthrough.requestsPerSecond).toFixed(2)} | ${(s.requestsPerSecond / facade.requestsPerSecond).toFixed(2)} | ${s.p50Ms} | ${s.p99Ms} | ${s.cpuMsPerRequest.toFixed(2)} | ${Math.round(s.peakRssMiB)} | ${s.errors} |`,
  );
  const targets = report.targets.map((t) => `| ${t.target} | ${t.value.toFixed(2)} | ${t.met ? 'met' : '**not met**'} |`);
  return [
    `Benchmark of ${report.date.slice(0, 10)}: ${report.machine}; ${report.rounds} interleaved rounds of ${report.secondsPerRun} s, ${report.connections} connections (1 for the StoreLookup latency rows); medians.`,
    '',
    '| scenario | req/s | × (a) | × (b) | p50 ms | p99 ms | CPU ms/req | peak RSS MiB | errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `At ${report.halfRate} req/s (half of (a)'s peak), open loop, ${report.halfRateRounds} interleaved rounds of ${report.secondsPerRun} s: p99 (a) ${ms(report.p99PassthroughAtHalf)} ms, proxy SOAP 1.1 ${ms(report.p99ProxyAtHalf)} ms (medians; the rounds' p99s: (a) ${report.halfRateP99s.passthrough.map(ms).join(', ')}; proxy ${report.halfRateP99s.proxy.map(ms).join(', ')}). Over all rounds' answers together: p99 (a) ${ms(report.pooledP99AtHalf.passthrough)} ms, proxy ${ms(report.pooledP99AtHalf.proxy)} ms. The load generator itself sent up to ${ms(report.loadGeneratorLatenessP99Ms)} ms late (p99), the same for both.`,
    '',
    '| target | measured | |',
    '|---|---|---|',
    ...targets,
    '',
  ].join('\n');
}

await main();
