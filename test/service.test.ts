import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { TEST_CLIENT_ID_KEY } from './support/config.js';

/**
 * The production command of the README, `node dist/src/bin/start.js` on a tree pruned of dev dependencies,
 * as the Dockerfile and the systemd unit in deploy/ run it. (`npm test` builds dist/ first.)
 */

const ROOT = join(import.meta.dirname, '..');
const COMMAND = 'node dist/src/bin/start.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith('.js') ? [join(dir, entry.name)] : [],
  );
}

/** `undici` of `undici/x`, `@scope/name` of `@scope/name/x`. */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('the production command', () => {
  it('needs no dev dependency: everything dist/src imports is a dependency or built into Node', () => {
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const imported = new Set(
      filesUnder(join(ROOT, 'dist', 'src')).flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*['"]([^'".][^'"]*)['"]/g)].map((match) =>
          packageOf(match[1] as string),
        ),
      ),
    );
    const missing = [...imported].filter((name) => !name.startsWith('node:') && !builtinModules.includes(name) && !(name in dependencies));
    expect(imported.size).toBeGreaterThan(3);
    expect(missing).toEqual([]);
  });

  it('is what the README, the Dockerfile and the systemd unit run', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(COMMAND);
    expect(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')).toMatch(/^CMD \["node", "dist\/src\/bin\/start\.js"\]$/m);
    expect(readFileSync(join(ROOT, 'deploy', 'catalog-proxy.service'), 'utf8')).toMatch(
      /^ExecStart=\/usr\/bin\/node dist\/src\/bin\/start\.js$/m,
    );
  });

  // As in a container: node is PID 1 of its own PID namespace (needs root and util-linux's unshare).
  const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0;

  it.skipIf(!canUnshare)('runs as PID 1, where SIGTERM still reaches it and it stops cleanly', async () => {
    const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, 'dist/src/bin/start.js'], {
      cwd: ROOT,
      // Production needs an upstream and a fingerprint key; nothing is called here.
      env: {
        PATH: process.env.PATH,
        HOST: '127.0.0.1',
        PORT: '0',
        ADMIN_PORT: '0',
        NODE_ENV: 'production',
        UPSTREAM_URL: 'http://127.0.0.1:9/api',
        CLIENT_ID_KEY: TEST_CLIENT_ID_KEY,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    for await (const line of createInterface({ input: child.stdout })) {
      if ((JSON.parse(line) as { event?: string }).event === 'listening') break;
    }
    // The node process is the only child of unshare, and PID 1 inside.
    const node = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim());
    expect(readFileSync(`/proc/${node}/status`, 'utf8')).toMatch(/^NSpid:\s+\d+\s+1$/m);
    process.kill(node, 'SIGTERM');
    expect(await exited).toBe(0);
  });
});
