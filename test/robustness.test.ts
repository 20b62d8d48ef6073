import { execFileSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { FetchOptions } from '../src/outbound/fetch.js';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import { findOperation, legacyCall } from '../src/operations.js';
import { createCallAnswerer } from './support/call.js';
import { treeOf } from '../src/xml/compact.js';
import { errorPage } from '../src/inbound/reply.js';
import type { Binding } from '../src/inbound/binding.js';
import { buildApp, type App } from '../src/server/app.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute, childElements, innerText } from '../src/xml/tree.js';
import { testConfig } from './support/config.js';
import { SEARCH_PAGES, STORE_PAGES, itemIds, pageDocument, pagedUpstream, range } from './support/pages.js';
import { rawRequest } from './support/raw-http.js';
import { startStubUpstream, type StubHandler, type StubUpstream } from './support/stub-upstream.js';

/**
 * What keeps the process serving when callers or the upstream misbehave: deadlines, cancellation,
 * load shedding, and refusing upstream pages that do not line up rather than answering a wrong result.
 */

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** A stub upstream, closed after the test. */
async function upstream(handler: StubHandler): Promise<StubUpstream> {
  const stub = await startStubUpstream(handler);
  cleanups.push(() => stub.close());
  return stub;
}

async function proxyTo(upstreamUrl: string, overrides: Json = {}): Promise<string> {
  const config = loadConfig({}, { log: { level: 'silent' }, upstream: { baseUrl: upstreamUrl, appKey: 'k' } }, overrides);
  const app: App = await buildApp(config, { logger: pino({ level: 'silent' }) });
  const address = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => app.fastify.close());
  return address;
}

/** The status of a GET sent with a Host header fetch would not let through. */
async function statusWithHost(proxy: string, path: string, host: string): Promise<number> {
  return (await rawRequest(proxy, { path, headers: { host } })).status;
}

const never: StubHandler = () => {};
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a deadline for receiving the request', () => {
  it.each([
    ['a body declared but never sent', 'Content-Length: 1000\r\n\r\n', false],
    ['a body trickled a byte at a time', 'Content-Length: 1000\r\n\r\n', true],
    ['a chunked body that stalls', 'Transfer-Encoding: chunked\r\n\r\n5\r\nquery', false],
  ])('%s is cut at server.requestTimeoutMs with a 408', async (_case, rest, trickle) => {
    const proxy = new URL(await proxyTo((await upstream(never)).origin, { server: { requestTimeoutMs: 1000 } }));
    const started = performance.now();
    const answer = await new Promise<string>((resolve) => {
      let received = '';
      const socket = connect(Number(proxy.port), '127.0.0.1', () => {
        socket.write(`POST /index.asmx/Search HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n${rest}`);
      });
      const trickling = trickle ? setInterval(() => socket.write('a'), 100) : undefined;
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(trickling);
        resolve(received);
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    // Node checks its connections a few times per timeout; before, it was every 30 s, or never.
    expect(performance.now() - started).toBeLessThan(2500);
  });
});

describe('a deadline for the whole call', () => {
  it('answers "The operation has timed out" at upstream.callTimeoutMs, however patient the per-request timeouts', async () => {
    const silent = await upstream(never);
    const proxy = await proxyTo(silent.origin, {
      upstream: { callTimeoutMs: 300, headersTimeoutMs: 60_000 },
      server: { shutdownGraceMs: 300 },
    });
    const started = performance.now();
    const response = await fetch(`${proxy}/index.asmx/Search?query=dog`);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('The operation has timed out\r\n');
    await pause(50);
    expect(silent.abandoned()).toBe(1);
  });
});

describe('cancellation', () => {
  it('cancels the upstream requests of a caller that went away', async () => {
    const silent = await upstream(never);
    const proxy = await proxyTo(silent.origin);
    // The caller hangs up after 200 ms: that its request then fails is the point.
    await rawRequest(proxy, { path: '/index.asmx/Search?query=dog', signal: AbortSignal.timeout(200) }).catch(() => undefined);
    await pause(200);
    expect(silent.requests.length).toBe(1);
    expect(silent.abandoned()).toBe(1);
  });

  it('stops fetching pages after the first one fails', async () => {
    const config = testConfig({ upstream: { maxConcurrentPages: 2 } });
    const inner = pagedUpstream(10_000, SEARCH_PAGES);
    let started = 0;
    let cancelled = 0;
    const failing = {
      async fetch(request: Parameters<typeof inner.fetch>[0], options: FetchOptions) {
        started++;
        if (started === 1) throw new Error('first page failed');
        await pause(20);
        if (options.signal.aborted) {
          cancelled++;
          throw options.signal.reason;
        }
        return inner.fetch(request, options);
      },
    };
    const call = legacyCall(findOperation('AdvancedSearch')!, { query: 'x', startResults: '0', maxResults: '1000' });
    await expect(createCallAnswerer(config)(call, failing)).rejects.toThrow('first page failed');
    // Long enough for the page in flight to finish and, were cancellation broken, for more to start.
    await pause(100);
    expect(started).toBe(2);
    expect(cancelled).toBe(1);
  });
});

describe('a binding that fails on its own', () => {
  const broken: Record<string, Binding> = {
    read: {
      accepts: () => true,
      read: () => {
        throw new Error('defect in read');
      },
      write: () => errorPage(200, 'unreachable'),
      writeError: () => errorPage(200, 'unreachable'),
    },
    writeError: {
      accepts: () => true,
      read: () => ({ ok: false, binding: 'httpGet', operation: null, error: new Error('refused'), wire: null }),
      write: () => errorPage(200, 'unreachable'),
      writeError: () => {
        throw new Error('defect in writeError');
      },
    },
  };

  it.each(Object.keys(broken))('(%s throws) gets the internal error page, a hit, and frees its slot', async (name) => {
    const config = loadConfig(
      {},
      { log: { level: 'info' }, upstream: { baseUrl: 'http://127.0.0.1:1', appKey: 'k' }, server: { maxConcurrentCalls: 1 } },
    );
    const lines: Record<string, unknown>[] = [];
    const app = await buildApp(config, {
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    });
    const binding = broken[name] as Binding;
    // As the dispatcher does: the call sends its reply itself, at the end of the turn (src/inbound/send.ts).
    app.fastify.get('/broken', (request, reply) => {
      void app.serveCall(
        binding,
        {
          method: 'GET',
          path: '/broken/x',
          pathInfo: '/x',
          query: '',
          contentType: undefined,
          soapAction: undefined,
          body: Buffer.alloc(0),
        },
        request,
        reply,
      );
    });
    const address = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => app.fastify.close());
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${address}/broken`);
      expect(response.status).toBe(500);
      expect(await response.text()).toContain('An internal error occurred.');
    }
    const hits = lines.filter((line) => line.event === 'deprecated_call');
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ outcome: 'fault', reason: 'internal', status: 500 });
    expect(lines.filter((line) => line.msg === 'legacy call failed unexpectedly')).toHaveLength(3);
  });
});

describe('load shedding', () => {
  /** An upstream that answers nothing until `release`: one call keeps the only slot. */
  async function heldUpstream(): Promise<{ slow: StubUpstream; release: () => void }> {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = await upstream((req, res) => {
      void gate.then(() => {
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(pageDocument(3, new Map(new URL(req.url ?? '/', 'http://upstream').searchParams), SEARCH_PAGES));
      });
    });
    return { slow, release };
  }

  it('answers 503 "Server Too Busy" past server.maxConcurrentCalls, and serves again after', async () => {
    const { slow, release } = await heldUpstream();
    const proxy = await proxyTo(slow.origin, { server: { maxConcurrentCalls: 1 } });
    const first = fetch(`${proxy}/index.asmx/Search?query=a`);
    await pause(100);
    const second = await fetch(`${proxy}/index.asmx/Search?query=b`);
    expect(second.status).toBe(503);
    expect(await second.text()).toContain('Server Too Busy');
    expect(second.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(second.headers.get('retry-after')).toBe('5');
    release();
    expect((await first).status).toBe(200);
    expect((await fetch(`${proxy}/index.asmx/Search?query=c`)).status).toBe(200);
  });

  it('records each shed call as a hit and in legacy_calls_total, and sums them up in one warning', async () => {
    const { slow, release } = await heldUpstream();
    const lines: Record<string, unknown>[] = [];
    const config = loadConfig(
      {},
      { log: { level: 'info' }, upstream: { baseUrl: slow.origin, appKey: 'k' }, server: { maxConcurrentCalls: 1, retryAfterSeconds: 30 } },
    );
    const app = await buildApp(config, {
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    });
    const proxy = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
    const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
    const first = fetch(`${proxy}/index.asmx/Search?query=a`);
    await pause(100);
    for (let i = 0; i < 4; i++) {
      const shed = await fetch(`${proxy}/index.asmx/ProductLookup?productNumber=7&apiKey=key-${i}`);
      expect(shed.status).toBe(503);
      expect(shed.headers.get('retry-after')).toBe('30');
    }
    const hits = lines.filter((line) => line.event === 'deprecated_call' && line.outcome === 'shed');
    expect(hits).toHaveLength(4);
    expect(hits[0]).toMatchObject({
      operation: 'ProductLookup',
      binding: 'httpGet',
      status: 503,
      reason: null,
      upstreamRequests: 0,
      client: clientFingerprint('key-0'),
    });
    expect(await (await fetch(`${admin}/metrics`)).text()).toMatch(
      /^legacy_calls_total\{operation="ProductLookup",binding="httpGet",outcome="shed",client="other"\} 4$/m,
    );
    release();
    await first;
    expect(lines.filter((line) => line.level === 40)).toEqual([]);
    await app.fastify.close();
    expect(lines.filter((line) => line.event === 'calls_shed')).toMatchObject([{ shed: 4 }]);
  });
});

describe('upstream pages that do not line up are refused, not answered wrongly', () => {
  const store = findOperation('StoreLookup')!;

  it('StoreLookup: an upstream that caps its pages below the size asked for', async () => {
    const capped = {
      async fetch(request: { params: readonly (readonly [string, string])[] }) {
        const params = new Map(request.params);
        const page = Number(params.get('page'));
        // 300 designs, but never more than 50 per page whatever pageSize says.
        return parseXml(
          pageDocument(300, new Map([...params, ['pageSize', '50']]), STORE_PAGES).replace(
            `startResult="${page * 50}"`,
            `startResult="${page * 256}"`,
          ),
        );
      },
    };
    await expect(createCallAnswerer(testConfig())(legacyCall(store, { storeId: 's' }), capped)).rejects.toMatchObject({
      reason: 'upstream_invalid',
      message: 'The upstream page at item 0 has startResult 0 and 50 items of 256.',
    });
  });

  it('StoreLookup: a catalog that grows while the pages come in is still answered whole', async () => {
    let total = 600;
    const growing = {
      async fetch(request: { params: readonly (readonly [string, string])[] }) {
        return parseXml(pageDocument(total++, new Map(request.params), STORE_PAGES));
      },
    };
    const result = treeOf(
      await createCallAnswerer(testConfig({ upstream: { maxConcurrentPages: 1 } }))(legacyCall(store, { storeId: 's' }), growing),
    );
    expect(result.attributes.find((a) => a.name === 'resultLength')?.value).toBe('602');
  });

  /** 1000 items, but never more than 50 a page, whatever the page size asked for. */
  const cappedAt50 = (naming: typeof SEARCH_PAGES) => ({
    async fetch(request: { params: readonly (readonly [string, string])[] }) {
      const params = new Map(request.params);
      const asked = Number(params.get(naming.sizeParam));
      const start = (Number(params.get(naming.pageParam)) - naming.firstPage) * asked;
      const items = range(start, Math.min(start + asked, start + 50, 1000)).map((id) => `<searchResultItem mediaId="${id}" />`);
      return parseXml(
        `<searchResultSet totalDesigns="1000" startResult="${start}" ` +
          `resultLength="${items.length}"><mainResults>${items.join('')}</mainResults></searchResultSet>`,
      );
    },
  });

  it.each([
    ['StoreLookupPaged', { storeId: 's', pageIndex: 0, pageSize: 80 }, STORE_PAGES],
    ['AdvancedSearch', { startResults: '0', maxResults: '80' }, SEARCH_PAGES],
  ])('%s: an upstream that caps its pages below the size asked for is a fault, not a truncated window', async (name, args, naming) => {
    const call = legacyCall(findOperation(name)!, args);
    await expect(createCallAnswerer(testConfig())(call, cappedAt50(naming))).rejects.toMatchObject({
      reason: 'upstream_invalid',
      message:
        'The upstream page at item 0 holds 50 items of the 80 asked for, though it reports 1000 in all: the upstream caps its pages ' +
        'below the configured maximum page size.',
    });
  });

  it('a short last page is fine where the list ends', async () => {
    const call = legacyCall(findOperation('AdvancedSearch')!, { startResults: '980', maxResults: '40' });
    expect(itemIds(treeOf(await createCallAnswerer(testConfig())(call, cappedAt50(SEARCH_PAGES))))).toEqual(range(980, 1000));
  });

  it('AdvancedSearch: a page whose startResult is not where it was asked to start', async () => {
    const shifted = {
      async fetch(request: { params: readonly (readonly [string, string])[] }) {
        return parseXml(pageDocument(1000, new Map(request.params), SEARCH_PAGES).replace(/startResult="\d+"/, 'startResult="0"'));
      },
    };
    const call = legacyCall(findOperation('AdvancedSearch')!, { startResults: '300', maxResults: '10' });
    await expect(createCallAnswerer(testConfig())(call, shifted)).rejects.toMatchObject({ reason: 'upstream_invalid' });
  });
});

describe('the elements of the upstream answers are configuration', () => {
  /** An upstream whose search answers are `<results><list><entry n="…" />…</list></results>`. */
  async function otherShapedUpstream(): Promise<StubUpstream> {
    return upstream((req, res) => {
      const params = new URL(req.url ?? '/', 'http://upstream').searchParams;
      const size = Number(params.get('resultsPerPage') ?? 60);
      const start = (Number(params.get('pageNumber') ?? 1) - 1) * size;
      const entries = range(start, Math.min(start + size, 500))
        .map((n) => `<entry n="${n}" />`)
        .join('');
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<results totalDesigns="500" startResult="${start}" resultLength="${Math.min(size, 500 - start)}"><list>${entries}<note>kept ` +
          `out</note></list></results>`,
      );
    });
  }
  const shape = { upstream: { answers: { '/product.search.cp': { root: 'results', items: 'list', item: 'entry' } } } };

  it('windows are cut from answers of the configured shape', async () => {
    const proxy = await proxyTo((await otherShapedUpstream()).origin, shape);
    const response = await fetch(`${proxy}/index.asmx/AdvancedSearch?startResults=41&maxResults=60`);
    const body = await response.text();
    expect(response.status, body).toBe(200);
    const root = parseXml(body);
    expect(root.local).toBe('results');
    expect(childElements(childElements(root)[0]!).map((entry) => Number(attribute(entry, 'n')))).toEqual(range(41, 101));
  });

  it('an answer of another shape than the configured one is refused', async () => {
    const proxy = await proxyTo((await otherShapedUpstream()).origin);
    const response = await fetch(`${proxy}/index.asmx/Search?query=x`);
    expect(await response.text()).toBe('The upstream answer has root element &#39;results&#39;, expected &#39;searchResultSet&#39;.\r\n');
  });
});

describe('readiness', () => {
  /** The app with its operator listener on loopback; `listenAdmin: false` leaves that one down. */
  async function listening(
    upstreamUrl: string,
    overrides: Json = {},
    listenAdmin = true,
  ): Promise<{ app: App; proxy: string; admin: string | null }> {
    const config = loadConfig(
      {},
      { log: { level: 'silent' }, upstream: { baseUrl: upstreamUrl, appKey: 'k' }, server: { adminPort: 0 } },
      overrides,
    );
    const app = await buildApp(config, { logger: pino({ level: 'silent' }) });
    cleanups.push(() => app.fastify.close());
    const proxy = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
    const admin = listenAdmin ? await app.admin!.listen({ host: '127.0.0.1', port: 0 }) : null;
    return { app, proxy, admin };
  }
  const readyz = async (base: string): Promise<[number, unknown]> => {
    const response = await fetch(`${base}/readyz`);
    return [response.status, await response.json()];
  };

  it('/readyz stays 200 while the upstream is down; calls get the legacy fault in time, and the operators see it', async () => {
    const dead = await upstream(never);
    await dead.close();
    const { proxy, admin } = await listening(dead.origin, { upstream: { connectTimeoutMs: 500 } });
    expect(await readyz(proxy)).toEqual([200, { status: 'ready' }]);
    const started = performance.now();
    const call = await fetch(`${proxy}/index.asmx/Search?query=x`);
    expect([call.status, await call.text()]).toEqual([500, 'Unable to connect to the remote server\r\n']);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(await readyz(proxy)).toEqual([200, { status: 'ready' }]);
    expect(await readyz(admin!)).toEqual([200, { status: 'ready' }]);
    expect(await (await fetch(`${admin}/metrics`)).text()).toMatch(/^upstream_up 0$/m);
    const health = (await (await fetch(`${admin}/healthz`)).json()) as { status: string; upstream: Record<string, unknown> };
    expect(health).toMatchObject({
      status: 'ok',
      upstream: { up: false, source: 'request', problem: 'upstream_unreachable (ECONNREFUSED)', lastUpAt: null },
    });
    // The service's port says nothing of the upstream.
    expect(await (await fetch(`${proxy}/healthz`)).json()).toEqual({ status: 'ok' });
  });

  it('upstream_up is absent until a request or probe tells, then 1 for an upstream that answers at all (a 404 too)', async () => {
    const up = await upstream((_req, res) => res.writeHead(404).end());
    const { proxy, admin } = await listening(up.origin);
    expect(await (await fetch(`${admin}/metrics`)).text()).not.toMatch(/^upstream_up /m);
    await fetch(`${proxy}/index.asmx/Search?query=x`);
    expect(await (await fetch(`${admin}/metrics`)).text()).toMatch(/^upstream_up 1$/m);
    const { upstream: state } = (await (await fetch(`${admin}/healthz`)).json()) as {
      upstream: { up: boolean; checkedAt: string; lastUpAt: string };
    };
    expect(state.up).toBe(true);
    expect(state.lastUpAt).toBe(state.checkedAt);
  });

  it('with server.readinessFollowsUpstream, /readyz is 503 while the upstream cannot be reached; /healthz still 200', async () => {
    const dead = await upstream(never);
    await dead.close();
    const { proxy } = await listening(dead.origin, { upstream: { connectTimeoutMs: 500 }, server: { readinessFollowsUpstream: true } });
    expect(await readyz(proxy)).toEqual([503, { status: 'upstream unreachable' }]);
    expect((await fetch(`${proxy}/healthz`)).status).toBe(200);
  });

  it('with server.readinessFollowsUpstream, /readyz is ready while the upstream answers, probed at most once an interval', async () => {
    const up = await upstream((_req, res) => res.writeHead(404).end());
    const { proxy } = await listening(up.origin, { server: { readinessFollowsUpstream: true } });
    for (let i = 0; i < 3; i++) expect(await readyz(proxy)).toEqual([200, { status: 'ready' }]);
    expect(up.requests.map((request) => request.method)).toEqual(['HEAD']);
  });

  it('/readyz is 503 "starting" until every listener is up', async () => {
    const up = await upstream((_req, res) => res.writeHead(404).end());
    const { app, proxy } = await listening(up.origin, {}, false);
    expect(await readyz(proxy)).toEqual([503, { status: 'starting' }]);
    await app.admin!.listen({ host: '127.0.0.1', port: 0 });
    expect(await readyz(proxy)).toEqual([200, { status: 'ready' }]);
  });
});

describe('the operator listener', () => {
  it('has /healthz, /readyz, /metrics and /ledger; the service port only the probes, and 404 for the operator data', async () => {
    const up = await upstream((_req, res) => res.writeHead(404).end());
    const config = loadConfig({}, { log: { level: 'silent' }, upstream: { baseUrl: up.origin, appKey: 'k' }, server: { adminPort: 0 } });
    const app = await buildApp(config, { logger: pino({ level: 'silent' }) });
    const proxy = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
    const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => app.fastify.close());
    expect((await fetch(`${proxy}/index.asmx/Search?query=x&apiKey=caller-key`)).status).toBe(500);
    for (const path of ['/metrics', '/ledger']) {
      const response = await fetch(`${proxy}${path}`);
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain(clientFingerprint('caller-key'));
      expect((await fetch(`${admin}${path}`)).status).toBe(200);
    }
    for (const path of ['/healthz', '/readyz']) for (const base of [proxy, admin]) expect((await fetch(`${base}${path}`)).status).toBe(200);
    expect(await (await fetch(`${admin}/metrics`)).text()).toMatch(
      /^legacy_calls_total\{operation="Search",binding="httpGet",outcome="fault",client="other"\} 1$/m,
    );
    expect(await (await fetch(`${admin}/ledger`)).text()).toContain(clientFingerprint('caller-key'));
  });

  it('is on by default, on port 9464 of loopback', () => {
    expect(loadConfig({}).server).toMatchObject({ adminPort: 9464, adminHost: '127.0.0.1', operatorOnServicePort: [] });
  });

  it('serves on the service port only the operator data named in server.operatorOnServicePort', async () => {
    const up = await upstream((_req, res) => res.writeHead(404).end());
    const proxy = await proxyTo(up.origin, { server: { operatorOnServicePort: ['/metrics'] } });
    expect((await fetch(`${proxy}/metrics`)).status).toBe(200);
    expect((await fetch(`${proxy}/ledger`)).status).toBe(404);
  });
});

describe('hostile input', () => {
  const envelope = (version: '1.1' | '1.2', op: string): string =>
    `<?xml version="1.0" encoding="utf-8"?><soap:Envelope ` +
    `xmlns:soap="${version === '1.1' ? 'http://schemas.xmlsoap.org/soap/envelope/' : 'http://www.w3.org/2003/05/soap-envelope'}">` +
    `<soap:Body><${op} xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>`;

  it('a Content-Type parameter with a long run of spaces inside is read in linear time', async () => {
    const proxy = await proxyTo((await upstream(never)).origin);
    // As many as fit in the headers Node reads (16 KiB).
    const spaces = ' '.repeat(15_000);
    const started = performance.now();
    for (const parameter of Array.from({ length: 10 }, (_, i) => (i % 2 ? `action=x${spaces}x` : `charset=x${spaces}x`))) {
      const response = await rawRequest(proxy, {
        method: 'POST',
        path: '/index.asmx',
        headers: { 'content-type': `application/soap+xml; ${parameter}` },
        body: envelope('1.2', 'Nope'),
      });
      expect(response.status).toBe(500);
    }
    // Quadratic, each took over 100 ms of CPU (and held up every other caller); linear, a few.
    expect(performance.now() - started).toBeLessThan(500);
  });

  it.each(['%00', '%01', '%1F', '%EF%BF%BE', '%uFFFE', '%uD800', 'a%0Bb'])(
    'a SOAPAction or action that decodes to %s, which XML forbids, gets a fault that parses, the character replaced',
    async (escaped) => {
      const proxy = await proxyTo((await upstream(never)).origin);
      const soap11 = await rawRequest(proxy, {
        method: 'POST',
        path: '/index.asmx',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"http://tempuri.org/${escaped}"` },
        body: envelope('1.1', 'Search'),
      });
      const soap12 = await rawRequest(proxy, {
        method: 'POST',
        path: '/index.asmx',
        headers: { 'content-type': `application/soap+xml; charset=utf-8; action="http://tempuri.org/${escaped}"` },
        body: envelope('1.2', 'Nope'),
      });
      for (const response of [soap11, soap12]) {
        expect(response.status).toBe(500);
        const fault = parseXml(response.text);
        const text = innerText(fault);
        expect(text).toContain('\uFFFD');
        expect(text).not.toMatch(/[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/);
      }
    },
  );

  it('a bad Host with a malformed path escape gets a 400 and the process keeps serving', async () => {
    const good = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(pageDocument(1, new Map(), SEARCH_PAGES));
    });
    const proxy = await proxyTo(good.origin);
    expect(await statusWithHost(proxy, '/x%ZZ/../index.asmx?op=Search', 'a b')).toBe(400);
    expect((await fetch(`${proxy}/index.asmx/Search?query=x`)).status).toBe(200);
  });

  it('a Host with user info is refused, not turned into another host in the WSDL', async () => {
    const proxy = await proxyTo((await upstream(never)).origin);
    expect(await statusWithHost(proxy, '/index.asmx?wsdl', 'x@evil.example')).toBe(400);
  });

  it('a form of many repeated names is read in linear time', async () => {
    const proxy = await proxyTo((await upstream(never)).origin);
    const started = performance.now();
    const response = await fetch(`${proxy}/index.asmx/StoreLookupPaged`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a&'.repeat(200_000),
    });
    expect(await response.text()).toBe('Missing parameter: pageIndex.\r\n');
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('a query part without "=" is a nameless value, not the parameter (ASP.NET collections)', async () => {
    const proxy = await proxyTo((await upstream(never)).origin);
    const response = await fetch(`${proxy}/index.asmx/ProductLookup?productNumber`);
    expect(await response.text()).toBe('Missing parameter: productNumber.\r\n');
  });
});

describe('client fingerprints', () => {
  it('are an HMAC with deprecation.clientIdKey, so a dictionary of keys cannot reverse them', () => {
    expect(clientFingerprint('legacy-key', 'secret')).toMatch(/^hmac:[0-9a-f]{12}$/);
    expect(clientFingerprint('legacy-key', 'secret')).toBe(
      `hmac:${createHmac('sha256', 'secret').update('legacy-key').digest('hex').slice(0, 12)}`,
    );
    expect(clientFingerprint('legacy-key', 'secret')).not.toBe(clientFingerprint('legacy-key', 'other'));
    expect(clientFingerprint(null)).toBe('anonymous');
  });

  it('without deprecation.clientIdKey, are an HMAC with a random key of the process, never a plain hash of the key', () => {
    // A 6-digit apiKey: its plain SHA-256 prefix is found among a million candidates in under a second.
    const apiKey = '482913';
    const fingerprint = clientFingerprint(apiKey, null);
    expect(fingerprint).toMatch(/^hmac:[0-9a-f]{12}$/);
    expect(fingerprint.slice('hmac:'.length)).not.toBe(createHash('sha256').update(apiKey).digest('hex').slice(0, 12));
    expect(clientFingerprint(apiKey, null)).toBe(fingerprint);
    const otherProcess = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { clientFingerprint } from './dist/src/clients/fingerprint.js'; process.stdout.write(clientFingerprint('${apiKey}', ` +
          `null));`,
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(otherProcess).toMatch(/^hmac:[0-9a-f]{12}$/);
    expect(otherProcess).not.toBe(fingerprint);
  });
});
