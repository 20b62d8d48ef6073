import { writeSync } from 'node:fs';

/**
 * JSON lines on a descriptor, each written as it comes (one write(2)), as pino writes by default and
 * node writes its own stdout on Linux. Written in the background instead, every line went to libuv's
 * thread pool and back, which cost a tenth of a call's CPU time (docs/performance.md).
 *
 * Not sonic-boom (pino's destination): a line is encoded once here, where sonic-boom measured its
 * length, wrote it as a string and encoded it once more to learn what was left to write, about 2 µs
 * of a cache hit's 60 on Node 20 for one line a call.
 *
 * A descriptor that is not blocking (the hit file is opened so; stdout becomes so when it shares its
 * pipe or socket with stderr) answers EAGAIN while its reader lags. The lines then wait here (at most
 * MAX_PENDING_BYTES; a line past that is dropped, never a line's rest) and go out with the next line,
 * or at the latest RETRY_MS later; the event loop never waits. Any other error ends the stream:
 * nothing more is written to it, and `onFailure` is told once.
 */
export class LineStream {
  readonly #fd: number;
  readonly #onFailure: (err: NodeJS.ErrnoException) => void;
  /** What the descriptor did not take yet, in order; the first may be the rest of a line. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #retry: NodeJS.Timeout | null = null;
  #failed = false;

  constructor(fd: number, onFailure: (err: NodeJS.ErrnoException) => void = () => {}) {
    this.#fd = fd;
    this.#onFailure = onFailure;
  }

  write(line: string): boolean {
    if (this.#failed) return true;
    const bytes = Buffer.from(line);
    if (this.#pending.length > 0) {
      if (this.#pendingBytes + bytes.length > MAX_PENDING_BYTES) return true;
      this.#hold(bytes);
      this.#writePending();
      return true;
    }
    const written = this.#writeSome(bytes);
    if (written >= 0 && written < bytes.length) {
      this.#hold(bytes.subarray(written));
      this.#retryLater();
    }
    return true;
  }

  /** Writes what waits, as far as the descriptor takes it now; `done` is called either way. */
  flush(done?: (err?: Error) => unknown): void {
    this.#writePending();
    done?.();
  }

  #hold(bytes: Buffer): void {
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
  }

  #writePending(): void {
    while (this.#pending.length > 0) {
      const first = this.#pending[0] as Buffer;
      const written = this.#writeSome(first);
      if (written < 0) return;
      this.#pendingBytes -= written;
      if (written < first.length) {
        this.#pending[0] = first.subarray(written);
        this.#retryLater();
        return;
      }
      this.#pending.shift();
    }
  }

  /** The bytes of `bytes` the descriptor took (0 on EAGAIN, a retry then due); -1 once the stream failed. */
  #writeSome(bytes: Buffer): number {
    try {
      return writeSync(this.#fd, bytes);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
        this.#retryLater();
        return 0;
      }
      this.#fail(err as NodeJS.ErrnoException);
      return -1;
    }
  }

  #retryLater(): void {
    this.#retry ??= setTimeout(() => {
      this.#retry = null;
      this.#writePending();
    }, RETRY_MS).unref();
  }

  #fail(err: NodeJS.ErrnoException): void {
    this.#failed = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
    this.#onFailure(err);
  }
}

/** Lines held while a descriptor that is not blocking says EAGAIN. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
const RETRY_MS = 20;
