import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { buildApp, type App } from '../src/server/app.js';
import { SEARCH_PAGES, pageDocument } from './support/pages.js';
import { dotnetUrlEncode } from './support/spellings.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';

/**
 * Every way the upstream can fail, through the proxy's front door: each call gets the contract's
 * answer (docs/upstream.md §7: the .NET WebException text, as a 500 text over HTTP GET) within its
 * deadline, and the process keeps serving. The stub upstream fails as the Search query says.
 */

const apps: App[] = [];
let upstream: StubUpstream;

beforeAll(async () => {
  upstream = await startStubUpstream((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const mode = url.searchParams.get('query') ?? 'ok';
    const page = pageDocument(200, new Map(url.searchParams), SEARCH_PAGES);
    switch (mode) {
      case 'reset-mid-body':
        res.writeHead(200, { 'content-type': 'text/xml', 'content-length': String(page.length) });
        res.write(page.slice(0, 100));
        setTimeout(() => res.destroy(), 20);
        return;
      case 'slow-headers':
        return;
      case 'slow-body':
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.write(page.slice(0, 100));
        return;
      case '5xx':
        return void res.writeHead(500).end();
      case 'html-error':
        return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      case 'help-echo':
        // An upstream behind .NET quoting the appKey it was sent as HttpUtility.UrlEncode writes it.
        return void res
          .writeHead(403, { 'content-type': 'text/xml' })
          .end(
            `<help><exception-message>Unknown appKey ${dotnetUrlEncode(url.searchParams.get('appKey') ?? '')}.</exception-message></help>`,
          );
      case 'help-url': {
        // An upstream quoting the URL it was called at, escaped whole, as a `returnUrl` would hold it.
        const message = `Invalid product. returnUrl=${encodeURIComponent(`http://upstream${req.url}`)}`;
        return void res
          .writeHead(404, { 'content-type': 'text/xml' })
          .end(`<help><exception-message>${message}</exception-message></help>`);
      }
      case 'help-4xx':
        return void res
          .writeHead(400, { 'content-type': 'text/xml' })
          .end('<help>\n  <exception-message>Invalid sort value.</exception-message>\n</help>');
      case 'gateway-403':
        return void res
          .writeHead(403, { 'content-type': 'text/xml', 'x-mashery-error-code': 'ERR_403_DEVELOPER_INACTIVE' })
          .end('<h1>Developer Inactive</h1>');
      case 'html-200':
        return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Maintenance<br></body></html>');
      case 'truncated':
        return void res.writeHead(200, { 'content-type': 'text/xml' }).end(page.slice(0, page.length / 2));
      case 'wrong-root':
        return void res.writeHead(200, { 'content-type': 'text/xml' }).end('<products><product id="1" /></products>');
      case 'oversized':
        return void res.writeHead(200, { 'content-type': 'text/xml' }).end(`<searchResultSet>${' '.repeat(10_000)}</searchResultSet>`);
      case 'redirect-loop':
        return void res.writeHead(302, { location: req.url }).end();
      case 'fan-out':
        // The second of the two pages the window below needs (34 items each, pages 2 and 3).
        if (url.searchParams.get('pageNumber') === '3') return void res.writeHead(500).end();
        return void res.writeHead(200, { 'content-type': 'text/xml' }).end(page);
      default:
        return void res.writeHead(200, { 'content-type': 'text/xml' }).end(page);
    }
  });
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.fastify.close()));
  await upstream.close();
});

async function proxyTo(baseUrl: string, overrides: Json = {}): Promise<string> {
  const config = loadConfig(
    {},
    {
      log: { level: 'silent' },
      upstream: {
        baseUrl,
        appKey: 'k',
        headersTimeoutMs: 300,
        bodyTimeoutMs: 300,
        connectTimeoutMs: 300,
        maxResponseBytes: 8192,
        callTimeoutMs: 3000,
      },
    },
    overrides,
  );
  const app = await buildApp(config, { logger: pino({ level: 'silent' }) });
  apps.push(app);
  return app.fastify.listen({ host: '127.0.0.1', port: 0 });
}

const TIMED_OUT = 'The operation has timed out';

describe('upstream failures, through the front door', () => {
  let proxy: string;
  beforeAll(async () => {
    proxy = await proxyTo(upstream.origin);
  });

  it.each([
    ['reset-mid-body', 'The underlying connection was closed: The connection was closed unexpectedly.'],
    ['slow-headers', TIMED_OUT],
    ['slow-body', TIMED_OUT],
    ['5xx', 'The remote server returned an error: (500) Internal Server Error.'],
    ['html-error', 'The remote server returned an error: (502) Bad Gateway.'],
    ['help-4xx', 'Invalid sort value.'],
    ['gateway-403', 'The remote server returned an error: (403) Forbidden.'],
    ['html-200', 'The upstream answer is not well-formed XML.'],
    ['truncated', 'The upstream answer is not well-formed XML.'],
    ['wrong-root', 'The upstream answer has root element &#39;products&#39;, expected &#39;searchResultSet&#39;.'],
    ['oversized', 'The upstream answer exceeded the maximum response size.'],
    ['redirect-loop', 'Too many automatic redirections were attempted.'],
  ])('%s: 500 with %j, in time', async (mode, text) => {
    const started = performance.now();
    const response = await fetch(`${proxy}/index.asmx/Search?query=${mode}`);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe(`${text}\r\n`);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('an upstream message quoting the appKey sent, in .NET’s lower-case escapes, reaches the caller with the key redacted', async () => {
    const response = await fetch(`${proxy}/index.asmx/Search?query=help-echo&apiKey=${encodeURIComponent('Se+cr et/K=y')}`);
    expect(await response.text()).toBe('Unknown appKey [redacted].\r\n');
  });

  it('one failing page of a fan-out fails the call, and only that call', async () => {
    const response = await fetch(`${proxy}/index.asmx/AdvancedSearch?query=fan-out&startResults=41&maxResults=60`);
    expect(await response.text()).toBe('The remote server returned an error: (500) Internal Server Error.\r\n');
    expect((await fetch(`${proxy}/index.asmx/Search?query=ok`)).status).toBe(200);
  });

  it('an upstream message quoting its request URL escaped reaches the caller with the operator’s fixed appKey redacted', async () => {
    const fixedKey = await proxyTo(upstream.origin, { upstream: { apiKeyMode: 'fixed', appKey: 'OPERATORsecret42' } });
    const response = await fetch(`${fixedKey}/index.asmx/Search?query=help-url`);
    expect(await response.text()).toBe(
      'Invalid product. returnUrl=http%3A%2F%2Fupstream%2Fproduct.search.cp%3Fv%3D3%26appKey%3D[redacted]%26query%3Dhelp-url\r\n',
    );
  });

  it('a refused connection', async () => {
    const dead = await startStubUpstream(() => {});
    await dead.close();
    const refused = await proxyTo(dead.origin);
    const response = await fetch(`${refused}/index.asmx/Search?query=ok`);
    expect(await response.text()).toBe('Unable to connect to the remote server\r\n');
  });
});
