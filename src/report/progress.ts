/**
 * A progress bar on stderr while the logs are read: bytes read of their total size (of stdin, whose
 * size is unknown, only bytes read). Redrawn at most every 100 ms: a million lines must not mean a
 * million writes to the terminal.
 */

export interface Progress {
  read(bytes: number): void;
  /** Draws the final count and ends the line, so that what follows starts on a line of its own. */
  done(): void;
}

const WIDTH = 30;
const REDRAW_MS = 100;
const MIB = 1024 * 1024;

export const NO_PROGRESS: Progress = { read() {}, done() {} };

export function progressBar(write: (text: string) => void, total: number | null, now: () => number = Date.now): Progress {
  let bytes = 0;
  let drawn = -Infinity;
  const mib = (n: number): string => (n / MIB).toFixed(1);
  const draw = (): void => {
    if (total === null || total === 0) {
      write(`\rreading: ${mib(bytes)} MiB`);
      return;
    }
    const share = Math.min(1, bytes / total);
    const filled = Math.round(share * WIDTH);
    write(`\r[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${Math.floor(share * 100)}% ${mib(bytes)} / ${mib(total)} MiB`);
  };
  return {
    read(n) {
      bytes += n;
      if (now() - drawn < REDRAW_MS) return;
      drawn = now();
      draw();
    },
    done() {
      if (drawn === -Infinity) return;
      draw();
      write('\n');
    },
  };
}
