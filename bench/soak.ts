import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config/load.js';
import { PINNING, RESULTS, startServer, type Usage } from './children.js';
import { soapCall, type BenchRequest } from './requests.js';

/**
 * `npm run soak -- --minutes 10 --rate 200`: mixed traffic over every operation and binding at a
 * steady rate, against the proxy (its own core) and the cached demo upstream; reports errors, latency
 * percentiles and the proxy's memory over time, to the terminal and bench/results/soak.{json,md}.
 * Exits non-zero on any unexpected answer or if resident memory grew by 10 % or more.
 */

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '10' }, rate: { type: 'string', default: '200' } } });
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const SAMPLE_SECONDS = 15;

const form = (op: string, query: string): BenchRequest => ({
  method: 'POST',
  path: `/index.asmx/${op}`,
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: query,
});
const get = (op: string, query: string): BenchRequest => ({ method: 'GET', path: `/index.asmx/${op}?${query}` });

/** Every operation on every binding, answered 200 by the demo catalog. */
const CALLS: readonly BenchRequest[] = [
  soapCall('1.1', 'Search', '<query>dog</query><apiKey>soak-1</apiKey>'),
  soapCall(
    '1.2',
    'AdvancedSearch',
    '<query></query><productTypes>Mug,2</productTypes><startResults>41</startResults><maxResults>60</maxResults>',
  ),
  soapCall('1.1', 'StoreLookupPaged', '<storeId>teeshack</storeId><pageIndex>1</pageIndex><pageSize>25</pageSize>'),
  soapCall('1.2', 'StoreLookup', '<storeId>dogdaycafe</storeId>'),
  soapCall('1.1', 'ProductLookup', '<productNumber>1</productNumber>'),
  get('Search', 'query=cat&apiKey=soak-2'),
  get('AdvancedSearch', 'query=&sort=by-date-desc&startResults=0&maxResults=20'),
  get('StoreLookup', 'storeId=pixelpress'),
  form('StoreLookupPaged', 'storeId=spayneuter&pageIndex=0&pageSize=30'),
  form('ProductLookup', 'productNumber=2&apiKey=soak-3'),
  form('Search', 'query=mug'),
];

async function main(): Promise<void> {
  if (PINNING) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)]);
  const upstream = await startServer('upstream', 0, { designs: 1200 });
  // The proxy as configured by default: its page cache on (cache.enabled), as every instance runs.
  const proxy = await startServer('proxy', 1, { upstream: upstream.url });
  const pageCache = loadConfig({}).cache.enabled ? 'on' : 'off';
  const samples: (Usage & { readonly minute: number })[] = [];
  const started = performance.now();
  const sample = async (): Promise<void> => {
    samples.push({ ...(await proxy.usage(true)), minute: (performance.now() - started) / 60_000 });
  };
  await sample();
  const sampler = setInterval(() => void sample(), SAMPLE_SECONDS * 1000);
  const result = await autocannon({
    url: proxy.url,
    requests: CALLS.map((call) => ({
      method: call.method,
      path: call.path,
      ...(call.headers ? { headers: call.headers } : {}),
      ...(call.body ? { body: call.body } : {}),
    })),
    connections: 16,
    overallRate: RATE,
    duration: MINUTES * 60,
  });
  clearInterval(sampler);
  await sample();
  const upstreamRequests = (await upstream.usage()).upstreamRequests ?? 0;
  proxy.stop();
  upstream.stop();

  // The first sample is before any load: growth counts from the first one under load.
  const loaded = samples.slice(1);
  const first = loaded[0] as Usage;
  const last = loaded[loaded.length - 1] as Usage;
  const report = {
    minutes: MINUTES,
    rate: RATE,
    requests: result.requests.total,
    pageCache,
    upstreamRequests,
    unexpected: result.non2xx + result.errors + result.timeouts,
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    rssGrowth: last.rssMiB / first.rssMiB - 1,
    heapGrowth: last.heapMiB / first.heapMiB - 1,
    samples: samples.map((s) => ({
      minute: Number(s.minute.toFixed(2)),
      rssMiB: Math.round(s.rssMiB),
      heapMiB: Number(s.heapMiB.toFixed(1)),
    })),
  };
  const markdown = [
    `Soak of ${new Date().toISOString().slice(0, 10)}: ${MINUTES} min at ${RATE} req/s over ${CALLS.length} calls (every operation, ` +
      `every binding), node ${process.version}; the page cache ${pageCache} (the default), ${upstreamRequests} upstream requests in all.`,
    '',
    `| requests | unexpected answers | p50 ms | p90 ms | p99 ms | max ms | RSS growth | live heap growth |`,
    '|---|---|---|---|---|---|---|---|',
    `| ${report.requests} | ${report.unexpected} | ${report.latencyMs.p50} | ${report.latencyMs.p90} | ${report.latencyMs.p99} | ` +
      `${report.latencyMs.max} | ${(report.rssGrowth * 100).toFixed(1)} % | ${(report.heapGrowth * 100).toFixed(1)} % |`,
    '',
    `Resident memory (MiB) every ${SAMPLE_SECONDS} s: ${report.samples.map((s) => s.rssMiB).join(', ')}.`,
    '',
  ].join('\n');
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'soak.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(RESULTS, 'soak.md'), markdown);
  process.stdout.write(markdown);
  if (report.unexpected > 0 || report.rssGrowth >= 0.1) process.exitCode = 1;
}

await main();
