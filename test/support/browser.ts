import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, type Browser } from 'puppeteer-core';
import { requireClient, skipClientSuite } from './clients.js';

/**
 * Headless Chromium from the system package (`apt-get install chromium`; .ci/run installs it), driven
 * by puppeteer-core, which never downloads a browser of its own. Like the other real clients, a
 * missing Chromium skips the suite, unless REQUIRE_OTHER_CLIENTS=1 (CI) makes it fail.
 */

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumInstalled = existsSync(CHROMIUM_PATH);

/** For `describe.skipIf`. */
export const skipBrowserSuite = skipClientSuite(chromiumInstalled);

export interface HeadlessBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

/**
 * Starts Chromium with an empty profile and without the background traffic (updates, sync, Google
 * lookups) that a machine without outside network turns into refused connections.
 */
export async function startBrowser(): Promise<HeadlessBrowser> {
  requireClient(chromiumInstalled, `Chromium is not installed at ${CHROMIUM_PATH}`);
  const profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
  const browser = await launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    userDataDir: profile,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
