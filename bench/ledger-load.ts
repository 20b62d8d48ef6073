import { Agent, get } from 'node:http';
import autocannon from 'autocannon';
import { Registry } from 'prom-client';
import { createFleetLedger } from '../src/deprecation/fleet-ledger.js';
import { createShared } from '../src/redis/shared.js';
import { startRedis } from '../test/support/redis.js';
import { startServer } from './children.js';
import { soapCall } from './requests.js';

/**
 * What `/ledger` costs the service (issue 27, item 2): the proxy (its own core) answers Search over
 * SOAP 1.1 from 10 connections for 5 s, alone and while two clients ask `/ledger?limit=100` back to
 * back, over a fleet ledger of 10,000 entries in a real Redis. Rounds alternate; the medians are
 * compared: calls/s with the pollers should stay at 80 % or more, p99 at 2 x or less.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/ledger-load.js
 *
 * Needs redis-server. Results in docs/performance.md (The ledger under polling).
 */

const SECONDS = 5;
const ROUNDS = 5;
const CONNECTIONS = 10;
const ENTRIES = 10_000;
const POLLERS = 2;
const KEY = 'bench-client-id-key-0123456789abcdef';
const TOKEN = 'bench-operator-token-0123456789abcdef';
const search = soapCall('1.1', 'Search', '<query>dog</query><apiKey>bench-key</apiKey>');

interface Round {
  readonly callsPerSecond: number;
  readonly p99Ms: number;
  /** Answers of /ledger in the round, and their latencies in ms. */
  readonly ledgerMs: readonly number[];
}

/** Fills the fleet ledger as instances would: one merge of `ENTRIES` unnamed callers, each with a successor of 200 characters. */
async function fill(url: string): Promise<void> {
  const settings = { url, keyPrefix: 'catalog-proxy:', commandTimeoutMs: 5000, connectTimeoutMs: 1000 };
  const shared = createShared(settings, new Registry(), { warn: () => {}, info: () => {} }, KEY);
  const ledger = createFleetLedger(shared, { retentionDays: 90, flushIntervalMs: 3_600_000 });
  while (!shared.available()) await new Promise((resolve) => setTimeout(resolve, 25));
  for (let i = 0; i < ENTRIES; i++) {
    const client = `hmac:${i.toString(16).padStart(12, '0')}`;
    const successor = `/product.search.cp?v=3&query=${'x'.repeat(200)}`;
    ledger?.add({ client, clientLabel: 'other', operation: 'Search', binding: 'soap11', outcome: 'ok', successor }, Date.now());
  }
  await ledger?.close();
  await shared.close();
}

/** Kept alive, and the answer's bytes dropped as they come: the poller's own cost must not be what is measured. */
const agent = new Agent({ keepAlive: true });

/** One client asking `/ledger?limit=100` back to back until `until`. */
async function poll(url: string, until: number, latencies: number[]): Promise<void> {
  while (performance.now() < until) {
    const started = performance.now();
    const status = await new Promise<number>((resolve, reject) => {
      get(`${url}/ledger?limit=100`, { agent, headers: { authorization: `Bearer ${TOKEN}` } }, (response) => {
        response.on('end', () => resolve(response.statusCode ?? 0)).resume();
      }).on('error', reject);
    });
    if (status !== 200) throw new Error(`/ledger answered ${status}`);
    latencies.push(performance.now() - started);
  }
}

async function round(url: string, pollers: number): Promise<Round> {
  const ledgerMs: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  const [result] = await Promise.all([
    autocannon({
      url: `${url}${search.path}`,
      method: search.method,
      headers: search.headers,
      body: search.body,
      connections: CONNECTIONS,
      duration: SECONDS,
    }),
    ...Array.from({ length: pollers }, () => poll(url, until, ledgerMs)),
  ]);
  if (result.errors + result.non2xx > 0) throw new Error(`calls failed: ${result.errors} errors, ${result.non2xx} not 2xx`);
  return { callsPerSecond: result.requests.total / SECONDS, p99Ms: result.latency.p99, ledgerMs };
}

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const quantile = (values: readonly number[], q: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? NaN;

const redis = await startRedis();
try {
  await fill(redis.url);
  const upstream = await startServer('upstream', 0, {});
  // /ledger on the service's port, so that the pollers and the calls share one process's one core: it then asks for the token.
  const server = { operatorOnServicePort: ['/ledger'], adminToken: TOKEN };
  const proxyConfig = { redis: { url: redis.url }, deprecation: { clientIdKey: KEY }, server };
  const proxy = await startServer('proxy', 1, { upstream: upstream.url, proxyConfig });
  try {
    // Warm-up: JIT, pools, the page cache, and the first read of the fleet's ledger.
    await round(proxy.url, POLLERS);
    const alone: Round[] = [];
    const polled: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      alone.push(await round(proxy.url, 0));
      polled.push(await round(proxy.url, POLLERS));
    }
    const ledgerMs = polled.flatMap((one) => one.ledgerMs);
    // The proxy's CPU per answer of /ledger, with nothing else asked of it.
    const before = await proxy.usage();
    const pollerMs: number[] = [];
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: POLLERS }, () => poll(proxy.url, until, pollerMs)));
    const cpuUsPerLedger = (1000 * ((await proxy.usage()).cpuMs - before.cpuMs)) / pollerMs.length;
    const summary = {
      alone: { callsPerSecond: median(alone.map((one) => one.callsPerSecond)), p99Ms: median(alone.map((one) => one.p99Ms)) },
      polled: { callsPerSecond: median(polled.map((one) => one.callsPerSecond)), p99Ms: median(polled.map((one) => one.p99Ms)) },
      ledger: { calls: ledgerMs.length, p50Ms: quantile(ledgerMs, 0.5), p99Ms: quantile(ledgerMs, 0.99) },
      ledgerAlone: { calls: pollerMs.length, p50Ms: quantile(pollerMs, 0.5), cpuUsPerLedger },
    };
    const ratio = summary.polled.callsPerSecond / summary.alone.callsPerSecond;
    const p99Ratio = summary.polled.p99Ms / Math.max(summary.alone.p99Ms, 1);
    const rounds = (runs: readonly Round[]) => runs.map(({ callsPerSecond, p99Ms, ledgerMs: ms }) => [callsPerSecond, p99Ms, ms.length]);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(
      `rounds [calls/s, p99 ms, /ledger answers]: alone ${JSON.stringify(rounds(alone))}, polled ${JSON.stringify(rounds(polled))}\n`,
    );
    process.stdout.write(`calls/s with ${POLLERS} pollers: ${(100 * ratio).toFixed(0)} % of alone; p99 ${p99Ratio.toFixed(2)} x\n`);
  } finally {
    proxy.stop();
    upstream.stop();
  }
} finally {
  await redis.stop();
}
