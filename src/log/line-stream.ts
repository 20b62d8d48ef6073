import { writeSync } from 'node:fs';

/**
 * JSON lines on a descriptor, each written as it comes (one write(2)), as pino writes by default and
 * node writes its own stdout on Linux. Written in the background instead, every line went to libuv's
 * thread pool and back, which cost a tenth of a call's CPU time (docs/performance.md).
 *
 * Not sonic-boom (pino's destination), whose write path cost about 4 µs of a cache hit on Node 20 for
 * its one line (docs/performance.md). Here a line goes to write(2) as it is, node encoding it on the
 * way, and is measured only to see that all of it went: bytes of its own are made only for what a
 * descriptor did not take.
 *
 * A descriptor that is not blocking (the hit file is opened so; stdout becomes so when it shares its
 * pipe or socket with stderr) answers EAGAIN while its reader lags, or takes part of a line. The lines
 * then wait here (MAX_PENDING_BYTES at most: a new line past that is dropped, never a line's rest) and
 * go out, in order, with the next line or at the latest RETRY_MS later; the event loop never waits.
 * Any other error ends the stream: nothing more is written to it, and `onFailure` is told once, with
 * the whole lines it had not written (the one being written included), for whoever takes over.
 *
 * A line may also be gathered (`gather`): held until the end of this turn of the event loop, and
 * written then with the turn's other gathered lines, one write(2) for all (docs/performance.md, "Hit
 * lines written together"). `write` writes what was gathered first, so that lines keep their order.
 */
export class LineStream {
  readonly #fd: number;
  readonly #onFailure: LineStreamFailure;
  /** What the descriptor did not take yet, in order: whole lines, a text each; the first may be a text's rest. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Whether the first of `#pending` is the rest of a text the descriptor took part of. */
  #restFirst = false;
  #retry: NodeJS.Timeout | null = null;
  #failed = false;
  /** Lines gathered this turn, not yet written. */
  #gathered = '';

  constructor(fd: number, onFailure: LineStreamFailure = () => {}) {
    this.#fd = fd;
    this.#onFailure = onFailure;
  }

  write(line: string): boolean {
    if (!this.#failed) this.#writeOut(this.#gathered === '' ? line : this.#takeGathered() + line);
    return true;
  }

  /**
   * Holds `line` (whole lines) until the end of this turn (`writeGathered`), the next `write` or `flush`,
   * or until the gathered lines pass MAX_GATHERED_CHARS characters: then they are written at once.
   */
  gather(line: string): void {
    if (this.#failed) return;
    if (this.#gathered === '') gatheredBy(this);
    this.#gathered += line;
    if (this.#gathered.length > MAX_GATHERED_CHARS) this.#writeOut(this.#takeGathered());
  }

  /** Writes what waits, as far as the descriptor takes it now; `done` is called either way. */
  flush(done?: (err?: Error) => unknown): void {
    if (this.#gathered !== '' && !this.#failed) this.#writeOut(this.#takeGathered());
    else this.#writePending();
    done?.();
  }

  /** Writes `text` (whole lines) after what waits, or holds it while the descriptor takes no more. */
  #writeOut(text: string): void {
    // Nothing waiting: the text goes to write(2) as it is, node encoding it on the way. Bytes of its
    // own only for a rest: a Buffer made for every write cost 0.15–0.7 µs more (docs/performance.md).
    if (this.#pending.length === 0) {
      const written = this.#writeSome(text);
      // Fewer bytes than characters is short for sure; as many or more, the byte length tells.
      if (this.#failed || (written >= text.length && written === Buffer.byteLength(text))) return;
      this.#hold(Buffer.from(text).subarray(written), written > 0);
      return;
    }
    // Held until written, so that a descriptor that fails for good hands it over with the rest.
    const bytes = Buffer.from(text);
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
    this.#writePending();
    // Past MAX_PENDING_BYTES, what the descriptor did not take of the rest: only this text is dropped,
    // and only whole (neither a text's rest nor a text alone).
    const over = this.#pendingBytes > MAX_PENDING_BYTES && this.#pending.length > 1 && this.#pending.at(-1) === bytes;
    if (!this.#failed && over) {
      this.#pending.pop();
      this.#pendingBytes -= bytes.length;
    }
  }

  #takeGathered(): string {
    const gathered = this.#gathered;
    this.#gathered = '';
    return gathered;
  }

  /**
   * The bytes of `data` the descriptor took: 0 on EAGAIN, and 0 on any other error, which fails the
   * stream. `data` is either the first of what waits or, a text written while nothing waited, handed
   * over whole.
   */
  #writeSome(data: string | Buffer): number {
    try {
      // One call each for writeSync's two overloads, a text (node encodes it on the way) and bytes.
      return typeof data === 'string' ? writeSync(this.#fd, data) : writeSync(this.#fd, data);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') this.#fail(err as NodeJS.ErrnoException, typeof data === 'string' ? data : '');
      return 0;
    }
  }

  /** Holds what the descriptor did not take of a text written while nothing waited, and retries it. */
  #hold(rest: Buffer, restOfLine: boolean): void {
    this.#pending.push(rest);
    this.#pendingBytes += rest.length;
    this.#restFirst = restOfLine;
    this.#retryLater();
  }

  #writePending(): void {
    while (this.#pending.length > 0) {
      const first = this.#pending[0] as Buffer;
      const written = this.#writeSome(first);
      if (this.#failed) return;
      this.#pendingBytes -= written;
      if (written < first.length) {
        if (written > 0) {
          this.#pending[0] = first.subarray(written);
          this.#restFirst = true;
        }
        this.#retryLater();
        return;
      }
      this.#pending.shift();
      this.#restFirst = false;
    }
  }

  #retryLater(): void {
    this.#retry ??= setTimeout(() => {
      this.#retry = null;
      this.#writePending();
    }, RETRY_MS).unref();
  }

  /** `notHeld`: a text that failed while nothing waited, in none of `#pending`. */
  #fail(err: NodeJS.ErrnoException, notHeld: string): void {
    this.#failed = true;
    const unwritten = this.#pending;
    const first = unwritten[0];
    // The rest of the line the descriptor cut would be a broken line wherever it went: it stays with
    // the descriptor it began on. The whole lines after it in that text are handed over.
    if (this.#restFirst && first !== undefined) unwritten[0] = afterCutLine(first);
    this.#pending = [];
    this.#pendingBytes = 0;
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
    // And the lines gathered since, which no later write takes now.
    this.#onFailure(err, Buffer.concat(unwritten).toString() + notHeld + this.#takeGathered());
  }
}

/** What follows the end of the line a rest begins in: whole lines, or nothing. */
function afterCutLine(rest: Buffer): Buffer {
  const end = rest.indexOf(NEWLINE);
  return rest.subarray(end === -1 ? rest.length : end + 1);
}

/** The streams holding lines gathered this turn. */
let gathering: LineStream[] = [];
let exitHooked = false;

function gatheredBy(stream: LineStream): void {
  if (gathering.length === 0) setImmediate(writeGathered);
  gathering.push(stream);
  // A process that exits (process.exit, a signal's handler) writes what this turn gathered first.
  if (!exitHooked) {
    process.once('exit', writeGathered);
    exitHooked = true;
  }
}

/**
 * Writes every stream's gathered lines. Run at the end of the turn (setImmediate), and by whatever
 * must follow the turn's lines: the replies (src/inbound/send.ts), so that a call's hit line is
 * written before its reply is.
 */
export function writeGathered(): void {
  if (gathering.length === 0) return;
  const streams = gathering;
  gathering = [];
  for (const stream of streams) stream.flush();
}

/** Told once, when writing failed for good: the error, and the whole lines not written, joined. */
export type LineStreamFailure = (err: NodeJS.ErrnoException, unwritten: string) => void;

/** Lines held while a descriptor that is not blocking says EAGAIN. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
const RETRY_MS = 20;
const NEWLINE = 0x0a;
/** Gathered lines past this many characters are written at once (a busy turn of some seventy calls' hit lines). */
const MAX_GATHERED_CHARS = 64 * 1024;
