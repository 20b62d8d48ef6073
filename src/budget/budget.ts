import type { Redis } from 'ioredis';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import { UpstreamBusy, UpstreamOverLimit } from '../errors.js';
import { MAX_PAUSE_SECONDS } from '../outbound/failures.js';
import type { FetchTrace, Interceptor } from '../outbound/fetch.js';
import { scriptCommands, type Shared } from '../redis/shared.js';

/**
 * The upstream budget (`upstream.budget`, docs/operating.md): at most `requestsPerSecond` upstream
 * requests on average and `burst` at once for each appKey, for the whole fleet, through Redis
 * (src/redis/shared.ts), and while Redis cannot answer each instance spends its share of it alone
 * (`instances`). A request without room is given the next free slot when it comes within `maxWaitMs`
 * and waits for it (a call cancelled meanwhile gives the slot back); otherwise its call is
 * shed (UpstreamBusy, 503 Server Too Busy with Retry-After). When the upstream's gateway says the key
 * is over its QPS or rate (Mashery's 403, UpstreamOverLimit), the key is paused for the fleet for the
 * gateway's Retry-After: meanwhile every instance sheds its requests without asking the upstream.
 *
 * The bucket is a GCRA (a token bucket kept as one timestamp, the "theoretical arrival time"),
 * evaluated inside Redis by one script on Redis's clock, so that instances' clocks do not matter:
 * in any span of T seconds at most `burst + requestsPerSecond × T` requests go out. The appKey is
 * never stored or logged: its keys are named by an HMAC of it (Shared.hashOf), and no metric is labelled with it.
 */

export interface BudgetOptions {
  /** The running configuration's budget, read for each request: a reload changes it (src/config/reload.ts). */
  readonly settings: () => Config['upstream']['budget'];
  readonly shared: Shared;
  readonly registry: Registry;
  readonly log: BudgetLog;
  /** An appKey as the logs name it: the keyed fingerprint the clients have (src/clients/fingerprint.ts). */
  readonly fingerprintOf: (appKey: string) => string;
}

export interface BudgetLog {
  warn(fields: object, message: string): void;
}

/**
 * The budget's layer of the fetch pipeline: room for each request that reaches it, within its call's
 * deadline; while no budget is configured, the request as it is.
 */
export type Budget = Interceptor;

/** A budget in force, and how long this request may wait for room: `maxWaitMs`, or less when its call's deadline is nearer. */
type Settings = Config['upstream']['budget'] & { readonly requestsPerSecond: number; readonly waitMs: number };

/**
 * What the bucket says of one request: go after `waitMs` (0: now), taken from the fleet's bucket in Redis
 * or this instance's own (`shared`), which the take left at `slot`; no room within the wait; or the key
 * is paused.
 */
type Verdict =
  | { readonly kind: 'go'; readonly waitMs: number; readonly shared: boolean; readonly slot: number }
  | { readonly kind: 'full'; readonly retryMs: number }
  | { readonly kind: 'paused'; readonly retryMs: number };

/**
 * KEYS: the bucket, the pause. ARGV: the interval between requests (ms), the burst, the longest this
 * request may wait (ms), the longest pause (ms), `1` to pass over the pause (one this instance found
 * forged and deleted), and the longest wait configured (ms). Returns {1, wait, refused, bucket} (a slot
 * taken, `wait` ms from now, the bucket as it left it: the slot's stamp, for a give-back),
 * {0, wait, refused} (none within the longest wait; the first would be `wait` ms from now) or
 * {-1, pause, 0, value} (the key is paused for `pause` ms, by the sealed `value`, which the caller opens
 * before it obeys: `pauseOf`).
 *
 * The bucket cannot carry our MAC (the script computes it, and would need the secret, which never goes
 * to Redis), so it is bounded as if written now: further ahead than one burst window (the burst at the
 * interval and the longest wait) or not a number, it was written by something else, or under another
 * configuration, and is taken at its bound. A pause longer than the longest one the proxy sets is
 * deleted and not obeyed. `refused` says which: REFUSED_PAUSE + REFUSED_BUCKET, for the metric.
 */
const TAKE_SCRIPT = `
local refused = 0
local paused = ARGV[5] == '1' and 0 or redis.call('PTTL', KEYS[2])
if paused > tonumber(ARGV[4]) then
  redis.call('DEL', KEYS[2])
  refused = 1
elseif paused > 0 then
  return {-1, paused, 0, redis.call('GET', KEYS[2])}
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local window = now + interval * burst + tonumber(ARGV[6])
-- pcall: a value of another type is refused like a bucket that is no number, then overwritten.
local stored = redis.pcall('GET', KEYS[1])
local tat = type(stored) == 'table' and nil or tonumber(stored or '0')
if tat == nil or tat ~= tat or tat > window then
  tat = window
  refused = refused + 2
end
if tat < now then tat = now end
local wait = tat - now - interval * (burst - 1)
if wait > tonumber(ARGV[3]) then return {0, math.ceil(wait), refused} end
local later = string.format('%.3f', tat + interval)
redis.call('SET', KEYS[1], later, 'PX', math.ceil(tat + interval - now) + 1)
if wait < 0 then wait = 0 end
return {1, math.ceil(wait), refused, later}
`;

/** The bits of the take script's `refused`. */
const REFUSED_PAUSE = 1;
const REFUSED_BUCKET = 2;

/** How far apart a bucket and a slot's stamp may be and still be that slot (the script keeps 3 decimals). */
const SAME_SLOT_MS = 0.5;

/**
 * KEYS: the bucket. ARGV: the interval between requests (ms), the bucket as the slot's take left it, and
 * the longest a bucket may be ahead of now (one burst window). A slot taken and not used given back: the
 * bucket one interval earlier, never before now (a bucket at now or before is full), but only while the
 * slot is still the last one taken. An earlier slot given back would become one more at the end of the
 * queue, past the burst: once the last is given back, the one before it is last. A value that is no
 * number, or out of bounds, is left to the take script, which bounds it. Returns 1 when given back.
 */
const GIVE_BACK_SCRIPT = `
local stored = redis.pcall('GET', KEYS[1])
local tat = type(stored) == 'table' and nil or tonumber(stored or '')
if tat == nil or tat ~= tat or math.abs(tat - tonumber(ARGV[2])) >= ${SAME_SLOT_MS} then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
if tat > now + tonumber(ARGV[3]) then return 0 end
local earlier = tat - tonumber(ARGV[1])
if earlier <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.3f', earlier), 'PX', math.ceil(earlier - now) + 1)
end
return 1
`;

/** KEYS: the pause. ARGV: its length (ms), its sealed value. A longer pause already there is kept. */
const PAUSE_SCRIPT = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1]) end
return 1
`;

/** KEYS: a pause. ARGV: the value found in it. Deleted only if it still holds that value. */
const UNPAUSE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

interface BudgetCommands {
  upstreamBudgetTake(
    bucket: string,
    pause: string,
    intervalMs: string,
    burst: string,
    waitMs: string,
    maxPauseMs: string,
    passOverPause: string,
    maxWaitMs: string,
  ): Promise<[number, number, number, string | null]>;
  upstreamBudgetGiveBack(bucket: string, intervalMs: string, slot: string, windowMs: string): Promise<number>;
  upstreamBudgetPause(pause: string, ms: string, sealed: string): Promise<number>;
  upstreamBudgetUnpause(pause: string, found: string): Promise<number>;
}

const commands = scriptCommands<BudgetCommands>({
  upstreamBudgetTake: { keys: 2, lua: TAKE_SCRIPT },
  upstreamBudgetGiveBack: { keys: 1, lua: GIVE_BACK_SCRIPT },
  upstreamBudgetPause: { keys: 1, lua: PAUSE_SCRIPT },
  upstreamBudgetUnpause: { keys: 1, lua: UNPAUSE_SCRIPT },
});

/** How far instances' clocks may differ: a pause sealed to end earlier than that ago is an old one put back. */
const CLOCK_SKEW_MS = 5000;

/** A pause is at least a second: a 403 said the key is over now, whatever its Retry-After said. */
const MIN_PAUSE_MS = 1000;
/** The longest pause the proxy sets: a longer one in Redis is not the fleet's. */
const MAX_PAUSE_MS = MAX_PAUSE_SECONDS * 1000;
/** Local buckets past this many keys are swept of the ones that are full again. */
const LOCAL_SWEEP_SIZE = 10_000;

export function createBudget({ settings, shared, registry, log, fingerprintOf }: BudgetOptions): Budget {
  // The metrics exist once a budget does: without one, /metrics is as it always was.
  let metrics: ReturnType<typeof budgetMetrics> | null = null;
  /** This instance's own buckets (the theoretical arrival time of each key) and pauses, by hashed key. */
  const localBuckets = new Map<string, number>();
  const localPauses = new Map<string, number>();

  const takeLocal = (key: string, budget: Settings): Verdict => {
    const { intervalMs, burst } = shareOf(budget);
    const { waitMs } = budget;
    const now = performance.now();
    const paused = pausedFor(key, now);
    if (paused > 0) return { kind: 'paused', retryMs: paused };
    const tat = Math.max(localBuckets.get(key) ?? 0, now);
    // tat - now first: a request with the bucket full of room waits exactly 0, not a rounding error more.
    const wait = tat - now - intervalMs * (burst - 1);
    if (wait > waitMs) return { kind: 'full', retryMs: Math.ceil(wait) };
    if (localBuckets.size >= LOCAL_SWEEP_SIZE) {
      for (const [other, at] of localBuckets) if (at <= now) localBuckets.delete(other);
    }
    localBuckets.set(key, tat + intervalMs);
    return { kind: 'go', waitMs: Math.max(0, Math.ceil(wait)), shared: false, slot: tat + intervalMs };
  };

  /** A slot taken from this instance's own bucket, not used, given back as the script does it in Redis. */
  const giveBackLocal = (key: string, budget: Settings, slot: number): boolean => {
    const tat = localBuckets.get(key);
    if (tat === undefined || Math.abs(tat - slot) >= SAME_SLOT_MS) return false;
    localBuckets.set(key, Math.max(performance.now(), tat - shareOf(budget).intervalMs));
    return true;
  };

  const takeShared = async (redis: Redis, key: string, budget: Settings, passOverPause = false): Promise<Verdict> => {
    const bucket = shared.key('budget', key);
    const pauseKey = shared.key('budget-pause', key);
    const [status, ms, refused, value] = await commands(redis).upstreamBudgetTake(
      bucket,
      pauseKey,
      String(1000 / budget.requestsPerSecond),
      String(budget.burst),
      String(budget.waitMs),
      String(MAX_PAUSE_MS),
      passOverPause ? '1' : '0',
      String(budget.maxWaitMs),
    );
    if ((refused & REFUSED_PAUSE) !== 0) shared.refuse('budget', 'bounds', pauseKey);
    if ((refused & REFUSED_BUCKET) !== 0) shared.refuse('budget', 'bounds', bucket);
    if (status === -1) {
      const pausedMs = pauseOf(pauseKey, value, ms);
      if (pausedMs === null) {
        // Not a pause of this fleet's, or an old one put back: deleted (unless replaced meanwhile), not obeyed.
        shared.refuse('budget', 'forged', pauseKey);
        if (value !== null) await commands(redis).upstreamBudgetUnpause(pauseKey, value);
        return takeShared(redis, key, budget, true);
      }
      localPauses.set(key, performance.now() + pausedMs);
      return { kind: 'paused', retryMs: pausedMs };
    }
    return status === 1 ? { kind: 'go', waitMs: ms, shared: true, slot: Number(value) } : { kind: 'full', retryMs: ms };
  };

  /**
   * How long the pause under `pauseKey` still holds: the shorter of its TTL and the end it was sealed
   * with (give or take the instances' clocks), or null when the value is not one this fleet sealed for
   * that key, or its end is past.
   */
  function pauseOf(pauseKey: string, sealed: string | null, ttlMs: number): number | null {
    const opened = sealed === null ? null : shared.seal.open(pauseKey, Buffer.from(sealed, 'base64'));
    const until = opened === null ? Number.NaN : Number(opened.toString('latin1'));
    if (!Number.isSafeInteger(until)) return null;
    const left = until - Date.now() + CLOCK_SKEW_MS;
    return left > 0 ? Math.min(ttlMs, left) : null;
  }

  /** How much longer `key` is paused on this instance's own reckoning (0: not paused). */
  function pausedFor(key: string, now = performance.now()): number {
    const until = localPauses.get(key);
    if (until === undefined) return 0;
    if (until > now) return until - now;
    localPauses.delete(key);
    return 0;
  }

  const shed = (source: UpstreamBusy['source'], retryMs: number): UpstreamBusy => {
    metrics?.sheds.inc({ source });
    return new UpstreamBusy(retryMs / 1000, source);
  };

  /** Room for one request of `key`, waited for; throws UpstreamBusy, or the signal's reason when the call is cancelled. */
  async function admit(key: string, budget: Settings, signal: AbortSignal, trace: FetchTrace | undefined): Promise<void> {
    const paused = pausedFor(key);
    if (paused > 0) throw shed('upstream', paused);
    const verdict = await shared.run(
      'budget',
      (redis) => takeShared(redis, key, budget),
      () => takeLocal(key, budget),
    );
    if (verdict.kind === 'paused') throw shed('upstream', verdict.retryMs);
    if (verdict.kind === 'full') throw shed('budget', verdict.retryMs);
    if (verdict.waitMs <= 0) return;
    metrics?.waits.inc();
    metrics?.waitSeconds.observe(verdict.waitMs / 1000);
    trace?.event('upstream.budget.wait', { 'upstream.budget.wait_ms': verdict.waitMs });
    try {
      await sleep(verdict.waitMs, signal);
    } catch (err) {
      // Cancelled while it waited (the caller hung up, its deadline passed): the slot goes to the next
      // request. Not awaited: the call has ended, and a request that joined its fetch must not wait on Redis.
      void giveBack(key, budget, verdict);
      throw err;
    }
    // Paused while it waited (a 403 this instance saw): the slot is given up.
    const pausedSince = pausedFor(key);
    if (pausedSince > 0) throw shed('upstream', pausedSince);
  }

  async function giveBack(key: string, budget: Settings, { shared: fromShared, slot }: { shared: boolean; slot: number }): Promise<void> {
    const intervalMs = 1000 / budget.requestsPerSecond;
    const given = fromShared
      ? (await shared.run(
          'budget',
          (redis) =>
            commands(redis).upstreamBudgetGiveBack(
              shared.key('budget', key),
              String(intervalMs),
              String(slot),
              String(intervalMs * budget.burst + budget.maxWaitMs),
            ),
          () => 0,
        )) === 1
      : giveBackLocal(key, budget, slot);
    if (given) metrics?.givenBack.inc();
  }

  /** The key is over its limits at the gateway: paused here at once, and for the fleet. */
  async function pause(key: string, appKey: string, over: UpstreamOverLimit): Promise<number> {
    const ms = Math.min(MAX_PAUSE_MS, Math.max(MIN_PAUSE_MS, Math.round(over.retryAfterSeconds * 1000)));
    localPauses.set(key, Math.max(localPauses.get(key) ?? 0, performance.now() + ms));
    metrics?.pauses.inc({ limit: over.limit });
    log.warn(
      { event: 'upstream_key_paused', limit: over.limit, pauseMs: ms, appKey: fingerprintOf(appKey) },
      `The upstream refused an appKey as over its ${over.limit === 'qps' ? 'QPS' : 'rate'} (403): its requests are paused for ${ms} ms ` +
        `across the fleet, and its calls shed meanwhile`,
    );
    const pauseKey = shared.key('budget-pause', key);
    // Sealed with its end, so that no one without the secret sets a pause, and an old one put back is refused.
    const sealed = shared.seal.close(pauseKey, Buffer.from(String(Date.now() + ms), 'latin1')).toString('base64');
    await shared.run(
      'budget',
      (redis) => commands(redis).upstreamBudgetPause(pauseKey, String(ms), sealed),
      () => 0,
    );
    return ms;
  }

  return (next) => async (request, options) => {
    const budget = settings();
    const { requestsPerSecond } = budget;
    if (requestsPerSecond === null) return next(request, options);
    metrics ??= budgetMetrics(registry);
    // One bucket for every request without an appKey; only the key's hash is kept.
    const appKey = options.appKey ?? '';
    const key = shared.hashOf(appKey);
    // A slot past the call's deadline would only be given up: the call is shed now, with when to come back.
    const waitMs = Math.max(0, Math.min(budget.maxWaitMs, options.deadline - Date.now()));
    await admit(key, { ...budget, requestsPerSecond, waitMs }, options.signal, options.trace);
    try {
      return await next(request, options);
    } catch (err) {
      if (!(err instanceof UpstreamOverLimit)) throw err;
      const pausedMs = await pause(key, appKey, err);
      options.trace?.event('upstream.key.paused', { 'upstream.limit': err.limit, 'upstream.pause_ms': pausedMs });
      throw shed('upstream', pausedMs);
    }
  };
}

function budgetMetrics(registry: Registry) {
  const waits = new Counter({
    name: 'upstream_budget_waits_total',
    help: 'Upstream requests that waited for room in their appKey’s budget (upstream.budget) before going out.',
    registers: [registry],
  });
  const waitSeconds = new Histogram({
    name: 'upstream_budget_wait_seconds',
    help: 'How long upstream requests that waited for room in their appKey’s budget waited.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const sheds = new Counter({
    name: 'upstream_budget_sheds_total',
    help:
      'Upstream requests not made, their calls shed with 503: source "budget", no room within upstream.budget.maxWaitMs; ' +
      '"upstream", the key paused after the gateway’s 403 over QPS or rate.',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const givenBack = new Counter({
    name: 'upstream_budget_slots_given_back_total',
    help: 'Slots of the upstream budget given back unused: their calls were cancelled (caller gone, deadline passed) while they waited.',
    registers: [registry],
  });
  const pauses = new Counter({
    name: 'upstream_key_pauses_total',
    help: 'Mashery 403s over QPS or rate (limit "qps" or "rate") that paused an appKey for the fleet for their Retry-After.',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  // Every series from the start, so that dashboards and alerts see 0 rather than nothing.
  for (const source of ['budget', 'upstream'] as const) sheds.inc({ source }, 0);
  for (const limit of ['qps', 'rate'] as const) pauses.inc({ limit }, 0);
  return { waits, waitSeconds, sheds, pauses, givenBack };
}

/**
 * This instance's share of the budget, what it spends while it cannot share the fleet's bucket in
 * Redis: a fleet of `instances` then spends at most the budget together, not a burst each on top.
 */
function shareOf({ requestsPerSecond, burst, instances }: Settings): { readonly intervalMs: number; readonly burst: number } {
  return { intervalMs: (1000 * instances) / requestsPerSecond, burst: Math.max(1, Math.floor(burst / instances)) };
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const aborted = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
