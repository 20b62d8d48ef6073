import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../src/demo/catalog.js';
import { parseXml } from '../src/xml/parse.js';
import { childElements, type XmlElement } from '../src/xml/tree.js';
import {
  demoCatalog,
  type HitStack,
  markPair,
  requireClient,
  skipClientSuite,
  pairLogProblems,
  startProxyPair,
} from './support/clients.js';
import type { TestProxy } from './support/proxy.js';
import { ampersandProduct, childNamed, httpGetSearch, largestStore, readResultSet, sorted, type ResultSet } from './support/results.js';
import {
  NO_SUCH_STORE_FAULT,
  OPERATIONS,
  REFUSED_CONNECTION_FAULT,
  SERVICE_NAMESPACE,
  SOAP11_WIRE,
  SOAP12_CONTENT_TYPE,
  SOAP12_WIRE,
  UNKNOWN_PRODUCT_TYPE_HOVERCRAFT,
  XML_CONTENT_TYPE,
  type OperationName,
  type SoapVersionWire,
} from './support/wire.js';

/**
 * WSDL-driven SOAP clients of other ecosystems against the proxy: PHP's SoapClient (Debian php-soap)
 * and Python zeep (Debian python3-zeep). Each client script in test/clients/ imports the served
 * `?WSDL`, calls the operations listed here over SOAP 1.1 or 1.2, and prints per call the request it
 * sent, the raw response, and the `{Op}Result` as the client exposes it, or the fault it raised.
 *
 * How the clients represent things (PHP 8.2, zeep 4.2):
 * - Result: `<{Op}Result>` is `mixed="true"` + `<s:any />`. PHP gives an object whose `any` property is
 *   the content as an XML string; zeep gives the content as an lxml element (serialized by the script,
 *   carrying the in-scope namespace declarations). Both are parsed here and compared with the raw
 *   envelope and with the catalog.
 * - SOAP 1.2: PHP with `soap_version => SOAP_1_2`, zeep bound to the `{Svc}Soap12` port. Both send
 *   `application/soap+xml; charset=utf-8; action="{action}"`; zeep also sends a `SOAPAction` header,
 *   which the SOAP 1.2 router ignores (docs/wire.md §2.3).
 * - Faults: PHP throws SoapFault (`faultcode`, `faultstring`), zeep raises zeep.exceptions.Fault
 *   (`code`, `message`). Both report the code as the QName text written in the fault, so the
 *   `soap:Client`/`soap:Server` (1.1) and `soap:Sender`/`soap:Receiver` (1.2) of docs/wire.md §5.1 arrive
 *   verbatim, the prefix being the envelope's, and the text decoded once (`--->`, not `---&gt;`).
 *
 * The clients come from Debian packages. Where they are missing the suite is skipped, unless
 * REQUIRE_OTHER_CLIENTS=1 (set by .ci/run, which installs them): then a missing client fails.
 */

const execFileAsync = promisify(execFile);

// --- The clients -------------------------------------------------------------------------------------

interface ClientCase {
  readonly name: string;
  readonly command: string;
  readonly script: string;
  /** A command that succeeds when the client is installed. */
  readonly probe: readonly string[];
  /** Whether the client also sends a SOAPAction header with a SOAP 1.2 request. */
  readonly soap12SoapAction: boolean;
  /** Its `clientStack` in the hits (src/clients/stack.ts), and its version as the client's runtime gives it. */
  readonly stack: string;
  readonly stackVersion: readonly string[];
  available?: boolean;
}

const PHP = process.env.PHP ?? 'php';
/** Debian's python3-zeep lives in the system Python, not in a pyenv/venv one earlier on PATH. */
const PYTHON = process.env.ZEEP_PYTHON ?? '/usr/bin/python3';

const CLIENTS: readonly ClientCase[] = [
  {
    name: 'PHP SoapClient',
    command: PHP,
    script: 'php_client.php',
    probe: [PHP, '-r', 'exit(class_exists("SoapClient") ? 0 : 1);'],
    soap12SoapAction: false,
    stack: 'php-soapclient',
    stackVersion: [PHP, '-r', 'echo PHP_VERSION;'],
  },
  {
    name: 'Python zeep',
    command: PYTHON,
    script: 'zeep_client.py',
    probe: [PYTHON, '-c', 'import zeep'],
    soap12SoapAction: true,
    stack: 'python-zeep',
    stackVersion: [PYTHON, '-c', 'import zeep; print(zeep.__version__, end="")'],
  },
];
for (const client of CLIENTS) {
  const [command = '', ...args] = client.probe;
  client.available = spawnSync(command, args, { stdio: 'ignore', timeout: 20_000 }).status === 0;
}

interface SoapVersionCase extends SoapVersionWire {
  readonly clientCode: string;
  readonly serverCode: string;
}

const VERSIONS: readonly SoapVersionCase[] = [
  { ...SOAP11_WIRE, clientCode: 'soap:Client', serverCode: 'soap:Server' },
  { ...SOAP12_WIRE, clientCode: 'soap:Sender', serverCode: 'soap:Receiver' },
];

interface Call {
  readonly operation: OperationName;
  readonly args: Readonly<Record<string, string | number>>;
}

/** One call as a client script reports it. */
interface CallRecord extends Call {
  readonly resultType?: string;
  /** `{Op}Result` content as the client exposes it, serialized to XML. */
  readonly result?: string | null;
  readonly fault?: { readonly code: string; readonly message: string };
  /** Anything else the client threw. */
  readonly error?: string;
  readonly request?: { readonly headers: Readonly<Record<string, string>>; readonly body: string };
  readonly response?: { readonly status: number | null; readonly headers: Readonly<Record<string, string>>; readonly body: string };
}

interface ClientRun {
  readonly client: string;
  readonly soapVersion: string;
  readonly calls: readonly CallRecord[];
}

/** Runs a client script over `calls` against a proxy; the records come back under the calls' names. */
async function runClient<K extends string>(
  client: ClientCase,
  proxyUrl: string,
  version: SoapVersionCase,
  calls: Readonly<Record<K, Call>>,
): Promise<Record<K, CallRecord>> {
  const script = fileURLToPath(new URL(`./clients/${client.script}`, import.meta.url));
  const names = Object.keys(calls) as K[];
  const { stdout } = await execFileAsync(
    client.command,
    [script, `${proxyUrl}/index.asmx?WSDL`, version.version, JSON.stringify(names.map((name) => calls[name]))],
    { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
  );
  const run = JSON.parse(stdout) as ClientRun;
  expect(run.calls).toHaveLength(names.length);
  return Object.fromEntries(names.map((name, index) => [name, run.calls[index]])) as Record<K, CallRecord>;
}

// --- Reading results ---------------------------------------------------------------------------------

/** The `searchResultSet` inside `<{Op}Response><{Op}Result>` of a raw success envelope. */
function rawResultSet(body: string, op: OperationName, version: SoapVersionCase): ResultSet {
  const envelope = parseXml(body);
  expect(envelope.uri, 'response envelope namespace').toBe(version.envelopeNs);
  const response = childElements(childNamed(envelope, 'Body') ?? envelope)[0];
  expect({ local: response?.local, uri: response?.uri }).toEqual({ local: `${op}Response`, uri: SERVICE_NAMESPACE });
  const result = response ? childNamed(response, `${op}Result`) : undefined;
  const content = result ? childElements(result) : [];
  expect(content).toHaveLength(1);
  return readResultSet(content[0] as XmlElement);
}

/**
 * A call that must have succeeded: the client's exposed result, parsed. It holds the same items as
 * the raw envelope, which came back 200 in the version's content type.
 */
function resultOf(record: CallRecord, version: SoapVersionCase): ResultSet {
  expect(record.fault, `${record.operation} fault`).toBeUndefined();
  expect(record.error, `${record.operation} error`).toBeUndefined();
  expect(record.response?.status).toBe(200);
  expect(record.response?.headers['content-type']).toBe(version.responseContentType);
  expect(typeof record.result, `${record.operation}Result as the client exposes it (${record.resultType})`).toBe('string');
  const set = readResultSet(parseXml(record.result ?? ''));
  const raw = rawResultSet(record.response?.body ?? '', record.operation, version);
  expect(set.items.map((item) => item.mediaId)).toEqual(raw.items.map((item) => item.mediaId));
  expect(set.attributes).toMatchObject(raw.attributes);
  return set;
}

function expectFault(record: CallRecord, version: SoapVersionCase, code: string, text: string): void {
  expect(record.error, `${record.operation} error`).toBeUndefined();
  expect(record.result, `${record.operation} result`).toBeUndefined();
  expect(record.fault).toEqual({ code, message: text });
  expect(record.response?.status).toBe(500);
  expect(record.response?.headers['content-type']).toBe(version.responseContentType);
  expect(parseXml(record.response?.body ?? '').uri).toBe(version.envelopeNs);
}

/** The request went out in the version's form: Content-Type, SOAPAction, envelope namespace, body element. */
function expectRequestInVersion(record: CallRecord, version: SoapVersionCase, client: ClientCase): void {
  const action = `${SERVICE_NAMESPACE}${record.operation}`;
  const headers = record.request?.headers ?? {};
  if (version.version === '1.1') {
    expect(headers['content-type']).toBe(XML_CONTENT_TYPE);
    expect(headers['soapaction']).toBe(`"${action}"`);
  } else {
    expect(headers['content-type']).toBe(`${SOAP12_CONTENT_TYPE}; action="${action}"`);
    expect(headers['soapaction']).toBe(client.soap12SoapAction ? `"${action}"` : undefined);
  }
  const envelope = parseXml(record.request?.body ?? '');
  expect(envelope.uri, 'request envelope namespace').toBe(version.envelopeNs);
  const wrapper = childElements(childNamed(envelope, 'Body') ?? envelope)[0];
  expect({ local: wrapper?.local, uri: wrapper?.uri }).toEqual({ local: record.operation, uri: SERVICE_NAMESPACE });
}

// --- The tests -----------------------------------------------------------------------------------------

let proxy: TestProxy;
/** A second proxy whose upstream refuses connections. */
let unreachable: TestProxy;
let catalog: Catalog;
/** The media ids of Search 'dog' as the proxy's own HTTP GET binding returns them. */
let httpSearchDog: ResultSet;

beforeAll(async () => {
  ({ proxy, unreachable } = await startProxyPair());
  catalog = demoCatalog(proxy);
  httpSearchDog = await httpGetSearch(proxy.url, 'dog');
});

afterAll(async () => {
  await Promise.all([proxy?.stop(), unreachable?.stop()]);
  expect(pairLogProblems({ proxy, unreachable }, ['other-clients-test'])).toEqual([]);
});

const PAGE = { pageIndex: 2, pageSize: 100 }; // items 200–299: across the first upstream store page (256)
const WINDOW = { start: 7, max: 20 };

for (const client of CLIENTS) {
  describe.skipIf(skipClientSuite(client.available))(client.name, () => {
    it('is installed', () => {
      expect(client.available, `probe: ${client.probe.join(' ')}`).toBe(true);
    });

    for (const version of VERSIONS) {
      describe(version.name, () => {
        const plan = (): Record<string, Call> => {
          const store = largestStore(catalog);
          return {
            search: { operation: 'Search', args: { query: 'dog' } },
            store: { operation: 'StoreLookup', args: { storeId: store.id, apiKey: 'other-clients-test', version: '1' } },
            page: { operation: 'StoreLookupPaged', args: { storeId: store.id, ...PAGE } },
            product: { operation: 'ProductLookup', args: { productNumber: ampersandProduct(catalog).product.productNumber } },
            mugs: { operation: 'AdvancedSearch', args: { productTypes: 'Mug' } },
            window: {
              operation: 'AdvancedSearch',
              args: { productTypes: 'Mug', startResults: String(WINDOW.start), maxResults: String(WINDOW.max) },
            },
            hovercraft: { operation: 'AdvancedSearch', args: { query: 'dog', productTypes: 'Hovercraft' } },
            noSuchStore: { operation: 'StoreLookup', args: { storeId: 'nosuchstore' } },
          };
        };
        const refusedPlan: Record<OperationName, Call> = {
          StoreLookup: { operation: 'StoreLookup', args: { storeId: 'x' } },
          StoreLookupPaged: { operation: 'StoreLookupPaged', args: { storeId: 'x', pageIndex: 0, pageSize: 10 } },
          ProductLookup: { operation: 'ProductLookup', args: { productNumber: 1 } },
          Search: { operation: 'Search', args: { query: 'dog' } },
          AdvancedSearch: { operation: 'AdvancedSearch', args: { query: 'dog', startResults: '0', maxResults: '5' } },
        };
        let calls: Record<string, CallRecord>;
        let refused: Record<OperationName, CallRecord>;
        let stacks: HitStack[];

        beforeAll(async () => {
          requireClient(client.available, `${client.name} is not installed`);
          const since = markPair({ proxy, unreachable });
          [calls, refused] = await Promise.all([
            runClient(client, proxy.url, version, plan()),
            runClient(client, unreachable.url, version, refusedPlan),
          ]);
          stacks = since();
        }, 120_000);

        it(`is recognised as ${client.stack} in the hit of every call, with its version`, () => {
          const [command = '', ...args] = client.stackVersion;
          const runtimeVersion = spawnSync(command, args, { encoding: 'utf8', timeout: 20_000 }).stdout;
          expect(stacks).toHaveLength(Object.keys(calls).length + Object.keys(refused).length);
          expect(new Set(stacks.map((stack) => `${stack.name} ${stack.version}`))).toEqual(new Set([`${client.stack} ${runtimeVersion}`]));
        });

        const record = (name: string): CallRecord => {
          const found = calls[name];
          if (!found) throw new Error(`no call named ${name}`);
          return found;
        };

        it(`builds the client from the WSDL and sends every call as SOAP ${version.version}`, () => {
          const all = [...Object.values(calls), ...Object.values(refused)];
          expect(new Set(all.map((call) => call.operation))).toEqual(new Set(OPERATIONS));
          for (const call of all) expectRequestInVersion(call, version, client);
        });

        it('Search returns the items the HTTP GET binding returns for the same query', () => {
          const set = resultOf(record('search'), version);
          expect(set.items.length).toBeGreaterThan(0);
          expect(sorted(set.items.map((item) => item.mediaId))).toEqual(sorted(httpSearchDog.items.map((item) => item.mediaId)));
          expect(set.attributes.totalDesigns).toBe(httpSearchDog.attributes.totalDesigns);
        });

        it('StoreLookup returns every design of the largest store', () => {
          const store = largestStore(catalog);
          const set = resultOf(record('store'), version);
          expect(set.items).toHaveLength(store.designs.length);
          expect(set.attributes.totalDesigns).toBe(String(store.designs.length));
          expect(sorted(set.items.map((item) => item.mediaId))).toEqual(sorted(store.designs.map((design) => design.mediaId)));
        });

        it('StoreLookupPaged returns that slice of the StoreLookup result', () => {
          const all = resultOf(record('store'), version).items;
          const offset = PAGE.pageIndex * PAGE.pageSize;
          const expected = all.slice(offset, offset + PAGE.pageSize);
          expect(expected.length).toBeGreaterThan(0);
          const set = resultOf(record('page'), version);
          expect(record('page').request?.body).toMatch(/pageIndex>2<\/.*pageSize>100</);
          expect(set.attributes.startResult).toBe(String(offset));
          expect(set.items.map((item) => item.mediaId)).toEqual(expected.map((item) => item.mediaId));
        });

        it('ProductLookup returns the design holding the product, its text decoded once', () => {
          const { design, product } = ampersandProduct(catalog);
          const set = resultOf(record('product'), version);
          expect(set.items.map((item) => [item.mediaId, item.productNumbers])).toEqual([[design.mediaId, [product.productNumber]]]);
          // The upstream escapes once more than XML needs (docs/upstream.md §5); the client decodes once.
          expect(set.items[0]?.storeNames).toEqual([design.store.name.replace(/&/g, '&amp;')]);
        });

        it('AdvancedSearch startResults/maxResults give that window of the unpaged search', () => {
          const unpaged = resultOf(record('mugs'), version);
          const window = resultOf(record('window'), version);
          const expected = unpaged.items.slice(WINDOW.start, WINDOW.start + WINDOW.max);
          expect(expected).toHaveLength(WINDOW.max);
          expect(window.attributes.startResult).toBe(String(WINDOW.start));
          expect(window.items.map((item) => item.xml)).toEqual(expected.map((item) => item.xml));
        });

        it(`an unknown product type is a ${version.clientCode} fault with the product's text`, () => {
          expectFault(record('hovercraft'), version, version.clientCode, UNKNOWN_PRODUCT_TYPE_HOVERCRAFT);
        });

        it(`an upstream error document is a ${version.serverCode} fault carrying its message`, () => {
          expectFault(record('noSuchStore'), version, version.serverCode, NO_SUCH_STORE_FAULT);
        });

        it.each(OPERATIONS)(`a refused upstream connection makes %s a ${version.serverCode} fault`, (op) => {
          expectFault(refused[op], version, version.serverCode, REFUSED_CONNECTION_FAULT);
        });
      });
    }
  });
}
