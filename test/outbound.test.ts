import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Json } from '../src/config/validate.js';
import { UpstreamError } from '../src/errors.js';
import { CONNECTION_CLOSED, TIMED_OUT, UNABLE_TO_CONNECT } from '../src/messages.js';
import { readResponse as readBody } from '../src/outbound/response.js';
import { createUpstream, type Upstream, type UpstreamObservation } from '../src/outbound/upstream-client.js';
import { fetchOptions } from './support/fetch-options.js';
import { treeOf } from '../src/xml/compact.js';
import type { UpstreamRequest } from '../src/translate/plan.js';
import { attribute, childElements, innerText, type XmlElement } from '../src/xml/tree.js';
import { testConfig } from './support/config.js';
import { startStubUpstream, type StubHandler, type StubUpstream } from './support/stub-upstream.js';

/** `readResponse` on a body written as text, sent as UTF-8. */
function readResponse(status: number, text: string, root: string, secrets: readonly string[] = []): ReturnType<typeof readBody> {
  return readBody(status, Buffer.from(text), root, secrets);
}

// The outbound client against real loopback servers (test/support/stub-upstream.ts). Expected texts:
// docs/upstream.md §5, §7 and §11.8.

// ---------------------------------------------------------------------------------------------
// Fixtures

/** The root every `.cp` endpoint answers with, unless configured otherwise (docs/upstream.md §11.2). */
const ROOT = 'searchResultSet';

/** A `searchResultSet` page as the upstream writes it: no XML declaration, 2-space indentation. */
const SEARCH_RESULT = readFileSync(join(import.meta.dirname, 'fixtures', 'search-result.xml'), 'utf8');

const ROOT_ATTRIBUTES = [
  ['totalDesigns', '2'],
  ['totalProducts', '3'],
  ['startResult', '0'],
  ['resultLength', '2'],
  ['version', '3'],
  ['sort', 'by_score_desc'],
];

const INVALID_SORT = "Invalid sort value 'x'.";
const HELP = `<help>
  <exception-message>${INVALID_SORT}</exception-message>
  <documentation/>
</help>
`;

const XML_TYPE = { 'content-type': 'text/xml; charset=utf-8' };

const SEARCH: UpstreamRequest = {
  path: '/product.search.cp',
  params: [
    ['v', '3'],
    ['appKey', 'k'],
    ['query', 'dog'],
  ],
};

const search = (query: string): UpstreamRequest => ({
  path: '/product.search.cp',
  params: [
    ['v', '3'],
    ['appKey', 'k'],
    ['query', query],
  ],
});

/** Builds a well-formed `searchResultSet` of at least `bytes` bytes. */
function bigResult(bytes: number): string {
  const item = '<subtopic>filler filler filler filler filler filler filler</subtopic>\n';
  return `<searchResultSet><subtopics>\n${item.repeat(Math.ceil(bytes / item.length))}</subtopics></searchResultSet>`;
}

// ---------------------------------------------------------------------------------------------
// Helpers: loopback servers and clients, all closed after each test

const openServers: StubUpstream[] = [];
const openClients: Upstream[] = [];

afterEach(async () => {
  await Promise.all(openClients.splice(0).map((client) => client.close()));
  await Promise.all(openServers.splice(0).map((server) => server.close()));
});

/** A stub upstream, closed after the test. */
async function startUpstream(handler: StubHandler): Promise<StubUpstream> {
  const upstream = await startStubUpstream(handler);
  openServers.push(upstream);
  return upstream;
}

/** A handler that answers every request with `status`, `body` and `headers`. */
const answer =
  (status: number, body: string, headers: OutgoingHttpHeaders = XML_TYPE): StubHandler =>
  (_req, res) => {
    res.writeHead(status, headers).end(body);
  };

/** A port nothing listens on: a server was there a moment ago. */
async function deadPort(): Promise<number> {
  const upstream = await startUpstream(answer(200, SEARCH_RESULT));
  await upstream.close();
  return upstream.port;
}

/**
 * A client for `baseUrl` with short timeouts (so nothing here can hang) and the given upstream
 * overrides; every outcome it reports is pushed onto the returned `outcomes`.
 */
function clientFor(baseUrl: string, overrides: { [key: string]: Json } = {}): { client: Upstream; outcomes: UpstreamObservation[] } {
  const config = testConfig({
    upstream: { baseUrl, connectTimeoutMs: 1000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, ...overrides },
  });
  const outcomes: UpstreamObservation[] = [];
  const client = createUpstream(config.upstream, (outcome) => outcomes.push(outcome));
  openClients.push(client);
  return { client, outcomes };
}

/** The UpstreamError `promise` rejects with (fails the test if it resolves or throws anything else). */
async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const err: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
}

/** What `action` throws (undefined if it returns). */
function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (err) {
    return err;
  }
  return undefined;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `action`, returning how long it took in milliseconds alongside its result. */
async function timed<T>(action: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await action();
  return { result, ms: performance.now() - started };
}

const items = (root: XmlElement): XmlElement[] =>
  childElements(root)
    .filter((child) => child.name === 'mainResults')
    .flatMap(childElements)
    .filter((child) => child.name === 'searchResultItem');

// ---------------------------------------------------------------------------------------------

describe('readResponse', () => {
  it('returns the searchResultSet root of a 2xx answer', () => {
    const root = treeOf(readResponse(200, SEARCH_RESULT, ROOT));
    expect(root.name).toBe('searchResultSet');
    expect(root.attributes.map((a) => [a.name, a.value])).toEqual(ROOT_ATTRIBUTES);
    expect(items(root)).toHaveLength(2);
  });

  it.each([
    { status: 400, body: HELP, message: INVALID_SORT },
    { status: 500, body: HELP, message: INVALID_SORT },
    {
      status: 400,
      body: '<help><exception-message>  </exception-message></help>',
      message: 'The remote server returned an error: (400) Bad Request.',
    },
    { status: 400, body: '', message: 'The remote server returned an error: (400) Bad Request.' },
    { status: 403, body: '<h1>Developer Inactive</h1>', message: 'The remote server returned an error: (403) Forbidden.' },
    { status: 404, body: 'not found', message: 'The remote server returned an error: (404) Not Found.' },
    { status: 500, body: '<html><body>oops</body></html>', message: 'The remote server returned an error: (500) Internal Server Error.' },
    { status: 502, body: '', message: 'The remote server returned an error: (502) Bad Gateway.' },
    { status: 503, body: '', message: 'The remote server returned an error: (503) Server Unavailable.' },
    { status: 504, body: SEARCH_RESULT, message: 'The remote server returned an error: (504) Gateway Timeout.' },
  ])('$status with $body.length body chars: "$message"', ({ status, body, message }) => {
    const err = thrown(() => readResponse(status, body, ROOT));
    expect(err).toBeInstanceOf(UpstreamError);
    const statusError = err as UpstreamError;
    expect(statusError.message).toBe(message);
    expect(statusError.status).toBe(status);
    expect(statusError.reason).toBe('upstream_status');
  });

  it('reads a <help> document in a 200 answer as the upstream error, its message trimmed', () => {
    expect(thrown(() => readResponse(200, HELP, ROOT))).toMatchObject({ message: INVALID_SORT, reason: 'upstream_error' });
    const padded = '<help>\n  <exception-message>\n    No such product.\n  </exception-message>\n</help>';
    expect(() => readResponse(200, padded, ROOT)).toThrow('No such product.');
  });

  it.each([
    { name: 'not XML', body: 'hello', message: 'The upstream answer is not well-formed XML.' },
    { name: 'empty', body: '', message: 'The upstream answer is not well-formed XML.' },
    { name: 'truncated', body: '<searchResultSet><mainResults>', message: 'The upstream answer is not well-formed XML.' },
    {
      name: 'DOCTYPE',
      body: '<!DOCTYPE x [<!ENTITY e "boom">]><searchResultSet>&e;</searchResultSet>',
      message: 'The upstream answer is not well-formed XML.',
    },
    { name: 'wrong root', body: '<products/>', message: "The upstream answer has root element 'products', expected 'searchResultSet'." },
  ])('refuses a 200 answer that is $name as upstream_invalid', ({ body, message }) => {
    expect(thrown(() => readResponse(200, body, ROOT))).toMatchObject({ message, reason: 'upstream_invalid' });
  });
});

describe('upstream client', () => {
  describe('success', () => {
    it('returns the parsed root of a searchResultSet answer', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(upstream.origin);

      const root = treeOf(await client.fetch(SEARCH, fetchOptions()));

      expect(root.name).toBe('searchResultSet');
      expect(root.attributes.map((a) => [a.name, a.value])).toEqual(ROOT_ATTRIBUTES);
      expect(items(root)).toHaveLength(2);
      const products = items(root).flatMap(childElements).flatMap(childElements);
      expect(products.map((p) => attribute(p, 'productNumber'))).toEqual(['1001', '1002', '1003']);
      // Decoded once: the upstream's double escaping survives as one level of `&amp;`.
      expect(attribute(products[0]!, 'storeName')).toBe('Spay Neuter &amp; Rescue');
      expect(attribute(products[0]!, 'item')).toBe('Mug       ');
      const searchString = childElements(root).find((child) => child.name === 'searchQuery');
      expect(searchString && innerText(searchString)).toBe('dog');
    });

    it('sends one GET with the exact path and query string, parameters in order', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(upstream.origin);

      await client.fetch(SEARCH, fetchOptions());

      const seen = upstream.requests.map(({ method, url, headers }) => ({
        method,
        url,
        accept: headers.accept,
        authorization: headers.authorization,
      }));
      expect(seen).toEqual([
        { method: 'GET', url: '/product.search.cp?v=3&appKey=k&query=dog', accept: 'text/xml, application/xml', authorization: undefined },
      ]);
    });

    it('sends the credentials of the base URL as HTTP Basic', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(`http://gateway-user:p%40ss%3Aword@127.0.0.1:${upstream.port}/api`);

      await client.fetch(SEARCH, fetchOptions());

      expect(upstream.requests[0]?.url).toBe('/api/product.search.cp?v=3&appKey=k&query=dog');
      expect(upstream.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from('gateway-user:p@ss:word').toString('base64')}`);
    });

    it('URL-encodes parameter values', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(upstream.origin);

      await client.fetch(
        {
          path: '/product.searchForProductsOfStore.cp',
          params: [
            ['v', '3'],
            ['appKey', 'a+b/c='],
            ['storeId', 'cats & dogs'],
            ['query', 'café?#%'],
          ],
        },
        fetchOptions(),
      );

      const url = upstream.requests[0]?.url ?? '';
      expect(url).toBe('/product.searchForProductsOfStore.cp?v=3&appKey=a%2Bb%2Fc%3D&storeId=cats+%26+dogs&query=caf%C3%A9%3F%23%25');
      // What a form-decoding upstream reads back.
      expect([...new URL(url, upstream.origin).searchParams]).toEqual([
        ['v', '3'],
        ['appKey', 'a+b/c='],
        ['storeId', 'cats & dogs'],
        ['query', 'café?#%'],
      ]);
    });

    it('honours a path prefix in the base URL, with or without a trailing slash', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));

      await clientFor(`${upstream.origin}/api`).client.fetch(SEARCH, fetchOptions());
      await clientFor(`${upstream.origin}/api/v3/`).client.fetch(search('cat'), fetchOptions());

      expect(upstream.requests.map((r) => r.url)).toEqual([
        '/api/product.search.cp?v=3&appKey=k&query=dog',
        '/api/v3/product.search.cp?v=3&appKey=k&query=cat',
      ]);
    });

    it('reuses one kept-alive TCP connection for sequential fetches', async () => {
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(upstream.origin);

      for (const query of ['a', 'b', 'c', 'd']) {
        await client.fetch(search(query), fetchOptions());
        await pause(10);
      }

      expect(upstream.requests).toHaveLength(4);
      expect(upstream.connections()).toBe(1);
    });

    it('keeps back-to-back fetches on at most two connections', async () => {
      // undici frees a pool connection a tick after the body ends, so a fetch started in the same
      // tick as the previous one finished opens a second connection; after that both are reused.
      const upstream = await startUpstream(answer(200, SEARCH_RESULT));
      const { client } = clientFor(upstream.origin);

      for (let page = 0; page < 10; page++) await client.fetch(search(`page ${page}`), fetchOptions());

      expect(upstream.requests).toHaveLength(10);
      expect(upstream.connections()).toBeLessThanOrEqual(2);
    });
  });

  describe('upstream errors (docs/upstream.md §7, §11.8)', () => {
    it.each([
      { name: '400 <help>', status: 400, headers: XML_TYPE, body: HELP, message: INVALID_SORT, reason: 'upstream_status' },
      { name: '200 <help>', status: 200, headers: XML_TYPE, body: HELP, message: INVALID_SORT, reason: 'upstream_error' },
      {
        name: '403 Mashery',
        status: 403,
        headers: { ...XML_TYPE, 'X-Mashery-Error-Code': 'ERR_403_DEVELOPER_INACTIVE' },
        body: '<h1>Developer Inactive</h1>',
        message: 'The remote server returned an error: (403) Forbidden.',
        reason: 'upstream_status',
      },
      {
        name: '500 HTML',
        status: 500,
        headers: { 'content-type': 'text/html' },
        body: '<!DOCTYPE html><html><head><title>Error</title></head><body><h1>Internal error</h1></body></html>',
        message: 'The remote server returned an error: (500) Internal Server Error.',
        reason: 'upstream_status',
      },
      {
        name: '503 empty',
        status: 503,
        headers: {},
        body: '',
        message: 'The remote server returned an error: (503) Server Unavailable.',
        reason: 'upstream_status',
      },
    ])('$name → "$message"', async ({ status, headers, body, message, reason }) => {
      const upstream = await startUpstream(answer(status, body, headers));
      const { client } = clientFor(upstream.origin);

      const err = await failure(client.fetch(SEARCH, fetchOptions()));

      expect(err.message).toBe(message);
      expect(err.reason).toBe(reason);
      // An answer, however unwelcome, is not retried.
      expect(upstream.requests).toHaveLength(1);
    });
  });

  describe('timeouts', () => {
    // undici runs headers/body timers on a coarse (~1 s) clock, so a 150 ms timeout fires within
    // about a second; well under the 5 s the other tests configure.
    const PROMPTLY_MS = 2500;

    it('times out an upstream that never sends headers, without retrying', async () => {
      const upstream = await startUpstream(() => {});
      const { client } = clientFor(upstream.origin, { headersTimeoutMs: 150, retries: 1 });

      const { result: err, ms } = await timed(() => failure(client.fetch(SEARCH, fetchOptions())));

      expect(err.message).toBe(TIMED_OUT);
      expect(err.reason).toBe('upstream_timeout');
      expect(ms).toBeLessThan(PROMPTLY_MS);
      expect(upstream.requests).toHaveLength(1);
    });

    it('times out an upstream that stalls in the middle of the body', async () => {
      const upstream = await startUpstream((_req, res) => {
        res.writeHead(200, XML_TYPE);
        res.write('<searchResultSet totalDesigns="2">\n  <mainResults>\n');
      });
      const { client } = clientFor(upstream.origin, { bodyTimeoutMs: 150, retries: 1 });

      const { result: err, ms } = await timed(() => failure(client.fetch(SEARCH, fetchOptions())));

      expect(err.message).toBe(TIMED_OUT);
      expect(err.reason).toBe('upstream_timeout');
      expect(ms).toBeLessThan(PROMPTLY_MS);
      expect(upstream.requests).toHaveLength(1);
    });
  });

  it.each([
    {
      name: 'a chunked body whose chunk size is not a number',
      raw: 'HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
      message: 'The server committed a protocol violation. Section=ResponseBody Detail=Response chunk format is invalid',
    },
    {
      name: 'a status line that is not HTTP',
      raw: 'hello world\r\n\r\n',
      message: 'The server committed a protocol violation. Section=ResponseStatusLine',
    },
    {
      name: 'a header line without a colon',
      raw: 'HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nBad Header\r\n\r\n',
      message: 'The server committed a protocol violation. Section=ResponseHeader',
    },
  ])('words $name as .NET did, not as a refused connection', async ({ raw, message }) => {
    const server = createNetServer((socket) => socket.once('data', () => socket.end(raw)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { client } = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const err = await failure(client.fetch(SEARCH, fetchOptions()));
      expect(err.message).toBe(message);
      expect(err.reason).toBe('upstream_invalid');
    } finally {
      server.close();
    }
  });

  it('reports a refused connection as "Unable to connect to the remote server"', async () => {
    const { client } = clientFor(`http://127.0.0.1:${await deadPort()}`);

    const err = await failure(client.fetch(SEARCH, fetchOptions()));

    expect(err.message).toBe(UNABLE_TO_CONNECT);
    expect(err.reason).toBe('upstream_unreachable');
  });

  describe('size cap', () => {
    const body = bigResult(10 * 1024);

    it.each([
      { framing: 'Content-Length', headers: { ...XML_TYPE, 'content-length': String(Buffer.byteLength(body)) } },
      { framing: 'chunked', headers: XML_TYPE },
    ])('refuses a 10 KB answer over a 2 KB cap ($framing)', async ({ headers }) => {
      expect(() => readResponse(200, body, ROOT)).not.toThrow();
      const upstream = await startUpstream(answer(200, body, headers));
      const { client } = clientFor(upstream.origin, { maxResponseBytes: 2048 });

      const err = await failure(client.fetch(SEARCH, fetchOptions()));

      expect(err.reason).toBe('upstream_invalid');
      expect(err.message).toBe('The upstream answer exceeded the maximum response size.');
      expect(upstream.requests).toHaveLength(1);
    });

    it('accepts an answer under the cap', async () => {
      const upstream = await startUpstream(answer(200, body));
      const { client } = clientFor(upstream.origin, { maxResponseBytes: 16 * 1024 });

      expect(treeOf(await client.fetch(SEARCH, fetchOptions()))).toMatchObject({ name: 'searchResultSet' });
    });
  });

  describe('answers that are not a searchResultSet', () => {
    it.each([
      { name: 'not XML', body: 'hello' },
      { name: 'truncated XML', body: '<searchResultSet><mainResults>' },
      { name: 'the wrong root', body: '<products/>' },
      { name: 'a DOCTYPE with an entity', body: '<!DOCTYPE x [<!ENTITY e "boom">]><searchResultSet>&e;</searchResultSet>' },
    ])('refuses $name as upstream_invalid', async ({ body }) => {
      const upstream = await startUpstream(answer(200, body));
      const { client } = clientFor(upstream.origin);

      const err = await failure(client.fetch(SEARCH, fetchOptions()));

      expect(err.reason).toBe('upstream_invalid');
      expect(err.message).not.toContain('boom');
    });
  });

  describe('retry of a dropped connection', () => {
    /** Destroys the socket unanswered for the first `drops` requests, answers properly afterwards. */
    const dropFirst =
      (drops: number): StubHandler =>
      (req, res, index) => {
        if (index < drops) req.socket.destroy();
        else answer(200, SEARCH_RESULT)(req, res, index);
      };

    it('retries once and succeeds with retries: 1', async () => {
      const upstream = await startUpstream(dropFirst(1));
      const { client, outcomes } = clientFor(upstream.origin, { retries: 1 });

      const root = treeOf(await client.fetch(SEARCH, fetchOptions()));

      expect(root.name).toBe('searchResultSet');
      expect(upstream.requests.map((r) => r.url)).toEqual([
        '/product.search.cp?v=3&appKey=k&query=dog',
        '/product.search.cp?v=3&appKey=k&query=dog',
      ]);
      expect(outcomes.map((o) => o.outcome)).toEqual(['ok']);
    });

    it('fails with upstream_unreachable with retries: 0', async () => {
      const upstream = await startUpstream(dropFirst(1));
      const { client } = clientFor(upstream.origin, { retries: 0 });

      const err = await failure(client.fetch(SEARCH, fetchOptions()));

      expect(err.reason).toBe('upstream_unreachable');
      expect(err.message).toBe(CONNECTION_CLOSED);
      expect(upstream.requests).toHaveLength(1);
    });

    it('gives up after 1 + retries attempts', async () => {
      const upstream = await startUpstream(dropFirst(Infinity));
      const { client } = clientFor(upstream.origin, { retries: 2 });

      const err = await failure(client.fetch(SEARCH, fetchOptions()));

      expect(err.reason).toBe('upstream_unreachable');
      expect(upstream.requests).toHaveLength(3);
    });
  });

  describe('observe', () => {
    it('reports one outcome per fetch with the path, outcome and status', async () => {
      const byQuery: Record<string, StubHandler> = {
        ok: answer(200, SEARCH_RESULT),
        gone: answer(503, ''),
        help: answer(200, HELP),
        junk: answer(200, 'hello'),
        slow: () => {},
      };
      const upstream = await startUpstream((req, res, index) => {
        const query = new URL(req.url ?? '/', 'http://upstream').searchParams.get('query') ?? '';
        byQuery[query]?.(req, res, index);
      });
      const { client, outcomes } = clientFor(upstream.origin, { headersTimeoutMs: 150 });

      await client.fetch(search('ok'), fetchOptions());
      for (const query of ['gone', 'help', 'junk', 'slow']) await failure(client.fetch(search(query), fetchOptions()));
      await client.fetch(
        {
          path: '/product.searchForProduct.cp',
          params: [
            ['v', '3'],
            ['productId', '1001'],
            ['query', 'ok'],
          ],
        },
        fetchOptions(),
      );

      expect(outcomes.map(({ path, outcome, status }) => ({ path, outcome, status }))).toEqual([
        { path: '/product.search.cp', outcome: 'ok', status: 200 },
        { path: '/product.search.cp', outcome: 'upstream_status', status: 503 },
        { path: '/product.search.cp', outcome: 'upstream_error', status: 200 },
        { path: '/product.search.cp', outcome: 'upstream_invalid', status: 200 },
        { path: '/product.search.cp', outcome: 'upstream_timeout', status: null },
        { path: '/product.searchForProduct.cp', outcome: 'ok', status: 200 },
      ]);
      for (const outcome of outcomes) expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
      expect(outcomes[4]!.durationMs).toBeGreaterThanOrEqual(100);
    });

    it('reports a refused connection with no status', async () => {
      const { client, outcomes } = clientFor(`http://127.0.0.1:${await deadPort()}`);

      await failure(client.fetch(SEARCH, fetchOptions()));

      expect(outcomes).toEqual([
        {
          path: '/product.search.cp',
          outcome: 'upstream_unreachable',
          status: null,
          durationMs: expect.any(Number),
          code: 'ECONNREFUSED',
          requestId: 'test-call',
        },
      ]);
    });
  });
});

describe('secrets in upstream error messages', () => {
  const help = (message: string): string => `<help>\n  <exception-message>${message}</exception-message>\n</help>`;

  it.each([400, 200])('redacts the appKey sent when the upstream echoes it in <help> (status %i)', (status) => {
    expect(() => readResponse(status, help('Invalid appKey s3cr3t-key for v=3.'), ROOT, ['s3cr3t-key'])).toThrow(
      /^Invalid appKey \[redacted\] for v=3\.$/,
    );
  });

  it('redacts the URL-encoded spellings too', () => {
    expect(() =>
      readResponse(400, help('Bad request /p?appKey=SECRET%2B1%20x&amp;v=3 and appKey=SECRET%2B1+x'), ROOT, ['SECRET+1 x']),
    ).toThrow(/^Bad request \/p\?appKey=\[redacted\]&v=3 and appKey=\[redacted\]$/);
  });

  it('redacts a key that ends a sentence or is followed by a hyphen', () => {
    expect(() => readResponse(403, help('Unknown appKey SECRET42.'), ROOT, ['SECRET42'])).toThrow(/^Unknown appKey \[redacted\]\.$/);
    expect(() => readResponse(403, help('key abc123- rejected'), ROOT, ['abc123'])).toThrow(/^key \[redacted\]- rejected$/);
  });

  it('redacts a short key only as a whole token, leaving the words around it alone', () => {
    expect(() => readResponse(400, help('bad key a for v=3'), ROOT, ['a'])).toThrow(/^bad key \[redacted\] for v=3$/);
  });
});

describe('redirects and cancellation', () => {
  it('follows a redirect, as .NET HttpWebRequest does', async () => {
    const target = await startUpstream(answer(200, SEARCH_RESULT, XML_TYPE));
    const moved = await startUpstream((req, res) => {
      res.writeHead(301, { location: `${target.origin}${req.url ?? ''}` });
      res.end();
    });
    const { client } = clientFor(moved.origin);
    const root = treeOf(await client.fetch(SEARCH, fetchOptions()));
    expect(root.local).toBe('searchResultSet');
    expect(target.requests).toHaveLength(1);
  });

  it('too many redirects fail as .NET words it', async () => {
    const loop = await startUpstream((req, res) => {
      res.writeHead(302, { location: `/again${req.url ?? ''}` });
      res.end();
    });
    const { client } = clientFor(loop.origin);
    const err = await failure(client.fetch(SEARCH, fetchOptions()));
    expect(err.message).toBe('Too many automatic redirections were attempted.');
  });

  it('throws the CallError the signal was aborted with, and stops waiting', async () => {
    const silent = await startUpstream(() => {});
    const { client, outcomes } = clientFor(silent.origin);
    const controller = new AbortController();
    const reason = new UpstreamError({ code: 'timeout' });
    setTimeout(() => controller.abort(reason), 50);
    const { result, ms } = await timed(() => failure(client.fetch(SEARCH, fetchOptions({ signal: controller.signal }))));
    expect(result).toBe(reason);
    expect(ms).toBeLessThan(2000);
    expect(outcomes).toMatchObject([{ outcome: 'upstream_timeout', status: null }]);
  });
});
