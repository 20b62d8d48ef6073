import type { FastifyBaseLogger } from 'fastify';
import { levels, pino, stdTimeFunctions, type Bindings, type ChildLoggerOptions, type LogFn, type Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { LineStream, type LineStreamFailure } from './line-stream.js';

/**
 * The log lines: JSON lines on a descriptor, written as they come, and the loggers that write them.
 * The operators' logger, which also redacts keys, is start-up's (src/start/loggers.ts): the redaction
 * sits above this layer.
 */

/** Every line as Loki, Elasticsearch or Datadog read it without a parser: ISO-8601 time, the level as a word. */
export const LINE_FORMAT = { timestamp: stdTimeFunctions.isoTime, formatters: { level: (label: string) => ({ level: label }) } };

/** What pino uses of a destination (`write`, and `flush` for `logger.flush()`), and the hits' `gather`. */
type LineWriter = Pick<LineStream, 'write' | 'flush' | 'gather'>;

/**
 * The lines on descriptor `fd` (src/log/line-stream.ts), `onFailure` told if writing fails for good.
 * Every logger's lines on stdout go through one stream: two, each holding its own lines while a
 * lagging reader took part of one, would write one line into the middle of another.
 */
export function lineStream(fd: number, onFailure?: LineStreamFailure): LineStream {
  if (fd !== STDOUT || onFailure !== undefined) return new LineStream(fd, onFailure);
  stdout ??= new LineStream(STDOUT);
  return stdout;
}

const STDOUT = 1;
let stdout: LineStream | undefined;

/** JSON lines on stdout. */
export function createLogger(level: Config['log']['level']): Logger {
  return pino({ level, ...LINE_FORMAT }, lineStream(STDOUT));
}

/**
 * The hits into the open file `fd`. A write that fails (a full disk, an I/O error) leaves the file for
 * good: the stream would hold every later line in memory. From then on the hits go to stdout, the
 * lines the file did not take first, and `onFailure` says so once.
 */
export function createHitsFileLogger(fd: number, onFailure: (err: NodeJS.ErrnoException) => void): Logger {
  let current: LineWriter = lineStream(fd, (err, unwritten) => {
    current = lineStream(STDOUT);
    if (unwritten !== '') current.write(unwritten);
    onFailure(err);
  });
  const switching: LineWriter = {
    write: (line: string) => current.write(line),
    gather: (line: string) => current.gather(line),
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
