import { constants, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { createHitsFileLogger, createLogger, LINE_FORMAT, lineStream } from '../log/loggers.js';
import { redact } from '../redaction/redact.js';
import { StartRefused } from './refused.js';

/** The loggers start-up makes: the operators' lines, redacted, and the hits' own channel. */

/**
 * The hit file, opened (created, appended to) now: a path that cannot be written is refused before the
 * proxy listens, not found by the logger's first write once calls are coming in.
 */
function openHitsFile(path: string): number {
  const refused = (err: unknown, problems: Readonly<Record<string, string>>): StartRefused => {
    const { code, message } = err as NodeJS.ErrnoException;
    return new StartRefused('log.hitsFile', path, code ?? null, `cannot be written: ${problems[code ?? ''] ?? message}.`);
  };
  const directory = dirname(path);
  // Its own directory is made if missing, no more: node's recursive mkdir never returns for a path
  // such as /proc/x/y, and a deeper missing path is more likely a typo than a wish.
  if (!existsSync(directory)) {
    try {
      mkdirSync(directory);
    } catch (err) {
      throw refused(err, { ...FILE_PROBLEMS, ENOENT: `its directory ${directory} does not exist, nor the one above it` });
    }
  }
  try {
    // Not blocking: a FIFO that no process reads would otherwise hold the start forever, silently.
    return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NONBLOCK, 0o644);
  } catch (err) {
    throw refused(err, FILE_PROBLEMS);
  }
}

const FILE_PROBLEMS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENOENT: 'no file can be created there',
  ENXIO: 'it is a FIFO that no process reads',
};

/**
 * The hits' own channel, which LOG_LEVEL does not switch off: stdout, or `log.hitsFile`, opened now
 * (a StartRefused when it cannot be written), whose failures later are said on `logger`.
 */
export function createHitLogger(hitsFile: string | null, logger: Logger): Logger {
  if (hitsFile === null) return createLogger('info');
  const failed = (err: NodeJS.ErrnoException): void =>
    logger.error(
      { event: 'hits_file_failed', key: 'log.hitsFile', value: hitsFile, code: err.code ?? null },
      `Deprecation hits cannot be written to log.hitsFile (${hitsFile}): ${err.message}. They go to stdout until the proxy restarts.`,
    );
  return createHitsFileLogger(openHitsFile(hitsFile), failed);
}

/**
 * The operators' lines: as createLogger's (src/log/loggers.ts), with every message and error text
 * passed through the key redaction, because text the proxy does not write itself reaches them too
 * (fastify's own warnings quote the request URL, query string and apiKey included; an error may quote
 * a body). Here rather than in src/log/: the redaction sits on a layer above it.
 */
export function createOperatorLogger(level: Config['log']['level'], to: DestinationStream = lineStream(1)): Logger {
  return pino(
    {
      level,
      ...LINE_FORMAT,
      hooks: {
        logMethod(args, write) {
          write.apply(this, args.map((arg) => (typeof arg === 'string' ? redact(arg, []) : arg)) as Parameters<typeof write>);
        },
      },
      serializers: {
        err: (err: Error) => {
          // Only what says what went wrong: node's own errors carry the bytes of a malformed request (rawPacket).
          const { type, message, stack, code } = stdSerializers.err(err) as ReturnType<typeof stdSerializers.err> & { code?: unknown };
          return { type, message: redact(message, []), stack: redact(stack, []), ...(code === undefined ? {} : { code }) };
        },
      },
    },
    to,
  );
}
