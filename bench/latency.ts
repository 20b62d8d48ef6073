import { connect, type Socket } from 'node:net';
import type { BenchRequest } from './requests.js';

/**
 * Latency at a fixed rate, measured open loop: requests fall due on a schedule, one every 1/rate
 * seconds, whatever the answers do, and each latency counts from when its request was due. A stall
 * is so counted in full for every request it held back (no coordinated omission), and nothing is
 * invented for the ones it did not.
 *
 * Why not autocannon, and why not undici: autocannon reports whole milliseconds, and its correction
 * for a fixed rate assumes 1 ms between requests on each connection, which adds made-up samples to
 * every answer slower than that; a 1 ms target is below what it can tell. An undici client spends
 * about a millisecond of the load generator's core on each 125 KB answer and leaves garbage behind,
 * and on a two-core machine the load generator's own pauses then were most of the measured p99
 * (requests sent up to 20 ms late). This client writes request bytes prepared once and counts the
 * answer's bytes on the socket without keeping them: its own cost is a few microseconds a call.
 */

export interface LatencyRun {
  readonly p99Ms: number;
  readonly errors: number;
  /** How late the load generator itself sent, at p99: what of the latency is its own. */
  readonly sendLatenessP99Ms: number;
  /** Every answered request's latency, in microseconds, ascending: for quantiles over several runs. */
  readonly latenciesUs: readonly number[];
}

/** Enough that a rate of thousands per second never waits for a connection while answers take ms. */
const CONNECTIONS = 32;
/** How long after the last request falls due its answer may still come. */
const GRACE_MS = 10_000;

export async function latencyAtRate(base: string, request: BenchRequest, rate: number, seconds: number): Promise<LatencyRun> {
  const url = new URL(base);
  const wire = requestBytes(request, url.host);
  const total = Math.round(rate * seconds);
  const latenciesUs: number[] = [];
  const latenessUs: number[] = [];
  let errors = 0;
  const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => openConnection(url)));
  const idle = [...connections];
  const waiting: number[] = [];
  const start = process.hrtime.bigint();
  const dueNs = (i: number): bigint => start + BigInt(Math.round((i * 1e9) / rate));
  let finished = 0;
  let stopped = false;
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => (allDone = resolve));

  const send = (connection: Connection, i: number): void => {
    connection.send(wire, (status) => {
      if (stopped) return;
      const elapsedUs = Number(process.hrtime.bigint() - dueNs(i)) / 1000;
      if (status === 200) latenciesUs.push(elapsedUs);
      else errors++;
      // A connection that failed is not used again; the others take what is waiting.
      if (!connection.dead) {
        const next = waiting.shift();
        if (next === undefined) idle.push(connection);
        else send(connection, next);
      }
      if (++finished === total) allDone();
    });
  };

  // A timer each millisecond sends whatever has fallen due by then; a request with no free
  // connection waits for one, its latency still counted from when it fell due.
  let next = 0;
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    for (; next < total && dueNs(next) <= now; next++) {
      // The load generator's own lateness: how long after falling due this timer saw the request.
      latenessUs.push(Number(now - dueNs(next)) / 1000);
      const connection = idle.pop();
      if (connection) send(connection, next);
      else waiting.push(next);
    }
    if (next === total) clearInterval(timer);
  }, 1);
  // Bounded in time whatever the server does: an answer not in by then is an error.
  let gaveUp: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise<void>((resolve) => (gaveUp = setTimeout(resolve, seconds * 1000 + GRACE_MS)))]);
  clearTimeout(gaveUp);
  clearInterval(timer);
  stopped = true;
  errors += total - finished;
  for (const connection of connections) connection.close();
  latenciesUs.sort((a, b) => a - b);
  latenessUs.sort((a, b) => a - b);
  return {
    p99Ms: quantile(latenciesUs, 0.99) / 1000,
    errors,
    sendLatenessP99Ms: quantile(latenessUs, 0.99) / 1000,
    latenciesUs,
  };
}

/** The `q` quantile of `ascending` values. */
export function quantile(ascending: readonly number[], q: number): number {
  return ascending[Math.min(ascending.length - 1, Math.floor(q * ascending.length))] ?? Number.NaN;
}

function requestBytes(request: BenchRequest, host: string): Buffer {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers = { host, ...request.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  const head = `${request.method} ${request.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
  return body ? Buffer.concat([Buffer.from(head, 'latin1'), body]) : Buffer.from(head, 'latin1');
}

interface Connection {
  /** Failed or closed: never used again. */
  readonly dead: boolean;
  send(wire: Buffer, answered: (status: number) => void): void;
  close(): void;
}

/**
 * One keep-alive HTTP/1.1 connection that reads an answer only as far as telling where it ends:
 * the status line and headers, then Content-Length bytes or the chunks of a chunked body.
 */
function openConnection(url: URL): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    socket.once('error', reject);
    let answered: ((status: number) => void) | undefined;
    let dead = false;
    let reader = new AnswerReader();
    /** 'error' and then 'close' may both come: the request in flight fails once. */
    const fail = (): void => {
      dead = true;
      const callback = answered;
      answered = undefined;
      callback?.(0);
    };
    socket.on('data', (chunk: Buffer) => {
      if (!answered) return;
      const status = reader.read(chunk);
      if (status === undefined) return;
      const callback = answered;
      answered = undefined;
      reader = new AnswerReader();
      callback(status);
    });
    socket.on('close', fail);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', fail);
      resolve({
        get dead() {
          return dead;
        },
        send(wire, callback) {
          answered = callback;
          socket.write(wire);
        },
        close: () => socket.destroy(),
      });
    });
  });
}

/** Where one HTTP/1.1 answer ends, fed its bytes as they come; the body is counted, never kept. */
class AnswerReader {
  private head = '';
  private status = 0;
  /** Body bytes still to come (Content-Length), or of the current chunk. */
  private remaining = -1;
  private chunked = false;
  /** Chunked: the text of a size line (or a chunk's trailing CRLF) not yet complete. */
  private line = '';
  private inChunk = false;

  /** The status once the answer is complete, else undefined. */
  read(chunk: Buffer): number | undefined {
    let offset = 0;
    if (this.remaining < 0 && !this.chunked) {
      // Only the head is ever decoded: the end of a head split across events is found in its last 3 bytes and this event.
      const carried = this.head.length;
      const search = carried === 0 ? chunk : Buffer.concat([Buffer.from(this.head.slice(-3), 'latin1'), chunk]);
      const found = search.indexOf('\r\n\r\n');
      if (found < 0) {
        this.head += chunk.toString('latin1');
        return undefined;
      }
      const fromCarry = carried === 0 ? 0 : Math.min(3, carried);
      offset = found - fromCarry + 4;
      const head = this.head + chunk.toString('latin1', 0, Math.max(0, found - fromCarry));
      this.head = '';
      this.status = Number(head.slice(9, 12));
      this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
      this.remaining = this.chunked ? 0 : Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (!this.chunked && this.remaining === 0) return this.status;
    }
    if (!this.chunked) {
      this.remaining -= chunk.length - offset;
      return this.remaining <= 0 ? this.status : undefined;
    }
    return this.readChunks(chunk, offset);
  }

  private readChunks(chunk: Buffer, offset: number): number | undefined {
    while (offset < chunk.length) {
      if (this.inChunk) {
        const take = Math.min(this.remaining, chunk.length - offset);
        this.remaining -= take;
        offset += take;
        if (this.remaining === 0) this.inChunk = false;
        continue;
      }
      // A size line, or the CRLF after a chunk's data (an empty line), or the final CRLF.
      const newline = chunk.indexOf(10, offset);
      if (newline < 0) {
        this.line += chunk.toString('latin1', offset);
        return undefined;
      }
      const line = (this.line + chunk.toString('latin1', offset, newline)).trim();
      this.line = '';
      offset = newline + 1;
      if (this.remaining === -2) {
        if (line === '') return this.status; // the blank line after the last chunk and any trailers
        continue;
      }
      if (line === '') continue; // the CRLF after a chunk's data
      const size = Number.parseInt(line, 16);
      if (Number.isNaN(size)) return 0;
      if (size === 0) this.remaining = -2;
      else {
        this.remaining = size;
        this.inChunk = true;
      }
    }
    return undefined;
  }
}
