import autocannon from 'autocannon';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startDemoUpstream } from '../src/demo/upstream.js';
import { buildApp } from '../src/server/app.js';

/**
 * Throughput, latency and memory of the proxy, as ratios against a baseline measured in the same
 * run: the demo upstream called directly with the request the proxy makes. The machines are noisy,
 * so only the ratios mean anything from one run to the next.
 *
 *   npm run bench            # 5 s per scenario
 *   BENCH_SECONDS=20 npm run bench
 *
 * Everything runs in this one process (load generator, proxy, upstream), so absolute numbers are
 * lower than on a real deployment; the ratio is what to compare across changes.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 16;
const NS = 'http://tempuri.org/';

interface Scenario {
  readonly name: string;
  readonly url: string;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

interface Measured {
  readonly name: string;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  readonly heapGrowthMiB: number;
}

function soapSearch(query: string): string {
  return `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><Search xmlns="${NS}"><query>${query}</query></Search></soap:Body></soap:Envelope>`;
}

function heapMiB(): number {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

async function measure(scenario: Scenario): Promise<Measured> {
  const heapBefore = heapMiB();
  const result = await autocannon({
    url: scenario.url,
    method: scenario.method ?? 'GET',
    headers: scenario.headers,
    body: scenario.body,
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  return {
    name: scenario.name,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
    heapGrowthMiB: heapMiB() - heapBefore,
  };
}

async function main(): Promise<void> {
  const config = loadConfig({}, { log: { level: 'silent' } });
  const demo = await startDemoUpstream(config);
  const appKey = 'bench-app-key';
  const proxied = loadConfig({}, { log: { level: 'silent' }, upstream: { baseUrl: demo.url, appKey } });
  const { fastify } = await buildApp(proxied, { logger: pino({ level: 'silent' }) });
  const proxy = await fastify.listen({ host: '127.0.0.1', port: 0 });

  const scenarios: Scenario[] = [
    { name: 'baseline: upstream search, direct', url: `${demo.url}/product.search.cp?v=3&appKey=${appKey}&query=dog` },
    { name: 'proxy: HTTP GET Search', url: `${proxy}/index.asmx/Search?query=dog` },
    {
      name: 'proxy: SOAP 1.1 Search',
      url: `${proxy}/index.asmx`,
      method: 'POST',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}Search"` },
      body: soapSearch('dog'),
    },
    { name: 'proxy: AdvancedSearch over 2 pages', url: `${proxy}/index.asmx/AdvancedSearch?query=&startResults=90&maxResults=150` },
  ];

  const results: Measured[] = [];
  for (const scenario of scenarios) results.push(await measure(scenario));
  const baseline = results[0] as Measured;

  console.log(`${SECONDS}s per scenario, ${CONNECTIONS} connections, node ${process.version}${globalThis.gc ? '' : ' (run with --expose-gc for heap figures)'}`);
  console.table(
    results.map((r) => ({
      scenario: r.name,
      'req/s': Math.round(r.requestsPerSecond),
      'vs baseline': (r.requestsPerSecond / baseline.requestsPerSecond).toFixed(2),
      'p50 ms': r.p50Ms,
      'p99 ms': r.p99Ms,
      'p99 vs baseline': (r.p99Ms / Math.max(baseline.p99Ms, 1)).toFixed(2),
      errors: r.errors,
      'heap growth MiB': r.heapGrowthMiB.toFixed(1),
    })),
  );
  console.log(`rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB at the end`);

  await fastify.close();
  await demo.close();
  if (results.some((r) => r.errors > 0)) process.exitCode = 1;
}

await main();
