import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';

/**
 * The lines of a hit log, streamed: a file, or stdin for `-`; gunzipped when it starts with gzip's
 * magic bytes, whatever its name (log shippers rotate into `.1.gz`, `-2026-11-23`, …). A log of
 * gigabytes is never held in memory.
 */

export interface LogSource {
  /** The name as given: a path, or `-` for stdin. */
  readonly name: string;
  /** Bytes to read, for the progress bar; null for stdin. */
  readonly size: number | null;
  open(): Readable;
}

/** A source that cannot be read at all: the report goes on without it, and says so. */
export class UnreadableLog extends Error {
  override readonly name = 'UnreadableLog';
  constructor(
    readonly source: string,
    readonly detail: string,
  ) {
    super(`${source}: ${detail}`);
  }
}

export async function logSource(name: string, stdin: Readable): Promise<LogSource> {
  if (name === '-') return { name, size: null, open: () => stdin };
  try {
    const info = await stat(name);
    if (!info.isFile()) throw new UnreadableLog(name, 'not a file');
    return { name, size: info.size, open: () => createReadStream(name) };
  } catch (err) {
    throw err instanceof UnreadableLog ? err : new UnreadableLog(name, errorText(err));
  }
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * The text lines of `raw`, gunzipped if need be. `onBytes` hears of every chunk of `raw` as it is read
 * (compressed bytes, so that the progress bar measures against the file's size). A read error or a
 * truncated gzip stream ends the iteration with an UnreadableLog; the lines before it have been given.
 */
export async function* logLines(source: string, raw: Readable, onBytes: (bytes: number) => void): AsyncGenerator<string> {
  const lines = createInterface({ input: Readable.from(decoded(raw, onBytes)), crlfDelay: Infinity });
  try {
    yield* lines;
  } catch (err) {
    throw new UnreadableLog(source, errorText(err));
  } finally {
    lines.close();
  }
}

async function* decoded(raw: Readable, onBytes: (bytes: number) => void): AsyncGenerator<Buffer> {
  const counted = countBytes(raw, onBytes);
  // Two bytes tell gzip: a pipe may hand over one at first.
  let head = Buffer.alloc(0);
  let next = await counted.next();
  while (!next.done && head.length < GZIP_MAGIC.length) {
    head = Buffer.concat([head, next.value]);
    if (head.length < GZIP_MAGIC.length) next = await counted.next();
  }
  const rest = async function* (): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    if (!next.done) yield* counted;
  };
  // pipeline, not pipe: a read error must reach the gunzipped stream. Its errors are thrown where it is read.
  if (head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1]) yield* pipeline(Readable.from(rest()), createGunzip(), () => {});
  else yield* rest();
}

async function* countBytes(raw: Readable, onBytes: (bytes: number) => void): AsyncGenerator<Buffer> {
  for await (const chunk of raw) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    onBytes(buffer.length);
    yield buffer;
  }
}

function errorText(err: unknown): string {
  const { code, message } = err as NodeJS.ErrnoException;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR') return `not a complete gzip stream (${message})`;
  return message ?? String(err);
}
