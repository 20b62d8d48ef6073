import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, REDIS_SERVER, redisInstalled } from './redis.js';

/**
 * Redis that fails over, on loopback: one master, one replica and three sentinels (Debian's
 * `redis-sentinel`; without it, `redis-server --sentinel`, the same program), each with a password,
 * quick to fail over (a master is down after 1 s). For the tests of `redis.sentinels`. Missing
 * redis-server, their suite is skipped and says so, unless REQUIRE_OTHER_CLIENTS=1 makes it fail.
 */

export const REDIS_SENTINEL = 'redis-sentinel';
const sentinelInstalled = spawnSync(REDIS_SENTINEL, ['--version']).status === 0;
/** Whether a sentinel can be run: `redis-sentinel`, or `redis-server` in sentinel mode. */
export const sentinelsAvailable = sentinelInstalled || redisInstalled;
export const SENTINEL_MISSING = 'redis-server and redis-sentinel are not installed (apt-get install redis-server redis-sentinel)';

/** The name the sentinels monitor the master under. */
export const MASTER_NAME = 'fleet-master';
/** The sentinels' verdict: a master that does not answer for this long is down. */
export const DOWN_AFTER_MS = 1000;
const FAILOVER_TIMEOUT_MS = 3000;

export interface SentinelSet {
  /** `127.0.0.1:PORT` of each sentinel: `redis.sentinels`. */
  readonly sentinels: readonly string[];
  readonly masterName: string;
  /** The master's and the replica's `requirepass`. */
  readonly password: string;
  /** The sentinels' own `requirepass`. */
  readonly sentinelPassword: string;
  /** The port of the master, as the first sentinel that answers names it. */
  masterPort(): Promise<number>;
  /** SIGKILLs the master, as a crash would; its port. */
  killMaster(): Promise<number>;
  /** The port of the new master once a sentinel names another than `old` and it says it is a master; rejects after `timeoutMs`. */
  failedOver(old: number, timeoutMs: number): Promise<number>;
  /**
   * Starts the server on `port` again (a master killed), empty, as a replica of the master now, and
   * resolves once it is in sync: the set can fail over again.
   */
  rejoin(port: number): Promise<void>;
  /** A plain client of the Redis server on `port`, with its password; the caller disconnects it. */
  client(port: number): Redis;
  stop(): Promise<void>;
}

export async function startSentinels(
  options: { readonly password?: string; readonly sentinelPassword?: string } = {},
): Promise<SentinelSet> {
  const password = options.password ?? 'master-Pa55word';
  const sentinelPassword = options.sentinelPassword ?? 'sentinel-Pa55word';
  const dir = mkdtempSync(join(tmpdir(), 'proxy-sentinel-'));
  const children = new Map<number, ChildProcess>();
  const stop = async (): Promise<void> => {
    await Promise.all([...children.keys()].map((port) => kill(children, port)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [masterPort, replicaPort, ...sentinelPorts] = await Promise.all(Array.from({ length: 5 }, () => freePort()));
    const server = (port: number, extra: readonly string[]): Promise<void> => {
      const own = join(dir, String(port));
      mkdirSync(own, { recursive: true });
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', own];
      // Each may be master or replica: the same password both ways; a replica syncs at once (7.0 waits 5 s).
      const auth = ['--requirepass', password, '--masterauth', password, '--repl-diskless-sync-delay', '0'];
      return launch(children, port, REDIS_SERVER, [...args, ...auth, ...extra], 'Ready to accept connections');
    };
    await server(masterPort!, []);
    await server(replicaPort!, ['--replicaof', '127.0.0.1', String(masterPort)]);
    await Promise.all(
      sentinelPorts.map((port) => {
        const file = join(dir, `sentinel-${port}.conf`);
        // The sentinel rewrites its file (the replicas and other sentinels it learns), so each has its own.
        writeFileSync(
          file,
          [
            `port ${port}`,
            'bind 127.0.0.1',
            `dir ${dir}`,
            'sentinel resolve-hostnames no',
            `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
            `sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MS}`,
            `sentinel failover-timeout ${MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
            `sentinel parallel-syncs ${MASTER_NAME} 1`,
            `sentinel auth-pass ${MASTER_NAME} ${password}`,
            `requirepass ${sentinelPassword}`,
            // How the sentinels reach one another, now that each requires a password.
            `sentinel sentinel-pass ${sentinelPassword}`,
            '',
          ].join('\n'),
        );
        const command = sentinelInstalled ? REDIS_SENTINEL : REDIS_SERVER;
        const args = sentinelInstalled ? [file] : [file, '--sentinel'];
        return launch(children, port, command, args, `+monitor master ${MASTER_NAME}`);
      }),
    );
    const sentinels = sentinelPorts.map((port) => `127.0.0.1:${port}`);
    const client = (port: number): Redis => plainClient(port, password);
    const sentinel = (port: number): Redis => plainClient(port, sentinelPassword);
    /** What the first sentinel that answers says; each is asked in turn. */
    const ask = async <T>(question: (client: Redis) => Promise<T>): Promise<T> => {
      let last: unknown;
      for (const port of sentinelPorts) {
        const each = sentinel(port);
        try {
          return await question(each);
        } catch (err) {
          last = err;
        } finally {
          each.disconnect();
        }
      }
      throw last;
    };
    const masterOf = async (): Promise<number> =>
      ask(async (each) => Number(((await each.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string])[1]));
    const roleOf = async (port: number): Promise<string | null> => {
      const each = client(port);
      try {
        return /role:(\w+)/.exec(await each.info('replication'))?.[1] ?? null;
      } catch {
        return null;
      } finally {
        each.disconnect();
      }
    };
    // Ready when every sentinel knows the two others and the replica, and the replica is in sync: only
    // then can they agree the master is down and promote it.
    await until('the sentinels to know each other and the replica', 20_000, async () => {
      const views = await Promise.all(
        sentinelPorts.map(async (port) => {
          const each = sentinel(port);
          try {
            return fields(await each.call('SENTINEL', 'master', MASTER_NAME));
          } finally {
            each.disconnect();
          }
        }),
      );
      const replica = client(replicaPort!);
      try {
        const synced = /master_link_status:up/.test(await replica.info('replication'));
        return synced && views.every((view) => view['num-other-sentinels'] === '2' && view['num-slaves'] === '1');
      } finally {
        replica.disconnect();
      }
    });
    return {
      sentinels,
      masterName: MASTER_NAME,
      password,
      sentinelPassword,
      masterPort: masterOf,
      async killMaster() {
        const port = await masterOf();
        await kill(children, port);
        return port;
      },
      async failedOver(old, timeoutMs) {
        let now = old;
        await until(`a master other than ${old}`, timeoutMs, async () => {
          now = await masterOf();
          return now !== old && (await roleOf(now)) === 'master';
        });
        return now;
      },
      async rejoin(port) {
        await server(port, ['--replicaof', '127.0.0.1', String(await masterOf())]);
        await until(`the server on ${port} to sync as a replica`, 20_000, async () => {
          const rejoined = client(port);
          try {
            return /master_link_status:up/.test(await rejoined.info('replication'));
          } finally {
            rejoined.disconnect();
          }
        });
      },
      client,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A client that connects on its first command and fails it at once when the server is away (killed, say). */
function plainClient(port: number, password: string): Redis {
  const client = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // Its command's rejection says what went wrong; the event would only be printed.
  client.on('error', () => {});
  return client;
}

/** A Redis reply of field, value pairs (RESP2's flat list, RESP3's map) as an object of strings. */
function fields(reply: unknown): Record<string, string> {
  if (Array.isArray(reply)) {
    const out: Record<string, string> = {};
    for (let index = 0; index + 1 < reply.length; index += 2) out[String(reply[index])] = String(reply[index + 1]);
    return out;
  }
  const entries: [unknown, unknown][] = reply instanceof Map ? [...reply.entries()] : Object.entries(reply as object);
  return Object.fromEntries(entries.map(([name, value]) => [String(name), String(value)]));
}

/** Starts `command` listening on `port`; resolves once its output says `ready`, rejects when it exits first or takes 10 s. */
function launch(children: Map<number, ChildProcess>, port: number, command: string, args: readonly string[], ready: string): Promise<void> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.set(port, child);
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${command} on port ${port} did not start: ${output}`)), 10_000);
    // Read for as long as it runs: a pipe nobody reads would stop it once full.
    const read = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
      if (output.includes(ready)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} on port ${port} exited with ${code}: ${output}`));
    });
  });
}

async function kill(children: Map<number, ChildProcess>, port: number): Promise<void> {
  const child = children.get(port);
  children.delete(port);
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const done = await check().catch(() => false);
    if (done) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
