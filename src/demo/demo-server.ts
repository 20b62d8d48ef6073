import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config, PagingProfile } from '../config/schema.js';
import type { UpstreamPath } from '../operations.js';
import { escapeAttribute, escapeText } from '../xml/write.js';
import { catalogOptions, generateCatalog, type Catalog, type Design, type Product } from './catalog.js';

/**
 * The embedded demo upstream: an emulator of the three `.cp` endpoints (docs/upstream.md) over the
 * generated sample catalog, started on loopback when no real upstream is configured.
 *
 * It answers the way the contract describes the real service, quirks included: `searchResultSet`
 * documents without an XML declaration, `<help>` documents with status 400 for bad input, and the
 * Mashery gateway's 403 for a missing key. Where the contract lists unknowns it follows the product
 * decisions of docs/upstream.md §11 and the paging profiles of the configuration.
 */

export interface DemoUpstream {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  /** Stops listening; idempotent. */
  close(): Promise<void>;
  readonly catalog: Catalog;
}

export interface DemoUpstreamOptions {
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** Default 0: an ephemeral port. */
  readonly port?: number;
}

/** Form bodies beyond this are refused with 413; the real fields fit in a few hundred bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

export async function startDemoUpstream(config: Config, options: DemoUpstreamOptions = {}): Promise<DemoUpstream> {
  const catalog = generateCatalog(catalogOptions(config));
  const endpoints = createEndpoints(config, indexCatalog(catalog));
  const server = createServer((req, res) => {
    serve(req, res, endpoints, config.upstream.version).catch(() => res.destroy());
  });
  // A stalled client must not hold a connection of the proxy's own process for long.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;

  const host = options.host ?? '127.0.0.1';
  await listen(server, host, options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    catalog,
    close: () => (closing ??= closeServer(server)),
  };
}

// --- HTTP ---------------------------------------------------------------------------------------

interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A request the emulated service refuses; answered as a `<help>` document. */
class DemoError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'DemoError';
  }
}

const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';

/** What the Mashery gateway answers for a call without a key (docs/upstream.md §7.2). */
const DEVELOPER_INACTIVE: Reply = {
  status: 403,
  headers: { 'Content-Type': 'text/xml', 'X-Mashery-Error-Code': 'ERR_403_DEVELOPER_INACTIVE' },
  body: '<h1>Developer Inactive</h1>',
};

async function serve(req: IncomingMessage, res: ServerResponse, endpoints: ReadonlyMap<string, Endpoint>, version: string): Promise<void> {
  let reply: Reply;
  try {
    reply = await respond(req, endpoints, version);
  } catch {
    // Nothing here is expected to throw; if it does, the caller still gets a well-formed reply.
    reply = helpReply(new DemoError(500, 'Internal error in the demo upstream.'), methodList(endpoints));
  }
  res.writeHead(reply.status, { ...reply.headers, 'Content-Length': String(Buffer.byteLength(reply.body)) });
  res.end(reply.body);
}

async function respond(req: IncomingMessage, endpoints: ReadonlyMap<string, Endpoint>, version: string): Promise<Reply> {
  const { path, query } = splitTarget(req.url ?? '/');
  const endpoint = endpoints.get(path);
  try {
    if (!endpoint) throw new DemoError(404, `Unknown method ${quote(path)}.`);
    if (req.method !== 'GET' && req.method !== 'POST') {
      throw new DemoError(405, `HTTP method ${quote(req.method ?? '')} is not supported. Use GET or POST.`, { Allow: 'GET, POST' });
    }
    const params = req.method === 'POST' ? new URLSearchParams([...query, ...(await readForm(req))]) : query;
    // The gateway checks the key before the service sees the call.
    if (optional(params, 'appKey') === undefined) return DEVELOPER_INACTIVE;
    checkVersion(params, version);
    return { status: 200, headers: { 'Content-Type': XML_CONTENT_TYPE }, body: renderResultSet(endpoint.resultSet(params)) };
  } catch (err) {
    if (err instanceof DemoError) return helpReply(err, endpoint?.documentation ?? methodList(endpoints));
    throw err;
  }
}

/** Splits the request target by hand: URLSearchParams never throws, whatever the client sent. */
function splitTarget(target: string): { path: string; query: URLSearchParams } {
  const mark = target.indexOf('?');
  return mark < 0
    ? { path: target, query: new URLSearchParams() }
    : { path: target.slice(0, mark), query: new URLSearchParams(target.slice(mark + 1)) };
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const tooLarge = new DemoError(413, `The request body exceeds ${MAX_BODY_BYTES} bytes.`, { Connection: 'close' });
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) throw tooLarge;
  const body = await readBody(req, MAX_BODY_BYTES, tooLarge);
  if (body.length === 0) return new URLSearchParams();
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== 'application/x-www-form-urlencoded') {
    throw new DemoError(415, `Unsupported content type ${quote(type)}. Send the fields as application/x-www-form-urlencoded.`);
  }
  return new URLSearchParams(body.toString('utf8'));
}

/** Reads at most `limit` bytes; past that it stops collecting and rejects with `tooLarge`. */
function readBody(req: IncomingMessage, limit: number, tooLarge: Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // The rest is discarded unread; the reply carries `Connection: close`, which ends the socket.
      req.off('data', onData);
      req.resume();
      reject(tooLarge);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    // Keep-alive connections with no request in flight would otherwise hold close() open.
    server.closeIdleConnections();
  });
}

// --- Parameters ---------------------------------------------------------------------------------

/** The first value of a parameter, trimmed; an empty value counts as absent, as in an HTML form. */
function optional(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name)?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function required(params: URLSearchParams, name: string): string {
  const value = optional(params, name);
  if (value === undefined) throw new DemoError(400, `Parameter '${name}' is required.`);
  return value;
}

function parseInteger(text: string): number | undefined {
  const value = Number(text);
  return /^[+-]?\d+$/.test(text) && Number.isSafeInteger(value) ? value : undefined;
}

function integerParam(params: URLSearchParams, name: string, fallback: number): number {
  const raw = optional(params, name);
  if (raw === undefined) return fallback;
  const value = parseInteger(raw);
  if (value === undefined) throw new DemoError(400, `Invalid ${name} value ${quote(raw)}. Expected an integer.`);
  return value;
}

/** Client text echoed in a message, cut short so a huge parameter cannot bloat the reply. */
function quote(value: string): string {
  return `'${value.length > 100 ? `${value.slice(0, 100)}…` : value}'`;
}

function checkVersion(params: URLSearchParams, version: string): void {
  const given = optional(params, 'v');
  if (given === undefined) throw new DemoError(400, `Parameter 'v' is required. The only valid version is ${version}.`);
  if (given !== version) throw new DemoError(400, `Invalid version ${quote(given)}. The only valid version is ${version}.`);
}

const SORTS = ['by_score_desc', 'by_date_desc'] as const;
type Sort = (typeof SORTS)[number];

function sortParam(params: URLSearchParams): Sort {
  const raw = optional(params, 'sort');
  if (raw === undefined) return 'by_score_desc';
  const sort = SORTS.find((candidate) => candidate === raw);
  if (sort === undefined) throw new DemoError(400, `Invalid sort value ${quote(raw)}. Acceptable values: ${SORTS.join(', ')}.`);
  return sort;
}

const DEFAULT_MAX_PRODUCTS_PER_DESIGN = 3;

function maxProductsParam(params: URLSearchParams): number {
  const value = integerParam(params, 'maxProductsPerDesign', DEFAULT_MAX_PRODUCTS_PER_DESIGN);
  if (value < 1) throw new DemoError(400, `Invalid maxProductsPerDesign value '${value}'. Expected a positive integer.`);
  return value;
}

type ProductFilter = (product: Product) => boolean;

/**
 * `merchandiseIds`, comma-separated and/or repeated. Non-negative ids keep only those types; if any
 * id is negative the positive ones are ignored and the negated types are left out (docs/upstream.md §4),
 * so `-999` keeps everything.
 */
function merchandiseFilter(params: URLSearchParams): ProductFilter {
  const ids = params
    .getAll('merchandiseIds')
    .flatMap((value) => value.split(','))
    .map((token) => token.trim())
    .filter((token) => token !== '')
    .map((token) => {
      const id = parseInteger(token);
      if (id === undefined) {
        throw new DemoError(400, `Invalid merchandiseIds value ${quote(token)}. Expected integer merchandise ids separated by commas.`);
      }
      return id;
    });
  // By sign, not value: `-0` excludes merchandise 0 (mugs).
  const excluded = new Set(ids.filter((id) => id < 0 || Object.is(id, -0)).map((id) => Math.abs(id)));
  if (excluded.size > 0) return (product) => !excluded.has(product.merchandiseId);
  const included = new Set(ids);
  return included.size > 0 ? (product) => included.has(product.merchandiseId) : () => true;
}

interface Window {
  /** 0-based item offset of the page's first item. */
  readonly offset: number;
  readonly size: number;
}

function pageWindow(params: URLSearchParams, profile: PagingProfile, defaultSize: number): Window {
  const size = integerParam(params, profile.sizeParam, defaultSize);
  if (size < 1 || size > profile.maxPageSize) {
    throw new DemoError(400, `Invalid ${profile.sizeParam} value '${size}'. Expected an integer from 1 to ${profile.maxPageSize}.`);
  }
  const page = integerParam(params, profile.pageParam, profile.firstPage);
  if (page < profile.firstPage) {
    throw new DemoError(400, `Invalid ${profile.pageParam} value '${page}'. The first page is ${profile.firstPage}.`);
  }
  return { offset: (page - profile.firstPage) * size, size };
}

// --- Catalog queries ----------------------------------------------------------------------------

/**
 * Search words: lower case, possessive `'s` dropped and other apostrophes removed (`Dog's` → `dog`,
 * `you're` → `youre`), split on anything that is not a letter or digit.
 */
function searchWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/['’]s\b/g, '')
    .replace(/['’]/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '');
}

interface IndexedDesign {
  readonly design: Design;
  /** Words of the design caption and of all its product captions. */
  readonly words: ReadonlySet<string>;
}

interface CatalogIndex {
  readonly byScore: readonly IndexedDesign[];
  readonly byDate: readonly IndexedDesign[];
  /** Keyed by lower-case store id; each store's designs newest first. */
  readonly storeDesigns: ReadonlyMap<string, readonly IndexedDesign[]>;
  readonly products: ReadonlyMap<number, { readonly design: Design; readonly product: Product }>;
}

/** Sorted views and lookups, built once so that each request only filters and slices. */
function indexCatalog(catalog: Catalog): CatalogIndex {
  const indexed = catalog.designs.map((design) => ({
    design,
    words: new Set([design.caption, ...design.products.map((product) => product.caption)].flatMap(searchWords)),
  }));
  // Ties fall back on mediaId so that every order is total and pages never overlap.
  const byScore = [...indexed].sort((a, b) => b.design.score - a.design.score || a.design.mediaId - b.design.mediaId);
  const byDate = [...indexed].sort((a, b) => b.design.createdAt.localeCompare(a.design.createdAt) || b.design.mediaId - a.design.mediaId);
  return {
    byScore,
    byDate,
    storeDesigns: new Map(catalog.stores.map((store) => [store.id.toLowerCase(), byDate.filter((entry) => entry.design.store === store)])),
    products: new Map(
      catalog.designs.flatMap((design) => design.products.map((product) => [product.productNumber, { design, product }] as const)),
    ),
  };
}

interface Match {
  readonly design: Design;
  /** The products shown: filtered, then capped. */
  readonly products: readonly Product[];
}

/** A design matches when at least one product passes the filter. */
function matchDesigns(designs: readonly IndexedDesign[], filter: ProductFilter, maxProducts: number): Match[] {
  return designs.flatMap(({ design }) => {
    const products = design.products.filter(filter).slice(0, maxProducts);
    return products.length > 0 ? [{ design, products }] : [];
  });
}

const SUBTOPIC_COUNT = 10;

/** The caption words most frequent among the matches, the query's own words left out. */
function subtopics(matches: readonly Match[], queryWords: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const { design } of matches) {
    for (const word of new Set(searchWords(design.caption))) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  for (const word of queryWords) counts.delete(word);
  return [...counts]
    .sort(([a, countA], [b, countB]) => countB - countA || a.localeCompare(b))
    .slice(0, SUBTOPIC_COUNT)
    .map(([word]) => word);
}

// --- Endpoints ----------------------------------------------------------------------------------

interface ResultSet {
  /** All matches over all pages, in result order. */
  readonly matches: readonly Match[];
  readonly window: Window;
  readonly sort: Sort;
  readonly searchString: string;
  readonly subtopics: readonly string[];
}

interface Endpoint {
  /** The `<documentation>` text of this method's help documents. */
  readonly documentation: string;
  /** Throws DemoError for bad input. */
  resultSet(params: URLSearchParams): ResultSet;
}

/** The default page size of the only parameterless capture (docs/upstream.md §2.1). */
const DEFAULT_SEARCH_PAGE_SIZE = 60;

/** Keyed by every upstream path of the operations table: a new endpoint there is a type error here until it is emulated. */
function createEndpoints(config: Config, index: CatalogIndex): ReadonlyMap<string, Endpoint> {
  const version = `v (required, ${config.upstream.version}), appKey (required)`;
  const filterDoc = 'merchandiseIds (comma-separated; any negative id excludes instead)';
  const search = config.paging.profiles['/product.search.cp'];
  const searchPageSize = Math.min(DEFAULT_SEARCH_PAGE_SIZE, search.maxPageSize);
  const store = config.paging.profiles['/product.searchForProductsOfStore.cp'];

  const endpoints: Readonly<Record<UpstreamPath, Endpoint>> = {
    '/product.search.cp': {
      documentation:
        'product.search.cp: Search for products among all merchandise types matching the given criteria. ' +
        `Parameters: ${version}, query, ${pagingDoc(search, searchPageSize)}, ` +
        `maxProductsPerDesign (default ${DEFAULT_MAX_PRODUCTS_PER_DESIGN}), sort (${SORTS.join(' or ')}), ${filterDoc}.`,
      resultSet: (params) => {
        const query = params.get('query') ?? '';
        const queryWords = searchWords(query);
        const sort = sortParam(params);
        const window = pageWindow(params, search, searchPageSize);
        const maxProducts = maxProductsParam(params);
        const filter = merchandiseFilter(params);
        const candidates = (sort === 'by_date_desc' ? index.byDate : index.byScore).filter(({ words }) =>
          queryWords.every((word) => words.has(word)),
        );
        const matches = matchDesigns(candidates, filter, maxProducts);
        return { matches, window, sort, searchString: query, subtopics: subtopics(matches, queryWords) };
      },
    },
    '/product.searchForProductsOfStore.cp': {
      documentation:
        'product.searchForProductsOfStore.cp: Product search data for the designs of one store, newest first, ' +
        `every product of each design. Parameters: ${version}, storeId (required), ${filterDoc}, ` +
        `${pagingDoc(store, store.maxPageSize)}.`,
      resultSet: (params) => {
        const storeId = required(params, 'storeId');
        const window = pageWindow(params, store, store.maxPageSize);
        const filter = merchandiseFilter(params);
        const designs = index.storeDesigns.get(storeId.toLowerCase());
        if (designs === undefined) throw new DemoError(400, `Store ${quote(storeId)} was not found.`);
        const matches = matchDesigns(designs, filter, Number.POSITIVE_INFINITY);
        return { matches, window, sort: 'by_date_desc', searchString: '', subtopics: subtopics(matches, []) };
      },
    },
    '/product.searchForProduct.cp': {
      documentation:
        `product.searchForProduct.cp: Product search data for one product. Parameters: ${version}, productId (required, ` + `integer).`,
      resultSet: (params) => {
        const raw = required(params, 'productId');
        const productId = parseInteger(raw);
        if (productId === undefined) throw new DemoError(400, `Invalid productId value ${quote(raw)}. Expected an integer.`);
        const found = index.products.get(productId);
        const matches = found ? [{ design: found.design, products: [found.product] }] : [];
        return {
          matches,
          window: { offset: 0, size: 1 },
          sort: 'by_score_desc',
          searchString: '',
          subtopics: subtopics(matches, []),
        };
      },
    },
  };
  return new Map(Object.entries(endpoints));
}

function pagingDoc(profile: PagingProfile, defaultSize: number): string {
  return (
    `${profile.pageParam} (first page ${profile.firstPage}), ` +
    `${profile.sizeParam} (1 to ${profile.maxPageSize}, default ${defaultSize})`
  );
}

function methodList(endpoints: ReadonlyMap<string, Endpoint>): string {
  return `Methods: ${[...endpoints.keys()].join(', ')}.`;
}

// --- Wire format --------------------------------------------------------------------------------

const INDENT = '  ';

type Attributes = readonly (readonly [name: string, value: string])[];

function startTag(name: string, attributes: Attributes): string {
  return name + attributes.map(([attr, value]) => ` ${attr}="${escapeAttribute(value)}"`).join('');
}

/** One element, start tag on one line, children one per line below it; `<x />` when empty. */
function block(depth: number, name: string, attributes: Attributes, children: readonly string[]): string[] {
  const pad = INDENT.repeat(depth);
  if (children.length === 0) return [`${pad}<${startTag(name, attributes)} />`];
  return [`${pad}<${startTag(name, attributes)}>`, ...children, `${pad}</${name}>`];
}

function textLine(depth: number, name: string, text: string): string {
  const pad = INDENT.repeat(depth);
  return text === '' ? `${pad}<${name} />` : `${pad}<${name}>${escapeText(text)}</${name}>`;
}

/**
 * The upstream stores its text HTML-escaped and its XML writer escapes it again, so `&` reaches the
 * wire as `&amp;amp;` and `'` as `&amp;apos;` (docs/upstream.md §5). This is the first of the two
 * escapes; the writer adds the second. URLs and merchandise captions are escaped once only, as in
 * the captured response.
 */
function storedText(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => STORED_ESCAPES[ch] ?? ch);
}

const STORED_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

/**
 * `item` is the caption as the upstream stores it, trailing spaces included. These are the padded
 * captions seen in captured responses; the others were captured unpadded (`Sweatshirt`, `Tote Bag`).
 */
const PADDED_ITEMS: ReadonlyMap<string, string> = new Map(
  ['Mug       ', 'Large Mug ', 'Mousepad ', 'White T-Shirt   ', 'Ornament (Round) '].map((padded) => [padded.trimEnd(), padded]),
);

function dollars(cents: number): string {
  return (cents / 100).toFixed(2);
}

function renderResultSet(result: ResultSet): string {
  const { matches, window } = result;
  const page = matches.slice(window.offset, window.offset + window.size);
  const totalProducts = matches.reduce((sum, match) => sum + match.products.length, 0);
  const root: Attributes = [
    ['totalDesigns', String(matches.length)],
    ['totalProducts', String(totalProducts)],
    ['startResult', String(window.offset)],
    ['resultLength', String(page.length)],
    ['version', '3'],
    ['sort', result.sort],
  ];
  return block(0, 'searchResultSet', root, [
    ...block(1, 'mainResults', [], page.flatMap(itemBlock)),
    ...block(1, 'searchQuery', [], [textLine(2, 'searchString', result.searchString)]),
    ...block(
      1,
      'subtopics',
      [],
      result.subtopics.map((topic) => textLine(2, 'subtopic', topic)),
    ),
  ]).join('\n');
}

function itemBlock({ design, products }: Match): string[] {
  const slug = searchWords(design.caption)[0] ?? 'design';
  const attributes: Attributes = [
    ['type', 'IMAGE'],
    ['mediaUrl', `http://images.cafepress.com/image/${design.mediaId}_125x125.jpg`],
    ['marketplaceUrl', `http://www.cafepress.com/buy/${slug}/-/pv_design_details/pg_1/id_${design.mediaId}/hlv_1`],
    ['mediaId', String(design.mediaId)],
  ];
  const productBlocks = products.flatMap((product) => productBlock(design, product));
  return block(2, 'searchResultItem', attributes, block(3, 'products', [['total', String(products.length)]], productBlocks));
}

function productBlock(design: Design, product: Product): string[] {
  const storeUrl = `http://www.cafepress.com/${design.store.id}`;
  const attributes: Attributes = [
    ['thumbnailUrl', `http://www.cafepress.com/cp/search/image.aspx?p=${product.productNumber}&i=${design.mediaId}`],
    ['marketplaceUrl', `${storeUrl}.${product.productNumber}`],
    ['productTypeNumber', String(product.merchandiseId)],
    ['item', PADDED_ITEMS.get(product.merchandiseCaption) ?? product.merchandiseCaption],
    ['price', `$${dollars(product.priceCents)}`],
    ['marketplacePrice', dollars(product.marketplacePriceCents)],
    ['productNumber', String(product.productNumber)],
    ['caption', storedText(product.caption)],
    ['sellerDescription', storedText(product.sellerDescription)],
    ['storeName', storedText(design.store.name)],
    ['storeUrl', storeUrl],
    // A design outside any section: empty name, and the section URL is the store's (docs/upstream.md §5).
    ['parentSectionName', storedText(design.section?.name ?? '')],
    ['parentSectionUrl', design.section ? `${storeUrl}/${design.section.id}` : storeUrl],
  ];
  return block(4, 'product', attributes, [
    ...block(
      5,
      'colors',
      [],
      product.colors.map((color) => textLine(6, 'color', color)),
    ),
    ...block(
      5,
      'sizes',
      [],
      product.sizes.map((size) => textLine(6, 'size', size)),
    ),
  ]);
}

function helpReply(error: DemoError, documentation: string): Reply {
  const body = [
    '<help>',
    `${INDENT}<exception-message>${escapeText(error.message)}</exception-message>`,
    `${INDENT}<documentation>${escapeText(documentation)}</documentation>`,
    '</help>',
  ].join('\n');
  return { status: error.status, headers: { ...error.headers, 'Content-Type': XML_CONTENT_TYPE }, body };
}
