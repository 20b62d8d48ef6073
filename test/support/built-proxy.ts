import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The proxy as `npm start` runs it (dist/, built), in a process of its own, on free loopback ports, with `env` alone. */

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'src', 'bin', 'start.js');

export interface BuiltProxy {
  readonly url: string;
  readonly adminUrl: string;
  /** Every line written so far. */
  readonly lines: string[];
  stop(): Promise<void>;
  /** SIGKILL, as a crash or the OOM killer would: nothing is drained, nothing let go. */
  kill(): Promise<void>;
}

export async function startBuilt(env: NodeJS.ProcessEnv): Promise<BuiltProxy> {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const addresses = new Promise<{ url: string; adminUrl: string }>((resolve, reject) => {
    let url: string | undefined;
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.event === 'listening') url = String(entry.address);
      if (entry.event === 'admin_listening' && url !== undefined) resolve({ url, adminUrl: String(entry.address) });
    });
    exited.then(() => reject(new Error(`the proxy exited before listening: ${stderr}`)));
  });
  const { url, adminUrl } = await addresses;
  return {
    url,
    adminUrl,
    lines,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
