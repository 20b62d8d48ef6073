import type { FastifyBaseLogger } from 'fastify';
import { destination, levels, pino, stdTimeFunctions, type Bindings, type ChildLoggerOptions, type LogFn, type Logger } from 'pino';
import type { Config } from '../config/schema.js';

/**
 * The log lines: JSON lines on a descriptor, written as they come, and the loggers that write them.
 * The operators' logger, which also redacts keys, is start-up's (src/start/loggers.ts): the redaction
 * sits above this layer.
 */

/** Every line as Loki, Elasticsearch or Datadog read it without a parser: ISO-8601 time, the level as a word. */
export const LINE_FORMAT = { timestamp: stdTimeFunctions.isoTime, formatters: { level: (label: string) => ({ level: label }) } };

/** pino's destination (sonic-boom). */
type Destination = ReturnType<typeof destination>;
/** What pino uses of a destination: `write`, and `flush` for `logger.flush()`. */
type LineStream = Pick<Destination, 'write' | 'flush'>;

/**
 * JSON lines, each written as it comes (one write(2)), as pino writes by default and node writes its
 * own stdout on Linux. Written in the background instead (sonic-boom's async mode), every line went
 * to libuv's thread pool and back, which cost a tenth of a call's CPU time (docs/performance.md).
 *
 * A descriptor that is not blocking (the hit file is opened so; stdout becomes so when it shares its
 * pipe or socket with stderr) answers EAGAIN while its reader lags. sonic-boom would then sleep 100 ms
 * on the event loop and try again, recursively; here the lines wait in the stream (at most
 * MAX_PENDING_LINE_BYTES, past which they are dropped) and go out with the next line, or at the latest
 * RETRY_MS later. Any other error ends the stream: nothing more is written to it (as pino does on
 * EPIPE), and `onFailure` is told.
 */
export function lineStream(fd: number, onFailure: (err: NodeJS.ErrnoException) => void = () => {}): Destination {
  const stream = destination({ dest: fd, sync: true, maxLength: MAX_PENDING_LINE_BYTES, retryEAGAIN: () => false });
  /** A retry is due: the lines waiting go out with it, or with the next line, whichever comes first. */
  let retryDue = false;
  // Writing nothing writes what waits first (flushSync would write a line cut short twice). Another
  // EAGAIN comes back here.
  const writeLater = (): void => {
    retryDue = false;
    stream.write('');
  };
  let failed = false;
  // Before pino's own listener, which lets only EPIPE by and emits anything else again, unheard.
  stream.prependListener('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EAGAIN') {
      if (!retryDue) setTimeout(writeLater, RETRY_MS).unref();
      retryDue = true;
      return;
    }
    if (failed) return;
    failed = true;
    Object.assign(stream, { write: () => true, end: () => {}, flushSync: () => {}, destroy: () => {} });
    onFailure(err);
  });
  return stream;
}

/** Lines held while a descriptor that is not blocking says EAGAIN. */
const MAX_PENDING_LINE_BYTES = 16 * 1024 * 1024;
const RETRY_MS = 20;

/** JSON lines on stdout. */
export function createLogger(level: Config['log']['level']): Logger {
  return pino({ level, ...LINE_FORMAT }, lineStream(1));
}

/**
 * The hits into the open file `fd`. A write that fails (a full disk, an I/O error) leaves the file for
 * good: the stream would hold every later line in memory, and hang the exit retrying them. From then
 * on the hits go to stdout, the migration's record kept, and `onFailure` says so once.
 */
export function createHitsFileLogger(fd: number, onFailure: (err: NodeJS.ErrnoException) => void): Logger {
  let current: LineStream = lineStream(fd, (err) => {
    current = lineStream(1);
    onFailure(err);
  });
  const switching: LineStream = {
    write: (line: string) => current.write(line),
    flush: (done?: (err?: Error) => unknown) => current.flush(done),
  };
  return pino({ level: 'info', ...LINE_FORMAT }, switching);
}

/** The methods that write a line at a level. */
const LEVEL_METHODS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/**
 * A request's logger (fastify's `childLoggerFactory`): pino's child with the request's bindings, made
 * when something first writes a line through it. A legacy call logs nothing of its own on a normal day
 * (its hit is written apart, src/deprecation/hits.ts), and a child made for every request cost a cache
 * hit about a microsecond.
 */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChild(parent, bindings, options);
}

class LazyChild implements FastifyBaseLogger {
  // Defined on the prototype below: one method each for every request, not a closure each.
  declare readonly fatal: LogFn;
  declare readonly error: LogFn;
  declare readonly warn: LogFn;
  declare readonly info: LogFn;
  declare readonly debug: LogFn;
  declare readonly trace: LogFn;
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #made: FastifyBaseLogger | null = null;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get logger(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options);
    return this.#made;
  }

  get level(): string {
    return this.#made?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  /** Whether a line at `method`'s level would be written: one that would not makes no child. */
  writes(method: (typeof LEVEL_METHODS)[number]): boolean {
    return (levels.values[method] as number) >= (levels.values[this.level] ?? Number.POSITIVE_INFINITY);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

for (const method of LEVEL_METHODS) {
  Object.defineProperty(LazyChild.prototype, method, {
    value(this: LazyChild, ...args: unknown[]): void {
      if (!this.writes(method)) return;
      const { logger } = this;
      (logger[method] as (...logged: unknown[]) => void).apply(logger, args);
    },
  });
}
