import { readFileSync } from 'node:fs';
import type { Json } from '../../src/config/validate.js';
import { CALL_BINDINGS, legacyCall } from './calls.js';
import { type CallResult, type Fleet, type FleetOptions, masheryQpsLimit, mergeJson, startFleet, startLoad, waitUntil } from './fleet.js';
import { API_KEY, type CallSpec, everyCall, shed, succeeded, told, upstreamDownFault } from './fleet-calls.js';
import { startSentinels } from './redis-sentinel.js';

/**
 * The chaos engine (issue 30, items 1 and 5): a fleet on loopback (test/support/fleet.ts: three
 * instances, Redis, the shipped HAProxy or nginx configuration, the upstream behind a Mashery gateway
 * stub) loaded with every operation over every binding while a schedule SIGKILLs instances, the Redis
 * master and the upstream; then the accounting of what the callers got. `npm run chaos`
 * (bench/chaos.ts) runs the whole schedule and prints the table; test/fleet-kills.test.ts runs the
 * instance kills only and holds the fleet to its targets.
 *
 * Each call carries its number in its User-Agent (`chaos-call/N`), which its hit records: so every
 * answered call is matched with its hit lines, on whichever instance wrote them. None means the
 * instance was killed after answering and before the line left it; two mean the load balancer sent
 * the call again after a kill, and two instances answered it.
 */

export type ChaosBalancer = 'haproxy' | 'nginx';

/** What the schedule kills. */
export interface ChaosKills {
  /** An instance every `killEverySeconds`, in turn, SIGKILLed and started again at once. */
  readonly instances: boolean;
  /** The Redis master, once a run (twice from two minutes on), down `REDIS_DOWN_MS`. */
  readonly redis: boolean;
  /** The upstream, refusing connections for `UPSTREAM_DOWN_MS`, once a run. */
  readonly upstream: boolean;
}

export interface ChaosOptions {
  /** How long the schedule runs, after the warm-up. */
  readonly seconds: number;
  /** Calls a second, every operation over every binding in turn (open loop). */
  readonly rate: number;
  readonly balancer: ChaosBalancer;
  readonly kills: ChaosKills;
  /** Default 10. */
  readonly killEverySeconds?: number;
  /**
   * Of `rate`, the calls a second that are a Search never asked before: one upstream request each, so
   * that the budget is spent and an upstream outage reaches callers. 0: every call is one of the
   * twenty, answered from the page cache once fetched.
   */
  readonly newSearchesPerSecond: number;
  /**
   * The proxies' `upstream.budget` (with `instances` the fleet's size, as deploy/fleet.json has it) and
   * the gateway's limit in front of the upstream (Mashery's 403 over QPS); null: neither.
   */
  readonly budget: { readonly requestsPerSecond: number; readonly burst: number; readonly gatewayQps: number } | null;
  /** Load before the schedule starts and memory is first read: caches filled, code warm. Default 5. */
  readonly warmupSeconds?: number;
  /** Progress lines (what was killed when). */
  readonly say?: (line: string) => void;
}

export const REDIS_DOWN_MS = 3000;
export const UPSTREAM_DOWN_MS = 4000;
/** Resident memory of an instance may grow by this much at most over the run. */
export const MAX_RSS_GROWTH = 0.2;

// --- The schedule ------------------------------------------------------------------------------------------

export type ChaosAction = 'instance' | 'redis' | 'upstream';

export interface ScheduledKill {
  /** Seconds from the schedule's start. */
  readonly at: number;
  readonly action: ChaosAction;
}

/**
 * Instances at every `every` seconds; Redis and the upstream halfway between two of those, so that
 * no two kinds are down at once (an instance just started with Redis away and the upstream down has
 * nothing to answer from, which is not what each kill is meant to show): Redis near a quarter of the
 * run (and three quarters, from two minutes on), the upstream near half of it.
 */
export function chaosSchedule(seconds: number, every: number, kills: ChaosKills): ScheduledKill[] {
  const scheduled: ScheduledKill[] = [];
  if (kills.instances) for (let at = every; at < seconds; at += every) scheduled.push({ at, action: 'instance' });
  const halfways: number[] = [];
  for (let at = every / 2; at + every / 2 <= seconds; at += every) halfways.push(at);
  const taken = new Set<number>();
  const nearest = (target: number): number | undefined => {
    const free = halfways.filter((at) => !taken.has(at));
    const best = free.sort((a, b) => Math.abs(a - target) - Math.abs(b - target) || b - a)[0];
    if (best !== undefined) taken.add(best);
    return best;
  };
  if (kills.redis) {
    for (const fraction of seconds >= 120 ? [0.25, 0.75] : [0.25]) {
      const at = nearest(seconds * fraction);
      if (at !== undefined) scheduled.push({ at, action: 'redis' });
    }
  }
  if (kills.upstream) {
    const at = nearest(seconds / 2);
    if (at !== undefined) scheduled.push({ at, action: 'upstream' });
  }
  return scheduled.sort((a, b) => a.at - b.at);
}

// --- Redis -----------------------------------------------------------------------------------------------

/**
 * The Redis of a run, as the schedule kills it, in one place: a Redis with Sentinel (the master
 * SIGKILLed and a replica promoted, rather than one Redis started again) replaces this and the fleet
 * options it asks for, and nothing else.
 */
export interface ChaosRedis {
  /** Said in the table. */
  readonly description: string;
  /** What the fleet is started with for this Redis (none: the fleet's own single Redis). */
  readonly fleetOptions: Partial<FleetOptions>;
  /** SIGKILLs the master. */
  killMaster(fleet: Fleet): Promise<void>;
  /** After `REDIS_DOWN_MS`: a master again. */
  recover(fleet: Fleet): Promise<void>;
}

/** One redis-server, SIGKILLed and started again on its port, empty (no persistence). */
export const SINGLE_REDIS: ChaosRedis = {
  description: 'one redis-server, SIGKILLed and started again empty',
  fleetOptions: {},
  killMaster: (fleet) => fleet.redis.kill(),
  recover: (fleet) => fleet.redis.start(),
};

/**
 * Redis with Sentinel (test/support/redis-sentinel.ts), as a fleet that survives its Redis runs it: one
 * master, one replica, three sentinels. The master is SIGKILLed, the sentinels promote the replica, and
 * the old master comes back empty as the new one's replica, so that the next kill fails over again.
 */
export async function sentinelRedis(): Promise<ChaosRedis & { stop(): Promise<void> }> {
  const set = await startSentinels();
  let killed: number | null = null;
  return {
    description: 'Redis with Sentinel: the master SIGKILLed, the replica promoted, the old master back as its replica',
    fleetOptions: {
      redisEnv: {
        REDIS_SENTINELS: set.sentinels.join(','),
        REDIS_MASTER_NAME: set.masterName,
        REDIS_PASSWORD: set.password,
        REDIS_SENTINEL_PASSWORD: set.sentinelPassword,
      },
    },
    async killMaster() {
      killed = await set.killMaster();
    },
    async recover() {
      if (killed === null) return;
      await set.failedOver(killed, SENTINEL_FAILOVER_WAIT_MS);
      await set.rejoin(killed);
      killed = null;
    },
    stop: () => set.stop(),
  };
}

/** How long the sentinels may take to promote the replica: their down-after, their vote, and some. */
const SENTINEL_FAILOVER_WAIT_MS = 15_000;

// --- The report ----------------------------------------------------------------------------------------------

export interface ChaosEvent {
  /** Milliseconds from the load's start. */
  readonly at: number;
  readonly what: string;
}

export interface InstanceMemory {
  readonly name: string;
  /** VmRSS in kB when the schedule started (after the warm-up) and when it ended. */
  readonly startKb: number;
  readonly endKb: number;
  /** How many processes the instance was over the run (1 + its kills). */
  readonly runs: number;
}

export interface ChaosReport {
  readonly options: ChaosOptions;
  readonly redis: string;
  readonly calls: number;
  /** Failed calls outside an upstream outage, by kind, with a few told in full. */
  readonly failures: readonly { readonly kind: string; readonly count: number; readonly examples: readonly string[] }[];
  readonly failedCalls: number;
  /** The legacy fault of an upstream that is down, to calls in flight during the outage: expected, not failures. */
  readonly outageFaults: number;
  /** Answered calls with two hit lines or more: sent again by the load balancer after a kill. */
  readonly replays: number;
  /** Answered calls with no hit line: the instance killed between its reply and its line. */
  readonly hitsMissing: number;
  /** Requests the load balancer passed on to another instance, as its log says (`balancerRetries`). */
  readonly balancerRetries: number;
  /** Lines of the load balancer's log that hold the callers' key (an HTTP GET call's query): none. */
  readonly balancerKeyLines: number;
  /**
   * The load balancer's lines for requests it did not answer with a 200 from an instance (HAProxy: a
   * status or a termination state other than `200` and `----`; nginx: a status other than 200), the
   * first ten: what it saw of a failed call. A kept-alive connection HAProxy closes unanswered leaves no line.
   */
  readonly balancerErrors: readonly string[];
  readonly kills: Readonly<Record<ChaosAction, number>>;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly worst: number };
  /** The three slowest calls (what, when it was sent, how long it took, its status): where the tail was. */
  readonly slowest: readonly string[];
  readonly upstream: {
    /** Requests of the callers' appKey that reached the gateway. */
    readonly requests: number;
    /** The most in any one second (a sliding window). */
    readonly maxPerSecond: number;
    /** The gateway's 403s over QPS. */
    readonly refused: number;
  };
  readonly memory: readonly InstanceMemory[];
  readonly events: readonly ChaosEvent[];
}

/** The budget's requests in one second (requestsPerSecond + burst), and the most a run may reach: one burst more. */
export function budgetLimits(budget: NonNullable<ChaosOptions['budget']>): { readonly perSecond: number; readonly allowed: number } {
  const perSecond = budget.requestsPerSecond + budget.burst;
  return { perSecond, allowed: perSecond + budget.burst };
}

/** What the run missed of its targets, in words; empty when it met every one. */
export function missedTargets(report: ChaosReport): string[] {
  const missed: string[] = [];
  const kills = report.kills.instance;
  if (report.failedCalls > 0) missed.push(`${report.failedCalls} failed calls outside the upstream outage`);
  if (report.hitsMissing > kills) missed.push(`${report.hitsMissing} answered calls without a hit, more than the ${kills} kills`);
  if (report.replays > kills) missed.push(`${report.replays} answered calls with two hits, more than the ${kills} kills`);
  if (report.balancerKeyLines > 0) missed.push(`${report.balancerKeyLines} lines of the load balancer's log with a caller's key`);
  for (const memory of report.memory) {
    const growth = memory.endKb / memory.startKb - 1;
    if (growth > MAX_RSS_GROWTH) missed.push(`${memory.name}'s resident memory grew ${Math.round(growth * 100)} %`);
  }
  const { budget } = report.options;
  if (budget !== null && report.upstream.maxPerSecond > budgetLimits(budget).allowed) {
    missed.push(`${report.upstream.maxPerSecond} upstream requests in one second, over the budget and one burst`);
  }
  return missed;
}

const mb = (kb: number): string => `${(kb / 1024).toFixed(1)} MB`;

/** The report as a table (Markdown, as docs/fleet.md shows it), the schedule as it ran, and the verdict. */
export function chaosTable(report: ChaosReport): string {
  const { options } = report;
  const kills = report.kills.instance;
  const front = options.balancer === 'haproxy' ? 'HAProxy (deploy/haproxy.cfg)' : 'nginx (deploy/nginx.conf)';
  const rows: [string, string, string][] = [
    ['calls', String(report.calls), ''],
    ['failed calls', String(report.failedCalls), '0'],
    ...report.failures.map(({ kind, count }): [string, string, string] => [`  ${kind}`, String(count), '']),
    ['upstream-outage faults (the legacy fault, expected)', String(report.outageFaults), ''],
    ['replays (answered, two hits)', String(report.replays), `≤ ${kills} (instance kills)`],
    ['hits missing (answered, no hit)', String(report.hitsMissing), `≤ ${kills} (instance kills)`],
    ['passed to another instance by the load balancer', String(report.balancerRetries), ''],
    ["lines of the load balancer's log with a caller's key", String(report.balancerKeyLines), '0'],
    ['latency p50 / p99 / worst', `${report.latencyMs.p50} / ${report.latencyMs.p99} / ${report.latencyMs.worst} ms`, ''],
  ];
  if (options.budget !== null) {
    const { perSecond, allowed } = budgetLimits(options.budget);
    rows.push(
      ['upstream requests', String(report.upstream.requests), ''],
      [
        'upstream requests in the busiest second',
        String(report.upstream.maxPerSecond),
        `≤ ${allowed} (budget ${options.budget.requestsPerSecond}/s + burst ${options.budget.burst} = ${perSecond}, + one burst)`,
      ],
      [`gateway 403s (limit ${options.budget.gatewayQps}/s)`, String(report.upstream.refused), ''],
    );
  }
  for (const memory of report.memory) {
    const growth = Math.round((memory.endKb / memory.startKb - 1) * 100);
    const runs = memory.runs === 1 ? '1 process' : `${memory.runs} processes`;
    rows.push([`RSS ${memory.name}, start → end`, `${mb(memory.startKb)} → ${mb(memory.endKb)} (${growth} %, ${runs})`, '≤ +20 %']);
  }
  const missed = missedTargets(report);
  const head = [
    `chaos run: ${options.seconds} s at ${options.rate} calls/s (${options.newSearchesPerSecond}/s new searches) behind ${front}`,
    `redis: ${report.redis}; kills: ${report.kills.instance} instances, ${report.kills.redis} Redis, ${report.kills.upstream} upstream`,
    ...report.events.map((event) => `  ${(event.at / 1000).toFixed(1).padStart(6)} s  ${event.what}`),
    '',
    '| measure | value | target |',
    '|---|---|---|',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
    '',
    missed.length === 0 ? 'every target met' : `targets missed: ${missed.join('; ')}`,
  ];
  const examples = report.failures.flatMap(({ examples }) => examples);
  return [
    ...head,
    '',
    'the slowest calls (sent at seconds from the start of the load):',
    ...report.slowest,
    ...(examples.length > 0 ? ['', 'failed calls, the first of each kind:', ...examples] : []),
    ...(report.balancerErrors.length > 0 ? ['', "the load balancer's lines of requests not answered 200:", ...report.balancerErrors] : []),
  ].join('\n');
}

// --- The run -------------------------------------------------------------------------------------------------

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The resident memory of a process in kB (`VmRSS` of /proc/PID/status). */
function residentKb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb);
}

/** Each instance's resident memory, waiting for one that is being started again. */
async function memoryOf(fleet: Fleet): Promise<number[]> {
  const kbs: number[] = [];
  for (const instance of fleet.instances) {
    await waitUntil(`${instance.name} running`, () => instance.pid() !== undefined, 15_000);
    kbs.push(residentKb(instance.pid()!));
  }
  return kbs;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** The most of `times` (ms, any order) within any window of `windowMs`. */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last]! - sorted[first]! >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

const USER_AGENT = 'chaos-call/';

/** Runs a fleet through the schedule under load, and stops it; what the callers got. */
export async function runChaos(options: ChaosOptions, redis: ChaosRedis = SINGLE_REDIS): Promise<ChaosReport> {
  const say = options.say ?? (() => {});
  const every = options.killEverySeconds ?? 10;
  const warmupMs = (options.warmupSeconds ?? 5) * 1000;
  const config: Json =
    options.budget === null
      ? {}
      : {
          upstream: {
            budget: { requestsPerSecond: options.budget.requestsPerSecond, burst: options.budget.burst, instances: 3, maxWaitMs: 1000 },
          },
        };
  const fleet = await startFleet({
    ...redis.fleetOptions,
    instances: 3,
    balancer: options.balancer === 'haproxy' ? 'deploy/haproxy.cfg' : 'deploy/nginx.conf',
    config: mergeJson(redis.fleetOptions.config ?? {}, config),
  });
  try {
    const gateway = options.budget === null ? null : masheryQpsLimit(options.budget.gatewayQps);
    if (gateway !== null) fleet.upstream.override(gateway.answer);
    const specs = everyCall(fleet.upstream.catalog);
    const newEvery = options.newSearchesPerSecond > 0 ? Math.max(1, Math.round(options.rate / options.newSearchesPerSecond)) : 0;
    const specOf: CallSpec[] = [];
    const events: ChaosEvent[] = [];
    const outages: [number, number][] = [];
    const loadStart = performance.now();
    const since = (): number => performance.now() - loadStart;
    const event = (what: string): void => {
      events.push({ at: since(), what });
      say(`${(since() / 1000).toFixed(1)} s: ${what}`);
    };
    const load = startLoad(options.rate, (index) => {
      const spec: CallSpec =
        newEvery > 0 && index % newEvery === 0
          ? { op: 'Search', binding: CALL_BINDINGS[index % CALL_BINDINGS.length]!, params: { query: `chaos ${index}`, apiKey: API_KEY } }
          : specs[index % specs.length]!;
      specOf[index] = spec;
      const headers = { 'user-agent': `${USER_AGENT}${index}` };
      return {
        what: `${spec.op} over ${spec.binding}`,
        send: (signal) => legacyCall(fleet.url, spec.binding, spec.op, spec.params, headers, signal),
      };
    });

    await sleep(warmupMs);
    const startKb = await memoryOf(fleet);
    event(`schedule starts; RSS ${startKb.map(mb).join(', ')}`);
    const kills: Record<ChaosAction, number> = { instance: 0, redis: 0, upstream: 0 };
    const actions: Promise<void>[] = [];
    const scheduleStart = performance.now();
    for (const { at, action } of chaosSchedule(options.seconds, every, options.kills)) {
      await sleep(Math.max(0, scheduleStart + at * 1000 - performance.now()));
      if (action === 'instance') {
        const instance = fleet.instances[kills.instance % fleet.instances.length]!;
        kills.instance++;
        actions.push(
          (async () => {
            event(`SIGKILL ${instance.name}`);
            await instance.kill();
            const starting = performance.now();
            await instance.start();
            event(`${instance.name} started again (${Math.round(performance.now() - starting)} ms)`);
          })(),
        );
      } else if (action === 'redis') {
        kills.redis++;
        actions.push(
          (async () => {
            event('SIGKILL the Redis master');
            await redis.killMaster(fleet);
            await sleep(REDIS_DOWN_MS);
            await redis.recover(fleet);
            event('Redis has a master again');
          })(),
        );
      } else {
        kills.upstream++;
        actions.push(
          (async () => {
            event('upstream down (connections refused)');
            const down = since();
            await fleet.upstream.stop();
            await sleep(UPSTREAM_DOWN_MS);
            await fleet.upstream.start();
            outages.push([down, since()]);
            event('upstream back');
          })(),
        );
      }
    }
    await sleep(Math.max(0, scheduleStart + options.seconds * 1000 - performance.now()));
    await Promise.all(actions);
    const endKb = await memoryOf(fleet);
    event(`schedule ends; RSS ${endKb.map(mb).join(', ')}`);
    const results = await load.stop();

    // Every hit line written before the load stopped has reached this process: the count holds still.
    const hitCount = (): number => fleet.instances.reduce((sum, instance) => sum + instance.events('deprecated_call').length, 0);
    let seen = -1;
    await waitUntil(
      'the hit lines to stop coming',
      () => {
        const now = hitCount();
        const still = now === seen;
        seen = now;
        return still;
      },
      10_000,
      500,
    );
    const hits = new Map<string, number>();
    for (const instance of fleet.instances) {
      for (const line of instance.events('deprecated_call')) {
        const agent = String(line.userAgent ?? '');
        if (agent.startsWith(USER_AGENT)) hits.set(agent, (hits.get(agent) ?? 0) + 1);
      }
    }
    return account(options, redis, fleet, {
      results,
      specOf,
      hits,
      outages,
      events,
      kills,
      startKb,
      endKb,
      refused: gateway?.refused() ?? 0,
      loadStart,
    });
  } finally {
    await fleet.stop();
  }
}

interface Observed {
  readonly results: readonly CallResult[];
  readonly specOf: readonly CallSpec[];
  readonly hits: ReadonlyMap<string, number>;
  readonly outages: readonly (readonly [number, number])[];
  readonly events: readonly ChaosEvent[];
  readonly kills: Readonly<Record<ChaosAction, number>>;
  readonly startKb: readonly number[];
  readonly endKb: readonly number[];
  readonly refused: number;
  readonly loadStart: number;
}

/**
 * The requests the load balancer tried again on another instance, from its access log: HAProxy's line
 * (the `option httplog` layout) ends its connection counts with the retries (`+N` when redispatched);
 * nginx's (deploy/nginx.conf's `catalog_proxy`) names every instance a call was passed to, in order,
 * before what each answered: two or more when `proxy_next_upstream` passed it on.
 */
export function balancerRetries(kind: Fleet['balancer']['kind'], lines: readonly string[]): number {
  const retried =
    kind === 'haproxy'
      ? (line: string) => Number(/ \d+\/\d+\/\d+\/\d+\/\+?(\d+) \d+\/\d+ "/.exec(line)?.[1] ?? 0) > 0
      : (line: string) => (/ "([^"]*)" "[^"]*" "[^"]*" "[^"]*"$/.exec(line)?.[1] ?? '').includes(',');
  return lines.filter(retried).length;
}

/** The load balancer's access lines of requests not answered with an instance's 200 (`ChaosReport.balancerErrors`). */
export function balancerErrors(kind: Fleet['balancer']['kind'], lines: readonly string[]): string[] {
  const request = kind === 'haproxy' ? / catalog \S+\/\S+ \S+ (-?\d+) \S+ \S+ \S+ (\S{4}) / : /^\S+ \[[^\]]+\] "[^"]*" (\d+) /;
  return lines.filter((line) => {
    const match = request.exec(line);
    return match !== null && (match[1] !== '200' || (match[2] ?? '----') !== '----');
  });
}

/** The kind of a failed call, for the table. */
function kindOf(result: CallResult): string {
  if (result.status === null) return /timeout|aborted/i.test(result.error ?? '') ? 'no reply in time' : 'connection errors';
  if (shed(result)) return 'shed (503 with Retry-After)';
  if (result.status === 200) return '200 but not the result';
  return `status ${result.status}`;
}

function account(options: ChaosOptions, redis: ChaosRedis, fleet: Fleet, observed: Observed): ChaosReport {
  const { results, specOf, hits, outages } = observed;
  // A call in flight at any moment of an outage may get the legacy fault of a down upstream.
  const duringOutage = (result: CallResult): boolean =>
    outages.some(([down, up]) => result.sentAt <= up && result.sentAt + result.durationMs >= down);
  const failed = new Map<string, CallResult[]>();
  let outageFaults = 0;
  let replays = 0;
  let hitsMissing = 0;
  for (const result of results) {
    const spec = specOf[result.index]!;
    if (!succeeded(spec, result)) {
      if (duringOutage(result) && upstreamDownFault(spec, result)) outageFaults++;
      else failed.set(kindOf(result), [...(failed.get(kindOf(result)) ?? []), result]);
    }
    if (result.status === null) continue;
    const count = hits.get(`${USER_AGENT}${result.index}`) ?? 0;
    if (count === 0) hitsMissing++;
    if (count >= 2) replays++;
  }
  const durations = results.map((result) => result.durationMs).sort((a, b) => a - b);
  const upstreamTimes = fleet.upstream.requests
    .filter((request) => request.at >= observed.loadStart && new URL(request.url, 'http://upstream').searchParams.get('appKey') === API_KEY)
    .map((request) => request.at);
  return {
    options,
    redis: redis.description,
    calls: results.length,
    failures: [...failed].map(([kind, calls]) => ({ kind, count: calls.length, examples: calls.slice(0, 3).map(told) })),
    failedCalls: [...failed.values()].reduce((sum, calls) => sum + calls.length, 0),
    outageFaults,
    replays,
    hitsMissing,
    balancerRetries: balancerRetries(fleet.balancer.kind, fleet.balancer.lines),
    balancerKeyLines: fleet.balancer.lines.filter((line) => line.toLowerCase().includes(API_KEY.toLowerCase())).length,
    balancerErrors: balancerErrors(fleet.balancer.kind, fleet.balancer.lines).slice(0, 10),
    kills: observed.kills,
    latencyMs: {
      p50: Math.round(quantile(durations, 0.5)),
      p99: Math.round(quantile(durations, 0.99)),
      worst: Math.round(durations.at(-1) ?? 0),
    },
    slowest: [...results]
      .sort((a, b) => b.durationMs - a.durationMs)
      .slice(0, 3)
      .map(
        (result) =>
          `${result.what} sent at ${(result.sentAt / 1000).toFixed(1)} s: ${Math.round(result.durationMs)} ms, ` +
          `${result.status ?? result.error}`,
      ),
    upstream: { requests: upstreamTimes.length, maxPerSecond: maxInWindow(upstreamTimes, 1000), refused: observed.refused },
    memory: fleet.instances.map((instance, index) => ({
      name: instance.name,
      startKb: observed.startKb[index]!,
      endKb: observed.endKb[index]!,
      runs: instance.exits.length + 1,
    })),
    events: observed.events,
  };
}
