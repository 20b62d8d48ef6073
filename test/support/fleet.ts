import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, type OutgoingHttpHeaders, request, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import type { Catalog } from '../../src/demo/catalog.js';
import { startDemoUpstream, type DemoUpstream } from '../../src/demo/demo-server.js';
import { skipClientSuite } from './clients.js';
import { TEST_CLIENT_ID_KEY } from './config.js';

/**
 * A real fleet on loopback (issue 18, item 7; docs/fleet.md): a Redis (`redis-server`, its own port, no
 * persistence, its own temporary directory), N proxies as production runs them (`node
 * dist/src/bin/start.js`, each with its own service and operator ports, every log and hit line kept),
 * an HAProxy in front that checks `/readyz` (deploy/haproxy.cfg itself, its ports changed and its
 * checks shorter; or nginx with deploy/nginx.conf, its ports changed), and one upstream every
 * instance shares: the demo upstream behind a counting server that can be stopped and started again
 * on its port, or told to answer otherwise.
 *
 * redis-server, haproxy and nginx come from Debian (`apt-get install redis-server haproxy nginx`;
 * .ci/run installs them). Without them the fleet's suites are skipped and say what is missing, unless
 * REQUIRE_OTHER_CLIENTS=1 (CI), which makes them fail. `npm test` builds dist/ first; a test file run
 * on its own needs `npm run build` before.
 *
 * Everything a fleet starts is stopped by `fleet.stop()`, which a test registers with
 * `onTestFinished`, so that a failed or timed-out test leaves nothing running; every wait is bounded.
 */

/**
 * The project's root: this file runs from test/support under vitest, and from dist/test/support when
 * `npm run chaos` (bench/chaos.ts) runs it compiled.
 */
const ROOT =
  basename(dirname(dirname(import.meta.dirname))) === 'dist'
    ? join(import.meta.dirname, '..', '..', '..')
    : join(import.meta.dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'bin', 'start.js');

// --- What the fleet needs ------------------------------------------------------------------------------

/** `name` on PATH (or in the sbin directories, where Debian puts haproxy), or the path `variable` names. */
function findBinary(name: string, variable: string): string | null {
  const given = process.env[variable];
  if (given !== undefined && given !== '') return existsSync(given) ? given : null;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/sbin'];
  for (const dir of dirs) {
    if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

const REDIS_SERVER = findBinary('redis-server', 'REDIS_SERVER');
const HAPROXY = findBinary('haproxy', 'HAPROXY');
const NGINX = findBinary('nginx', 'NGINX');

/** What is missing for a fleet, in words; null when nothing is. */
export const FLEET_MISSING: string | null = (() => {
  const missing = [REDIS_SERVER === null ? 'redis-server' : null, HAPROXY === null ? 'haproxy' : null].filter((name) => name !== null);
  if (missing.length === 0) return null;
  return `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not installed (apt-get install redis-server haproxy)`;
})();

/** For `describe.skipIf`: skipped without the binaries, unless REQUIRE_OTHER_CLIENTS=1. */
export const skipFleetSuite = skipClientSuite(FLEET_MISSING === null);

/** What is missing for a fleet behind nginx (deploy/nginx.conf), in words; null when nothing is. */
export const NGINX_MISSING: string | null = NGINX === null ? 'nginx is not installed (apt-get install nginx)' : null;

/** The path of the haproxy binary, for checking a configuration file with `haproxy -c`. */
export function haproxyBinary(): string {
  if (HAPROXY === null) throw new Error(`${FLEET_MISSING}, but REQUIRE_OTHER_CLIENTS=1`);
  return HAPROXY;
}

// --- Processes -----------------------------------------------------------------------------------------

/** Ports this process has handed out, never handed out twice (the OS may offer a closed one again). */
const HANDED_OUT = new Set<number>();

/** A free TCP port on loopback (free when asked; the fleet takes it right after). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createNetServer();
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    if (!HANDED_OUT.has(port)) {
      HANDED_OUT.add(port);
      return port;
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Thrown by a check of `waitUntil` to give up at once (a process it waits for has exited). */
export class GaveUp extends Error {}

/**
 * Polls `check` every `everyMs` until it returns true; throws `what` after `timeoutMs`. A check that
 * throws is tried again (a listener not up yet), unless it throws GaveUp.
 */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000, everyMs = 50): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  while (performance.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      if (err instanceof GaveUp) throw err;
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (last: ${last.message})` : ''}`);
}

/** A child process with its exit as a promise; its output kept line by line. */
interface Child {
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
}

function spawnChild(command: string, args: readonly string[], env: NodeJS.ProcessEnv, onLine: (line: string) => void): Child {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, exited };
}

/** SIGKILL unless it has exited; resolves once it has. */
async function killChild(child: Child | undefined): Promise<void> {
  if (child === undefined || child.process.exitCode !== null || child.process.signalCode !== null) return;
  child.process.kill('SIGKILL');
  await child.exited;
}

/** Every child of every fleet of this process, killed if the process exits with them still running. */
const LIVE = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of LIVE) child.kill('SIGKILL');
});
function track(child: Child): Child {
  LIVE.add(child.process);
  void child.exited.then(() => LIVE.delete(child.process));
  return child;
}

// --- Redis ---------------------------------------------------------------------------------------------

export interface FleetRedis {
  readonly port: number;
  /** `redis://127.0.0.1:PORT`, what REDIS_URL says. */
  readonly url: string;
  /** Its own lines (redis-server logs to stdout). */
  readonly lines: string[];
  /** Starts it (again, on the same port, empty): resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGKILL, as a crash or an OOM kill would stop it: resolves once it has exited. */
  kill(): Promise<void>;
  /** One command, on a connection of its own. */
  command(name: string, ...args: (string | number)[]): Promise<unknown>;
  /** `connected_clients` of INFO: the proxies connected (and this harness's own one-command connection). */
  connectedClients(): Promise<number>;
}

async function createRedis(dir: string): Promise<FleetRedis> {
  if (REDIS_SERVER === null) throw new Error(`${FLEET_MISSING}, but REQUIRE_OTHER_CLIENTS=1`);
  const binary = REDIS_SERVER;
  const port = await freePort();
  const lines: string[] = [];
  let child: Child | undefined;
  const command = async (name: string, ...args: (string | number)[]): Promise<unknown> => {
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      commandTimeout: 2000,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      return await client.call(name, ...args);
    } finally {
      client.disconnect(false);
    }
  };
  const redis: FleetRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    lines,
    async start() {
      if (child !== undefined && child.process.exitCode === null && child.process.signalCode === null) throw new Error('Redis is running');
      // No persistence: a restart is an empty Redis, as a replaced container's would be.
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
      child = track(spawnChild(binary, args, { PATH: process.env.PATH }, (line) => lines.push(line)));
      const started = child;
      await waitUntil(`redis-server on port ${port}`, async () => {
        if (started.process.exitCode !== null) throw new GaveUp(`redis-server exited: ${lines.slice(-5).join(' | ')}`);
        return (await command('PING')) === 'PONG';
      });
    },
    async kill() {
      await killChild(child);
    },
    command,
    async connectedClients() {
      const info = String(await command('INFO', 'clients'));
      return Number(/connected_clients:(\d+)/.exec(info)?.[1] ?? Number.NaN);
    },
  };
  return redis;
}

// --- The upstream ----------------------------------------------------------------------------------------

/** Answers a request instead of the demo upstream, or returns false to let the demo upstream answer. */
export type UpstreamOverride = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface UpstreamRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  /** `performance.now()` of the test process when it arrived. */
  readonly at: number;
  /** What it was answered (a status), once answered. */
  status?: number;
}

export interface FleetUpstream {
  /** `http://127.0.0.1:PORT`: the proxies' UPSTREAM_URL. */
  readonly url: string;
  /** The catalog the demo upstream serves, to pick stores and products that exist. */
  readonly catalog: Catalog;
  /** Every request that reached it, in arrival order; a test may empty it (`requests.length = 0`). */
  readonly requests: UpstreamRequest[];
  /** How many requests came for the path and query `url` exactly, or, with a function, those it accepts. */
  count(url: string | ((url: string) => boolean)): number;
  /** Answers requests itself first (a Mashery gateway, a failing upstream); null: the demo upstream answers. */
  override(answer: UpstreamOverride | null): void;
  /** Requests whose path and query `matches` are answered `delayMs` late (a slow page); null: none. */
  slow(matches: ((url: string) => boolean) | null, delayMs?: number): void;
  /** Stops listening and drops every connection: the proxies' next requests are refused (ECONNREFUSED). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

async function createUpstream(): Promise<FleetUpstream> {
  const config = loadConfig({}, { log: { level: 'silent' } });
  const demo: DemoUpstream = await startDemoUpstream(config);
  const demoUrl = new URL(demo.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });
  const requests: UpstreamRequest[] = [];
  // The demo upstream's reply to a GET, kept: the same request is answered the same way, without the
  // CPU of generating the page again on a machine the fleet shares with the rest of the suite.
  const replies = new Map<string, { status: number; headers: OutgoingHttpHeaders; body: Buffer }>();
  let answer: UpstreamOverride | null = null;
  let slowMatches: ((url: string) => boolean) | null = null;
  let slowDelayMs = 0;
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const seen: UpstreamRequest = { method: req.method ?? '', url: req.url ?? '', at: performance.now() };
    requests.push(seen);
    res.on('finish', () => {
      seen.status = res.statusCode;
    });
    if (answer?.(req, res)) return;
    if (slowMatches?.(req.url ?? '')) setTimeout(() => forward(req, res), slowDelayMs);
    else forward(req, res);
  };
  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const known = req.method === 'GET' ? replies.get(req.url ?? '') : undefined;
    if (known !== undefined) {
      res.writeHead(known.status, known.headers);
      res.end(known.body);
      return;
    }
    const forwarded = request(
      { host: demoUrl.hostname, port: demoUrl.port, method: req.method, path: req.url, headers: req.headers, agent },
      (reply) => {
        const chunks: Buffer[] = [];
        reply.on('data', (chunk: Buffer) => chunks.push(chunk));
        reply.on('end', () => {
          const body = Buffer.concat(chunks);
          const headers = { ...reply.headers, 'content-length': String(body.length) };
          delete headers['transfer-encoding'];
          const status = reply.statusCode ?? 502;
          if (req.method === 'GET') replies.set(req.url ?? '', { status, headers, body });
          res.writeHead(status, headers);
          res.end(body);
        });
        reply.on('error', () => res.destroy());
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  };
  let server: Server | undefined;
  const port = await freePort();
  const listen = async (): Promise<void> => {
    const next = createServer(handle);
    next.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => resolve());
    });
    server = next;
  };
  const stop = async (): Promise<void> => {
    const current = server;
    server = undefined;
    if (current === undefined) return;
    await new Promise<void>((resolve) => {
      current.close(() => resolve());
      current.closeAllConnections();
    });
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    catalog: demo.catalog,
    requests,
    count: (url) => requests.filter((seen) => (typeof url === 'string' ? seen.url === url : url(seen.url))).length,
    override(next) {
      answer = next;
    },
    slow(matches, delayMs = 0) {
      slowMatches = matches;
      slowDelayMs = delayMs;
    },
    stop,
    async start() {
      if (server === undefined) await listen();
    },
    async close() {
      await stop();
      agent.destroy();
      await demo.close();
    },
  };
}

/**
 * Mashery's per-key rate limit, as the gateway in front of the real upstream enforces it: more than
 * `perSecond` requests of one appKey in any second are refused with its 403 (docs/upstream.md §7.2).
 * `refused()` counts them.
 */
export function masheryQpsLimit(perSecond: number): { readonly answer: UpstreamOverride; refused(): number } {
  const recent = new Map<string, number[]>();
  let refused = 0;
  return {
    refused: () => refused,
    answer(req, res) {
      const key = new URL(req.url ?? '/', 'http://upstream').searchParams.get('appKey') ?? '';
      const now = performance.now();
      const times = (recent.get(key) ?? []).filter((at) => now - at < 1000);
      recent.set(key, times);
      if (times.length < perSecond) {
        times.push(now);
        return false;
      }
      refused++;
      const body = '<h1>Developer Over Qps</h1>';
      res.writeHead(403, {
        'Content-Type': 'text/xml',
        'X-Mashery-Error-Code': 'ERR_403_DEVELOPER_OVER_QPS',
        'Retry-After': '1',
        'Content-Length': String(Buffer.byteLength(body)),
      });
      res.end(body);
      return true;
    },
  };
}

// --- The proxies -----------------------------------------------------------------------------------------

/** One parsed log line of a proxy (operators' lines and hits alike, both JSON on stdout). */
export type LogLine = Readonly<Record<string, unknown>>;

export interface FleetInstance {
  /** `proxy0`, `proxy1`, …: its server name in HAProxy too. */
  readonly name: string;
  readonly port: number;
  readonly adminPort: number;
  /** `http://127.0.0.1:PORT`: the instance directly, not through HAProxy. */
  readonly url: string;
  readonly adminUrl: string;
  /** Every line of every run of it, in order; a line that is not JSON is kept as `{ text }`. */
  readonly lines: LogLine[];
  /** The exit code of each run that ended (null: killed by a signal). */
  readonly exits: (number | null)[];
  /** The lines with `event`. */
  events(event: string): LogLine[];
  /** Whether it is running. */
  running(): boolean;
  /** Starts it (again, on the same ports); resolves once both listeners are up. */
  start(): Promise<void>;
  /** SIGTERM, as an orchestrator stops it: resolves with its exit code once it has exited. */
  terminate(): Promise<number | null>;
  /** SIGKILL. */
  kill(): Promise<void>;
  /** The value of an unlabelled metric on its operator port's /metrics; undefined when absent. */
  metric(name: string): Promise<number | undefined>;
  /** The process id of the run now going, for reading its memory in /proc; undefined when not running. */
  pid(): number | undefined;
}

interface InstanceSettings {
  readonly name: string;
  readonly env: NodeJS.ProcessEnv;
  /** Bounds a SIGTERM's wait: the drain, then the calls in flight. */
  readonly stopWithinMs: number;
}

async function createInstance({ name, env, stopWithinMs }: InstanceSettings): Promise<FleetInstance> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const lines: LogLine[] = [];
  const exits: (number | null)[] = [];
  let child: Child | undefined;
  const running = (): boolean => child !== undefined && child.process.exitCode === null && child.process.signalCode === null;
  const instance: FleetInstance = {
    name,
    port,
    adminPort,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    lines,
    exits,
    events: (event) => lines.filter((line) => line.event === event),
    running,
    async start() {
      if (running()) throw new Error(`${name} is running`);
      const from = lines.length;
      const processEnv = { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: String(adminPort), ...env };
      child = track(
        spawnChild(process.execPath, [MAIN], processEnv, (line) => {
          try {
            lines.push(JSON.parse(line) as LogLine);
          } catch {
            lines.push({ text: line });
          }
        }),
      );
      const started = child;
      void started.exited.then((code) => exits.push(code));
      await waitUntil(
        `${name} to listen on ${port} and ${adminPort}`,
        () => {
          if (!running() && child === started) throw new GaveUp(`${name} exited: ${JSON.stringify(lines.slice(from).slice(-5))}`);
          const events = new Set(lines.slice(from).map((line) => line.event));
          return events.has('listening') && events.has('admin_listening');
        },
        15_000,
        20,
      );
    },
    async terminate() {
      const current = child;
      if (current === undefined || !running()) throw new Error(`${name} is not running`);
      current.process.kill('SIGTERM');
      const timer = setTimeout(() => current.process.kill('SIGKILL'), stopWithinMs);
      const code = await current.exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      await killChild(child);
    },
    pid: () => (running() ? child?.process.pid : undefined),
    async metric(metricName) {
      const text = await (await fetch(`${instance.adminUrl}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
      const line = text.split('\n').find((row) => row.startsWith(`${metricName} `));
      return line === undefined ? undefined : Number(line.slice(metricName.length + 1));
    },
  };
  return instance;
}

// --- HAProxy ---------------------------------------------------------------------------------------------

/** HAProxy's health checks of the instances: how often, and how many results in a row change its mind. */
export interface HealthChecks {
  readonly interMs: number;
  readonly fall: number;
  readonly rise: number;
  /** How long one check may take (`timeout check`). */
  readonly timeoutMs: number;
}

/**
 * Short, for tests: an instance is out within about half a second of failing `/readyz`, or a second
 * and a half if its checks hang. A check may take a second before it counts as failed: on two shared
 * cores a busy instance can be that slow, and taking all three out at once would fail calls.
 */
export const TEST_HEALTH_CHECKS: HealthChecks = { interMs: 250, fall: 2, rise: 2, timeoutMs: 1000 };

/**
 * The longest HAProxy takes to stop sending to an instance whose `/readyz` started failing: up to one
 * interval until the next check, then `fall` failed checks in a row, each of which may take the check
 * timeout (docs/fleet.md, "Drain timing"). `server.drainDelayMs` must be longer.
 */
export function detectionMs({ interMs, fall, timeoutMs }: HealthChecks): number {
  return interMs * fall + timeoutMs;
}

export interface HaproxyServer {
  readonly name: string;
  readonly port: number;
}

/** Where the fleet's callers call it: HAProxy or nginx in front of the instances. */
export interface FleetBalancer {
  readonly kind: 'haproxy' | 'nginx';
  /** `http://127.0.0.1:PORT`: where callers call the fleet. */
  readonly url: string;
  /** The configuration it runs (for nginx, the http-context file of deploy/nginx.conf). */
  readonly config: string;
  /**
   * Its log: HAProxy's one line per request (the `option httplog` layout, the path for the URI) and its
   * warnings (a server DOWN or UP); nginx's errors and its access lines (deploy/nginx.conf's `catalog_proxy`).
   */
  readonly lines: string[];
  /** Each server's status as HAProxy's stats page says it: `UP`, `DOWN`, `UP 1/2` (going down), …; nginx shows none: `{}`. */
  statuses(): Promise<Record<string, string>>;
  /** Until `server` is `status` (`UP`, `DOWN`). nginx checks nothing and only sends again: `UP` at once, anything else refused. */
  waitFor(server: string, status: string, timeoutMs?: number): Promise<void>;
}

/** Which load balancer: the shipped configuration of deploy/ it runs, ports changed. */
export type FleetBalancerChoice = 'deploy/haproxy.cfg' | 'deploy/nginx.conf';

/**
 * `shipped` with `pattern` (a line or lines, anchored with ^ and $ in multiline mode) replaced, which
 * must match exactly once: a shipped file that no longer has the line fails here, rather than being
 * run with the change not made.
 */
function substituteOnce(shipped: string, file: string, pattern: RegExp, replacement: string): string {
  const found = shipped.match(new RegExp(pattern.source, 'gm'))?.length ?? 0;
  if (found !== 1) throw new Error(`${file}: ${pattern} matches ${found} times, expected once`);
  return shipped.replace(new RegExp(pattern.source, 'm'), replacement);
}

/**
 * deploy/haproxy.cfg as shipped (issue 30, item 1: the file operators install is the one tested), with
 * only what a fleet on loopback must change: the front's address, the servers (the instances' names
 * and ports), the health checks' timings (`checks`: the shipped ones take 6 s to notice a stop), and
 * the log (stdout, which the harness keeps, rather than a syslog socket there may not be). A stats
 * listener is added, where the harness reads each server's state; nothing else differs.
 */
export function shippedHaproxyConfig(
  shipped: string,
  frontPort: number,
  statsPort: number,
  servers: readonly HaproxyServer[],
  checks: HealthChecks,
): string {
  const file = 'deploy/haproxy.cfg';
  let config = substituteOnce(shipped, file, /^([ \t]*)log \/dev\/log local0$/, '$1log stdout format raw local0 info');
  config = substituteOnce(config, file, /^([ \t]*)bind :80$/, `$1bind 127.0.0.1:${frontPort}`);
  config = substituteOnce(config, file, /^([ \t]*)timeout check \S+$/, `$1timeout check ${checks.timeoutMs}ms`);
  config = substituteOnce(
    config,
    file,
    /^([ \t]*)default-server check inter \S+ fall \d+ rise \d+$/,
    `$1default-server check inter ${checks.interMs}ms fall ${checks.fall} rise ${checks.rise}`,
  );
  const serverLines = servers.map((server) => `  server ${server.name} 127.0.0.1:${server.port}\n`).join('');
  config = substituteOnce(config, file, /^([ \t]*server \S+ \S+\n)+/, serverLines);
  return [config.trimEnd(), '', 'listen stats', `  bind 127.0.0.1:${statsPort}`, '  stats enable', '  stats uri /stats', ''].join('\n');
}

/**
 * deploy/nginx.conf as shipped, with only the front's address, the servers' ports (each server keeps its
 * `max_fails` and `fail_timeout`) and the logs' files (errors to stderr, which the harness keeps, and
 * the access log to `accessLog`: nginx cannot open /dev/stderr when it is a socket) changed:
 * the http-context file an operator puts in /etc/nginx/conf.d/.
 */
export function shippedNginxConfig(shipped: string, frontPort: number, servers: readonly HaproxyServer[], accessLog: string): string {
  const file = 'deploy/nginx.conf';
  let config = substituteOnce(shipped, file, /^([ \t]*)listen 80;$/, `$1listen 127.0.0.1:${frontPort};`);
  config = substituteOnce(config, file, /^([ \t]*access_log )\/var\/log\/nginx\/\S+( catalog_proxy;)$/, `$1${accessLog}$2`);
  config = substituteOnce(config, file, /^([ \t]*error_log )\/var\/log\/nginx\/\S+( crit;)$/, '$1stderr$2');
  const serverLine = /^([ \t]*server )127\.0\.0\.1:\d+( [^;\n]*;)$/gm;
  const found = config.match(serverLine)?.length ?? 0;
  if (found !== servers.length) throw new Error(`${file}: ${found} server lines, expected ${servers.length}, one per instance`);
  const ports = servers.map((server) => server.port);
  return config.replace(serverLine, (_, head: string, tail: string) => `${head}127.0.0.1:${ports.shift()}${tail}`);
}

/**
 * The main file around the shipped http-context one, as Debian's /etc/nginx/nginx.conf is around
 * conf.d/, but for a test: in the foreground, one process without a master (a SIGKILL leaves no
 * worker behind, and one process is enough on two cores), errors to stderr, no access log but the
 * shipped file's own, and its temporary files in the fleet's directory.
 */
function nginxMainConfig(dir: string, httpFile: string): string {
  const temp = (name: string): string => join(dir, 'nginx', name);
  return [
    'daemon off;',
    'master_process off;',
    `pid ${join(dir, 'nginx', 'nginx.pid')};`,
    'error_log stderr warn;',
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${temp('client_body')};`,
    `  proxy_temp_path ${temp('proxy')};`,
    `  fastcgi_temp_path ${temp('fastcgi')};`,
    `  uwsgi_temp_path ${temp('uwsgi')};`,
    `  scgi_temp_path ${temp('scgi')};`,
    `  include ${httpFile};`,
    '}',
    '',
  ].join('\n');
}

// --- The fleet -------------------------------------------------------------------------------------------

export interface FleetOptions {
  /** Default 3. */
  readonly instances?: number;
  /** The configuration file every instance is given (CONFIG_FILE), merged over the fleet's own settings. */
  readonly config?: Json;
  readonly checks?: HealthChecks;
  /**
   * In front: HAProxy with deploy/haproxy.cfg (the default) or nginx with deploy/nginx.conf, each as
   * shipped with only ports, servers, check timings and the log changed.
   */
  readonly balancer?: FleetBalancerChoice;
  /**
   * How the instances reach Redis, in place of `REDIS_URL` of the fleet's own redis-server (which is
   * then started but not used): Redis Sentinel's variables, say.
   */
  readonly redisEnv?: Readonly<Record<string, string>>;
}

export interface Fleet {
  /** Through the load balancer. */
  readonly url: string;
  readonly instances: readonly FleetInstance[];
  readonly redis: FleetRedis;
  readonly upstream: FleetUpstream;
  readonly balancer: FleetBalancer;
  /** `server.drainDelayMs` of every instance. */
  readonly drainDelayMs: number;
  /**
   * One step of a rolling restart: SIGTERM to the instance, its exit awaited (its code returned, and
   * how long it took), the state HAProxy had it in when it exited (`DOWN` when the drain was long
   * enough), then started again and awaited until HAProxy has it UP.
   */
  restart(index: number): Promise<{ readonly exitCode: number | null; readonly statusAtExit: string; readonly stopMs: number }>;
  /** Stops everything it started; again is harmless. */
  stop(): Promise<void>;
}

/**
 * The fleet's own settings, under the test's: a drain longer than HAProxy's detection (docs/fleet.md),
 * the caller's address from HAProxy's X-Forwarded-For, and room for the calls in flight: on two cores
 * shared with the rest of the suite, a stall of a second or two piles up more than the default 64
 * calls, and their 503 Server Too Busy would say the machine is busy, not that a drain went wrong.
 */
function fleetConfig(checks: HealthChecks): { readonly drainDelayMs: number; readonly config: Json } {
  // Twice the detection time, at least a second: the rule of docs/fleet.md with a margin for a busy machine.
  const drainDelayMs = Math.max(1000, 2 * detectionMs(checks));
  return { drainDelayMs, config: { server: { drainDelayMs, trustProxy: 1, maxConcurrentCalls: 1024 } } };
}

/** `over` merged into `base`, object by object; anything else in `over` replaces what `base` has. */
export function mergeJson(base: Json, over: Json): Json {
  if (
    typeof base !== 'object' ||
    base === null ||
    Array.isArray(base) ||
    typeof over !== 'object' ||
    over === null ||
    Array.isArray(over)
  ) {
    return over;
  }
  const merged: Record<string, Json> = { ...base };
  for (const [key, value] of Object.entries(over)) merged[key] = key in merged ? mergeJson(merged[key]!, value) : value;
  return merged;
}

export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const checks = options.checks ?? TEST_HEALTH_CHECKS;
  const dir = mkdtempSync(join(tmpdir(), 'catalog-fleet-'));
  const stops: (() => Promise<void>)[] = [];
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      for (const step of stops.reverse()) await step().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    const redis = await createRedis(dir);
    stops.push(() => redis.kill());
    await redis.start();

    const upstream = await createUpstream();
    stops.push(() => upstream.close());

    const { drainDelayMs, config } = fleetConfig(checks);
    const configFile = join(dir, 'proxy.json');
    writeFileSync(configFile, JSON.stringify(mergeJson(config, options.config ?? {})));
    const env = {
      UPSTREAM_URL: upstream.url,
      ...(options.redisEnv ?? { REDIS_URL: redis.url }),
      CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
      CONFIG_FILE: configFile,
    };
    const instances = await Promise.all(
      Array.from({ length: options.instances ?? 3 }, (_, index) =>
        createInstance({ name: `proxy${index}`, env, stopWithinMs: drainDelayMs + 40_000 }),
      ),
    );
    stops.push(async () => {
      await Promise.all(instances.map((instance) => instance.kill()));
    });
    await Promise.all(instances.map((instance) => instance.start()));

    const balancer = await startBalancer(options.balancer ?? 'deploy/haproxy.cfg', dir, instances, checks);
    stops.push(balancer.kill);
    await Promise.all(instances.map((instance) => balancer.waitFor(instance.name, 'UP')));

    return {
      url: balancer.url,
      instances,
      redis,
      upstream,
      balancer,
      drainDelayMs,
      async restart(index) {
        const instance = instances[index]!;
        const stopping = performance.now();
        const exitCode = await instance.terminate();
        const stopMs = performance.now() - stopping;
        const statusAtExit = (await balancer.statuses())[instance.name] ?? 'unknown';
        await instance.start();
        await balancer.waitFor(instance.name, 'UP');
        return { exitCode, statusAtExit, stopMs };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A load balancer the harness started, and how to stop it. */
export type StartedBalancer = FleetBalancer & { kill(): Promise<void> };

/**
 * `choice` as shipped, ports, servers and (HAProxy) check timings changed, in front of `servers` (each
 * answering `GET /readyz`), its files in `dir`: nginx resolves once it answers, HAProxy once started
 * (`waitFor` each server `UP`). The fleet's, and a test's of a balancer alone before servers of its own.
 */
export function startBalancer(
  choice: FleetBalancerChoice,
  dir: string,
  servers: readonly HaproxyServer[],
  checks: HealthChecks = TEST_HEALTH_CHECKS,
): Promise<StartedBalancer> {
  return choice === 'deploy/nginx.conf' ? startNginx(dir, servers) : startHaproxy(dir, servers, checks);
}

async function startHaproxy(dir: string, servers: readonly HaproxyServer[], checks: HealthChecks): Promise<StartedBalancer> {
  if (HAPROXY === null) throw new Error(`${FLEET_MISSING}, but REQUIRE_OTHER_CLIENTS=1`);
  const [frontPort, statsPort] = [await freePort(), await freePort()];
  const config = shippedHaproxyConfig(readFileSync(join(ROOT, 'deploy', 'haproxy.cfg'), 'utf8'), frontPort, statsPort, servers, checks);
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config);
  const lines: string[] = [];
  // -n: at most 4096 connections, whatever the file says. The shipped `maxconn 20000` needs some 40,000
  // file descriptors, more than a test machine may let it have (this one: 20,000, which haproxy refuses
  // to start with); the command line lowers it and leaves the file as shipped.
  const args = ['-db', '-n', '4096', '-f', file];
  const child = track(spawnChild(HAPROXY, args, { PATH: process.env.PATH }, (line) => lines.push(line)));
  const statuses = async (): Promise<Record<string, string>> => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`, { signal: AbortSignal.timeout(2000) })).text();
    const rows = csv.split('\n').map((row) => row.split(','));
    const header = rows[0]!.map((column) => column.replace(/^# /, ''));
    const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => header.indexOf(name)) as [number, number, number];
    return Object.fromEntries(
      rows.filter((row) => row[proxy] === 'catalog-proxies' && row[server] !== 'BACKEND').map((row) => [row[server], row[status]]),
    );
  };
  const haproxy = {
    kind: 'haproxy' as const,
    url: `http://127.0.0.1:${frontPort}`,
    config,
    lines,
    statuses,
    async waitFor(server: string, status: string, timeoutMs = 15_000) {
      await waitUntil(
        `HAProxy to have ${server} ${status}`,
        async () => {
          if (child.process.exitCode !== null) throw new GaveUp(`haproxy exited: ${lines.slice(-5).join(' | ')}`);
          return (await statuses())[server] === status;
        },
        timeoutMs,
      );
    },
    kill: () => killChild(child),
  };
  return haproxy;
}

/** nginx with deploy/nginx.conf as shipped (ports changed), in front of `servers`; resolves once it answers. */
async function startNginx(dir: string, servers: readonly HaproxyServer[]): Promise<StartedBalancer> {
  if (NGINX === null) throw new Error(`${NGINX_MISSING}, but REQUIRE_OTHER_CLIENTS=1`);
  const frontPort = await freePort();
  const home = join(dir, 'nginx');
  mkdirSync(home);
  const accessLog = join(home, 'access.log');
  const config = shippedNginxConfig(readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8'), frontPort, servers, accessLog);
  // Should nginx run its worker as another user (started as root), it must still write its temporary files.
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(home, name), { mode: 0o777 });
  chmodSync(dir, 0o755);
  const httpFile = join(home, 'catalog-proxy.conf');
  writeFileSync(httpFile, config);
  const mainFile = join(home, 'nginx.conf');
  writeFileSync(mainFile, nginxMainConfig(dir, httpFile));
  const lines: string[] = [];
  // -e: its error log before it has read the configuration, which would otherwise be /var/log/nginx.
  const args = ['-p', home, '-c', mainFile, '-e', 'stderr'];
  const child = track(spawnChild(NGINX, args, { PATH: process.env.PATH }, (line) => lines.push(line)));
  const url = `http://127.0.0.1:${frontPort}`;
  await waitUntil(`nginx on port ${frontPort}`, async () => {
    if (child.process.exitCode !== null) throw new GaveUp(`nginx exited: ${lines.slice(-5).join(' | ')}`);
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200;
  });
  return {
    kind: 'nginx',
    url,
    config,
    get lines() {
      return [
        ...lines,
        ...(existsSync(accessLog)
          ? readFileSync(accessLog, 'utf8')
              .split('\n')
              .filter((line) => line !== '')
          : []),
      ];
    },
    statuses: async () => ({}),
    async waitFor(server: string, status: string) {
      // nginx has no state to wait for: it sends to a server again once its fail_timeout has passed.
      if (status !== 'UP') throw new Error(`nginx keeps no status of ${server} to wait for (${status})`);
    },
    kill: () => killChild(child),
  };
}

// --- Calls and load ----------------------------------------------------------------------------------------

/** One call's outcome as the load generator saw it. */
export interface CallResult {
  /** What was called, e.g. `Search over soap11`. */
  readonly what: string;
  /** Its number in the load, counted from 0 (what `next` was given). */
  readonly index: number;
  /** When it was sent, ms since the load started. */
  readonly sentAt: number;
  readonly durationMs: number;
  /** Null when no HTTP reply came (a connection error, a timeout). */
  readonly status: number | null;
  readonly headers: Headers | null;
  readonly body: string;
  /** The connection error or timeout, when there was no reply. */
  readonly error: string | null;
}

export interface Load {
  /** Stops sending, waits for the calls in flight (each bounded by its timeout), and returns every result. */
  stop(): Promise<CallResult[]>;
  /** Results so far. */
  readonly results: readonly CallResult[];
}

/**
 * Calls at `perSecond`, open loop (a slow reply does not slow the sending), each call made by `next`
 * (its number, counted from 0) and given up after `timeoutMs`.
 */
export function startLoad(
  perSecond: number,
  next: (index: number) => { readonly what: string; send(signal: AbortSignal): Promise<Response> },
  timeoutMs = 15_000,
): Load {
  const results: CallResult[] = [];
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  let sent = 0;
  const call = (index: number): void => {
    const { what, send } = next(index);
    const sentAt = performance.now() - started;
    const done = (async () => {
      const result = {
        what,
        index,
        sentAt,
        status: null as number | null,
        headers: null as Headers | null,
        body: '',
        error: null as string | null,
      };
      try {
        const response = await send(AbortSignal.timeout(timeoutMs));
        result.status = response.status;
        result.headers = response.headers;
        result.body = await response.text();
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        result.error = `${err instanceof Error ? err.message : String(err)}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
      }
      results.push({ ...result, durationMs: performance.now() - started - sentAt });
    })();
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    while (sent < due) call(sent++);
  }, 5);
  return {
    results,
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      return results.sort((a, b) => a.sentAt - b.sentAt);
    },
  };
}
