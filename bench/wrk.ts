import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/** `text` as a Lua string literal: every byte but printable ASCII, and the quote and the backslash, as a three-digit decimal escape. */
function luaString(text: string): string {
  const bytes = [...Buffer.from(text, 'utf8')];
  const printable = (b: number): boolean => b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c;
  return `"${bytes.map((b) => (printable(b) ? String.fromCharCode(b) : `\\${String(b).padStart(3, '0')}`)).join('')}"`;
}

/** The request as a wrk script: wrk sends GET with no body unless a script says otherwise. */
function scriptFor(request: BenchRequest): string {
  const lines = [`wrk.method = ${luaString(request.method)}`];
  if (request.body !== undefined) lines.push(`wrk.body = ${luaString(request.body)}`);
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  return `${lines.join('\n')}\n`;
}

export async function wrk(base: string, request: BenchRequest, connections: number, seconds: number): Promise<WrkRun> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  const script = join(directory, 'request.lua');
  writeFileSync(script, scriptFor(request));
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', script, `${base}${request.path}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  // 'close', not 'exit': the summary wrk prints last may still be on its way through the pipe at exit.
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).finally(() => rmSync(directory, { recursive: true, force: true }));
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
