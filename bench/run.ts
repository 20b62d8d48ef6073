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
import { WRK_AVAILABLE, wrk, type WrkRun } from './wrk.js';
import { benchRuntimes, type Runtime } from './runtimes.js';

/**
 * `npm run bench`: the proxy against (a) a bare fastify + undici passthrough with the same bytes,
 * (b) a facade written with the `soap` package and (b2) that facade checking each page as the proxy
 * does (the bar for the cold proxy, issue 32), on one loopback upstream, in interleaved rounds; and its
 * cache hits (every binding, and a StoreLookup of 10 cached pages) against (z), a bare fastify server
 * answering the proxy's own bytes from memory. Each server under test runs alone on core 1 (taskset),
 * the load generator and the upstream on core 0. Reported per scenario: req/s, p50/p99, CPU per request
 * and peak RSS of the server, and the ratios to (a) and (b); then the p99 of (a) and the proxy at half
 * of the proxy's own median rate, measured open loop in microseconds (bench/latency.ts) in at least
 * seven rounds, each with both, and judged on the median of the rounds' differences; written to
 * bench/results/latest.{json,md}. Machines are noisy: compare the
 * ratios, which are measured in the same run. A ratio to a baseline takes the best of the baseline's
 * rounds (its highest req/s, its lowest CPU per call, each from whichever round it came) against the
 * proxy's median: a baseline's bad round must not pass the proxy. (A baseline bad in every round of a
 * run, as the soap facade was under wrk after autocannon's rounds, is what the restart before wrk is for.)
 * The cold proxy is measured again with tracing on (every call sampled, its spans sent over OTLP/HTTP to
 * a sink on core 0 that reads and counts them, bench/servers.ts), held to 0.85 × its req/s with tracing off:
 * in pairs of runs back to back (`backToBack`), and the ratio is the median of the pairs' ratios. A cache
 * hit is held to (z) so too, in pairs of its own under each load generator.
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
  /**
   * `checkedFacade`: (b2), the soap facade checking each page; `wire`: (z), the cached proxy's answers
   * from memory; `cached`: the proxy with its page cache on; `proxy` has it off, every call an upstream
   * request; `traced`: `proxy` with tracing on, every call sampled, its spans sent to a trace sink.
   */
  readonly server: 'passthrough' | 'facade' | 'checkedFacade' | 'wire' | 'proxy' | 'cached' | 'traced';
  readonly request: BenchRequest;
  /** One connection: a latency scenario, not a throughput one. */
  readonly sequential?: boolean;
  /** Measured with wrk too (bench/wrk.ts). */
  readonly wrk?: boolean;
}

/** Search for everything: the upstream's first page of 60 items, about 125 KB. */
const TRACED = 'proxy, tracing on: SOAP 1.1 Search';
/** Tracing on (sampler ratio 1.0, the collector on loopback): at least this × the req/s with it off (issue 29). */
const TRACING_TARGET = 0.85;
const SEARCH = '<query></query>';
const PASSTHROUGH = '(a) passthrough: SOAP 1.1 Search';
const FACADE = '(b) soap facade: SOAP 1.1 Search';
const CHECKED_FACADE = '(b2) soap facade, page checked: SOAP 1.1 Search';
const PROXY = 'proxy: SOAP 1.1 Search';
const HOT = 'proxy, cache on: SOAP 1.1 Search, hot';
const WIRE = "(z) bare fastify, the proxy's answer from memory: SOAP 1.1 Search";
/** A cache hit against (z) (issue 32): at least this × its req/s, at most this × its CPU a call. */
const HOT_TARGETS = { wireRequests: 0.6, wireCpu: 2, passthroughRequests: 1.5 };
const SEARCH_GET: BenchRequest = { method: 'GET', path: '/index.asmx/Search?query=' };

function scenarios(storeId: string, storePageSize: number): Scenario[] {
  const searchSoap11 = soapCall('1.1', 'Search', SEARCH);
  return [
    { name: PASSTHROUGH, server: 'passthrough', request: searchSoap11, wrk: true },
    { name: FACADE, server: 'facade', request: searchSoap11, wrk: true },
    { name: CHECKED_FACADE, server: 'checkedFacade', request: searchSoap11, wrk: true },
    { name: PROXY, server: 'proxy', request: searchSoap11, wrk: true },
    // (z) answers what the cached proxy answered, so it is started after it (`start`).
    { name: HOT, server: 'cached', request: searchSoap11, wrk: true },
    { name: WIRE, server: 'wire', request: searchSoap11, wrk: true },
    { name: 'proxy, cache on: SOAP 1.2 Search, hot', server: 'cached', request: soapCall('1.2', 'Search', SEARCH) },
    { name: 'proxy, cache on: HTTP GET Search, hot', server: 'cached', request: SEARCH_GET },
    {
      name: 'proxy, cache on: HTTP POST Search, hot',
      server: 'cached',
      request: {
        method: 'POST',
        path: '/index.asmx/Search',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'query=',
      },
    },
    {
      name: `proxy, cache on: StoreLookup, ${STORE_PAGES} pages, hot`,
      server: 'cached',
      request: { method: 'GET', path: `/index.asmx/StoreLookup?storeId=${storeId}` },
    },
    { name: 'proxy: SOAP 1.2 Search', server: 'proxy', request: soapCall('1.2', 'Search', SEARCH) },
    { name: 'proxy: HTTP GET Search', server: 'proxy', request: SEARCH_GET },
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

async function measure(base: string, server: Server, scenario: Scenario, seconds = SECONDS): Promise<Run> {
  const before = await server.usage();
  const { request } = scenario;
  const result = await autocannon({
    url: `${base}${request.path}`,
    method: request.method,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.body ? { body: request.body } : {}),
    connections: scenario.sequential ? 1 : CONNECTIONS,
    duration: seconds,
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

/** Pairs of runs back to back, at least seven: tracing off and on (issue 29), a cache hit and (z) (issue 32). */
const PAIRS = Math.max(ROUNDS, 7);

/** Two runs back to back: `measured` against `baseline`, the server it is held to. */
interface Paired<R> {
  readonly baseline: R;
  readonly measured: R;
}

/**
 * PAIRS pairs of runs back to back, each pair in the other order than the last (whichever of two runs
 * goes second was measured a few per cent slower, whatever the servers), all in one run after a
 * warm-up of both. The machine's speed drifts by more over a round than the difference measured, so
 * the difference is read from runs seconds apart: a stall that slows both runs of a pair leaves their
 * ratio, and one that slows one run moves one pair of seven, not the median. Measured in one run, not
 * a pair in each round of the rest: a server idle for minutes between rounds came back to its pair
 * cold (tracing on read 0.66 × off in one round, 0.93 in the next).
 */
async function backToBack<R>(baseline: () => Promise<R>, measured: () => Promise<R>): Promise<Paired<R>[]> {
  await baseline();
  await measured();
  const pairs: Paired<R>[] = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    if (pair % 2 === 1) {
      const second = await measured();
      pairs.push({ measured: second, baseline: await baseline() });
    } else {
      const first = await baseline();
      pairs.push({ baseline: first, measured: await measured() });
    }
    process.stderr.write('.');
  }
  return pairs;
}

/** What a run measured: req/s and the server's CPU time a call. */
interface Rate {
  readonly requestsPerSecond: number;
  readonly cpuMsPerRequest: number;
}

/**
 * Measured ÷ baseline in each pair, by req/s and by CPU a call, and the medians the verdict reads; each
 * side's medians, and the errors of both sides' runs (any fails the benchmark, as in the rounds).
 */
interface PairedRatios {
  readonly requests: number;
  readonly cpu: number;
  readonly requestRatios: readonly number[];
  readonly cpuRatios: readonly number[];
  readonly measured: Rate;
  readonly baseline: Rate;
  readonly errors: number;
}

function pairedRatios(pairs: readonly Paired<Rate & { readonly errors: number }>[]): PairedRatios {
  const requestRatios = pairs.map(({ measured, baseline }) => measured.requestsPerSecond / baseline.requestsPerSecond);
  const cpuRatios = pairs.map(({ measured, baseline }) => measured.cpuMsPerRequest / baseline.cpuMsPerRequest);
  const side = (runs: readonly Rate[]): Rate => ({
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    cpuMsPerRequest: median(runs.map((r) => r.cpuMsPerRequest)),
  });
  return {
    requests: median(requestRatios),
    cpu: median(cpuRatios),
    requestRatios,
    cpuRatios,
    measured: side(pairs.map((pair) => pair.measured)),
    baseline: side(pairs.map((pair) => pair.baseline)),
    errors: pairs.reduce((sum, { measured, baseline }) => sum + measured.errors + baseline.errors, 0),
  };
}

interface WrkMeasured extends WrkRun {
  readonly cpuMsPerRequest: number;
  readonly maxRssMiB: number;
}

async function measureWithWrk(server: Server, scenario: Scenario): Promise<WrkMeasured> {
  const before = await server.usage();
  const run = await wrk(server.url, scenario.request, CONNECTIONS, SECONDS);
  const after = await server.usage();
  return { ...run, cpuMsPerRequest: (after.cpuMs - before.cpuMs) / Math.max(run.requests, 1), maxRssMiB: after.maxRssMiB };
}

/** What either load generator measured of a scenario over its rounds: medians, the best, each round's req/s, the server's peak RSS. */
interface Throughput {
  readonly name: string;
  readonly requestsPerSecond: number;
  readonly cpuMsPerRequest: number;
  /** The best of its rounds: the highest req/s, the lowest CPU per call. */
  readonly best: Best;
  /** Each round's req/s, in order. */
  readonly roundsRequestsPerSecond: readonly number[];
  readonly errors: number;
  readonly peakRssMiB: number;
}

/** The best of a server's rounds, what the proxy is held against (see the top of this file). */
interface Best {
  readonly requestsPerSecond: number;
  readonly cpuMsPerRequest: number;
}

function bestOf(runs: readonly { readonly requestsPerSecond: number; readonly cpuMsPerRequest: number }[]): Best {
  return {
    requestsPerSecond: Math.max(...runs.map((r) => r.requestsPerSecond)),
    cpuMsPerRequest: Math.min(...runs.map((r) => r.cpuMsPerRequest)),
  };
}

/** The one of `items` named `name`: each is named once in `scenarios`. */
function named<T extends { readonly name: string }>(items: readonly T[], name: string): T {
  const found = items.find((item) => item.name === name);
  if (found === undefined) throw new Error(`bench: nothing measured as ${name}`);
  return found;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

function throughputOf(
  name: string,
  runs: readonly {
    readonly requestsPerSecond: number;
    readonly cpuMsPerRequest: number;
    readonly errors: number;
    readonly maxRssMiB: number;
  }[],
): Throughput {
  return {
    name,
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    cpuMsPerRequest: median(runs.map((r) => r.cpuMsPerRequest)),
    best: bestOf(runs),
    roundsRequestsPerSecond: runs.map((r) => r.requestsPerSecond),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    peakRssMiB: Math.max(...runs.map((r) => r.maxRssMiB)),
  };
}

/** autocannon's rounds: the throughput, with the latency it reports. */
interface Summary extends Throughput {
  readonly p50Ms: number;
  readonly p99Ms: number;
}

function summarise(name: string, runs: readonly Run[]): Summary {
  return {
    ...throughputOf(name, runs),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
  };
}

// --- Main ------------------------------------------------------------------------------------------

/** The servers under test on one runtime, and what was measured of them. */
type Servers = Record<Scenario['server'], Server>;

interface OnRuntime {
  readonly runtime: Runtime;
  readonly servers: Servers;
  /** The trace collector `traced` sends its spans to, one for each runtime's, on core 0 like the upstream. */
  readonly sink: Server;
  readonly runs: Map<string, Run[]>;
  readonly wrkRuns: Map<string, WrkMeasured[]>;
  /** Runs back to back (`backToBack`), filled as they are measured. */
  readonly pairs: RuntimePairs;
}

/** What one runtime measured in pairs back to back, SOAP 1.1 Search in each. */
interface RuntimePairs {
  /** The cold proxy with tracing on (`measured`) against off (`baseline`). */
  readonly tracing: Paired<Run>[];
  /** A cache hit (`measured`) against (z), under autocannon and under wrk. */
  readonly hot: Paired<Run>[];
  readonly hotWrk: Paired<WrkMeasured>[];
}

async function main(): Promise<void> {
  const runtimes = benchRuntimes();
  // The load generator (this process, all its threads) shares core 0 with the upstream.
  if (PINNING) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)]);
  const upstream = await startServer('upstream', 0, { storeDelayMs: STORE_DELAY_MS, designs: BENCH_DESIGNS });
  // A store of some 250 designs, in STORE_PAGES pages.
  const { storeId, designs } = storeOfAbout(250);
  const storePageSize = Math.ceil(designs / STORE_PAGES);
  const paging = { storeLookupPageSize: storePageSize };
  // Cold: the page cache off, so that every call is an upstream request, as (a) and (b) make one.
  const options = { upstream: upstream.url, proxyConfig: { paging, cache: { enabled: false } } };
  const cachedOptions = { upstream: upstream.url, proxyConfig: { paging, cache: { enabled: true } } };
  const all = scenarios(storeId, storePageSize);
  const traced: Scenario = { name: TRACED, server: 'traced', request: soapCall('1.1', 'Search', SEARCH) };
  /** `servers`: those started so far, (z) answering what `cached` answers. */
  const start = (server: Scenario['server'], runtime: Runtime, sink: Server, servers: Partial<Servers>): Promise<Server> => {
    switch (server) {
      case 'cached':
        return startServer('proxy', 1, cachedOptions, runtime.execPath);
      case 'traced':
        return startServer('proxy', 1, { ...options, tracing: { endpoint: sink.url } }, runtime.execPath);
      case 'checkedFacade':
        return startServer('facade', 1, { ...options, checkPage: true }, runtime.execPath);
      case 'wire':
        return startServer('wire', 1, { proxy: servers.cached?.url }, runtime.execPath);
      default:
        return startServer(server, 1, options, runtime.execPath);
    }
  };
  // Every runtime's servers run side by side (one at a time under load), so that each round measures all of them.
  const on: OnRuntime[] = [];
  const kinds: readonly Scenario['server'][] = ['passthrough', 'facade', 'checkedFacade', 'proxy', 'cached', 'wire', 'traced'];
  for (const runtime of runtimes) {
    const sink = await startServer('sink', 0, {});
    const servers: Partial<Servers> = {};
    for (const kind of kinds) servers[kind] = await start(kind, runtime, sink, servers);
    on.push({
      runtime,
      servers: servers as Servers,
      sink,
      runs: new Map([...all, traced].map((s) => [s.name, []])),
      wrkRuns: new Map(all.map((s) => [s.name, []])),
      pairs: { tracing: [], hot: [], hotWrk: [] },
    });
  }
  /** Each round in the other order of runtimes than the last. */
  const inOrder = (round: number): OnRuntime[] => (round % 2 === 1 ? [...on].reverse() : on);
  // Warm-up: JIT, pools, cache; (z) learns the proxy's answers.
  for (const scenario of all) for (const { servers } of on) await measure(servers[scenario.server].url, servers[scenario.server], scenario);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const scenario of all) {
      for (const { servers, runs } of inOrder(round)) {
        runs.get(scenario.name)?.push(await measure(servers[scenario.server].url, servers[scenario.server], scenario));
        process.stderr.write('.');
      }
    }
  }
  // Tracing off and on, and a cache hit and (z), in pairs back to back, in runs of their own (`backToBack`).
  const hot = named(all, HOT);
  for (const { servers, runs, pairs } of on) {
    const run = (server: Server, scenario: Scenario) => () => measure(server.url, server, scenario);
    pairs.tracing.push(...(await backToBack(run(servers.proxy, traced), run(servers.traced, traced))));
    runs.get(TRACED)?.push(...pairs.tracing.map((pair) => pair.measured));
    pairs.hot.push(...(await backToBack(run(servers.wire, hot), run(servers.cached, hot))));
  }
  // The second load generator, in interleaved rounds of its own, on servers started again: after
  // autocannon's rounds the soap facade served wrk at half its rate, at 0.73 against 0.28 ms of CPU a
  // call, in three runs of five, all its rounds alike (a state of that process, not a bad round). All
  // servers it measures are started again, so that they have the same history; the half-rate latency
  // and the live heap below are measured on these. (z) last: it answers what the new `cached` answers.
  const wrkScenarios = WRK_AVAILABLE ? all.filter((s) => s.wrk === true) : [];
  const restarted = [...new Set(wrkScenarios.map((s) => s.server))].sort((x, y) => Number(x === 'wire') - Number(y === 'wire'));
  for (const { runtime, servers, sink } of on) {
    for (const server of restarted) {
      servers[server].stop();
      servers[server] = await start(server, runtime, sink, servers);
    }
  }
  for (let round = 0; round <= ROUNDS && wrkScenarios.length > 0; round++) {
    for (const scenario of wrkScenarios) {
      for (const { servers, wrkRuns } of inOrder(round)) {
        const measured = await measureWithWrk(servers[scenario.server], scenario);
        // Round 0 warms the servers started again up (JIT, pools) and wrk's connections, as autocannon's warm-up did.
        if (round > 0) wrkRuns.get(scenario.name)?.push(measured);
        process.stderr.write('.');
      }
    }
  }
  for (const { servers, pairs } of wrkScenarios.length > 0 ? on : []) {
    const run = (server: Server) => () => measureWithWrk(server, hot);
    pairs.hotWrk.push(...(await backToBack(run(servers.wire), run(servers.cached))));
  }
  process.stderr.write('\n');
  if (!WRK_AVAILABLE) process.stderr.write('wrk not found (Debian: apt-get install wrk): measured with autocannon only\n');
  const summariesOf = new Map(on.map((o) => [o, [...all, traced].map((s) => summarise(s.name, o.runs.get(s.name) ?? []))]));
  const wrkSummariesOf = new Map(
    on.map((o) => [o, wrkScenarios.map((s): Throughput => throughputOf(s.name, o.wrkRuns.get(s.name) ?? []))]),
  );

  // Added latency at half of the proxy's own peak rate on that runtime (SOAP 1.1 Search), open loop in
  // microseconds (bench/latency.ts), in interleaved rounds like the rest: more of them, since a p99 of
  // one round is a few dozen answers.
  const summaryOf = (o: OnRuntime, name: string): Summary => named(summariesOf.get(o) ?? [], name);
  const scenarioOf = (name: string): Scenario => named(all, name);
  const halfRateOf = (o: OnRuntime): number => Math.max(1, Math.round(summaryOf(o, PROXY).requestsPerSecond / 2));
  const atHalf = (o: OnRuntime, scenario: Scenario): Promise<LatencyRun> =>
    latencyAtRate(o.servers[scenario.server].url, scenario.request, halfRateOf(o), SECONDS);
  // Cached pages against (a) at half of (a)'s own peak (issue: the added p99 for cached pages).
  const halfOfPassthrough = (o: OnRuntime): number => Math.max(1, Math.round(summaryOf(o, PASSTHROUGH).requestsPerSecond / 2));
  const halfRatePair = async (o: OnRuntime, proxyFirst: boolean): Promise<HalfRateRound> => {
    const passthroughAtHalfOfA = (): Promise<LatencyRun> =>
      latencyAtRate(o.servers.passthrough.url, scenarioOf(PASSTHROUGH).request, halfOfPassthrough(o), SECONDS);
    const cachedAtHalfOfA = (): Promise<LatencyRun> =>
      latencyAtRate(o.servers.cached.url, scenarioOf(HOT).request, halfOfPassthrough(o), SECONDS);
    if (proxyFirst) {
      const proxy = await atHalf(o, scenarioOf(PROXY));
      const cached = await cachedAtHalfOfA();
      return { proxy, cached, passthrough: await atHalf(o, scenarioOf(PASSTHROUGH)), passthroughAtA: await passthroughAtHalfOfA() };
    }
    const passthrough = await atHalf(o, scenarioOf(PASSTHROUGH));
    const passthroughAtA = await passthroughAtHalfOfA();
    return { passthrough, passthroughAtA, proxy: await atHalf(o, scenarioOf(PROXY)), cached: await cachedAtHalfOfA() };
  };
  // A first pair discarded (this client's own warm-up), then each round in the other order than the last.
  for (const o of on) await halfRatePair(o, false);
  const halfRateRounds = new Map<OnRuntime, HalfRateRound[]>(on.map((o) => [o, []]));
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const o of inOrder(round)) halfRateRounds.get(o)?.push(await halfRatePair(o, round % 2 === 1));
  }

  // Memory last, apart from every timed run: the live heap needs a forced full collection, after
  // which V8 sizes the heap for memory and this proxy ran at half its rate for tens of seconds.
  const liveHeapOf = new Map<OnRuntime, LiveHeap>();
  for (const o of on) {
    liveHeapOf.set(
      o,
      await liveHeap(
        o.servers.proxy,
        all.filter((s) => s.server === 'proxy' && !s.sequential),
      ),
    );
  }

  // What each sink received (its traced proxy's batches have long been sent by now) and the spans dropped.
  const exportedOf = new Map<OnRuntime, Exported>();
  for (const o of on) {
    const [sink, traced] = [await o.sink.usage(), await o.servers.traced.usage()];
    exportedOf.set(o, {
      requests: sink.receivedRequests ?? 0,
      bytes: sink.receivedBytes ?? 0,
      droppedSpans: traced.droppedSpans ?? { queueFull: Number.NaN, exportFailed: Number.NaN },
    });
  }

  const results = on.map((o): RuntimeResult => {
    const summaries = summariesOf.get(o) as Summary[];
    const rounds = halfRateRounds.get(o) ?? [];
    return resultOf(
      o.runtime,
      summaries,
      { proxy: halfRateOf(o), passthrough: halfOfPassthrough(o) },
      rounds,
      liveHeapOf.get(o) ?? { rounds: [], growth: Number.NaN },
      wrkSummariesOf.get(o) ?? [],
      o.pairs,
      exportedOf.get(o) ?? { requests: 0, bytes: 0, droppedSpans: { queueFull: Number.NaN, exportFailed: Number.NaN } },
    );
  });
  // The proxy on each runtime against the first (the oldest): Search over SOAP 1.1, req/s and CPU per call.
  const [oldest, ...newer] = results;
  const acrossRuntimes = newer.flatMap((result) => {
    const proxy = (r: RuntimeResult): Summary => named(r.summaries, PROXY);
    const name = `node ${result.runtime.major}`;
    const base = `node ${oldest?.runtime.major}`;
    return oldest === undefined
      ? []
      : [
          {
            target: `proxy SOAP 1.1 Search on ${name} ≥ 1.0 × on ${base} (req/s)`,
            value: proxy(result).requestsPerSecond / proxy(oldest).requestsPerSecond,
            limit: 1,
            atLeast: true,
          },
          {
            target: `proxy SOAP 1.1 Search CPU per call on ${name} ≤ 1.0 × on ${base}`,
            value: proxy(result).cpuMsPerRequest / proxy(oldest).cpuMsPerRequest,
            limit: 1,
            atLeast: false,
          },
        ].map(judged);
  });

  const report: Report = {
    date: new Date().toISOString(),
    machine:
      `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} ` +
      `GiB${PINNING ? ', servers pinned to core 1' : ', not pinned (no taskset)'}`,
    rounds: ROUNDS,
    secondsPerRun: SECONDS,
    connections: CONNECTIONS,
    halfRateRounds: LATENCY_ROUNDS,
    runtimes: results,
    acrossRuntimes,
  };
  const markdown = renderMarkdown(report);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(RESULTS, 'latest.md'), markdown);
  process.stdout.write(markdown);

  for (const server of [...on.flatMap((o) => [...Object.values(o.servers), o.sink]), upstream]) server.stop();
  const unexported = results.filter((r) => r.tracing.exported.bytes === 0);
  for (const r of unexported) {
    process.stderr.write(`INVALID: node ${r.runtime.version}: the trace sink received nothing, so tracing on was not measured\n`);
  }
  const halfRateErrors = [...halfRateRounds.values()]
    .flat()
    .reduce((sum, round) => sum + round.passthrough.errors + round.proxy.errors + round.passthroughAtA.errors + round.cached.errors, 0);
  const failed = results.some(
    (r) =>
      r.summaries.some((s) => s.errors > 0) ||
      r.wrk.some((s) => s.errors > 0) ||
      r.tracing.errors > 0 ||
      r.hotPairs.autocannon.errors > 0 ||
      (r.hotPairs.wrk?.errors ?? 0) > 0,
  );
  if (failed || halfRateErrors > 0 || unexported.length > 0) process.exitCode = 1;
}

/** One runtime's summaries, its p99s at half of the proxy's peak, and its targets. */
function resultOf(
  runtime: Runtime,
  summaries: readonly Summary[],
  halfRates: { readonly proxy: number; readonly passthrough: number },
  halfRateRounds: readonly HalfRateRound[],
  heap: LiveHeap,
  wrkSummaries: readonly Throughput[],
  pairs: RuntimePairs,
  exported: Exported,
): RuntimeResult {
  const halfRate = halfRates.proxy;
  const [passthrough, facade, checkedFacade, proxySoap11, cachedSoap11, wire] = [PASSTHROUGH, FACADE, CHECKED_FACADE, PROXY, HOT, WIRE].map(
    (name) => named(summaries, name),
  ) as [Summary, Summary, Summary, Summary, Summary, Summary];
  // Added p99s: the median of each round's difference, (a) and the proxy measured seconds apart in it,
  // so that a stall of the machine that spoils both in one round is not read as the proxy's.
  const cachedAddedP99 = median(halfRateRounds.map((round) => round.cached.p99Ms - round.passthroughAtA.p99Ms));
  const halfRateP99s = {
    passthrough: halfRateRounds.map((round) => round.passthrough.p99Ms),
    proxy: halfRateRounds.map((round) => round.proxy.p99Ms),
  };
  const p99PassthroughAtHalf = median(halfRateP99s.passthrough);
  const p99ProxyAtHalf = median(halfRateP99s.proxy);
  const addedP99AtHalf = median(halfRateRounds.map((round) => round.proxy.p99Ms - round.passthrough.p99Ms));
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
  const byName = (prefix: string): Summary => summaries.find((s) => s.name.startsWith(prefix)) as Summary;
  const onePage = byName('proxy: StoreLookupPaged');
  const tenPages = byName('proxy: StoreLookup,');
  const tracing = tracingOf(pairs.tracing, exported);
  const hotPairs = { autocannon: pairedRatios(pairs.hot), wrk: pairs.hotWrk.length > 0 ? pairedRatios(pairs.hotWrk) : null };
  const targets = [
    {
      target: 'Search over SOAP 1.1 ≥ 0.8 × (a) req/s',
      value: proxySoap11.requestsPerSecond / passthrough.best.requestsPerSecond,
      limit: 0.8,
      atLeast: true,
    },
    {
      target: 'Search over SOAP 1.1 ≥ 1.0 × (b) req/s',
      value: proxySoap11.requestsPerSecond / facade.best.requestsPerSecond,
      limit: 1.0,
      atLeast: true,
      information: 'the bar is (b2)',
    },
    ...checkedFacadeTargets('', proxySoap11, checkedFacade),
    {
      target: `added p99 over (a) at ${halfRate} req/s, the median of the rounds' differences ≤ 1 ms`,
      value: addedP99AtHalf,
      limit: 1,
      atLeast: false,
    },
    ...hotTargets('', cachedSoap11, wire, passthrough, hotPairs.autocannon),
    {
      target:
        `cache on: added p99 of cached pages over (a) at ${halfRates.passthrough} req/s (half of (a)'s peak), the median of the ` +
        "rounds' differences ≤ 1 ms",
      value: cachedAddedP99,
      limit: 1,
      atLeast: false,
    },
    {
      target: 'AdvancedSearch, 60 items over 2 pages ≥ 0.5 × (a) req/s',
      value: byName('proxy: AdvancedSearch').requestsPerSecond / passthrough.best.requestsPerSecond,
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
      target: `proxy memory flat: live heap growth from the second round to the last of ${HEAP_ROUNDS} (least-squares line) ≤ 10 %`,
      value: heap.growth,
      limit: 0.1,
      atLeast: false,
    },
    ...wrkTargets(wrkSummaries, hotPairs.wrk),
  ]
    .map(judged)
    .concat(tracingTarget(tracing));
  return {
    runtime,
    summaries,
    tracing,
    hotPairs,
    wrk: wrkSummaries,
    halfRate,
    halfRateP99s,
    p99PassthroughAtHalf,
    p99ProxyAtHalf,
    addedP99AtHalf,
    pooledP99AtHalf,
    loadGeneratorLatenessP99Ms,
    liveHeapMiB: heap.rounds,
    targets,
  };
}

/** Tracing on (`measured`) × off (`baseline`), and what the sink received. */
function tracingOf(pairs: readonly Paired<Run>[], exported: Exported): TracingResult {
  return { ...pairedRatios(pairs), exported };
}

/** Tracing on × off, not met however fast when the sink received nothing (nothing was then exported). */
function tracingTarget(tracing: TracingResult): Target {
  const target = judged({
    target:
      `tracing on × off (sampler ratio 1.0, collector on loopback): SOAP 1.1 Search ≥ ${TRACING_TARGET} × req/s` +
      (tracing.exported.bytes === 0 ? ' (**invalid**: the sink received nothing)' : ''),
    value: tracing.requests,
    limit: TRACING_TARGET,
    atLeast: true,
  });
  return { ...target, met: target.met && tracing.exported.bytes > 0 };
}

/** With wrk: the proxy's Search over SOAP 1.1 against (b) and (b2), its cache hit against (z) and (a). */
function wrkTargets(summaries: readonly Throughput[], hotPairs: PairedRatios | null): Goal[] {
  const [passthrough, facade, checkedFacade, proxy, cached, wire] = [PASSTHROUGH, FACADE, CHECKED_FACADE, PROXY, HOT, WIRE].map((name) =>
    summaries.find((s) => s.name === name),
  );
  if (passthrough === undefined || facade === undefined || checkedFacade === undefined) return [];
  if (proxy === undefined || cached === undefined || wire === undefined) return [];
  return [
    {
      target: 'wrk: Search over SOAP 1.1 ≥ 1.0 × (b) req/s',
      value: proxy.requestsPerSecond / facade.best.requestsPerSecond,
      limit: 1,
      atLeast: true,
      information: 'the bar is (b2)',
    },
    {
      target: 'wrk: Search over SOAP 1.1 CPU per call ≤ 1.0 × (b)',
      value: proxy.cpuMsPerRequest / facade.best.cpuMsPerRequest,
      limit: 1,
      atLeast: false,
      information: 'the bar is (b2)',
    },
    ...checkedFacadeTargets('wrk: ', proxy, checkedFacade),
    ...(hotPairs === null ? [] : hotTargets('wrk: ', cached, wire, passthrough, hotPairs)),
  ];
}

/** The cold proxy against (b2), the facade doing the same job (issue 32): req/s and CPU a call. */
function checkedFacadeTargets(prefix: string, proxy: Throughput, checkedFacade: Throughput): Goal[] {
  return [
    {
      target: `${prefix}Search over SOAP 1.1 ≥ 1.0 × (b2) req/s`,
      value: proxy.requestsPerSecond / checkedFacade.best.requestsPerSecond,
      limit: 1,
      atLeast: true,
    },
    {
      target: `${prefix}Search over SOAP 1.1 CPU per call ≤ 1.0 × (b2)`,
      value: proxy.cpuMsPerRequest / checkedFacade.best.cpuMsPerRequest,
      limit: 1,
      atLeast: false,
    },
  ];
}

/**
 * A cache hit (hot Search over SOAP 1.1) against (z) and the raw splice (a) (issue 32). Against (z) it
 * is judged on the pairs back to back (`backToBack`): the two serve within about a fifth of each
 * other, while the machine's speed moved by half from one round to the next (docs/performance.md,
 * "Judged in pairs"). The interleaved rounds' reading, the proxy's median against (z)'s best round,
 * is shown beside it.
 */
function hotTargets(prefix: string, cached: Throughput, wire: Throughput, passthrough: Throughput, paired: PairedRatios): Goal[] {
  const rounds = { information: 'judged on the pairs' };
  const requests = `${prefix}cache on, hot Search over SOAP 1.1 ≥ ${HOT_TARGETS.wireRequests} × (z) req/s`;
  const cpu = `${prefix}cache on, hot Search over SOAP 1.1 CPU per call ≤ ${HOT_TARGETS.wireCpu} × (z)`;
  const againstBest = "the rounds' median against (z)'s best";
  return [
    {
      target: `${requests}, the median of ${paired.requestRatios.length} pairs`,
      value: paired.requests,
      limit: HOT_TARGETS.wireRequests,
      atLeast: true,
    },
    {
      target: `${cpu}, the median of ${paired.cpuRatios.length} pairs`,
      value: paired.cpu,
      limit: HOT_TARGETS.wireCpu,
      atLeast: false,
    },
    {
      target: `${requests}, ${againstBest}`,
      value: cached.requestsPerSecond / wire.best.requestsPerSecond,
      limit: HOT_TARGETS.wireRequests,
      atLeast: true,
      ...rounds,
    },
    {
      target: `${cpu}, ${againstBest}`,
      value: cached.cpuMsPerRequest / wire.best.cpuMsPerRequest,
      limit: HOT_TARGETS.wireCpu,
      atLeast: false,
      ...rounds,
    },
    {
      target: `${prefix}cache on, hot Search over SOAP 1.1 ≥ ${HOT_TARGETS.passthroughRequests} × (a) req/s`,
      value: cached.requestsPerSecond / passthrough.best.requestsPerSecond,
      limit: HOT_TARGETS.passthroughRequests,
      atLeast: true,
    },
  ];
}

/** Rounds of the live-heap measurement: enough for a line through them to tell a leak from a step. */
const HEAP_ROUNDS = Math.max(ROUNDS, 6);

interface LiveHeap {
  /** After each round, MiB. */
  readonly rounds: readonly number[];
  /** Along the least-squares line through the rounds from the second: from the second to the last. */
  readonly growth: number;
}

/**
 * The proxy's live heap (after a full collection) at the end of each of HEAP_ROUNDS rounds of
 * `scenarios`, and its growth along a line fitted from the second round (the first still fills caches
 * and pools) to the last. A leak grows every round; comparing two rounds alone read one round's
 * step (a pool's or V8's own) as growth.
 */
async function liveHeap(proxy: Server, scenarios: readonly Scenario[]): Promise<LiveHeap> {
  const rounds: number[] = [];
  for (let round = 1; round <= HEAP_ROUNDS; round++) {
    for (const scenario of scenarios) await measure(proxy.url, proxy, scenario);
    rounds.push((await proxy.usage(true)).heapMiB);
    process.stderr.write('.');
  }
  const afterFirst = rounds.slice(1);
  const mean = (values: readonly number[]): number => values.reduce((sum, v) => sum + v, 0) / values.length;
  const xs = afterFirst.map((_, i) => i);
  const [meanX, meanY] = [mean(xs), mean(afterFirst)];
  const slope =
    xs.reduce((sum, x, i) => sum + (x - meanX) * ((afterFirst[i] as number) - meanY), 0) / xs.reduce((sum, x) => sum + (x - meanX) ** 2, 0);
  const atSecond = meanY - slope * meanX;
  return { rounds, growth: (slope * (afterFirst.length - 1)) / atSecond };
}

/** The store of the bench upstream's catalog (the same seed and size) whose size is nearest `designs`. */
function storeOfAbout(designs: number): { storeId: string; designs: number } {
  const catalog = generateCatalog(catalogOptions(loadConfig({}, { demo: { designs: BENCH_DESIGNS } })));
  const counts = catalog.stores.map((store) => ({ storeId: store.id, designs: catalog.designs.filter((d) => d.store === store).length }));
  return counts.reduce((a, b) => (Math.abs(b.designs - designs) < Math.abs(a.designs - designs) ? b : a));
}

const ms = (value: number): string => value.toFixed(2);

/** A target and what was measured of it: at least, or at most, `limit`. */
interface Goal {
  readonly target: string;
  readonly value: number;
  readonly limit: number;
  readonly atLeast: boolean;
  /**
   * Shown, not judged, and why: (b) passes the page on unchecked, so the bar is (b2); a cache hit
   * against (z) is judged on pairs back to back, not on the rounds (issue 32).
   */
  readonly information?: string;
}

interface Target extends Goal {
  readonly met: boolean;
}

function judged(goal: Goal): Target {
  return { ...goal, met: goal.atLeast ? goal.value >= goal.limit : goal.value <= goal.limit };
}

/** What was measured on one runtime. */
/** One round at half rate: (a) and the cold proxy at half of the proxy's peak; (a) and the cached proxy at half of (a)'s. */
interface HalfRateRound {
  readonly passthrough: LatencyRun;
  readonly proxy: LatencyRun;
  readonly passthroughAtA: LatencyRun;
  readonly cached: LatencyRun;
}

/** What the trace sink of one runtime received, since start (warm-up included). */
interface Exported {
  /** OTLP export requests (POST /v1/traces) and their bodies' bytes. */
  readonly requests: number;
  readonly bytes: number;
  /** Spans the traced proxy did not send: its queue full, or an export failed. */
  readonly droppedSpans: { readonly queueFull: number; readonly exportFailed: number };
}

/**
 * The cold proxy's SOAP 1.1 Search with tracing on (`measured`) against off (`baseline`), in pairs of
 * runs back to back (`backToBack`), judged on `requests`, the median of the pairs' req/s ratios.
 */
interface TracingResult extends PairedRatios {
  readonly exported: Exported;
}

interface RuntimeResult {
  readonly runtime: Runtime;
  readonly summaries: readonly Summary[];
  readonly tracing: TracingResult;
  /** A cache hit against (z) in pairs back to back, under autocannon and (null without it) wrk. */
  readonly hotPairs: { readonly autocannon: PairedRatios; readonly wrk: PairedRatios | null };
  /** (a), (b) and the proxy under wrk; empty without wrk. */
  readonly wrk: readonly Throughput[];
  /** Half of the proxy's own SOAP 1.1 Search peak on this runtime. */
  readonly halfRate: number;
  readonly halfRateP99s: { readonly passthrough: readonly number[]; readonly proxy: readonly number[] };
  readonly p99PassthroughAtHalf: number;
  readonly p99ProxyAtHalf: number;
  /** The median of the rounds' differences, proxy − (a). */
  readonly addedP99AtHalf: number;
  readonly pooledP99AtHalf: { readonly passthrough: number; readonly proxy: number };
  readonly loadGeneratorLatenessP99Ms: number;
  /** The proxy's live heap after each round of its memory measurement. */
  readonly liveHeapMiB: readonly number[];
  readonly targets: readonly Target[];
}

/** What bench/results/latest.json holds, and latest.md shows. */
interface Report {
  readonly date: string;
  readonly machine: string;
  readonly rounds: number;
  readonly secondsPerRun: number;
  readonly connections: number;
  readonly halfRateRounds: number;
  readonly runtimes: readonly RuntimeResult[];
  /** The proxy on each newer runtime against the oldest. */
  readonly acrossRuntimes: readonly Target[];
}

const roundsOf = (summary: Throughput): string => summary.roundsRequestsPerSecond.map((r) => Math.round(r)).join(' · ');

function wrkRows(summaries: readonly Throughput[], rounds: number): string[] {
  const facade = summaries.find((s) => s.name === FACADE);
  if (facade === undefined) return ['wrk was not found: measured with autocannon only.', ''];
  return [
    `With wrk (1 thread, ${CONNECTIONS} connections, ${rounds} interleaved rounds of ${SECONDS} s; medians, × (b) against the best of ` +
      `(b)'s rounds):`,
    '',
    '| scenario | req/s | rounds | × (b) | CPU ms/req | CPU × (b) | peak RSS MiB | errors |',
    '|---|---|---|---|---|---|---|---|',
    ...summaries.map(
      (s) =>
        `| ${s.name} | ${Math.round(s.requestsPerSecond)} | ${roundsOf(s)} | ` +
        `${(s.requestsPerSecond / facade.best.requestsPerSecond).toFixed(2)} | ${s.cpuMsPerRequest.toFixed(2)} | ` +
        `${(s.cpuMsPerRequest / facade.best.cpuMsPerRequest).toFixed(2)} | ${Math.round(s.peakRssMiB)} | ${s.errors} |`,
    ),
    '',
  ];
}

function tracingRow({ requests, requestRatios, measured: on, baseline: off, exported }: TracingResult): string {
  const kib = (exported.bytes / 1024).toFixed(0);
  return (
    `Tracing on × off (sampler ratio 1.0, every span sent over OTLP/HTTP protobuf to a collector on loopback), SOAP 1.1 Search: ` +
    `${requests.toFixed(2)} (target ≥ ${TRACING_TARGET}; the median of ${requestRatios.length} pairs, off and on back to back: ` +
    `${requestRatios.map((r) => r.toFixed(2)).join(' · ')}): ${Math.round(on.requestsPerSecond)} against ` +
    `${Math.round(off.requestsPerSecond)} req/s, CPU ${on.cpuMsPerRequest.toFixed(2)} against ` +
    `${off.cpuMsPerRequest.toFixed(2)} ms/req (medians). ` +
    (exported.bytes === 0
      ? '**Invalid: the collector received nothing.**'
      : `The collector received ${exported.requests} exports, ${kib} KiB; spans dropped: ${exported.droppedSpans.queueFull} ` +
        `with the queue full, ${exported.droppedSpans.exportFailed} in failed exports.`)
  );
}

/** The cache hit against (z) in pairs back to back, each pair's ratios and their medians. */
function hotPairsRow({ autocannon, wrk }: RuntimeResult['hotPairs']): string {
  const ratios = (values: readonly number[]): string => values.map((r) => r.toFixed(2)).join(' · ');
  const reading = (generator: string, paired: PairedRatios): string =>
    `${generator}, ${paired.requests.toFixed(2)} × (z) by req/s (${ratios(paired.requestRatios)}) and ` +
    `${paired.cpu.toFixed(2)} × its CPU a call (${ratios(paired.cpuRatios)}): ${Math.round(paired.measured.requestsPerSecond)} ` +
    `against ${Math.round(paired.baseline.requestsPerSecond)} req/s, ${paired.measured.cpuMsPerRequest.toFixed(3)} against ` +
    `${paired.baseline.cpuMsPerRequest.toFixed(3)} ms of CPU a call (medians), ${paired.errors} errors`;
  return (
    `Cache on, hot Search over SOAP 1.1 against (z) in ${autocannon.requestRatios.length} pairs of runs back to back, each pair in ` +
    `the other order than the last (medians of the pairs, each pair's in order): ${reading('autocannon', autocannon)}` +
    `${wrk === null ? '' : `; ${reading('wrk', wrk)}`}.`
  );
}

function verdict(target: Target): string {
  if (target.information !== undefined) return `information: ${target.information}`;
  return target.met ? 'met' : '**not met**';
}

function renderMarkdown(report: Report): string {
  const targetRows = (targets: readonly Target[]): string[] =>
    targets.map((t) => `| ${t.target} | ${t.value.toFixed(2)} | ${verdict(t)} |`);
  const sections = report.runtimes.flatMap((r) => {
    const [passthrough, facade] = [named(r.summaries, PASSTHROUGH), named(r.summaries, FACADE)];
    const rows = r.summaries.map(
      (s) =>
        `| ${s.name} | ${Math.round(s.requestsPerSecond)} | ${roundsOf(s)} | ` +
        `${(s.requestsPerSecond / passthrough.best.requestsPerSecond).toFixed(2)} | ` +
        `${(s.requestsPerSecond / facade.best.requestsPerSecond).toFixed(2)} | ${s.p50Ms} | ${s.p99Ms} | ` +
        `${s.cpuMsPerRequest.toFixed(2)} | ${Math.round(s.peakRssMiB)} | ${s.errors} |`,
    );
    return [
      `#### node ${r.runtime.version}`,
      '',
      "Medians of the rounds; × (a) and × (b) against the best of that baseline's rounds.",
      '',
      '| scenario | req/s | rounds | × (a) | × (b) | p50 ms | p99 ms | CPU ms/req | peak RSS MiB | errors |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `At ${r.halfRate} req/s (half of the proxy's own SOAP 1.1 peak), open loop, ${report.halfRateRounds} interleaved rounds of ` +
        `${report.secondsPerRun} s: added p99 ${ms(r.addedP99AtHalf)} ms (the median of the rounds' differences, proxy − (a)); ` +
        `p99 (a) ${ms(r.p99PassthroughAtHalf)} ms, proxy SOAP 1.1 ${ms(r.p99ProxyAtHalf)} ms (medians; the ` +
        `rounds' p99s: (a) ${r.halfRateP99s.passthrough.map(ms).join(', ')}; proxy ${r.halfRateP99s.proxy.map(ms).join(', ')}). Over ` +
        `all rounds' answers together: p99 (a) ${ms(r.pooledP99AtHalf.passthrough)} ms, proxy ${ms(r.pooledP99AtHalf.proxy)} ms. ` +
        `The load generator itself sent up to ${ms(r.loadGeneratorLatenessP99Ms)} ms late (p99), the same for both.`,
      '',
      tracingRow(r.tracing),
      '',
      hotPairsRow(r.hotPairs),
      '',
      ...wrkRows(r.wrk, report.rounds),
      `The proxy's live heap after a full collection, after each of ${r.liveHeapMiB.length} rounds of its cold throughput scenarios: ` +
        `${r.liveHeapMiB.map((m) => m.toFixed(1)).join(', ')} MiB.`,
      '',
      '| target | measured | |',
      '|---|---|---|',
      ...targetRows(r.targets),
      '',
    ];
  });
  const across =
    report.acrossRuntimes.length === 0
      ? []
      : ['#### Across runtimes', '', '| target | measured | |', '|---|---|---|', ...targetRows(report.acrossRuntimes), ''];
  return [
    `Benchmark of ${report.date.slice(0, 10)}: ${report.machine}; node ${report.runtimes.map((r) => r.runtime.version).join(' and ')}, ` +
      `every runtime's servers measured in the same interleaved rounds; ${report.rounds} rounds of ${report.secondsPerRun} s, ` +
      `${report.connections} connections (1 for the StoreLookup latency rows); medians.`,
    '',
    ...sections,
    ...across,
  ].join('\n');
}

await main();
