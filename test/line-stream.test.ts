import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lineStream } from '../src/log/loggers.js';

/**
 * The log lines' stream (src/log/loggers.ts) on a descriptor that is not blocking, whose reader lags:
 * the hit file opened on a FIFO, or stdout sharing its pipe with stderr. Writing must never stall the
 * event loop, and no line may be lost or written twice once the reader reads again.
 *
 * The stream runs in a child of its own, killed after a timeout: the stall it guards against
 * (a retry that sleeps on the event loop for every EAGAIN, as sonic-boom's did for 100 ms, again and
 * again while nobody reads) never returns, and a test runner cannot interrupt a loop that does not.
 */

const FIFO_AVAILABLE = spawnSync('mkfifo', ['--version']).status === 0;

/** The built module (`npm test` compiles it first). */
const LOGGERS = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'src', 'log', 'loggers.js')).href;

/** What the child reports. */
interface Written {
  /** How long writing every line took, none read meanwhile. */
  readonly writeMs: number;
  /** What the reader found right after, and once it read again until nothing more came. */
  readonly readAtOnce: number;
  readonly readInTheEnd: string;
  readonly expected: string;
  readonly failures: number;
}

const CHILD = `
import { closeSync, constants, openSync, readSync } from 'node:fs';
const { lineStream } = await import(process.env.LOGGERS);
const path = process.env.FIFO;
// Bytes, decoded only once all are in: a read may end inside a character.
function drain(fd) {
  const chunks = [];
  for (;;) {
    const chunk = Buffer.alloc(1 << 16);
    try {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return Buffer.concat(chunks);
      chunks.push(chunk.subarray(0, n));
    } catch (err) {
      if (err.code === 'EAGAIN') return Buffer.concat(chunks);
      throw err;
    }
  }
}
const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
let failures = 0;
const stream = lineStream(writer, () => failures++);
// 4,000 lines of 200 bytes: twelve times what the FIFO holds (64 KB), and two of 120 KB.
const lines = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(180) }) + '\\n');
// And lines larger than the FIFO, in two-byte characters: the descriptor takes part of one, the rest waits.
for (const at of [10, 2000]) lines.splice(at, 0, JSON.stringify({ at, big: 'é'.repeat(60_000) }) + '\\n');
const expected = lines.join('');
const started = performance.now();
for (const line of lines) stream.write(line);
const writeMs = performance.now() - started;
let read = drain(reader);
const readAtOnce = read.length;
const expectedBytes = Buffer.byteLength(expected);
// The reader reads again: what waited goes out on the stream's own retries, with no line written after.
for (let attempt = 0; attempt < 200 && read.length < expectedBytes; attempt++) {
  await new Promise((resolve) => setTimeout(resolve, 25));
  read = Buffer.concat([read, drain(reader)]);
}
closeSync(writer);
closeSync(reader);
process.stdout.write(JSON.stringify({ writeMs, readAtOnce, readInTheEnd: read.toString(), expected, failures }));
`;

/** `script` run in a child of its own, with a new FIFO's path in FIFO, killed if it runs past 10 s. */
function onFifo(script: string): SpawnSyncReturns<string> {
  const fifo = join(mkdtempSync(join(tmpdir(), 'line-stream-')), 'hits.fifo');
  expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, LOGGERS, FIFO: fifo },
    timeout: 10_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

describe.skipIf(!FIFO_AVAILABLE)('log lines on a descriptor that is not blocking', () => {
  it('wait in the stream while the reader lags, without stalling, and all come out once, in order', () => {
    const child = onFifo(CHILD);
    // Killed by the timeout: writing stalled (or the lines never came out).
    expect(child.signal, child.stderr).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    const written = JSON.parse(child.stdout) as Written;
    // About 100 ms on a loaded machine (every write after the FIFO fills meets EAGAIN); each sleep
    // like sonic-boom's would add 100 more. The bound leaves CI room and catches ten of them.
    expect(written.writeMs).toBeLessThan(1000);
    expect(written.readAtOnce).toBeLessThan(written.expected.length);
    expect(written.readInTheEnd).toBe(written.expected);
    expect(written.failures).toBe(0);
  });
});

/**
 * A text the FIFO took part of, then a failure (its reader gone: EPIPE on the retry): the rest of the
 * line it cut stays there, and every whole line after it is handed over, with those gathered since.
 */
const CUT_THEN_FAILED = `
import { closeSync, constants, openSync } from 'node:fs';
const { lineStream } = await import(process.env.LOGGERS);
const reader = openSync(process.env.FIFO, constants.O_RDONLY | constants.O_NONBLOCK);
const writer = openSync(process.env.FIFO, constants.O_WRONLY | constants.O_NONBLOCK);
const handed = [];
const stream = lineStream(writer, (err, unwritten) => handed.push([err.code, unwritten]));
// 60,000 bytes of the FIFO's 65,536 taken, then two lines of 3,000 in one text: cut in its second line.
stream.write(JSON.stringify({ fill: 'x'.repeat(59_988) }) + '\\n');
stream.gather('{"first":"' + 'a'.repeat(2_986) + '"}\\n');
stream.gather('{"second":"' + 'b'.repeat(2_985) + '"}\\n');
stream.gather('{"third":"' + 'c'.repeat(2_986) + '"}\\n');
// Due with the stream's retry (20 ms) and queued before it: gathered in the turn the retry fails in.
setTimeout(() => stream.gather('{"later":1}\\n'), 20);
stream.flush();
// The end of this turn (the gathered lines' own write, the FIFO still full) before the reader goes.
await new Promise((resolve) => setImmediate(resolve));
closeSync(reader);
await new Promise((resolve) => setTimeout(resolve, 200));
closeSync(writer);
process.stdout.write(JSON.stringify(handed));
`;

describe.skipIf(!FIFO_AVAILABLE)('log lines cut, then failed', () => {
  it('hands over the whole lines after the one cut, and the lines gathered since, once', () => {
    const child = onFifo(CUT_THEN_FAILED);
    expect(child.status, child.stderr).toBe(0);
    const handed = JSON.parse(child.stdout) as [string, string][];
    expect(handed).toEqual([['EPIPE', `{"third":"${'c'.repeat(2_986)}"}\n{"later":1}\n`]]);
  });
});

describe('log lines on a descriptor that fails', () => {
  it('writes each line whole, in order, non-ASCII text included', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'line-stream-')), 'hits.log');
    const fd = openSync(file, 'a');
    const stream = lineStream(fd);
    const lines = ['{"a":"plain"}\n', '{"b":"Grüße, 日本"}\n', `{"c":"${'x'.repeat(20_000)}"}\n`];
    for (const line of lines) stream.write(line);
    closeSync(fd);
    expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
  });

  it('says a failure other than EAGAIN once, handing over the line it could not write, and writes nothing more', () => {
    // Open for reading only: every write fails with EBADF, on whichever descriptor number it gets.
    const fd = openSync(join(import.meta.dirname, '..', 'package.json'), 'r');
    const failures: [string, string][] = [];
    const stream = lineStream(fd, (err, unwritten) => failures.push([String(err.code), unwritten]));
    try {
      expect(stream.write('{"first":1}\n')).toBe(true);
      expect(stream.write('{"second":2}\n')).toBe(true);
      stream.flush();
      expect(failures).toEqual([['EBADF', '{"first":1}\n']]);
    } finally {
      closeSync(fd);
    }
  });

  it("is one stream for every logger's lines on stdout, so that no line is written into another", () => {
    expect(lineStream(1)).toBe(lineStream(1));
  });
});

describe('log lines gathered in a turn', () => {
  const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const openLog = (): { file: string; fd: number } => {
    const file = join(mkdtempSync(join(tmpdir(), 'line-stream-')), 'hits.log');
    return { file, fd: openSync(file, 'a') };
  };

  it('writes them at the end of the turn, in order, a line written meanwhile after those gathered before it', async () => {
    const { file, fd } = openLog();
    try {
      const stream = lineStream(fd);
      stream.gather('{"hit":1}\n');
      stream.gather('{"hit":2}\n');
      expect(readFileSync(file, 'utf8')).toBe('');
      stream.write('{"warning":3}\n');
      stream.gather('{"hit":4}\n');
      expect(readFileSync(file, 'utf8')).toBe('{"hit":1}\n{"hit":2}\n{"warning":3}\n');
      await turnEnd();
      expect(readFileSync(file, 'utf8')).toBe('{"hit":1}\n{"hit":2}\n{"warning":3}\n{"hit":4}\n');
    } finally {
      closeSync(fd);
    }
  });

  it('writes them at once past 64 KiB, and on flush', () => {
    const { file, fd } = openLog();
    try {
      const stream = lineStream(fd);
      const line = `{"pad":"${'x'.repeat(1000)}"}\n`;
      for (let i = 0; i < 70; i++) stream.gather(line);
      // Written with the line that took them past 64 KiB, the rest still held.
      const atOnce = Math.floor((64 * 1024) / line.length) + 1;
      expect(readFileSync(file, 'utf8')).toBe(line.repeat(atOnce));
      stream.flush();
      expect(readFileSync(file, 'utf8')).toBe(line.repeat(70));
    } finally {
      closeSync(fd);
    }
  });

  it('writes what the turn gathered when the process exits in it', () => {
    const { file, fd } = openLog();
    closeSync(fd);
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { openSync } from 'node:fs';
         const { lineStream } = await import(process.env.LOGGERS);
         lineStream(openSync(process.env.FILE, 'a')).gather('{"hit":"last"}\\n');
         process.exit(3);`,
      ],
      { env: { ...process.env, LOGGERS, FILE: file }, encoding: 'utf8' },
    );
    expect(child.stderr).toBe('');
    expect(child.status).toBe(3);
    expect(readFileSync(file, 'utf8')).toBe('{"hit":"last"}\n');
  });
});
