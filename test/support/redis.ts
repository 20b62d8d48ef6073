import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real redis-server (Debian's) on a free loopback port, without persistence, for the tests of the
 * fleet's shared state. Missing, its suites are skipped and say so, unless REQUIRE_OTHER_CLIENTS=1
 * (.ci/run installs it) makes them fail.
 */

export const REDIS_SERVER = 'redis-server';
export const redisInstalled = spawnSync(REDIS_SERVER, ['--version']).status === 0;
export const REDIS_MISSING = 'redis-server is not installed (apt-get install redis-server)';

export interface RedisServer {
  /** `redis://127.0.0.1:PORT` */
  readonly url: string;
  readonly port: number;
  /** Kills it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** `password`: the server requires it (`requirepass`). */
export async function startRedis(options: { readonly password?: string } = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'proxy-redis-'));
  let child: ChildProcess | null = null;
  const launch = async (): Promise<void> => {
    const auth = options.password === undefined ? [] : ['--requirepass', options.password];
    child = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...auth],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    await ready(child, port);
  };
  const kill = async (): Promise<void> => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: launch,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once the server says it accepts connections; rejects when it exits first or takes 10 s. */
function ready(child: ChildProcess, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server on port ${port} did not start: ${output}`)), 10_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}: ${output}`));
    });
  });
}

/** A port of 127.0.0.1 that nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
