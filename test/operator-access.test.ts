import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { checkProduction, loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { buildApp } from '../src/server/app.js';
import { createOperatorLogger } from '../src/start/loggers.js';
import { start } from '../src/start/main.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';
import { logInMemory } from './support/log-check.js';
import { rawRequest } from './support/raw-http.js';

/**
 * The operator listener closed by default (issue 27, item 1; docs/security.md): loopback
 * unless written down, `/ledger` and `/reload` behind the bearer token, the probes and `/metrics`
 * open, a `Host` check against DNS rebinding, and production refusing a listener beyond loopback
 * without a token. The process tests run the built entry point (`npm test` compiles it first).
 */

const TOKEN = 'operator-token-0123456789abcdef-XYZ';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The app on loopback ports, an unreachable upstream (port 9): a call still makes a hit and a ledger row. */
async function operatorApp(server: Json = {}): Promise<{ readonly proxy: string; readonly admin: string }> {
  const config = loadConfig(
    {},
    { log: { level: 'silent' }, upstream: { baseUrl: 'http://127.0.0.1:9', appKey: 'k' }, server: { adminPort: 0, ...(server as object) } },
  );
  const app = await buildApp(config, { logger: pino({ level: 'silent' }) });
  cleanups.push(() => app.fastify.close());
  const proxy = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
  // A caller for the ledger to show: what a refusal must not.
  await fetch(`${proxy}/index.asmx/Search?query=x&apiKey=caller-key`);
  return { proxy, admin };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const CALLER = clientFingerprint('caller-key');

describe('where the operator listener listens', () => {
  it('defaults to 127.0.0.1, whatever server.host is: not reachable on the machine’s other addresses', async () => {
    expect(loadConfig({}).server).toMatchObject({ host: '0.0.0.0', adminHost: '127.0.0.1', adminToken: null, adminHostnames: [] });
    const config = loadConfig(
      {},
      { log: { level: 'silent' }, server: { port: 0, adminPort: 0 }, upstream: { baseUrl: 'http://127.0.0.1:9' } },
    );
    const running = await start(config, pino({ level: 'silent' }));
    cleanups.push(() => running.stop());
    expect(new URL(running.adminUrl!).hostname).toBe('127.0.0.1');
    const other = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && !address.internal && address.family === 'IPv4');
    if (other === undefined) return;
    // The service's port answers there (server.host 0.0.0.0); the operator's does not.
    expect(await connects(other.address, Number(new URL(running.url).port))).toBe(true);
    expect(await connects(other.address, Number(new URL(running.adminUrl!).port))).toBe(false);
  });
});

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the operator token (server.adminToken)', () => {
  it.each(['/ledger', '/clients', '/clients.html'])(
    'is required by %s: 401 with a Bearer challenge without it or with a wrong one, of any length; 200 with it',
    async (path) => {
      const { admin } = await operatorApp({ adminToken: TOKEN });
      const wrongSameLength = `${TOKEN.slice(0, -1)}Q`;
      for (const headers of [{}, bearer(wrongSameLength), bearer('short'), bearer(`${TOKEN}-and-more`), { authorization: TOKEN }]) {
        const response = await fetch(`${admin}${path}`, { headers });
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
        const body = await response.text();
        expect(body).not.toContain(CALLER);
        expect(body).not.toContain(TOKEN);
      }
      for (const scheme of ['Bearer', 'bearer']) {
        const response = await fetch(`${admin}${path}`, { headers: { authorization: `${scheme} ${TOKEN}` } });
        expect(response.status).toBe(200);
        expect(await response.text()).toContain(CALLER);
      }
    },
  );

  it('is required by POST /reload', async () => {
    const { admin } = await operatorApp({ adminToken: TOKEN });
    expect((await fetch(`${admin}/reload`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${admin}/reload`, { method: 'POST', headers: bearer(`x${TOKEN.slice(1)}`) })).status).toBe(401);
    const reloaded = await fetch(`${admin}/reload`, { method: 'POST', headers: bearer(TOKEN) });
    expect(reloaded.status).toBe(200);
    expect(await reloaded.json()).toEqual({ status: 'reloaded', restartNeeded: [] });
  });

  it('is not asked by /metrics, /healthz and /readyz: scrapers and load balancers send none', async () => {
    const { proxy, admin } = await operatorApp({ adminToken: TOKEN });
    for (const path of ['/metrics', '/healthz', '/readyz']) expect((await fetch(`${admin}${path}`)).status).toBe(200);
    for (const path of ['/healthz', '/readyz']) expect((await fetch(`${proxy}${path}`)).status).toBe(200);
  });

  it('guards /ledger on the service port too, which server.operatorOnServicePort may name only with a token', async () => {
    expect(() => loadConfig({}, { server: { operatorOnServicePort: ['/ledger'] } })).toThrow(
      'Invalid configuration: server.operatorOnServicePort names "/ledger", which needs server.adminToken (ADMIN_TOKEN or ' +
        'ADMIN_TOKEN_FILE)',
    );
    const { proxy } = await operatorApp({ adminToken: TOKEN, operatorOnServicePort: ['/metrics', '/ledger'] });
    expect((await fetch(`${proxy}/metrics`)).status).toBe(200);
    const refused = await fetch(`${proxy}/ledger`);
    expect(refused.status).toBe(401);
    expect(await refused.text()).not.toContain(CALLER);
    expect((await fetch(`${proxy}/ledger`, { headers: bearer(TOKEN) })).status).toBe(200);
  });

  it('without one, a listener written down beyond loopback refuses /ledger and /reload (403), not serve the network', async () => {
    // Configured for 0.0.0.0, listening on loopback here: what it answers follows what was written down.
    const { admin } = await operatorApp({ adminHost: '0.0.0.0' });
    for (const path of ['/ledger', '/clients', `/clients/${CALLER}`]) {
      const ledger = await fetch(`${admin}${path}`);
      expect(ledger.status).toBe(403);
      expect(await ledger.text()).not.toContain(CALLER);
    }
    expect((await fetch(`${admin}/reload`, { method: 'POST' })).status).toBe(403);
    expect((await fetch(`${admin}/metrics`)).status).toBe(200);
  });

  it('without one, a loopback listener serves /ledger and /reload as before', async () => {
    const { admin } = await operatorApp();
    expect((await fetch(`${admin}/ledger`)).status).toBe(200);
    expect((await fetch(`${admin}/reload`, { method: 'POST' })).status).toBe(200);
  });
});

describe('the Host check of the operator listener', () => {
  it('answers 421 and no data to a Host that is not an IP literal, localhost or a listed name (DNS rebinding)', async () => {
    const { admin } = await operatorApp({ adminHostnames: ['Metrics-Target.internal'] });
    const port = new URL(admin).port;
    for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '127.0.0.1.nip.io', '[evil]', 'metrics-target']) {
      for (const path of ['/ledger', '/metrics', '/healthz', '/readyz', '/nothing-here']) {
        const response = await rawRequest(admin, { path, headers: { Host: host } });
        expect([host, path, response.status]).toEqual([host, path, 421]);
        expect(response.text).not.toContain(CALLER);
        expect(response.text.length).toBeLessThan(32);
      }
      expect((await rawRequest(admin, { method: 'POST', path: '/reload', headers: { Host: host } })).status).toBe(421);
    }
  });

  it('answers an IP literal, localhost and a name of server.adminHostnames, any case, with or without the port', async () => {
    const { admin } = await operatorApp({ adminHostnames: ['Metrics-Target.internal'] });
    const port = new URL(admin).port;
    const hosts = ['127.0.0.1', `127.0.0.1:${port}`, `[::1]:${port}`, '[::1]', 'localhost', `LocalHost:${port}`, '10.1.2.3:9464'];
    for (const host of [...hosts, 'metrics-target.internal', `METRICS-TARGET.INTERNAL:${port}`]) {
      const response = await rawRequest(admin, { path: '/ledger', headers: { Host: host } });
      expect([host, response.status]).toEqual([host, 200]);
    }
  });

  it('answers 421 to a request without a Host', async () => {
    const { admin } = await operatorApp();
    const { hostname, port } = new URL(admin);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => socket.end('GET /ledger HTTP/1.0\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 421 /);
    expect(answer).not.toContain(CALLER);
  });

  it('counts every refusal and says them at most once a minute: a flood of refused requests cannot drown the log', async () => {
    const config = loadConfig(
      {},
      {
        upstream: { baseUrl: 'http://127.0.0.1:9', appKey: 'k' },
        server: { adminPort: 0, adminToken: 'T'.repeat(8) + 'okenOfTheOperator0123456789' },
      },
    );
    const { stream, lines } = logInMemory();
    const app = await buildApp(config, { logger: createOperatorLogger('info', stream) });
    cleanups.push(() => app.fastify.close());
    const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
    for (let i = 0; i < 50; i++) {
      expect((await rawRequest(admin, { path: '/ledger', headers: { Host: 'evil.example' } })).status).toBe(421);
      expect((await fetch(`${admin}/ledger`, { headers: bearer(`wrong-${i}`) })).status).toBe(401);
    }
    expect(lines.filter((line) => line.includes('"operator_refused"'))).toHaveLength(1);
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toContain('operator_refused_total{reason="misdirected"} 50');
    expect(metrics).toContain('operator_refused_total{reason="wrong_token"} 50');
  });

  it('leaves the service port alone: callers reach it by any name', async () => {
    const { proxy } = await operatorApp();
    expect((await rawRequest(proxy, { path: '/healthz', headers: { Host: 'catalog.example.com' } })).status).toBe(200);
  });
});

describe('the operator token in the configuration', () => {
  const directory = mkdtempSync(join(tmpdir(), 'admin-token-'));
  const file = (name: string, text: string): string => {
    const path = join(directory, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };

  it('is read from ADMIN_TOKEN, or from the ADMIN_TOKEN_FILE file less its final newline (ADMIN_HOST(NAMES) too)', () => {
    expect(loadConfig({ ADMIN_TOKEN: TOKEN }).server.adminToken).toBe(TOKEN);
    expect(loadConfig({ ADMIN_TOKEN_FILE: file('lf', `${TOKEN}\n`) }).server.adminToken).toBe(TOKEN);
    expect(loadConfig({ ADMIN_TOKEN_FILE: file('crlf', `${TOKEN}\r\n`) }).server.adminToken).toBe(TOKEN);
    expect(loadConfig({ ADMIN_HOST: '0.0.0.0' }).server.adminHost).toBe('0.0.0.0');
    expect(loadConfig({ ADMIN_HOSTNAMES: 'catalog-proxy, proxy-1.internal,' }).server.adminHostnames).toEqual([
      'catalog-proxy',
      'proxy-1.internal',
    ]);
  });

  it.each<[string, NodeJS.ProcessEnv | (() => NodeJS.ProcessEnv), string]>([
    [
      'both variables',
      () => ({ ADMIN_TOKEN: TOKEN, ADMIN_TOKEN_FILE: file('both', TOKEN) }),
      'ADMIN_TOKEN_FILE and ADMIN_TOKEN are both set',
    ],
    [
      'a missing file',
      { ADMIN_TOKEN_FILE: '/run/secrets/no-such-token' },
      'ADMIN_TOKEN_FILE names a file that cannot be read (/run/secrets/no-such-token: ENOENT).',
    ],
    ['a short token', { ADMIN_TOKEN: 'short-token' }, 'ADMIN_TOKEN (server.adminToken) must be at least 32 characters long.'],
    [
      'a token with a space',
      { ADMIN_TOKEN: `${TOKEN} ${TOKEN}` },
      'ADMIN_TOKEN (server.adminToken) must be visible ASCII characters without spaces, as an Authorization header carries it, got a ' +
        'value not shown here (a secret).',
    ],
    [
      'two newlines in the file',
      () => ({ ADMIN_TOKEN_FILE: file('two', `${TOKEN}\n\n`) }),
      'ADMIN_TOKEN_FILE (server.adminToken) must be visible ASCII characters without spaces',
    ],
    [
      'a repeated pattern',
      { ADMIN_TOKEN: 'ab'.repeat(20) },
      'ADMIN_TOKEN (server.adminToken) must be a random token, not a repeated pattern',
    ],
  ])('refuses %s, naming the variable and never quoting the token', (_case, env, message) => {
    const attempt = () => loadConfig(typeof env === 'function' ? env() : env);
    expect(attempt).toThrow(message);
    try {
      attempt();
    } catch (err) {
      expect((err as Error).message).not.toContain(TOKEN);
      expect((err as Error).message).not.toContain('abab');
    }
  });

  it('refuses a name in server.adminHostnames that is not a host name', () => {
    expect(() => loadConfig({}, { server: { adminHostnames: ['proxy-1.internal:9464'] } })).toThrow(
      'server.adminHostnames.0 must be a host name without a port, such as "proxy-1.internal", got "proxy-1.internal:9464".',
    );
  });
});

describe('deploy/Dockerfile', () => {
  /** The `ENV` lines of the image, as the process sees them. */
  const imageEnvironment = (): NodeJS.ProcessEnv => {
    const dockerfile = readFileSync(join(import.meta.dirname, '..', 'deploy', 'Dockerfile'), 'utf8');
    const pairs = [...dockerfile.matchAll(/^ENV (.+)$/gm)].flatMap((line) => line[1]!.split(/\s+/));
    return Object.fromEntries(pairs.map((pair) => pair.split('=') as [string, string]));
  };

  it('puts the operator listener beyond loopback with the token from a secret file, which production then requires', () => {
    const env = imageEnvironment();
    expect(env).toMatchObject({ NODE_ENV: 'production', ADMIN_HOST: '0.0.0.0', ADMIN_TOKEN_FILE: '/run/secrets/admin_token' });
    const secret = join(mkdtempSync(join(tmpdir(), 'secrets-')), 'admin_token');
    writeFileSync(secret, `${TOKEN}\n`);
    const given = { ...env, ...PRODUCTION, ADMIN_TOKEN_FILE: secret };
    expect(() => checkProduction(loadConfig(given), given)).not.toThrow();
    // Without the secret mounted, the start is refused before anything listens.
    expect(() => loadConfig({ ...env, ...PRODUCTION })).toThrow(
      'ADMIN_TOKEN_FILE names a file that cannot be read (/run/secrets/admin_token',
    );
  });
});

// --- The built entry point ------------------------------------------------------------------------

const MAIN = join(import.meta.dirname, '..', 'dist', 'src', 'bin', 'start.js');

interface Started {
  readonly code: Promise<number | null>;
  readonly lines: string[];
  readonly stderr: () => string;
  /** Resolves with both addresses once both listen (the operator listener's line comes last). */
  readonly listening: Promise<{ readonly admin: string; readonly proxy: string }>;
  readonly signal: (name: NodeJS.Signals) => void;
}

function startProcess(env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines: string[] = [];
  let proxy: string | undefined;
  const listening = new Promise<{ admin: string; proxy: string }>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      const { event, address } = JSON.parse(line) as { event?: string; address?: string };
      if (event === 'listening') proxy = address;
      if (event === 'admin_listening' && proxy !== undefined && address !== undefined) resolve({ admin: address, proxy });
    });
    child.on('exit', () => reject(new Error(`exited: ${stderr}${lines.join('\n')}`)));
  });
  listening.catch(() => {});
  const code = new Promise<number | null>((resolve) =>
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    }),
  );
  return { code, lines, stderr: () => stderr, listening, signal: (name) => child.kill(name) };
}

const PRODUCTION = { NODE_ENV: 'production', UPSTREAM_URL: 'http://127.0.0.1:9/api', CLIENT_ID_KEY: TEST_CLIENT_ID_KEY };

describe('npm start and the operator listener', () => {
  it('with NODE_ENV=production refuses ADMIN_HOST=0.0.0.0 without a token, naming the settings', async () => {
    const started = startProcess({ ...PRODUCTION, ADMIN_HOST: '0.0.0.0' });
    expect(await started.code).toBe(1);
    expect(started.stderr().trim()).toBe(
      'Invalid configuration: ADMIN_TOKEN (server.adminToken) must be set when NODE_ENV is "production" and the operator listener ' +
        'leaves loopback (ADMIN_HOST, server.adminHost, is "0.0.0.0"): /ledger and /reload would be refused to everyone. Set ' +
        'ADMIN_TOKEN or ADMIN_TOKEN_FILE (make one with `openssl rand -hex 32`), or listen on 127.0.0.1.',
    );
    expect(started.lines.map((line) => (JSON.parse(line) as { event?: string }).event)).not.toContain('listening');
  });

  it('refuses an ADMIN_TOKEN_FILE it cannot read, naming it', async () => {
    const started = startProcess({ ADMIN_TOKEN_FILE: '/nonexistent/admin_token' });
    expect(await started.code).toBe(1);
    expect(started.stderr().trim()).toBe(
      'Invalid configuration: ADMIN_TOKEN_FILE names a file that cannot be read (/nonexistent/admin_token: ENOENT).',
    );
  });

  it('in production on 0.0.0.0 with ADMIN_TOKEN_FILE, serves /ledger with the token and never writes it in a line', async () => {
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'admin-token-')), 'admin_token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const started = startProcess({ ...PRODUCTION, LOG_LEVEL: 'debug', ADMIN_HOST: '0.0.0.0', ADMIN_TOKEN_FILE: tokenFile });
    try {
      const { admin } = await started.listening;
      const port = new URL(admin).port;
      const local = `http://127.0.0.1:${port}`;
      expect((await fetch(`${local}/ledger`)).status).toBe(401);
      expect((await fetch(`${local}/ledger`, { headers: bearer(`${TOKEN}x`) })).status).toBe(401);
      expect((await fetch(`${local}/ledger`, { headers: bearer(TOKEN) })).status).toBe(200);
      expect((await fetch(`${local}/metrics`)).status).toBe(200);
      // A reload reads the file again, and a file changed to a token too short is refused, unquoted.
      writeFileSync(tokenFile, `${TOKEN.slice(0, 20)}\n`);
      const refused = await fetch(`${local}/reload`, { method: 'POST', headers: bearer(TOKEN) });
      expect(refused.status).toBe(400);
      expect(await refused.text()).not.toContain(TOKEN.slice(0, 20));
      started.signal('SIGTERM');
      expect(await started.code).toBe(0);
    } finally {
      started.signal('SIGKILL');
    }
    const events = started.lines.map((line) => (JSON.parse(line) as { event?: string }).event);
    expect(events).toContain('operator_refused');
    expect(events).toContain('config_reload_refused');
    const written = `${started.lines.join('\n')}\n${started.stderr()}`;
    expect(written).not.toContain(TOKEN);
    expect(written).not.toContain(TOKEN.slice(0, 20));
  });

  it('says at start that a listener beyond loopback without a token refuses /ledger and /reload', async () => {
    const started = startProcess({ ADMIN_HOST: '0.0.0.0', UPSTREAM_URL: 'http://127.0.0.1:9/api' });
    try {
      await started.listening;
      const warning = started.lines
        .map((line) => JSON.parse(line) as { event?: string; level?: string })
        .find((line) => line.event === 'admin_token_missing');
      expect(warning).toMatchObject({ level: 'warn', key: 'server.adminToken' });
      started.signal('SIGTERM');
      expect(await started.code).toBe(0);
    } finally {
      started.signal('SIGKILL');
    }
  });
});
