import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
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
 * Hit lines are a few hundred bytes: a longer line is no hit. 1 MiB is far above any, and far below
 * the longest string V8 holds (about 512 MiB), past which a line could not be read at all.
 */
export const MAX_LINE_BYTES = 1024 * 1024;

/** Stands for a line longer than MAX_LINE_BYTES: skipped, its bytes never held together. */
export const OVERLONG_LINE = Symbol('a line longer than MAX_LINE_BYTES');

export type LogLine = string | typeof OVERLONG_LINE;

/**
 * The text lines of `raw`, gunzipped if need be. `onBytes` hears of every chunk of `raw` as it is read
 * (compressed bytes, so that the progress bar measures against the file's size). A read error or a
 * truncated gzip stream ends the iteration with an UnreadableLog; the lines before it have been given.
 */
export async function* logLines(source: string, raw: Readable, onBytes: (bytes: number) => void): AsyncGenerator<LogLine> {
  try {
    yield* splitLines(decoded(raw, onBytes), MAX_LINE_BYTES);
  } catch (err) {
    throw new UnreadableLog(source, errorText(err));
  }
}

const LF = 0x0a;

/**
 * `chunks` split at each LF (a CR before it dropped: CRLF logs), on bytes rather than as readline
 * splits them: readline builds a line as a string, and throws once it is longer than a string can be,
 * which lost the rest of the file. Here a line longer than `maxLineBytes` is dropped as it comes.
 */
async function* splitLines(chunks: AsyncIterable<Buffer>, maxLineBytes: number): AsyncGenerator<LogLine> {
  let pieces: Buffer[] = [];
  let bytes = 0;
  let overlong = false;
  const take = (piece: Buffer): void => {
    if (overlong || piece.length === 0) return;
    bytes += piece.length;
    overlong = bytes > maxLineBytes;
    if (overlong) pieces = [];
    else pieces.push(piece);
  };
  const line = (): LogLine => {
    const text = overlong ? OVERLONG_LINE : textOf(pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces));
    pieces = [];
    bytes = 0;
    overlong = false;
    return text;
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (let end = chunk.indexOf(LF); end !== -1; end = chunk.indexOf(LF, start)) {
      take(chunk.subarray(start, end));
      yield line();
      start = end + 1;
    }
    take(chunk.subarray(start));
  }
  if (bytes > 0) yield line();
}

const textOf = (line: Buffer): string => line.toString('utf8', 0, line.at(-1) === 0x0d ? line.length - 1 : line.length);

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
