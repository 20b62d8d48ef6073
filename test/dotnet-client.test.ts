import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../src/demo/catalog.js';
import { parseXml } from '../src/xml/parse.js';
import {
  STORE_PAGE_SIZE,
  demoCatalog,
  type HitStack,
  markPair,
  requireClient,
  skipClientSuite,
  pairLogProblems,
  startProxyPair,
} from './support/clients.js';
import type { TestProxy } from './support/proxy.js';
import { ampersandProduct, httpGetSearch, largestStore, readResultSet, sorted, type ResultSet } from './support/results.js';
import {
  NO_SUCH_STORE_FAULT,
  OPERATIONS,
  REFUSED_CONNECTION_FAULT,
  SERVICE_NAMESPACE,
  SOAP11_ENV,
  SOAP11_WIRE,
  SOAP12_ENV,
  SOAP12_WIRE,
  type OperationName,
  type SoapVersionWire,
} from './support/wire.js';

/**
 * The typical client of the original service: a .NET Framework `SoapHttpClientProtocol` proxy generated
 * by `wsdl.exe`. Mono (Debian `mono-devel`) ships the same stack: its `wsdl` generates the proxy from the
 * served `?WSDL` (SOAP 1.1 by default, SOAP 1.2 with `-protocol:SOAP12`; both classes are named
 * `CatalogService`), `mcs` compiles it with the driver test/clients/dotnet/Main.cs, and `mono` runs
 * every call of one SOAP version in a single process. Nothing is cached across runs: each run
 * generates and compiles both proxies afresh in a temporary directory.
 *
 * What the client sees (Mono 6.8):
 * - A result is the `XmlNode` the proxy returns (an `XmlElement`, the `searchResultSet`); the driver
 *   prints its `OuterXml`, parsed here. The driver also reports the Content-Type/SOAPAction the proxy
 *   sent and the status/Content-Type it got back (docs/wire.md §4, §8).
 * - A fault is a `SoapException`: `Code` is the fault code as a qualified name in the envelope's
 *   namespace, unmapped: `Client`/`Server` in the SOAP 1.1 namespace, `Sender`/`Receiver` in the
 *   SOAP 1.2 one; no `SubCode`; `Message` is the fault text decoded once (docs/wire.md §5).
 *
 * When `wsdl`, `mcs` or `mono` is missing the suite is skipped, unless REQUIRE_OTHER_CLIENTS=1 (set in
 * CI, which installs mono-devel): then it fails.
 */

const execFileAsync = promisify(execFile);
const DRIVER = fileURLToPath(new URL('./clients/dotnet/Main.cs', import.meta.url));

/** Mono's runtime aborting in native code: killed by SIGABRT (or exit 134) after its crash report. */
function isMonoNativeCrash(err: unknown): boolean {
  const failed = err as { signal?: string | null; code?: unknown; stderr?: string; stdout?: string; message?: string };
  const report = `${failed.stderr ?? ''}${failed.stdout ?? ''}${failed.message ?? ''}`;
  return (failed.signal === 'SIGABRT' || failed.code === 134) && /Native Crash Reporting|External Debugger Dump/.test(report);
}

// --- The tools -------------------------------------------------------------------------------------

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

const TOOLS = { wsdl: onPath('wsdl'), mcs: onPath('mcs'), mono: onPath('mono') };
const MISSING = Object.entries(TOOLS)
  .filter(([, path]) => path === undefined)
  .map(([name]) => name);
const AVAILABLE = MISSING.length === 0;

// --- What the driver prints ------------------------------------------------------------------------

interface QName {
  readonly name: string;
  readonly ns: string;
}

/** One line of the driver's output. */
interface CallRecord {
  readonly op: string;
  readonly soapVersion: string;
  readonly request?: { readonly contentType: string | null; readonly soapAction: string | null };
  readonly response?: { readonly status: number; readonly contentType: string | null };
  readonly resultType?: string | null;
  readonly result?: string | null;
  readonly fault?: { readonly code: QName | null; readonly subcode: QName | null; readonly message: string };
  readonly error?: { readonly type: string; readonly message: string; readonly status?: string };
}

interface SoapVersionCase extends SoapVersionWire {
  readonly wsdlArgs: readonly string[];
  /** `SoapHttpClientProtocol.SoapVersion` of the generated proxy. */
  readonly proxySoapVersion: string;
  readonly soapActionHeader: (action: string) => string | null;
  readonly clientCode: QName;
  readonly serverCode: QName;
}

const VERSIONS: readonly SoapVersionCase[] = [
  {
    ...SOAP11_WIRE,
    wsdlArgs: [],
    proxySoapVersion: 'Default',
    soapActionHeader: (action) => `"${action}"`,
    clientCode: { name: 'Client', ns: SOAP11_ENV },
    serverCode: { name: 'Server', ns: SOAP11_ENV },
  },
  {
    ...SOAP12_WIRE,
    wsdlArgs: ['-protocol:SOAP12'],
    proxySoapVersion: 'Soap12',
    soapActionHeader: () => null,
    clientCode: { name: 'Sender', ns: SOAP12_ENV },
    serverCode: { name: 'Receiver', ns: SOAP12_ENV },
  },
];

/**
 * The web method's parameters in order, as the generated proxy declares them; `null` is a null string
 * (the driver's empty field), numbers are `int` parameters.
 */
type Call = readonly [OperationName, ...(string | number | null)[]];

/** A driver argument `Op|arg1|arg2|...`. */
function callArgument([op, ...args]: Call): string {
  for (const arg of args) {
    if (typeof arg === 'string' && (arg === '' || arg.includes('|'))) throw new Error(`the driver cannot pass ${JSON.stringify(arg)}`);
  }
  return [op, ...args.map((arg) => (arg === null ? '' : String(arg)))].join('|');
}

// --- Reading results ---------------------------------------------------------------------------------

/** The request went out as the generated proxy of `version` sends it (docs/wire.md §8). */
function expectSentAs(record: CallRecord, version: SoapVersionCase): void {
  const action = `${SERVICE_NAMESPACE}${record.op}`;
  expect(record.soapVersion).toBe(version.proxySoapVersion);
  expect(record.request).toEqual({ contentType: version.requestContentType(action), soapAction: version.soapActionHeader(action) });
}

/** A call that must have succeeded: the `XmlNode` the proxy returned, parsed. */
function resultOf(record: CallRecord | undefined, version: SoapVersionCase): ResultSet {
  if (!record) throw new Error('no such call');
  expect(record.error, `${record.op} error`).toBeUndefined();
  expect(record.fault, `${record.op} fault`).toBeUndefined();
  expectSentAs(record, version);
  expect(record.response).toEqual({ status: 200, contentType: version.responseContentType });
  expect(record.resultType).toBe('System.Xml.XmlElement');
  expect(typeof record.result).toBe('string');
  return readResultSet(parseXml(record.result ?? ''));
}

/** A call that must have raised a SoapException with `code` and a message starting with `text`. */
function expectFault(record: CallRecord | undefined, version: SoapVersionCase, code: QName, text: string, exact: boolean): void {
  if (!record) throw new Error('no such call');
  expect(record.error, `${record.op} error`).toBeUndefined();
  expect(record.result, `${record.op} result`).toBeUndefined();
  expectSentAs(record, version);
  expect(record.response).toEqual({ status: 500, contentType: version.responseContentType });
  expect(record.fault?.code).toEqual(code);
  expect(record.fault?.subcode).toBeNull();
  if (exact) expect(record.fault?.message).toBe(text);
  else
    expect(record.fault?.message.startsWith(text), `${JSON.stringify(record.fault?.message)} starts with ${JSON.stringify(text)}`).toBe(
      true,
    );
}

// --- The tests -----------------------------------------------------------------------------------------

const PAGE = { pageIndex: 2, pageSize: 100 }; // items 200–299: across the first upstream store page
const WINDOW = { start: 3, max: 5 };
/** Markup, quotes and non-ASCII text in a string parameter, to see the proxy's encoding decoded right. */
const AWKWARD_QUERY = 'café & <dog> "naïve" ☃';

let proxy: TestProxy | undefined;
/** A second proxy whose upstream refuses connections. */
let unreachable: TestProxy | undefined;
let catalog: Catalog;
/** Search 'dog' and the awkward query as the proxy's own HTTP GET binding answers them. */
let httpSearchDog: ResultSet;
let httpSearchAwkward: ResultSet;

describe.skipIf(skipClientSuite(AVAILABLE))('.NET SoapHttpClientProtocol proxy (Mono wsdl/mcs/mono)', () => {
  beforeAll(async () => {
    requireClient(AVAILABLE, `${MISSING.join(', ')} not found on PATH (Debian mono-devel)`);
    ({ proxy, unreachable } = await startProxyPair());
    catalog = demoCatalog(proxy);
    [httpSearchDog, httpSearchAwkward] = await Promise.all([httpGetSearch(proxy.url, 'dog'), httpGetSearch(proxy.url, AWKWARD_QUERY)]);
  });

  afterAll(async () => {
    await Promise.all([proxy?.stop(), unreachable?.stop()]);
    expect(pairLogProblems({ proxy, unreachable }, [])).toEqual([]);
  });

  describe.each(VERSIONS)('SOAP $version', (version) => {
    const plan = (): Record<string, Call> => {
      const store = largestStore(catalog);
      return {
        search: ['Search', 'dog', null, null],
        awkward: ['Search', AWKWARD_QUERY, null, null],
        store: ['StoreLookup', store.id, 'dotnet-client-test', '1', null],
        page: ['StoreLookupPaged', store.id, null, null, null, PAGE.pageIndex, PAGE.pageSize],
        product: ['ProductLookup', ampersandProduct(catalog).product.productNumber, null, null],
        mugs: ['AdvancedSearch', null, null, null, 'Mug', null, null, null, null],
        window: ['AdvancedSearch', null, null, null, 'Mug', String(WINDOW.start), String(WINDOW.max), null, null],
        hovercraft: ['AdvancedSearch', 'dog', null, null, 'Hovercraft', null, null, null, null],
        noSuchStore: ['StoreLookup', 'nosuchstore', null, null, null],
      };
    };
    const refusedPlan: Record<OperationName, Call> = {
      StoreLookup: ['StoreLookup', 'x', null, null, null],
      StoreLookupPaged: ['StoreLookupPaged', 'x', null, null, null, 0, 10],
      ProductLookup: ['ProductLookup', 1, null, null],
      Search: ['Search', 'dog', null, null],
      AdvancedSearch: ['AdvancedSearch', 'dog', null, null, null, '0', '5', null, null],
    };

    let workDir: string | undefined;
    let calls: Record<string, CallRecord>;
    let refused: Record<OperationName, CallRecord>;
    let stacks: HitStack[];

    beforeAll(async () => {
      if (!proxy || !unreachable) throw new Error('the proxies did not start');
      const since = markPair({ proxy, unreachable });
      workDir = await mkdtemp(join(tmpdir(), `dotnet-client-soap${version.version.replace('.', '')}-`));
      const source = join(workDir, 'CatalogService.cs');
      const exe = join(workDir, 'client.exe');
      const options = { cwd: workDir, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 };
      await execFileAsync(
        TOOLS.wsdl ?? 'wsdl',
        ['-nologo', ...version.wsdlArgs, `-out:${source}`, `${proxy.url}/index.asmx?WSDL`],
        options,
      );
      expect((await stat(source)).size, 'generated proxy').toBeGreaterThan(0);
      await execFileAsync(
        TOOLS.mcs ?? 'mcs',
        ['-nologo', '-r:System.Web.Services', '-r:System.Xml', `-out:${exe}`, source, DRIVER],
        options,
      );

      // One mono process per version: the catalog calls, then the same client against the refused upstream.
      const planned = plan();
      const names = Object.keys(planned);
      const clientArgs = [
        exe,
        `${proxy.url}/index.asmx`,
        ...names.map((name) => callArgument(planned[name] as Call)),
        `url=${unreachable.url}/index.asmx`,
        ...OPERATIONS.map((op) => callArgument(refusedPlan[op])),
      ];
      const runClient = () => execFileAsync(TOOLS.mono ?? 'mono', clientArgs, options);
      // Mono itself now and then aborts in its native code (SIGABRT and a debugger dump, no managed
      // exception), which says nothing of the answers; such a crash gets one more run. Anything the
      // client reports, and a second crash, fail as they are.
      const { stdout } = await runClient().catch((err: unknown) => {
        if (!isMonoNativeCrash(err)) throw err;
        return runClient();
      });
      const records = stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as CallRecord);
      expect(records).toHaveLength(names.length + OPERATIONS.length);
      calls = Object.fromEntries(names.map((name, index) => [name, records[index] as CallRecord]));
      refused = Object.fromEntries(OPERATIONS.map((op, index) => [op, records[names.length + index] as CallRecord])) as Record<
        OperationName,
        CallRecord
      >;
      for (const [name, record] of Object.entries(calls)) expect(record.op, name).toBe(planned[name]?.[0]);
      for (const op of OPERATIONS) expect(refused[op].op).toBe(op);
      stacks = since();
    }, 120_000);

    it('is recognised as dotnet-wsdl, with the version of its web services protocol, in the hit of every call', () => {
      expect(stacks.length).toBeGreaterThanOrEqual(Object.keys(calls).length + OPERATIONS.length);
      for (const stack of stacks)
        expect(stack).toMatchObject({ name: 'dotnet-wsdl', version: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/) });
    });

    afterAll(async () => {
      if (workDir) await rm(workDir, { recursive: true, force: true });
    });

    it(`generates a SOAP ${version.version} proxy from the served WSDL that sends every call in that version`, () => {
      const all = [...Object.values(calls), ...Object.values(refused)];
      expect(new Set(all.map((call) => call.op))).toEqual(new Set(OPERATIONS));
      for (const call of all) expectSentAs(call, version);
    });

    it('Search returns the items the HTTP GET binding returns for the same query', () => {
      const set = resultOf(calls.search, version);
      expect(set.items.length).toBeGreaterThan(0);
      expect(sorted(set.items.map((item) => item.mediaId))).toEqual(sorted(httpSearchDog.items.map((item) => item.mediaId)));
      expect(set.attributes.totalDesigns).toBe(httpSearchDog.attributes.totalDesigns);
    });

    it('a query with markup, quotes and non-ASCII text arrives as the client sent it', () => {
      const set = resultOf(calls.awkward, version);
      expect(set.searchString).toBe(AWKWARD_QUERY);
      expect(httpSearchAwkward.searchString).toBe(AWKWARD_QUERY);
      expect(sorted(set.items.map((item) => item.mediaId))).toEqual(sorted(httpSearchAwkward.items.map((item) => item.mediaId)));
    });

    it('StoreLookup returns every design of the largest store (several upstream pages)', () => {
      const store = largestStore(catalog);
      expect(store.designs.length).toBeGreaterThan(STORE_PAGE_SIZE);
      const set = resultOf(calls.store, version);
      expect(set.items).toHaveLength(store.designs.length);
      expect(set.attributes.totalDesigns).toBe(String(store.designs.length));
      expect(sorted(set.items.map((item) => item.mediaId))).toEqual(sorted(store.designs.map((design) => design.mediaId)));
    });

    it('StoreLookupPaged returns that slice of the StoreLookup result', () => {
      const all = resultOf(calls.store, version).items;
      const offset = PAGE.pageIndex * PAGE.pageSize;
      const expected = all.slice(offset, offset + PAGE.pageSize);
      expect(expected).toHaveLength(PAGE.pageSize);
      const set = resultOf(calls.page, version);
      expect(set.attributes.startResult).toBe(String(offset));
      expect(set.items.map((item) => item.mediaId)).toEqual(expected.map((item) => item.mediaId));
    });

    it('ProductLookup returns the design holding the product, its text decoded once', () => {
      const { design } = ampersandProduct(catalog);
      const set = resultOf(calls.product, version);
      expect(set.items.map((item) => [item.mediaId, item.productNumbers])).toEqual([[design.mediaId, [design.products[1]?.productNumber]]]);
      // The upstream escapes once more than XML needs (docs/upstream.md §5); the client decodes once.
      expect(set.items[0]?.storeNames).toEqual([design.store.name.replace(/&/g, '&amp;')]);
    });

    it('AdvancedSearch startResults/maxResults give that window of the unpaged search', () => {
      const unpaged = resultOf(calls.mugs, version);
      const window = resultOf(calls.window, version);
      const expected = unpaged.items.slice(WINDOW.start, WINDOW.start + WINDOW.max);
      expect(expected).toHaveLength(WINDOW.max);
      expect(window.attributes.startResult).toBe(String(WINDOW.start));
      expect(window.items.map((item) => item.xml)).toEqual(expected.map((item) => item.xml));
    });

    it(`an unknown product type raises a SoapException with code ${version.clientCode.name}`, () => {
      expectFault(calls.hovercraft, version, version.clientCode, "Unknown product type 'Hovercraft'.", false);
    });

    it(`an upstream error document raises a SoapException with code ${version.serverCode.name}`, () => {
      expectFault(calls.noSuchStore, version, version.serverCode, NO_SUCH_STORE_FAULT, true);
    });

    it.each(OPERATIONS)(`a refused upstream connection makes %s raise a SoapException with code ${version.serverCode.name}`, (op) => {
      expectFault(refused[op], version, version.serverCode, REFUSED_CONNECTION_FAULT, true);
    });
  });
});
