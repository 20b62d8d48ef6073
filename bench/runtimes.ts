import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { arch } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Node runtimes `npm run bench` runs the servers under test on: BENCH_NODE, a comma-separated list
 * of major versions, by default `20,24` (the oldest supported and the recommended one). The node
 * running the benchmark serves its own major; any other comes from the `node-linux-<arch>` npm
 * package, as CI gets Node 24 (.ci/run), installed once under node_modules/.cache/bench-node/.
 */

export interface Runtime {
  readonly major: number;
  readonly execPath: string;
  /** `v24.21.0`. */
  readonly version: string;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function benchRuntimes(): Runtime[] {
  const majors = (process.env.BENCH_NODE ?? '20,24').split(',').map((major) => Number(major.trim()));
  if (majors.length === 0 || majors.some((major) => !Number.isInteger(major) || major < 20)) {
    throw new Error(`BENCH_NODE: major versions of node, comma-separated (20,24), not ${process.env.BENCH_NODE}`);
  }
  return [...new Set(majors)].map(runtimeOf);
}

function runtimeOf(major: number): Runtime {
  const execPath = Number(process.versions.node.split('.')[0]) === major ? process.execPath : installed(major);
  const version = spawnSync(execPath, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return { major, execPath, version };
}

function installed(major: number): string {
  const prefix = join(ROOT, 'node_modules', '.cache', 'bench-node', String(major));
  const pkg = `node-linux-${arch()}`;
  const execPath = join(prefix, 'node_modules', pkg, 'bin', 'node');
  if (!existsSync(execPath)) {
    process.stderr.write(`installing ${pkg}@${major} into ${prefix}\n`);
    const npm = spawnSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', `${pkg}@${major}`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (npm.status !== 0 || !existsSync(execPath)) throw new Error(`could not install ${pkg}@${major} (npm exited with ${npm.status})`);
  }
  return execPath;
}
