import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyCall } from './support/calls.js';
import { type HeadlessBrowser, skipBrowserSuite, startBrowser } from './support/browser.js';
import { type RecordedApp, startRecordedApp } from './support/recorded-app.js';

/**
 * A client's page (`GET /clients/{client}.html`, issue 31) as a team sees it in a real browser: the
 * status label in its colour, the table of what it calls, the code of its stack open and the others
 * closed, nothing fetched but the page, nothing wider than the window on a phone or a desktop. The
 * screenshot in docs/migration.md is this page: UPDATE_SCREENSHOTS=1 writes it again.
 */

/** What the page functions read of the browser's globals, declared here: the DOM library would clash with Node's fetch types. */
declare const document: { readonly documentElement: { readonly scrollWidth: number } };
declare function getComputedStyle(element: unknown): { readonly backgroundColor: string };

const SCREENSHOT = fileURLToPath(new URL('../docs/images/client-page.png', import.meta.url));
const DAY = 86_400_000;
const KEY = 'warehouse-secret-key';

describe.skipIf(skipBrowserSuite)("a client's page in a browser", () => {
  let browser: HeadlessBrowser;
  let app: RecordedApp;
  const sunset = new Date(Date.now() + 20 * DAY).toISOString();

  beforeAll(async () => {
    browser = await startBrowser();
    app = await startRecordedApp({
      deprecation: { sunsetAt: sunset, successorBaseUrl: 'https://open-api.example.com' },
      clients: [{ name: 'warehouse', team: 'Logistics', contact: 'logistics@example.com', apiKeys: [KEY] }],
    });
    for (const [binding, operation, params] of [
      ['soap11', 'Search', { query: 'dog', apiKey: KEY }],
      ['soap11', 'Search', { query: 'mug', apiKey: KEY }],
      ['httpGet', 'ProductLookup', { productNumber: '42', apiKey: KEY }],
    ] as const) {
      await (await legacyCall(app.base, binding, operation, params, { 'user-agent': 'PHP-SOAP/8.2.7' })).text();
    }
  }, 30_000);

  afterAll(async () => {
    // The browser first: its kept-alive connections would hold the listener open.
    await browser?.close();
    await app?.close();
  });

  async function open(width: number): Promise<{ page: Page; fetched: string[] }> {
    const page = await browser.browser.newPage();
    await page.setViewport({ width, height: 900 });
    const fetched: string[] = [];
    page.on('request', (request) => {
      fetched.push(request.url());
    });
    const response = await page.goto(`${app.admin}/clients/warehouse.html`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    return { page, fetched };
  }

  it('shows the status in its colour, what it calls and the code of its stack open, fetching nothing else', async () => {
    const { page, fetched } = await open(1280);
    try {
      expect(fetched).toEqual([`${app.admin}/clients/warehouse.html`]);
      const label = await page.$eval('.status', (element) => ({
        text: element.textContent,
        background: getComputedStyle(element).backgroundColor,
      }));
      expect(label).toEqual({ text: `fix by ${sunset.slice(0, 10)}`, background: 'rgb(255, 235, 233)' });
      const rows = await page.$$eval('tbody tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)),
      );
      expect(rows).toEqual(
        expect.arrayContaining([
          ['Search', 'soap11', '2'],
          ['ProductLookup', 'httpGet', '1'],
        ]),
      );
      const details = await page.$$eval('details', (all) =>
        all.map((element) => ({ language: element.querySelector('summary')?.textContent, open: element.open })),
      );
      expect(details.filter((one) => one.open).map((one) => one.language)).toEqual(['php', 'php']);
      expect(details).toHaveLength(14);
      // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, which is what a person reads.
      const shown = await page.$eval('body', (body) => body.innerText);
      expect(shown).toContain("$appKey = getenv('CP_APP_KEY') ?: 'YOUR_APP_KEY';");
      expect(shown).not.toContain(KEY);
    } finally {
      await page.close();
    }
  });

  it.each([390, 1280])('is no wider than a window %i px wide', async (width) => {
    const { page } = await open(width);
    try {
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(wide).toBeLessThanOrEqual(width);
      if (width === 1280 && process.env.UPDATE_SCREENSHOTS === '1') {
        await mkdir(dirname(SCREENSHOT), { recursive: true });
        await writeFile(SCREENSHOT, await page.screenshot({ fullPage: true }));
      }
    } finally {
      await page.close();
    }
  });

  it('is the page docs/migration.md shows', () => {
    expect(existsSync(SCREENSHOT)).toBe(true);
    const png = readFileSync(SCREENSHOT);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(readFileSync(fileURLToPath(new URL('../docs/migration.md', import.meta.url)), 'utf8')).toContain('](images/client-page.png)');
  });
});
