import { mkdir, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { ElementHandle, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../src/operations.js';
import { parseXml } from '../src/xml/parse.js';
import { skipBrowserSuite, startBrowser, type HeadlessBrowser } from './support/browser.js';
import { demoCatalog, hitStacksSince } from './support/clients.js';
import { startProxy, type TestProxy } from './support/proxy.js';
import { rawRequest } from './support/raw-http.js';
import { largestStore, readResultSet } from './support/results.js';
import { startStubUpstream, type StubUpstream } from './support/stub-upstream.js';

/**
 * The help pages in a real browser (docs/wire.md §7.4), as a person uses them: from the operation
 * list to an operation, its test form filled in, Invoke, and the answer in the new window; the page
 * laid out without sideways scrolling on a narrow window and at desktop width.
 *
 * The browser reaches the product through a small reverse proxy in front of it, which records every
 * exchange, so the test sees the bytes of the answer the new window got. It either passes the
 * browser's own Host on, or stands for a TLS-terminating proxy: another Host and
 * `X-Forwarded-Proto: https` (trusted), so that any absolute link would lead the browser away.
 *
 * SCREENSHOT_DIR=dir keeps the screenshots for a look.
 */

/**
 * The little of the DOM that the callbacks handed to page.evaluate use there: the project compiles
 * without the DOM library, which would clash with Node's fetch types.
 */
interface BrowserElement {
  readonly scrollWidth: number;
  readonly innerText: string;
  getBoundingClientRect(): { readonly left: number; readonly right: number; readonly width: number };
}
declare const document: {
  readonly documentElement: BrowserElement;
  readonly body: BrowserElement;
  readonly contentType: string;
  readonly readyState: string;
  querySelector(selector: string): BrowserElement | null;
};
declare const window: { readonly innerWidth: number };
declare const location: { readonly pathname: string };
declare function getComputedStyle(element: BrowserElement): { readonly fontFamily: string; readonly visibility: string };

const NARROW = 480;
const DESKTOP = 1280;
const FONT = 'Verdana, Tahoma, "DejaVu Sans", Arial, sans-serif';
const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly requestBody: string;
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

interface Front {
  readonly stub: StubUpstream;
  readonly exchanges: Exchange[];
}

/** Hop-by-hop headers, which a proxy does not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

const passedOn = (headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) =>
      value === undefined || HOP_BY_HOP.has(name) ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]],
    ),
  );

/** A reverse proxy in front of `target`, setting `headers` on every request it passes on. */
function startFront(target: string, headers: Readonly<Record<string, string>>): Promise<Front> {
  const exchanges: Exchange[] = [];
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const answer = await rawRequest(target, {
      method,
      path,
      headers: { ...passedOn(req.headers), ...headers },
      ...(body.length > 0 ? { body } : {}),
    });
    exchanges.push({
      method,
      path,
      requestBody: body.toString('utf8'),
      status: answer.status,
      contentType: answer.headers['content-type'],
      body: answer.bytes,
    });
    res.writeHead(answer.status, passedOn(answer.headers)).end(answer.bytes);
  };
  return startStubUpstream((req, res) => {
    forward(req, res).catch((error: unknown) => res.destroy(error as Error));
  }).then((stub) => ({ stub, exchanges }));
}

/** The link whose text is exactly `text` (the operation list has `Search` and `AdvancedSearch`). */
async function linkNamed(page: Page, text: string): Promise<ElementHandle> {
  const links = await page.$$('a');
  for (const link of links) {
    if ((await link.evaluate((a) => a.textContent)) === text) return link;
  }
  throw new Error(`no link ${text} on ${page.url()}`);
}

/** Every `href` and form `action` of the page, as written in the markup. */
const targets = (page: Page): Promise<string[]> =>
  page.$$eval('[href], form[action]', (nodes) => nodes.map((node) => node.getAttribute('href') ?? node.getAttribute('action') ?? ''));

interface Layout {
  readonly scrollWidth: number;
  readonly bodyScrollWidth: number;
  readonly innerWidth: number;
  readonly bodyFont: string;
  readonly invoke: { readonly left: number; readonly right: number; readonly width: number; readonly visible: boolean } | null;
}

const layoutOf = (page: Page): Promise<Layout> =>
  page.evaluate(() => {
    const button = document.querySelector('input[type="submit"]');
    const box = button?.getBoundingClientRect();
    return {
      scrollWidth: document.documentElement.scrollWidth,
      bodyScrollWidth: document.body.scrollWidth,
      innerWidth: window.innerWidth,
      bodyFont: getComputedStyle(document.body).fontFamily,
      invoke:
        button && box
          ? { left: box.left, right: box.right, width: box.width, visible: getComputedStyle(button).visibility === 'visible' }
          : null,
    };
  });

/** The type of the document a window shows, and its text as shown (Chromium shows XML as a tree of tags). */
const shownDocument = (page: Page): Promise<{ contentType: string; text: string }> =>
  // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, which is what a person reads.
  page.evaluate(() => ({ contentType: document.contentType, text: document.body.innerText }));

/** The pixel width of a PNG (its IHDR chunk). */
const pngWidth = (png: Uint8Array): number => Buffer.from(png).readUInt32BE(16);

interface Site {
  readonly proxy: TestProxy;
  readonly front: Front;
}

/**
 * The product (`server.trustProxy` as given) behind a front setting `headers`, for the enclosing
 * describe block. The browser only ever talks to the front, which closes its kept-alive connections
 * when it stops, so the product stops at once.
 */
function useSite(trustProxy: boolean, headers: Readonly<Record<string, string>>): () => Site {
  let site: Site | undefined;
  beforeAll(async () => {
    const proxy = await startProxy({ server: { trustProxy } });
    site = { proxy, front: await startFront(proxy.url, headers) };
  });
  afterAll(async () => {
    await site?.front.stub.close();
    await site?.proxy.stop();
  });
  return () => {
    if (!site) throw new Error('the site is not started');
    return site;
  };
}

async function openPage({ browser }: HeadlessBrowser, site: Site, path: string, width: number): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 900 });
  const response = await page.goto(`${site.front.stub.origin}${path}`);
  expect(response?.status()).toBe(200);
  return page;
}

describe.skipIf(skipBrowserSuite)('help pages in a browser (§7.4)', () => {
  let browser: HeadlessBrowser;

  beforeAll(async () => {
    browser = await startBrowser();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
  });

  describe.each<{ setup: string; trustProxy: boolean; headers: Readonly<Record<string, string>>; sampleHost: string }>([
    { setup: 'through a proxy that passes the Host on', trustProxy: false, headers: {}, sampleHost: '127.0.0.1' },
    {
      setup: 'behind a TLS-terminating proxy (another Host, X-Forwarded-Proto: https)',
      trustProxy: true,
      headers: { host: 'catalog.example.com', 'x-forwarded-proto': 'https' },
      sampleHost: 'catalog.example.com',
    },
  ])('$setup', ({ trustProxy, headers, sampleHost }) => {
    const site = useSite(trustProxy, headers);
    const open = (path: string): Promise<Page> => openPage(browser, site(), path, DESKTOP);

    /**
     * Opens the operation list, follows the link to `operation`, types `values` into its form and
     * clicks Invoke: the window that opens, once its answer is shown, and the exchange behind it.
     */
    async function invoke(operation: string, values: Readonly<Record<string, string>>): Promise<{ answer: Page; exchange: Exchange }> {
      const page = await open('/index.asmx');
      await Promise.all([page.waitForNavigation(), (await linkNamed(page, operation)).click()]);
      expect(page.url()).toBe(`${site().front.stub.origin}/index.asmx?op=${operation}`);
      expect(await page.$eval('h2', (h2) => h2.textContent)).toBe(operation);
      // The sample requests still spell out the public address as the product sees it.
      expect(await page.$eval('pre', (pre) => pre.textContent)).toContain(`Host: ${sampleHost}\n`);
      for (const [name, value] of Object.entries(values)) await page.type(`input[name="${name}"]`, value);
      const opened = new Promise<Page | null>((resolve) => page.once('popup', resolve));
      await page.click('input[type="submit"][value="Invoke"]');
      const answer = await opened;
      if (answer === null) throw new Error('Invoke opened no window');
      await answer.waitForFunction(
        (path) => location.pathname === path && document.readyState === 'complete',
        {},
        `/index.asmx/${operation}`,
      );
      const exchange = site().front.exchanges.find(
        (candidate) => candidate.method === 'POST' && candidate.path === `/index.asmx/${operation}`,
      );
      if (!exchange) throw new Error(`no POST /index.asmx/${operation} passed the front`);
      await page.close();
      return { answer, exchange };
    }

    /** The same form posted straight to the product, as a script would: the bytes the window must have shown. */
    async function directPost(operation: string, form: string): Promise<Buffer> {
      const res = await rawRequest(site().proxy.url, {
        method: 'POST',
        path: `/index.asmx/${operation}`,
        headers: { 'Content-Type': FORM_CONTENT_TYPE },
        body: form,
      });
      expect(res.status).toBe(200);
      return res.bytes;
    }

    it('links only relatively, on the list, an operation page and Method Not Found', async () => {
      for (const path of ['/index.asmx', '/index.asmx?op=StoreLookupPaged', '/index.asmx?op=Nope']) {
        const page = await open(path);
        const found = await targets(page);
        expect(found.length).toBeGreaterThan(0);
        for (const target of found) expect(target, `${target} on ${path}`).not.toMatch(/^(https?:|\/)/i);
        await page.close();
      }
    });

    it('the Service Description link opens the WSDL', async () => {
      const page = await open('/index.asmx');
      const response = await Promise.all([page.waitForNavigation(), (await linkNamed(page, 'Service Description')).click()]).then(
        ([nav]) => nav,
      );
      expect(page.url()).toBe(`${site().front.stub.origin}/index.asmx?WSDL`);
      expect(response?.headers()['content-type']).toBe('text/xml; charset=utf-8');
      await page.close();
    });

    it('Search: the form posts the fields in order, and the new window shows the HTTP POST answer', async () => {
      const mark = site().proxy.log.length;
      const { answer, exchange } = await invoke('Search', { query: 'dog' });
      // Its hit names the browser and its major version (Chrome's User-Agent gives no more than that).
      const [major] = (await browser.browser.version()).replace(/^[^/]*\//, '').split('.');
      expect(hitStacksSince(site().proxy.log, mark)).toEqual([
        { name: 'browser', version: expect.stringMatching(new RegExp(`^${major}\\.`)) },
      ]);
      expect(exchange.requestBody).toBe('query=dog&apiKey=&version=');
      expect(exchange.status).toBe(200);
      expect(exchange.contentType).toBe('text/xml; charset=utf-8');
      expect(exchange.body.equals(await directPost('Search', exchange.requestBody))).toBe(true);
      const result = readResultSet(parseXml(exchange.body.toString('utf8')));
      expect(result.searchString).toBe('dog');
      expect(result.items.length).toBeGreaterThan(0);
      // What the window shows: the XML document itself.
      expect(await shownDocument(answer)).toEqual({
        contentType: 'text/xml',
        text: expect.stringContaining('<searchString>dog</searchString>'),
      });
      await answer.close();
    });

    it('StoreLookupPaged: the int fields post as typed, and the window shows that page of the store', async () => {
      const store = largestStore(demoCatalog(site().proxy));
      const { answer, exchange } = await invoke('StoreLookupPaged', { storeId: store.id, pageIndex: '1', pageSize: '5' });
      expect(exchange.requestBody).toBe(`storeId=${encodeURIComponent(store.id)}&apiKey=&version=&productTypes=&pageIndex=1&pageSize=5`);
      expect(exchange.body.equals(await directPost('StoreLookupPaged', exchange.requestBody))).toBe(true);
      const result = readResultSet(parseXml(exchange.body.toString('utf8')));
      expect(result.attributes.startResult).toBe('5');
      expect(result.items).toHaveLength(5);
      const storeMedia = new Set(store.designs.map((design) => design.mediaId));
      for (const item of result.items) expect(storeMedia.has(item.mediaId)).toBe(true);
      expect(await shownDocument(answer)).toEqual({ contentType: 'text/xml', text: expect.stringContaining(`<searchResultSet `) });
      await answer.close();
    });
  });

  describe('layout', () => {
    const site = useSite(false, {});

    // Every page narrow; at desktop width the list and the operation with the most fields.
    it.each([
      ...['', ...OPERATIONS.map((op) => `?op=${op.name}`)].map((query) => ({ width: NARROW, query })),
      { width: DESKTOP, query: '' },
      { width: DESKTOP, query: '?op=AdvancedSearch' },
    ])('$width px wide, /index.asmx$query fits the window in the stylesheet font, Invoke in view', async ({ width, query }) => {
      const path = `/index.asmx${query}`;
      const page = await openPage(browser, site(), path, width);
      const layout = await layoutOf(page);
      expect(layout.innerWidth).toBe(width);
      expect(layout.scrollWidth).toBeLessThanOrEqual(width);
      expect(layout.bodyScrollWidth).toBeLessThanOrEqual(width);
      expect(layout.bodyFont).toBe(FONT);
      if (query !== '') {
        expect(layout.invoke).not.toBeNull();
        expect(layout.invoke!.visible).toBe(true);
        expect(layout.invoke!.width).toBeGreaterThan(0);
        expect(layout.invoke!.left).toBeGreaterThanOrEqual(0);
        expect(layout.invoke!.right).toBeLessThanOrEqual(width);
      }
      // A full-page screenshot is as wide as the window: nothing sticks out sideways.
      const png = await page.screenshot({ fullPage: true });
      expect(pngWidth(png)).toBe(width);
      const dir = process.env.SCREENSHOT_DIR;
      if (dir) {
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, `help${query.replace('?op=', '-')}-${width}.png`), png);
      }
      await page.close();
    });
  });
});
