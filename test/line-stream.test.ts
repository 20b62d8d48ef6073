import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lineStream } from '../src/start/main.js';

/**
 * The log lines' stream (src/start/main.ts) on a descriptor that is not blocking, whose reader lags:
 * the hit file opened on a FIFO, or stdout sharing its pipe with stderr. Writing must never stall the
 * event loop, and no line may be lost or written twice once the reader reads again.
 */

const FIFO_AVAILABLE = spawnSync('mkfifo', ['--version']).status === 0;

/** Everything the reader end holds now. */
function drain(fd: number): string {
  const chunk = Buffer.alloc(1 << 16);
  let text = '';
  for (;;) {
    try {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return text;
      text += chunk.toString('utf8', 0, n);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return text;
      throw err;
    }
  }
}

describe.skipIf(!FIFO_AVAILABLE)('log lines on a descriptor that is not blocking', () => {
  it('wait in the stream while the reader lags, without stalling, and all come out once, in order', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'line-stream-')), 'hits.fifo');
    expect(spawnSync('mkfifo', [path]).status).toBe(0);
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    const failures: unknown[] = [];
    const stream = lineStream(writer, (err) => failures.push(err));
    // 4,000 lines of 200 bytes: twelve times what the FIFO holds (64 KB), none read while they are written.
    const lines = Array.from({ length: 4000 }, (_, i) => `${JSON.stringify({ i, pad: 'x'.repeat(180) })}\n`);
    const started = performance.now();
    for (const line of lines) stream.write(line);
    // sonic-boom's own retry slept 100 ms on the event loop for every EAGAIN, and with nobody reading
    // would sleep again and again. The bound leaves a loaded CI machine room (it took 108 ms there once).
    expect(performance.now() - started).toBeLessThan(1000);
    let read = drain(reader);
    expect(read.length).toBeLessThan(lines.join('').length);
    // The reader reads again: what waited goes out on the stream's own retries, with no line written after.
    for (let attempt = 0; attempt < 200 && read.length < lines.join('').length; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      read += drain(reader);
    }
    expect(read).toBe(lines.join(''));
    expect(failures).toEqual([]);
    closeSync(writer);
    closeSync(reader);
  });
});
