import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { pageDocument, SEARCH_PAGES } from './support/pages.js';
import { startStubUpstream } from './support/stub-upstream.js';

/**
 * The built entry point as `npm start` runs it (`npm test` compiles it first): the first log line,
 * a real call, a graceful SIGTERM, and start-up refusals that name the configuration key.
 */

const MAIN = join(import.meta.dirname, '..', 'dist', 'src', 'bin', 'start.js');

interface Exit {
  readonly code: number | null;
  readonly stdout: string[];
  readonly stderr: string;
}

function run(
  env: NodeJS.ProcessEnv,
  whileRunning?: (lines: AsyncIterator<string>, kill: () => void, signal: (name: NodeJS.Signals) => void) => Promise<void>,
): Promise<Exit> {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const recording: AsyncIterator<string> = {
    next: async () => {
      const line = await lines.next();
      if (!line.done) stdout.push(line.value);
      return line;
    },
  };
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return (async () => {
    if (whileRunning)
      await whileRunning(
        recording,
        () => child.kill('SIGTERM'),
        (name) => child.kill(name),
      );
    const code = await exited;
    clearTimeout(timer);
    for (let line = await recording.next(); !line.done; line = await recording.next());
    return { code, stdout, stderr };
  })();
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Until the proxy answers on `port` (its own line saying so is below the level asked for). */
async function waitForServer(port: number): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`nothing answers on port ${port}`);
}

async function nextEvent(lines: AsyncIterator<string>, event: string): Promise<Record<string, unknown>> {
  for (let line = await lines.next(); !line.done; line = await lines.next()) {
    const entry = JSON.parse(line.value) as Record<string, unknown>;
    if (entry.event === event) return entry;
  }
  throw new Error(`no ${event} log line`);
}

const CLIENT_ID_KEY = 'a7f3c1e9d2b8a4f6c0e1d3b5a7f9c2e4';

/** A named pipe nothing reads. */
function fifo(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'proxy-fifo-')), 'hits.fifo');
  execFileSync('mkfifo', [path]);
  return path;
}

/** A TCP port on loopback that something else holds until `release`. */
async function heldPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, release: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('npm start', () => {
  it('says first that the demo upstream is in use, serves, and stops cleanly on SIGTERM', async () => {
    const exit = await run({}, async (lines, kill) => {
      const first = JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
      expect(first.event).toBe('demo_upstream');
      expect(first.level).toBe('warn');
      expect(first.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(first.msg).toMatch(/^No upstream configured: using the embedded demo upstream at http:\/\/127\.0\.0\.1:\d+$/);
      const second = JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
      expect(second).toMatchObject({ level: 'warn', event: 'client_id_key' });
      expect(second.msg).toContain('random key of this process');
      const listening = await nextEvent(lines, 'listening');
      const response = await fetch(`${String(listening.address)}/index.asmx/Search?query=dog&apiKey=never-logged-key`);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('<searchResultSet ');
      const hit = await nextEvent(lines, 'deprecated_call');
      expect(hit).toMatchObject({ operation: 'Search', binding: 'httpGet', outcome: 'ok', status: 200, upstreamRequests: 1 });
      expect(hit.client).toMatch(/^hmac:[0-9a-f]{12}$/);
      kill();
    });
    expect(exit.code).toBe(0);
    expect(exit.stdout.join('\n')).not.toContain('never-logged-key');
  });

  it('logs every hit whatever LOG_LEVEL says, with a request id its upstream failures share', async () => {
    const port = await freePort();
    const exit = await run({ UPSTREAM_URL: 'http://127.0.0.1:9/api', LOG_LEVEL: 'warn', PORT: String(port) }, async (lines, kill) => {
      await waitForServer(port);
      expect((await fetch(`http://127.0.0.1:${port}/index.asmx/Search?query=dog`)).status).toBe(500);
      const failure = await nextEvent(lines, 'upstream_failure');
      const hit = await nextEvent(lines, 'deprecated_call');
      expect(hit).toMatchObject({ level: 'info', operation: 'Search', outcome: 'fault', reason: 'upstream_unreachable' });
      expect(hit.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(failure).toMatchObject({ level: 'warn', requestId: hit.requestId, code: 'ECONNREFUSED' });
      expect(failure.durationMs).toBeTypeOf('number');
      kill();
    });
    expect(exit.code).toBe(0);
    // LOG_LEVEL=warn: no info line but the hits.
    expect(
      exit.stdout
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.level === 'info')
        .map((line) => line.event),
    ).toEqual(['deprecated_call']);
  });

  it('writes the hits to log.hitsFile when one is named', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-hits-'));
    const file = join(dir, 'proxy.json');
    writeFileSync(file, JSON.stringify({ log: { hitsFile: join(dir, 'hits', 'hits.log') } }));
    const exit = await run({ CONFIG_FILE: file }, async (lines, kill) => {
      const listening = await nextEvent(lines, 'listening');
      expect((await fetch(`${String(listening.address)}/index.asmx/Search?query=dog`)).status).toBe(200);
      kill();
    });
    expect(exit.code).toBe(0);
    const hits = readFileSync(join(dir, 'hits', 'hits.log'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(hits).toMatchObject([{ event: 'deprecated_call', operation: 'Search', outcome: 'ok' }]);
    expect(exit.stdout.join('\n')).not.toContain('deprecated_call');
  });

  it(
    'when the hit file fails (a full disk), says so once, writes the hits to stdout from then on, the one it failed on ' +
      'first, and still stops on SIGTERM',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'proxy-full-'));
      const file = join(dir, 'proxy.json');
      writeFileSync(file, JSON.stringify({ log: { hitsFile: '/dev/full' } }));
      const started = performance.now();
      const exit = await run({ CONFIG_FILE: file }, async (lines, kill) => {
        const { address } = await nextEvent(lines, 'listening');
        const search = async (query: string): Promise<void> => {
          const response = await fetch(`${String(address)}/index.asmx/Search?query=${query}`);
          expect([response.status, await response.text()]).toEqual([200, expect.stringContaining('<searchResultSet')]);
        };
        await search('dog');
        await nextEvent(lines, 'hits_file_failed');
        await search('cat');
        await search('owl');
        for (let i = 0; i < 2; i++) await nextEvent(lines, 'deprecated_call');
        kill();
      });
      expect(exit.code).toBe(0);
      expect(performance.now() - started).toBeLessThan(10_000);
      const events = exit.stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(events.filter((line) => line.event === 'hits_file_failed')).toEqual([
        expect.objectContaining({ level: 'error', key: 'log.hitsFile', value: '/dev/full', code: 'ENOSPC' }),
      ]);
      // No hit lost: the one the file refused is on stdout too, before the others.
      expect(events.filter((line) => line.event === 'deprecated_call').map((hit) => hit.successor)).toEqual(
        ['dog', 'cat', 'owl'].map((query) => expect.stringContaining(`query=${query}`)),
      );
    },
  );

  it('on SIGTERM fails /readyz for server.drainDelayMs while still serving, then stops; a second signal stops at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-drain-'));
    const file = join(dir, 'proxy.json');
    writeFileSync(file, JSON.stringify({ server: { drainDelayMs: 1500 } }));
    const drained = await run({ CONFIG_FILE: file }, async (lines, kill) => {
      const { address } = await nextEvent(lines, 'listening');
      const ready = await fetch(`${String(address)}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready' }]);
      kill();
      await nextEvent(lines, 'stopping');
      const draining = await fetch(`${String(address)}/readyz`);
      expect([draining.status, await draining.json()]).toEqual([503, { status: 'draining' }]);
      expect((await fetch(`${String(address)}/index.asmx/Search?query=dog`)).status).toBe(200);
      expect((await fetch(`${String(address)}/healthz`)).status).toBe(200);
    });
    expect(drained.code).toBe(0);

    writeFileSync(file, JSON.stringify({ server: { drainDelayMs: 60_000 } }));
    const started = performance.now();
    const forced = await run({ CONFIG_FILE: file }, async (lines, kill) => {
      await nextEvent(lines, 'listening');
      kill();
      await nextEvent(lines, 'stopping');
      kill();
    });
    expect(forced.code).toBe(1);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it(
    'on SIGHUP reads CONFIG_FILE again: new calls get it, what needs a restart is named, an invalid file is refused and the running ' +
      'one kept',
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'proxy-reload-')), 'proxy.json');
      writeFileSync(file, JSON.stringify({}));
      const exit = await run({ CONFIG_FILE: file }, async (lines, kill, signal) => {
        const { address } = await nextEvent(lines, 'listening');
        // Each body is read: a reply left unread keeps its connection, which the stop would then wait on.
        const first = await fetch(`${String(address)}/index.asmx/Search?query=dog`);
        expect([first.status, await first.text()]).toEqual([200, expect.stringContaining('<searchResultSet')]);

        const start = new Date(Date.now() - 60_000).toISOString();
        writeFileSync(
          file,
          JSON.stringify({
            server: { maxConcurrentCalls: 5 },
            brownouts: [{ name: 'hup', operations: ['Search'], start, durationMinutes: 60 }],
          }),
        );
        signal('SIGHUP');
        const reloaded = await nextEvent(lines, 'config_reloaded');
        expect(reloaded.restartNeeded).toEqual(['server']);
        expect(reloaded.msg).toBe('Configuration reloaded: new calls use it, but server takes effect only after a restart');
        const refused = await fetch(`${String(address)}/index.asmx/Search?query=dog`);
        expect([refused.status, await refused.text()]).toEqual([500, expect.stringContaining('brownout &quot;hup&quot;')]);

        writeFileSync(file, JSON.stringify({ brownouts: [{ name: 'hup', start: 'tomorrow', durationMinutes: 60 }] }));
        signal('SIGHUP');
        const invalid = await nextEvent(lines, 'config_reload_refused');
        expect(invalid.msg).toMatch(/^Invalid configuration: brownouts\.0\.start .* The running configuration is kept\.$/);
        const stillRefused = await fetch(`${String(address)}/index.asmx/Search?query=dog`);
        expect([stillRefused.status, await stillRefused.text()]).toEqual([500, expect.stringContaining('brownout &quot;hup&quot;')]);
        kill();
      });
      expect(exit.code).toBe(0);
    },
  );

  it(
    'closes the connection of every reply from SIGTERM on, so that a call in flight when the listener closes does not hold the ' + 'stop',
    async () => {
      // A load balancer keeps its connections alive: one left open after the last call would hold the
      // listener's close until server.shutdownGraceMs, and the exit would say calls were still in flight.
      const upstream = await startStubUpstream((req, res) => {
        const page = pageDocument(10, new Map(new URL(req.url ?? '/', 'http://upstream').searchParams), SEARCH_PAGES);
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/xml' }).end(page), 1500);
      });
      let answeredAt = 0;
      try {
        const exit = await run({ UPSTREAM_URL: upstream.origin }, async (lines, kill) => {
          const { address } = await nextEvent(lines, 'listening');
          expect((await fetch(`${String(address)}/healthz`)).headers.get('connection')).toBe('keep-alive');
          const inFlight = fetch(`${String(address)}/index.asmx/Search?query=dog`);
          while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
          kill();
          const response = await inFlight;
          answeredAt = performance.now();
          expect([response.status, response.headers.get('connection')]).toEqual([200, 'close']);
          expect(await response.text()).toContain('<searchResultSet');
        });
        expect(exit.code).toBe(0);
        expect(performance.now() - answeredAt).toBeLessThan(3000);
        expect(exit.stdout.join('\n')).not.toContain('stop_timeout');
      } finally {
        await upstream.close();
      }
    },
  );

  it('uses UPSTREAM_URL instead of the demo upstream', async () => {
    const exit = await run({ UPSTREAM_URL: 'http://127.0.0.1:9/api' }, async (lines, kill) => {
      const first = JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
      expect(first).toMatchObject({ event: 'upstream', upstream: 'http://127.0.0.1:9/api' });
      kill();
    });
    expect(exit.code).toBe(0);
  });

  it('never prints the credentials in UPSTREAM_URL', async () => {
    const exit = await run({ UPSTREAM_URL: 'http://user:s3cret-pass@127.0.0.1:9/api' }, async (lines, kill) => {
      const first = JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
      expect(first).toMatchObject({
        event: 'upstream',
        upstream: 'http://***@127.0.0.1:9/api',
        msg: 'Upstream: http://***@127.0.0.1:9/api',
      });
      await nextEvent(lines, 'listening');
      kill();
    });
    expect(exit.code).toBe(0);
    expect(`${exit.stdout.join('\n')}\n${exit.stderr}`).not.toContain('s3cret-pass');
  });

  it.each([
    [{ PORT: 'eighty' }, 'Invalid configuration: PORT must be a whole number, got "eighty".'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT (server.port) must be a whole number from 0 to 65535, got 70000.'],
    [{ PORT: '' }, 'Invalid configuration: PORT is set but empty; unset it or give it a value.'],
    [
      { UPSTREAM_URL: 'ftp://example.com' },
      'Invalid configuration: UPSTREAM_URL (upstream.baseUrl) must be an http or https URL, got "ftp://example.com".',
    ],
    [{ UPSTREAM_URL: '' }, 'Invalid configuration: UPSTREAM_URL is set but empty; unset it or give it a value.'],
    [{ UPSTREAM_URL: '  ' }, 'Invalid configuration: UPSTREAM_URL is set but empty; unset it or give it a value.'],
    [
      { LOG_LEVEL: 'loud' },
      'Invalid configuration: LOG_LEVEL (log.level) must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent", got ' +
        '"loud".',
    ],
    [
      { CONFIG_FILE: '/nonexistent/proxy.json' },
      'Invalid configuration: CONFIG_FILE names a file that cannot be read (/nonexistent/proxy.json: ENOENT).',
    ],
  ])('refuses %j with a message naming the key', async (env, message) => {
    const exit = await run(env);
    expect(exit.code).toBe(1);
    expect(exit.stderr.trim()).toBe(message);
  });

  it('refuses a bad value in CONFIG_FILE, naming the dotted key', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-config-')), 'proxy.json');
    writeFileSync(file, JSON.stringify({ paging: { profiles: { '/product.search.cp': { maxPageSize: 0 } } } }));
    const exit = await run({ CONFIG_FILE: file });
    expect(exit.code).toBe(1);
    expect(exit.stderr.trim()).toBe(
      'Invalid configuration: paging.profiles./product.search.cp.maxPageSize must be a whole number from 1 to 100000, got 0.',
    );
  });

  it('with CLIENT_ID_KEY, names callers by the HMAC every instance given that key shares, and says nothing of a random key', async () => {
    const exit = await run({ CLIENT_ID_KEY }, async (lines, kill) => {
      const listening = await nextEvent(lines, 'listening');
      await fetch(`${String(listening.address)}/index.asmx/Search?query=dog&apiKey=the-callers-key`);
      const hit = await nextEvent(lines, 'deprecated_call');
      expect(hit.client).toBe(clientFingerprint('the-callers-key', CLIENT_ID_KEY));
      kill();
    });
    expect(exit.code).toBe(0);
    expect(exit.stdout.join('\n')).not.toContain('client_id_key');
    expect(exit.stdout.join('\n')).not.toContain(CLIENT_ID_KEY);
  });

  it.each([
    [
      {},
      'Invalid configuration: UPSTREAM_URL (upstream.baseUrl) must be set when NODE_ENV is "production": without it the proxy would ' +
        'answer real clients from its embedded demo catalog.',
    ],
    [
      { UPSTREAM_URL: 'http://127.0.0.1:9/api' },
      'Invalid configuration: CLIENT_ID_KEY or CLIENT_ID_KEY_FILE (deprecation.clientIdKey) must be set when NODE_ENV is "production"',
    ],
    [
      { UPSTREAM_URL: 'http://127.0.0.1:9/api', CLIENT_ID_KEY: 'short-key' },
      'Invalid configuration: CLIENT_ID_KEY (deprecation.clientIdKey) must be at least 32 characters long.',
    ],
  ])('with NODE_ENV=production refuses to start without what production needs (%j)', async (env, message) => {
    for (const production of ['production', 'Production', 'prod']) {
      const exit = await run({ NODE_ENV: production, ...env });
      expect(exit.code).toBe(1);
      expect(exit.stderr.trim().startsWith(message)).toBe(true);
    }
    const exit = await run({ NODE_ENV: 'production', ...env });
    expect(exit.code).toBe(1);
    expect(exit.stderr.trim().startsWith(message)).toBe(true);
    expect(exit.stderr).not.toContain('short-key');
    expect(exit.stdout).toEqual([]);
  });

  it('with NODE_ENV=production, an upstream and CLIENT_ID_KEY, starts', async () => {
    const exit = await run({ NODE_ENV: 'production', UPSTREAM_URL: 'http://127.0.0.1:9/api', CLIENT_ID_KEY }, async (lines, kill) => {
      await nextEvent(lines, 'listening');
      kill();
    });
    expect(exit.code).toBe(0);
  });

  it.each([
    ['/proc/hits.log', 'no file can be created there', 'ENOENT'],
    ['/proc/nowhere/deeper/hits.log', 'its directory /proc/nowhere/deeper does not exist, nor the one above it', 'ENOENT'],
    ['/sys/hits.log', 'permission denied', 'EACCES'],
    [tmpdir(), 'it is a directory', 'EISDIR'],
    [fifo(), 'it is a FIFO that no process reads', 'ENXIO'],
  ])(
    'refuses a log.hitsFile it cannot write (%s) before listening, in one JSON line naming the key and the path',
    async (path, problem, code) => {
      const dir = mkdtempSync(join(tmpdir(), 'proxy-hits-'));
      const file = join(dir, 'proxy.json');
      writeFileSync(file, JSON.stringify({ log: { hitsFile: path } }));
      const exit = await run({ CONFIG_FILE: file });
      expect(exit.code).toBe(1);
      const lines = exit.stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => line.event)).not.toContain('listening');
      expect(lines.at(-1)).toEqual({
        level: 'fatal',
        time: expect.any(String),
        pid: expect.any(Number),
        hostname: expect.any(String),
        event: 'start_refused',
        key: 'log.hitsFile',
        value: path,
        code,
        msg: `Cannot start: log.hitsFile (${path}) cannot be written: ${problem}.`,
      });
      expect(exit.stderr).toBe('');
    },
  );

  it.each([
    ['PORT', 'server.port'],
    ['ADMIN_PORT', 'server.adminPort'],
  ])('refuses a %s another process holds, in one JSON line naming %s, and stops', async (variable, key) => {
    const held = await heldPort();
    try {
      const exit = await run({ [variable]: String(held.port) });
      expect(exit.code).toBe(1);
      const last = JSON.parse(exit.stdout.at(-1)!) as Record<string, unknown>;
      expect(last).toMatchObject({
        level: 'fatal',
        event: 'start_refused',
        key,
        value: `127.0.0.1:${held.port}`,
        code: 'EADDRINUSE',
        msg: `Cannot start: ${key} (127.0.0.1:${held.port}) cannot be listened on: the address is in use by another process (EADDRINUSE).`,
      });
      expect(exit.stdout.map((line) => (JSON.parse(line) as Record<string, unknown>).event)).not.toContain('admin_listening');
      expect(exit.stderr).toBe('');
    } finally {
      await held.release();
    }
  });

  it('refuses a server.adminHost that does not resolve, naming it, before the service port listens', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-config-')), 'proxy.json');
    writeFileSync(file, JSON.stringify({ server: { adminHost: 'operator.invalid' } }));
    const exit = await run({ CONFIG_FILE: file });
    expect(exit.code).toBe(1);
    const lines = exit.stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ event: 'start_refused', key: 'server.adminHost', value: 'operator.invalid:0', code: 'ENOTFOUND' });
    expect(lines.map((line) => line.event)).not.toContain('listening');
    expect(lines.map((line) => String(line.msg))).not.toContainEqual(expect.stringMatching(/^Server listening/));
  });

  it('refuses server.adminPort equal to server.port as a configuration error', async () => {
    const exit = await run({ PORT: '8090', ADMIN_PORT: '8090' });
    expect(exit.code).toBe(1);
    expect(exit.stderr.trim()).toBe(
      'Invalid configuration: ADMIN_PORT (server.adminPort) must differ from server.port (8090): the operator endpoints have a ' +
        "listener of their own. Choose another port, or set it to null and name the endpoints the service's port should serve in " +
        'server.operatorOnServicePort.',
    );
  });

  it("keeps keys out of the operators' lines that quote text the proxy did not write (fastify's warnings, error messages)", () => {
    const script = [
      "import { createOperatorLogger } from './dist/src/start/loggers.js';",
      'const log = createOperatorLogger("info");',
      'log.warn(\'Reply was already sent, did you forget to "return reply" in the "/index.asmx/Search?query=x&apiKey=%2bsecret-one" ' +
        "(GET) route?');",
      'log.error({ err: new Error("GET /product.search.cp?v=3&APPKEY=secret-two failed") }, "failed");',
      'log.error({ err: Object.assign(new Error("Parse Error"), { code: "HPE_INVALID", rawPacket: Buffer.from("GET ' +
        '/?apiKey=secret-three") }) }, "client error");',
      'log.flush();',
    ].join('\n');
    const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; err?: { message: string; stack: string } });
    expect(lines[0]!.msg).toBe(
      'Reply was already sent, did you forget to "return reply" in the "/index.asmx/Search?query=x&apiKey=[redacted]" (GET) route?',
    );
    expect(lines[1]!.err!.message).toBe('GET /product.search.cp?v=3&APPKEY=[redacted] failed');
    expect(lines[2]!.err).toEqual({
      type: 'Error',
      message: 'Parse Error',
      stack: expect.stringMatching(/^Error: Parse Error\n/),
      code: 'HPE_INVALID',
    });
    expect(stdout).not.toMatch(/secret-(one|two|three)|rawPacket/);
  });

  it('refuses a misspelt key in CONFIG_FILE, naming it and the key meant', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-config-')), 'proxy.json');
    writeFileSync(file, JSON.stringify({ upstream: { baseURL: 'http://127.0.0.1:9/api' } }));
    const exit = await run({ CONFIG_FILE: file });
    expect(exit.code).toBe(1);
    expect(exit.stderr.trim()).toBe('Invalid configuration: upstream.baseURL is not a configuration key (did you mean upstream.baseUrl?).');
    expect(exit.stdout).toEqual([]);
  });
});
