import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRequest } from './requests.js';

/**
 * The second load generator: wrk (Debian's `wrk`), a C client with its own event loop, which put the
 * `soap` facade about a quarter faster than autocannon did. It runs in this process's affinity (core
 * 0, beside the upstream), as autocannon does. Absent, the benchmark says so and measures without it.
 */

export const WRK_AVAILABLE = spawnSync('wrk', ['--version']).error === undefined;

export interface WrkRun {
  readonly requestsPerSecond: number;
  readonly requests: number;
  /** Socket errors, timeouts and answers other than 2xx or 3xx. */
  readonly errors: number;
}

/** The request as a wrk script: wrk sends GET with no body unless a script says otherwise. */
function scriptFor(request: BenchRequest): string {
  const lines = [`wrk.method = ${JSON.stringify(request.method)}`];
  if (request.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(request.body)}`);
  for (const [name, value] of Object.entries(request.headers ?? {}))
    lines.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`);
  return `${lines.join('\n')}\n`;
}

export async function wrk(base: string, request: BenchRequest, connections: number, seconds: number): Promise<WrkRun> {
  const script = join(mkdtempSync(join(tmpdir(), 'bench-wrk-')), 'request.lua');
  writeFileSync(script, scriptFor(request));
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', script, `${base}${request.path}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const requests = /(\d+) requests in/.exec(out)?.[1];
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1];
  if (code !== 0 || requests === undefined || rate === undefined) throw new Error(`wrk exited with ${code}: ${out}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)?.slice(1) ?? [];
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return {
    requestsPerSecond: Number(rate),
    requests: Number(requests),
    errors: non2xx + socketErrors.reduce((sum, n) => sum + Number(n), 0),
  };
}
