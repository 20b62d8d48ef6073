import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFingerprint } from '../src/clients/fingerprint.js';
import type { ClientMigration } from '../src/migration/clients.js';
import { SNIPPET_LANGUAGES, type SnippetLanguage, snippetsFor } from '../src/migration/snippets.js';
import { parseXml } from '../src/xml/parse.js';
import { demoCatalog } from './support/clients.js';
import { startProxy, type TestProxy } from './support/proxy.js';
import { ampersandProduct, largestStore, readResultSet, type ResultSet } from './support/results.js';

/**
 * The code each client is sent (issue 31, item 3), run: for the calls a client made, each language's
 * snippet from `GET /clients/{client}` makes the replacement request(s) against the demo upstream, and
 * the items it prints are those of the legacy call's result, in order, with its total. A whole store
 * takes several pages, which the snippet must walk. Tools missing here skip their language, unless
 * REQUIRE_OTHER_CLIENTS=1 (CI, which installs them all).
 */

const execFileAsync = promisify(execFile);
const KEY = 'snippet-client-key';
/** Some appKey: the demo upstream wants one, as the real one does. */
const APP_KEY = 'snippet-app-key';
const NODE_MODULES = fileURLToPath(new URL('../node_modules', import.meta.url));

interface Runner {
  readonly file: string;
  /** The commands that run `file` in `dir`, the last one's output read. */
  readonly commands: (dir: string, file: string) => readonly (readonly string[])[];
  readonly tools: readonly string[];
}

const RUNNERS: Record<SnippetLanguage, Runner> = {
  php: { file: 'replacement.php', commands: (_, file) => [['php', file]], tools: ['php'] },
  python: { file: 'replacement.py', commands: (_, file) => [['python3', file]], tools: ['python3'] },
  csharp: {
    file: 'Replacement.cs',
    commands: (dir, file) => [
      ['mcs', '-nologo', '-r:System.Xml', `-out:${join(dir, 'replacement.exe')}`, file],
      ['mono', join(dir, 'replacement.exe')],
    ],
    tools: ['mcs', 'mono'],
  },
  java: { file: 'Replacement.java', commands: (_, file) => [['java', file]], tools: ['java'] },
  perl: { file: 'replacement.pl', commands: (_, file) => [['perl', file]], tools: ['perl'] },
  javascript: { file: 'replacement.js', commands: (_, file) => [[process.execPath, file]], tools: [] },
  curl: { file: 'replacement.sh', commands: (_, file) => [['sh', file]], tools: ['curl', 'sh'] },
};

const available = (tool: string): boolean => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
const perlHasLibXml = (): boolean => spawnSync('perl', ['-MXML::LibXML', '-e', '1'], { stdio: 'ignore' }).status === 0;
const required = process.env.REQUIRE_OTHER_CLIENTS === '1';

let proxy: TestProxy;
let dir: string;
/** The legacy result of each call the client made, by operation and binding. */
const legacy = new Map<string, ResultSet>();
let migration: ClientMigration;

beforeAll(async () => {
  proxy = await startProxy();
  dir = await mkdtemp(join(tmpdir(), 'snippets-'));
  const catalog = demoCatalog(proxy);
  const store = largestStore(catalog);
  const calls: Record<string, string> = {
    Search: `Search?query=dog&apiKey=${KEY}&version=`,
    StoreLookup: `StoreLookup?storeId=${encodeURIComponent(store.id)}&apiKey=${KEY}&version=&productTypes=`,
    ProductLookup: `ProductLookup?productNumber=${ampersandProduct(catalog).product.productNumber}&apiKey=${KEY}&version=`,
    // A legacy page larger than the endpoint's largest (256): two upstream pages for one legacy page of 300.
    StoreLookupPaged:
      `StoreLookupPaged?storeId=${encodeURIComponent(store.id)}&apiKey=${KEY}&version=&productTypes=` + '&pageIndex=0&pageSize=300',
    // A window the snippet must cut from its page: items 7 to 26 of one page of 27.
    AdvancedSearch:
      `AdvancedSearch?query=&apiKey=${KEY}&version=&productTypes=Mug&startResults=7&maxResults=20` + '&maxProductsPerDesign=&sort=',
  };
  for (const [operation, path] of Object.entries(calls)) {
    const response = await fetch(`${proxy.url}/index.asmx/${path}`);
    expect(response.status).toBe(200);
    legacy.set(`${operation} httpGet`, readResultSet(parseXml(await response.text())));
  }
  // A window of no item, over HTTP POST (an entry of its own): the page is requested for its total, no item kept.
  const none = await fetch(`${proxy.url}/index.asmx/AdvancedSearch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `query=&apiKey=${KEY}&version=&productTypes=Mug&startResults=3&maxResults=0&maxProductsPerDesign=&sort=`,
  });
  expect(none.status).toBe(200);
  legacy.set('AdvancedSearch httpPost', readResultSet(parseXml(await none.text())));
  expect(legacy.get('AdvancedSearch httpPost')?.items).toHaveLength(0);
  // Several pages: the snippet must walk them; the windows are slices the snippet must cut.
  expect(legacy.get('StoreLookup httpGet')?.items.length).toBeGreaterThan(256);
  expect(legacy.get('StoreLookupPaged httpGet')?.items).toHaveLength(300);
  expect(legacy.get('AdvancedSearch httpGet')?.items).toHaveLength(20);
  const answer = await fetch(`${proxy.adminUrl}/clients/${encodeURIComponent(clientFingerprint(KEY))}`);
  expect(answer.status).toBe(200);
  migration = (await answer.json()) as ClientMigration;
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the snippets of a client', () => {
  it('come for every operation it called, in every language, with its parameters and the key left as a placeholder', () => {
    expect(migration.operations.map((use) => use.operation).sort()).toEqual([
      'AdvancedSearch',
      'AdvancedSearch',
      'ProductLookup',
      'Search',
      'StoreLookup',
      'StoreLookupPaged',
    ]);
    // A window across two pages is two requests; a whole store, its first (the rest follow until the total).
    expect(migration.operations.find((use) => use.operation === 'StoreLookupPaged')?.replacement).toHaveLength(2);
    expect(migration.operations.find((use) => use.operation === 'StoreLookup')?.replacement).toHaveLength(1);
    for (const use of migration.operations) {
      expect(Object.keys(use.snippets ?? {}).sort()).toEqual([...SNIPPET_LANGUAGES].sort());
      for (const code of Object.values(use.snippets ?? {})) {
        expect(code).toContain('YOUR_APP_KEY');
        expect(code).not.toContain(KEY);
        expect(code).toContain(use.endpoint);
      }
    }
    // The language of its stack comes first: Node's fetch is no stack of a language here.
    expect(migration.language).toBe('curl');
  });

  for (const language of SNIPPET_LANGUAGES) {
    const runner = RUNNERS[language];
    const missing = runner.tools.filter((tool) => !available(tool));
    if (language === 'perl' && missing.length === 0 && !perlHasLibXml()) missing.push('XML::LibXML (libxml-libxml-perl)');
    it.skipIf(missing.length > 0 && !required)(
      `${language}: prints the items of each legacy call, in order, and its total: every page of a store, windows cut`,
      { timeout: 120_000 },
      async () => {
        expect(missing, `missing: ${missing.join(', ')}`).toEqual([]);
        for (const use of migration.operations) {
          const result = legacy.get(`${use.operation} ${use.binding}`) as ResultSet;
          const own = join(dir, `${language}-${use.operation}-${use.binding}`);
          await rm(own, { recursive: true, force: true });
          await mkdtemp(`${own}-`).then(async (work) => {
            const file = join(work, runner.file);
            await writeFile(file, use.snippets?.[language] ?? '');
            const env = { ...process.env, CP_APP_KEY: APP_KEY, NODE_PATH: NODE_MODULES };
            let stdout = '';
            for (const [command = '', ...args] of runner.commands(work, file)) {
              ({ stdout } = await execFileAsync(command, args, { cwd: work, env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }));
            }
            const lines = stdout.trim().split('\n');
            const printed = lines.filter((line) => line.startsWith('item ')).map((line) => line.slice('item '.length));
            expect(printed, `${language} ${use.operation}`).toEqual(result.items.map((item) => String(item.mediaId)));
            expect(lines.at(-1)).toBe(`total ${result.attributes.totalDesigns}`);
          });
        }
      },
    );
  }
});

describe('the string literals of the snippets', () => {
  it('write every character past ASCII as an escape in the C-like languages, where C# takes U+2028 for a line end', () => {
    const snippets = snippetsFor({ url: 'https://open-api.example.com/ä/\u2028/product.search.cp?v=3&query=dog', paging: null });
    for (const language of ['csharp', 'java', 'javascript', 'python'] as const) {
      expect(snippets[language]).toContain('/\\u00e4/\\u2028/product.search.cp');
      expect(snippets[language]).not.toMatch(/[\u2028\u00e4]/);
    }
  });

  it("quote a URL with quotes, dollars and backslashes in PHP's, Perl's and the shell's single quotes", () => {
    const url = "https://open-api.example.com/it's/$HOME/\\x/product.search.cp?v=3";
    const snippets = snippetsFor({ url, paging: null });
    expect(snippets.php).toContain(`$base = 'https://open-api.example.com/it\\'s/$HOME/\\\\x/product.search.cp?v=3';`);
    expect(snippets.perl).toContain(`my $base = 'https://open-api.example.com/it\\'s/$HOME/\\\\x/product.search.cp?v=3';`);
    expect(snippets.curl).toContain(`'https://open-api.example.com/it'\\''s/$HOME/\\x/product.search.cp?v=3'`);
  });
});
