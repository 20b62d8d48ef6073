import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type ChaosBalancer,
  type ChaosKills,
  type ChaosRedis,
  chaosTable,
  missedTargets,
  runChaos,
  SINGLE_REDIS,
  sentinelRedis,
} from '../test/support/chaos.js';
import { FLEET_MISSING, NGINX_MISSING } from '../test/support/fleet.js';
import { SENTINEL_MISSING, sentinelsAvailable } from '../test/support/redis-sentinel.js';
import { RESULTS } from './children.js';

/**
 * `npm run chaos`: a fleet on loopback (three instances, Redis, HAProxy or nginx as shipped in
 * deploy/, the upstream behind a Mashery gateway stub) under load while instances, the Redis master
 * and the upstream are killed on a schedule (test/support/chaos.ts, docs/fleet.md "Chaos run"); prints
 * what the callers got against the targets, writes it to bench/results/chaos.md, and exits 1 when a
 * target is missed (2 when redis-server, haproxy or nginx is missing).
 *
 *   npm run chaos -- --seconds 120 --rate 200 --balancer nginx --kill instances,redis --redis single
 *   CHAOS_SECONDS=120 CHAOS_BALANCER=nginx npm run chaos
 *
 * Redis is Redis with Sentinel (one master, one replica, three sentinels; the master killed fails over)
 * unless `--redis single` (one redis-server, killed and started again empty).
 *
 * A flag wins over its variable.
 */

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: process.env.CHAOS_SECONDS ?? '60' },
    rate: { type: 'string', default: process.env.CHAOS_RATE ?? '200' },
    balancer: { type: 'string', default: process.env.CHAOS_BALANCER ?? 'haproxy' },
    kill: { type: 'string', default: process.env.CHAOS_KILL ?? 'instances,redis,upstream' },
    'new-searches': { type: 'string', default: process.env.CHAOS_NEW_SEARCHES ?? '5' },
    redis: { type: 'string', default: process.env.CHAOS_REDIS ?? 'sentinel' },
  },
});

function positive(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number, not ${JSON.stringify(text)}`);
  return value;
}

function balancerOf(text: string): ChaosBalancer {
  if (text !== 'haproxy' && text !== 'nginx') throw new Error(`--balancer is haproxy or nginx, not ${JSON.stringify(text)}`);
  return text;
}

function killsOf(text: string): ChaosKills {
  const named = new Set(text.split(',').filter((name) => name !== ''));
  for (const name of named) {
    if (!['instances', 'redis', 'upstream'].includes(name)) throw new Error(`--kill names instances, redis, upstream; not ${name}`);
  }
  return { instances: named.has('instances'), redis: named.has('redis'), upstream: named.has('upstream') };
}

async function main(): Promise<void> {
  const seconds = positive('seconds', values.seconds);
  const rate = positive('rate', values.rate);
  const balancer = balancerOf(values.balancer);
  const kills = killsOf(values.kill);
  const newSearches = Number(values['new-searches']);
  if (values.redis !== 'sentinel' && values.redis !== 'single') throw new Error(`--redis is sentinel or single, not ${values.redis}`);
  const missing = [
    FLEET_MISSING,
    balancer === 'nginx' ? NGINX_MISSING : null,
    values.redis === 'sentinel' && !sentinelsAvailable ? SENTINEL_MISSING : null,
  ].filter((what) => what !== null);
  if (missing.length > 0) {
    process.stderr.write(`npm run chaos: ${missing.join('; ')}\n`);
    process.exitCode = 2;
    return;
  }
  const sentinel = values.redis === 'sentinel' ? await sentinelRedis() : null;
  const redis: ChaosRedis = sentinel ?? SINGLE_REDIS;
  const report = await runChaos(
    {
      seconds,
      rate,
      balancer,
      kills,
      newSearchesPerSecond: newSearches,
      // Under the gateway's 20 a second, as test/budget.test.ts holds it (12 a second and 4 at once),
      // leaving room for one burst more when Redis comes back empty; each instance spends a third alone.
      budget: { requestsPerSecond: 12, burst: 4, gatewayQps: 20 },
      say: (line) => process.stderr.write(`${line}\n`),
    },
    redis,
  ).finally(() => sentinel?.stop());
  const table = `${chaosTable(report)}\n`;
  process.stdout.write(table);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'chaos.md'), `Chaos run of ${new Date().toISOString()}, node ${process.version}.\n\n${table}`);
  if (missedTargets(report).length > 0) process.exitCode = 1;
}

await main();
