import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The servers of bench/servers.ts in child processes, for `npm run bench` and `npm run soak`. */

const here = dirname(fileURLToPath(import.meta.url));
const SERVERS = join(here, 'servers.js');
export const RESULTS = join(here, '..', '..', 'bench', 'results');
/** Whether servers can be pinned to a core of their own (Linux with taskset, two cores or more). */
export const PINNING = spawnSync('taskset', ['-c', '0', 'true']).status === 0 && cpus().length >= 2;

export interface Usage {
  readonly cpuMs: number;
  /** Live heap: after a full collection when `usage(true)` asked for one, else whatever is allocated. */
  readonly heapMiB: number;
  readonly rssMiB: number;
  readonly maxRssMiB: number;
  /** The trace sink's: POST /v1/traces it answered, and their bodies' bytes, since start. */
  readonly receivedRequests?: number;
  readonly receivedBytes?: number;
  /** The upstream's: requests it answered since start. */
  readonly upstreamRequests?: number;
  /** A traced proxy's: spans it did not send (its queue full, or an export failed), since start. */
  readonly droppedSpans?: { readonly queueFull: number; readonly exportFailed: number };
}

export interface Server {
  readonly url: string;
  /** With `collectGarbage`, after a forced full collection, which slows the server for a while after. */
  usage(collectGarbage?: boolean): Promise<Usage>;
  stop(): void;
}

/** `execPath`: the node binary to run it on, by default the one running this. */
export async function startServer(kind: string, core: number, options: object, execPath = process.execPath): Promise<Server> {
  const args = ['--expose-gc', SERVERS, kind, JSON.stringify(options)];
  const child: ChildProcess = PINNING
    ? spawn('taskset', ['-c', String(core), execPath, ...args], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    : spawn(execPath, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`${kind} exited with ${code}`)));
  });
  return {
    url,
    usage: (collectGarbage = false) =>
      new Promise<Usage>((resolve) => {
        child.once('message', (message) => resolve(message as Usage));
        child.send(collectGarbage ? 'usage after gc' : 'usage');
      }),
    stop: () => child.kill(),
  };
}
