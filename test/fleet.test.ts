import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { CALL_BINDINGS, legacyCall } from './support/calls.js';
import { requireClient } from './support/clients.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import {
  type CallResult,
  FLEET_MISSING,
  type Fleet,
  type FleetInstance,
  freePort,
  haproxyBinary,
  masheryQpsLimit,
  skipFleetSuite,
  startFleet,
  startLoad,
  TEST_HEALTH_CHECKS,
  detectionMs,
  waitUntil,
} from './support/fleet.js';
import { API_KEY, type CallSpec, everyCall, nameOf, shed, succeeded, told, unreachableFault } from './support/fleet-calls.js';

/**
 * A real fleet (issue 18, item 7; docs/fleet.md): three proxies as production runs them, Redis and
 * HAProxy checking `/readyz`, all on loopback (test/support/fleet.ts). Without redis-server or haproxy
 * the suite is skipped and says so, unless REQUIRE_OTHER_CLIENTS=1 (.ci/run installs them).
 *
 * A failed call is a connection error, a timeout, a 5xx or a reply that is not the operation's result.
 */

const ROOT = join(import.meta.dirname, '..');

// --- Calls ----------------------------------------------------------------------------------------------

/** `perSecond` calls through the fleet's HAProxy, drawn in turn from `specs`; `stop` gives their results. */
function loadOf(fleet: Fleet, perSecond: number, specs: readonly CallSpec[] | ((index: number) => CallSpec)) {
  const byName = new Map<string, CallSpec>();
  const load = startLoad(perSecond, (index) => {
    const spec = typeof specs === 'function' ? specs(index) : specs[index % specs.length]!;
    const what = nameOf(spec);
    byName.set(what, spec);
    return { what, send: (signal) => legacyCall(fleet.url, spec.binding, spec.op, spec.params, {}, signal) };
  });
  return {
    async stop(): Promise<{ results: CallResult[]; specOf: (result: CallResult) => CallSpec }> {
      const results = await load.stop();
      return { results, specOf: (result) => byName.get(result.what)! };
    },
  };
}

/** One call, straight to `base` (an instance or HAProxy), as the load generator would record it. */
async function callOnce(base: string, spec: CallSpec): Promise<CallResult> {
  const started = performance.now();
  const result = {
    what: nameOf(spec),
    index: 0,
    sentAt: 0,
    status: null as number | null,
    headers: null as Headers | null,
    body: '',
    error: null as string | null,
  };
  try {
    const response = await legacyCall(base, spec.binding, spec.op, spec.params, {}, AbortSignal.timeout(15_000));
    [result.status, result.headers, result.body] = [response.status, response.headers, await response.text()];
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
  }
  return { ...result, durationMs: performance.now() - started };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The calls each instance answered (its hits), over every run of it. */
const hitsOf = (instance: FleetInstance): number => instance.events('deprecated_call').length;

async function fleetOf(options: Parameters<typeof startFleet>[0] = {}): Promise<Fleet> {
  const fleet = await startFleet(options);
  onTestFinished(() => fleet.stop());
  return fleet;
}

if (skipFleetSuite) console.warn(`test/fleet.test.ts: the fleet scenarios are skipped: ${FLEET_MISSING}.`);

describe.skipIf(skipFleetSuite)('a fleet: three proxies, Redis and HAProxy checking /readyz', () => {
  beforeAll(() => requireClient(FLEET_MISSING === null, FLEET_MISSING ?? ''));

  it('a rolling restart of each instance under 200 calls/s of every operation over every binding fails no call', async () => {
    const fleet = await fleetOf();
    expect(fleet.drainDelayMs).toBeGreaterThan(detectionMs(TEST_HEALTH_CHECKS));
    // One call on each instance still in flight when its listener closes, on a kept-alive connection
    // as a load balancer's are: it is answered, and the instance exits right after it.
    const slowMs = fleet.drainDelayMs + 1000;
    fleet.upstream.slow((url) => url.includes('query=in-flight-at-close'), slowMs);
    const load = loadOf(fleet, 200, everyCall(fleet.upstream.catalog));
    await sleep(1000);
    const before = fleet.instances.map(hitsOf);
    const steps = [];
    const slowCalls: Promise<CallResult>[] = [];
    for (const [index, instance] of fleet.instances.entries()) {
      // Its own query each time: a page cache would answer a repeated one at once.
      const query = `in-flight-at-close-${index}`;
      slowCalls.push(callOnce(instance.url, { op: 'Search', binding: 'httpGet', params: { query, apiKey: API_KEY } }));
      await waitUntil(
        `the slow call on ${instance.name} to reach the upstream`,
        () => fleet.upstream.count((url) => url.includes(`query=${query}`)) > 0,
      );
      steps.push(await fleet.restart(index));
      await sleep(500);
    }
    await sleep(500);
    const { results, specOf } = await load.stop();

    expect(results.filter((result) => !succeeded(specOf(result), result)).map(told)).toEqual([]);
    expect(results.length).toBeGreaterThan(1000);
    const slow = await Promise.all(slowCalls);
    expect(slow.filter((result) => result.status !== 200 || result.headers?.get('connection') !== 'close').map(told)).toEqual([]);
    // Each instance stopped by itself (exit 0) once its slow call was answered, not after
    // server.shutdownGraceMs, and HAProxy had taken it out of the rotation by then.
    expect(steps.map(({ exitCode, statusAtExit }) => ({ exitCode, statusAtExit }))).toEqual(
      fleet.instances.map(() => ({ exitCode: 0, statusAtExit: 'DOWN' })),
    );
    for (const { stopMs } of steps) expect(stopMs).toBeLessThan(slowMs + 5000);
    for (const [index, instance] of fleet.instances.entries()) {
      expect(before[index]).toBeGreaterThan(0);
      expect(instance.events('stopping')).toHaveLength(1);
      expect(instance.events('stop_timeout')).toEqual([]);
      // Its second run answered calls too: HAProxy sent it traffic again once it was UP.
      const secondRun = instance.lines.slice(instance.lines.lastIndexOf(instance.events('listening').at(-1)!));
      expect(secondRun.filter((line) => line.event === 'deprecated_call').length).toBeGreaterThan(0);
    }
  }, 90_000);

  it('Redis killed mid-run and started again: no call fails, each instance says so once, and shares again', async () => {
    const fleet = await fleetOf();
    const redisUp = async (): Promise<(number | undefined)[]> =>
      Promise.all(fleet.instances.map((instance) => instance.metric('redis_up')));
    await waitUntil('every instance connected to Redis', async () => (await redisUp()).every((up) => up === 1));
    const load = loadOf(fleet, 100, everyCall(fleet.upstream.catalog));
    await sleep(1000);

    await fleet.redis.kill();
    await waitUntil('redis_up 0 on every instance', async () => (await redisUp()).every((up) => up === 0));
    await sleep(1000);
    await fleet.redis.start();
    await waitUntil('redis_up 1 on every instance', async () => (await redisUp()).every((up) => up === 1), 10_000);
    await sleep(500);
    const { results, specOf } = await load.stop();

    expect(results.filter((result) => !succeeded(specOf(result), result)).map(told)).toEqual([]);
    for (const instance of fleet.instances) {
      const said = instance.lines.filter((line) => line.event === 'redis_unavailable' || line.event === 'redis_recovered');
      expect(said.map((line) => [line.level, line.event])).toEqual([
        ['warn', 'redis_unavailable'],
        ['info', 'redis_recovered'],
      ]);
    }
    // The three proxies are connected again (and the connection this count is asked on).
    expect(await fleet.redis.connectedClients()).toBe(fleet.instances.length + 1);
  }, 60_000);

  it('64 concurrent callers of one cold Search spread over the three instances: one upstream request; then within the freshness, ' +
    'none', async () => {
    const fleet = await fleetOf();
    const query = 'cold-search-of-the-fleet';
    const upstreamRequests = (): number =>
      fleet.upstream.count((url) => url.startsWith('/product.search.cp?') && new URLSearchParams(url.split('?')[1]).get('query') === query);
    const wave = async (): Promise<void> => {
      const before = fleet.instances.map(hitsOf);
      const specs = Array.from(
        { length: 64 },
        (_, index): CallSpec => ({
          op: 'Search',
          binding: CALL_BINDINGS[index % CALL_BINDINGS.length]!,
          params: { query, apiKey: API_KEY },
        }),
      );
      const results = await Promise.all(
        specs.map(async (spec): Promise<[CallSpec, CallResult]> => [spec, await callOnce(fleet.url, spec)]),
      );
      expect(results.filter(([spec, result]) => !succeeded(spec, result)).map(([, result]) => told(result))).toEqual([]);
      // Spread over the three: each answered some of them.
      await waitUntil(
        'every hit written',
        () => fleet.instances.map(hitsOf).reduce((a, b) => a + b, 0) - before.reduce((a, b) => a + b, 0) >= 64,
      );
      expect(fleet.instances.map((instance, index) => hitsOf(instance) - before[index]! > 0)).toEqual([true, true, true]);
    };
    await wave();
    expect(upstreamRequests()).toBe(1);
    await wave();
    expect(upstreamRequests()).toBe(1);
  }, 60_000);

  it('against a gateway allowing 20 requests/s per key (Mashery), 100 calls/s over 50 distinct queries: no 403-derived fault reaches a ' +
    'caller', async () => {
    // Under the gateway's 20 a second in any second: 15 a second on average, 4 at once.
    const fleet = await fleetOf({ config: { upstream: { budget: { requestsPerSecond: 15, burst: 4, maxWaitMs: 1000 } } } });
    const gateway = masheryQpsLimit(20);
    fleet.upstream.override(gateway.answer);
    const load = loadOf(fleet, 100, (index) => ({
      op: 'Search',
      binding: CALL_BINDINGS[index % CALL_BINDINGS.length]!,
      params: { query: `budget-${index % 50}`, apiKey: API_KEY },
    }));
    await sleep(10_000);
    const { results, specOf } = await load.stop();

    // Every call answered from the upstream, the cache, or shed with Retry-After: never the gateway's 403 as a fault.
    expect(results.filter((result) => !succeeded(specOf(result), result) && !shed(result)).map(told)).toEqual([]);
    expect(results.filter((result) => /403|Forbidden|Over Qps/i.test(result.body))).toEqual([]);
    expect(results.filter((result) => succeeded(specOf(result), result)).length).toBeGreaterThan(0);
    console.info(
      `budget scenario: ${results.length} calls, ${results.filter(shed).length} shed, ${gateway.refused()} refused by the gateway`,
    );
  }, 60_000);

  it('upstream down for 30 s: calls for pages fetched before answer from stale pages, others get the legacy fault in time', async () => {
    const callTimeoutMs = 5000;
    // Searches go stale after 2 s, so that the 30 s outage is served from stale pages, not fresh ones.
    const fleet = await fleetOf({
      config: {
        upstream: { connectTimeoutMs: 1000, callTimeoutMs },
        cache: { endpoints: { '/product.search.cp': { freshSeconds: 2, staleWhileRevalidateSeconds: 2, staleIfErrorSeconds: 3600 } } },
      },
    });
    const known = (index: number): CallSpec => ({
      op: 'Search',
      binding: CALL_BINDINGS[index % CALL_BINDINGS.length]!,
      params: { query: `known-${index % 10}`, apiKey: API_KEY },
    });
    // Fetched once each, through the fleet: whichever instance answered, the page is the fleet's.
    for (let index = 0; index < 10; index++) {
      const spec = known(index);
      const response = await legacyCall(fleet.url, spec.binding, spec.op, spec.params);
      expect(response.status).toBe(200);
      await response.text();
    }
    await sleep(4500);

    await fleet.upstream.stop();
    const load = loadOf(fleet, 20, (index) =>
      index % 2 === 0
        ? known(index / 2)
        : {
            op: 'Search',
            binding: CALL_BINDINGS[index % CALL_BINDINGS.length]!,
            params: { query: `never-fetched-${index}`, apiKey: API_KEY },
          },
    );
    await sleep(30_000);
    const { results, specOf } = await load.stop();
    await fleet.upstream.start();

    const wrong = results.filter((result) => {
      const spec = specOf(result);
      if (spec.params.query!.startsWith('known-')) return !succeeded(spec, result);
      return !unreachableFault(spec, result) || result.durationMs > callTimeoutMs;
    });
    expect(wrong.map(told)).toEqual([]);
    expect(results.length).toBeGreaterThan(500);
  }, 90_000);
});

// --- The deployment examples ---------------------------------------------------------------------------

const deployFile = (name: string): string => readFileSync(join(ROOT, 'deploy', name), 'utf8');

/** An HAProxy duration (`2s`, `250ms`, `1m`; a bare number is milliseconds) in milliseconds. */
function haproxyMs(text: string): number {
  const [, value, unit] = /^(\d+)(ms|s|m)?$/.exec(text) ?? [];
  if (value === undefined) throw new Error(`not an HAProxy duration: ${text}`);
  return Number(value) * (unit === 's' ? 1000 : unit === 'm' ? 60_000 : 1);
}

describe("the fleet's deployment examples (docs/fleet.md)", () => {
  it(
    'deploy/fleet.json drains longer than deploy/haproxy.cfg takes to notice, and the template unit waits for drain and calls in ' +
      'flight',
    () => {
      const haproxy = deployFile('haproxy.cfg');
      const checks = /^\s*default-server check inter (\S+) fall (\d+) rise (\d+)$/m.exec(haproxy);
      const timeout = /^\s*timeout check (\S+)$/m.exec(haproxy);
      expect(checks).not.toBeNull();
      expect(timeout).not.toBeNull();
      const detection = detectionMs({
        interMs: haproxyMs(checks![1]!),
        fall: Number(checks![2]),
        rise: Number(checks![3]),
        timeoutMs: haproxyMs(timeout![1]!),
      });
      const config = loadConfig({ CONFIG_FILE: join(ROOT, 'deploy', 'fleet.json') });
      expect(config.server.drainDelayMs).toBeGreaterThan(detection);
      expect(config.server.trustProxy).toBe(1);
      expect(haproxy).toMatch(/^\s*option httpchk GET \/readyz$/m);
      expect(haproxy).toMatch(/^\s*option forwardfor$/m);
      // The proxy's own deadline comes first: HAProxy's server timeout is longer.
      expect(haproxyMs(/^\s*timeout server (\S+)$/m.exec(haproxy)![1]!)).toBeGreaterThan(config.upstream.callTimeoutMs);
      const unit = deployFile('catalog-proxy@.service');
      const stopSeconds = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
      expect(stopSeconds * 1000).toBeGreaterThan(config.server.drainDelayMs + config.server.shutdownGraceMs);
      expect(deployFile('nginx.conf')).toMatch(/proxy_read_timeout (\d+)s;/);
    },
  );

  it.skipIf(skipFleetSuite)('deploy/haproxy.cfg is a valid HAProxy configuration (haproxy -c)', () => {
    const check = spawnSync(haproxyBinary(), ['-c', '-f', join(ROOT, 'deploy', 'haproxy.cfg')], { encoding: 'utf8' });
    expect(check.stderr).not.toMatch(/ALERT|WARNING/);
    expect(check.status).toBe(0);
  });

  it(
    'deploy/catalog-proxy@.service runs instance N on 8080 + N and 9464 + N with the production command, and stops on ' + 'SIGTERM',
    async () => {
      const unit = deployFile('catalog-proxy@.service');
      const execStart = /^ExecStart=\/bin\/sh -c '(.*)'$/m.exec(unit)?.[1];
      expect(execStart).toContain('exec /usr/bin/node dist/src/bin/start.js');
      // An instance number whose two ports are free here (the real ones, 8081 and on, may be taken).
      let instance = 0;
      for (let tries = 0; tries < 20 && instance === 0; tries++) {
        const port = await freePort();
        const admin = port + 1384;
        if (port > 8080 && admin < 65536 && (await portFree(admin))) instance = port - 8080;
      }
      expect(instance).toBeGreaterThan(0);
      // What systemd runs: %i the instance, $$ a dollar; node the one running these tests.
      const command = execStart!.replaceAll('%i', String(instance)).replaceAll('$$', '$').replace('/usr/bin/node', process.execPath);
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOST: '127.0.0.1',
          NODE_ENV: 'production',
          UPSTREAM_URL: 'http://127.0.0.1:9',
          CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
        },
        stdio: 'ignore',
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      try {
        for (const port of [8080 + instance, 9464 + instance]) {
          await waitUntil(`/readyz on ${port}`, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, 10_000);
        }
        // exec: the shell became node, so the signal systemd sends reaches the proxy itself.
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
      }
    },
  );
});

/** Whether nothing listens on `port` on loopback. */
function portFree(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) }).then(
    () => false,
    (err: { cause?: { code?: string } }) => err.cause?.code === 'ECONNREFUSED',
  );
}
