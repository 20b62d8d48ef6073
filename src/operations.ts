/**
 * The one table of the legacy service: its five web methods, their parameters in declaration order,
 * the replacement endpoint each one is answered from, and the translator that turns a call into the
 * upstream requests answering it (docs/wire.md §0, docs/upstream.md §2).
 *
 * Routing, SOAP and HTTP parameter binding, the WSDL, the help pages, the configuration schema (paging
 * profiles) and the demo upstream all read these tables. A new operation is one row here, plus its
 * endpoint in the demo upstream when it needs a new one (docs/architecture.md).
 *
 * The bottom of the house: this file imports nothing. A translator asks its replacement endpoint for
 * requests through a `Target` (below), which src/translate/plan.ts makes; what comes back is a plan
 * the table never looks inside.
 */

// --- The replacement endpoints ---------------------------------------------------------------------

/**
 * The elements of an endpoint's page (docs/upstream.md §5, §11.2): its root, the element holding
 * the items, and the items' own name. The defaults of `upstream.answers` in the configuration (a key
 * older than the glossary in docs/architecture.md, kept so that configurations written for it load).
 */
export interface PageShape {
  readonly root: string;
  readonly items: string;
  readonly item: string;
}

interface DefaultPaging {
  readonly pageParam: string;
  readonly sizeParam: string;
  readonly firstPage: 0 | 1;
  readonly maxPageSize: number;
}

const SEARCH_RESULT_SET = { root: 'searchResultSet', items: 'mainResults', item: 'searchResultItem' } as const satisfies PageShape;

/**
 * How long an endpoint's pages may be served from the page cache (docs/fleet.md): fresh, then stale
 * while one background request refreshes it, and stale instead of a fault while the upstream fails.
 * Searches follow the catalog within a minute; a store's list and a product change more slowly.
 */
interface DefaultFreshness {
  readonly freshSeconds: number;
  readonly staleWhileRevalidateSeconds: number;
  readonly staleIfErrorSeconds: number;
}

/**
 * The `.cp` endpoints, each with the shape of its pages (`upstream.answers` in the configuration) and
 * how long they may be cached (`cache.endpoints`).
 * A paged endpoint names its page parameters, the number of its first page and its largest page
 * (docs/upstream.md §3, §11.1): the defaults of its profile in the configuration (`paging.profiles`,
 * whose schema is built from this table). Only a paged endpoint can answer windows and whole lists.
 */
export const UPSTREAM_ENDPOINTS = {
  '/product.search.cp': {
    paging: { pageParam: 'pageNumber', sizeParam: 'resultsPerPage', firstPage: 1, maxPageSize: 100 },
    page: SEARCH_RESULT_SET,
    freshness: { freshSeconds: 60, staleWhileRevalidateSeconds: 60, staleIfErrorSeconds: 3600 },
  },
  '/product.searchForProductsOfStore.cp': {
    paging: { pageParam: 'page', sizeParam: 'pageSize', firstPage: 0, maxPageSize: 256 },
    page: SEARCH_RESULT_SET,
    freshness: { freshSeconds: 300, staleWhileRevalidateSeconds: 300, staleIfErrorSeconds: 21_600 },
  },
  '/product.searchForProduct.cp': {
    paging: null,
    page: SEARCH_RESULT_SET,
    freshness: { freshSeconds: 300, staleWhileRevalidateSeconds: 300, staleIfErrorSeconds: 21_600 },
  },
} as const satisfies Readonly<
  Record<string, { readonly paging: DefaultPaging | null; readonly page: PageShape; readonly freshness: DefaultFreshness }>
>;

export type UpstreamPath = keyof typeof UPSTREAM_ENDPOINTS;
export type PagedPath = { [P in UpstreamPath]: (typeof UPSTREAM_ENDPOINTS)[P]['paging'] extends null ? never : P }[UpstreamPath];

export const PAGED_PATHS: readonly PagedPath[] = (Object.keys(UPSTREAM_ENDPOINTS) as UpstreamPath[]).filter(
  (path): path is PagedPath => UPSTREAM_ENDPOINTS[path].paging !== null,
);

// --- Parameters ------------------------------------------------------------------------------------

/** XSD type of a parameter. `int` parameters are required (minOccurs=1); `string` ones optional. */
export type ParamType = 'string' | 'int';

export interface ParamSpec<N extends string = string, T extends ParamType = ParamType> {
  readonly name: N;
  readonly type: T;
}

const str = <const N extends string>(name: N): ParamSpec<N, 'string'> => ({ name, type: 'string' });
const int = <const N extends string>(name: N): ParamSpec<N, 'int'> => ({ name, type: 'int' });

/** A bound argument: `null` is an absent string (or xsi:nil); ints are always numbers (0 when absent). */
export type ArgValue = string | number | null;
type ArgOf<T extends ParamType> = T extends 'int' ? number : string | null;

/** The typed arguments of an operation with parameters `P`, as its translator reads them. */
export type ArgsOf<P extends readonly ParamSpec[]> = { readonly [S in P[number] as S['name']]: ArgOf<S['type']> };

/** Every legacy operation takes these (legacy interface: authentication and versioning). */
type CommonParams = readonly [ParamSpec<'apiKey', 'string'>, ParamSpec<'version', 'string'>];

/** Empty values are treated as absent: HTTP clients that send every form field send `sort=`. */
export function present(value: string | null): string | null {
  return value === null || value.trim() === '' ? null : value;
}

// --- What a translator asks for ----------------------------------------------------------------------

/** Parameters as a translator lists them: one whose value is `null` is left out of the request. */
export type TranslatedParams = readonly (readonly [string, string | null])[];

/** Items `[offset, offset + count)` of a paged endpoint's list, 0-based. */
export interface ItemWindow {
  readonly offset: number;
  /** Items wanted; 0 still needs one page, for the totals. */
  readonly count: number;
}

/** The replacement endpoint of one call, as its translator sees it; `Plan` is what its requests make. */
export interface Target<Plan> {
  /** One request; its page is the result. */
  single(params: TranslatedParams): Plan;
  /** `productTypes` → `merchandiseIds` (docs/upstream.md §11.4). */
  merchandiseIds(productTypes: string | null): string | null;
  /** Legacy sort → upstream sort (docs/upstream.md §11.5). */
  sort(legacy: string | null): string | null;
}

/** A paged endpoint also serves item windows and whole lists (docs/upstream.md §3, §11.3). */
export interface PagedTarget<Plan> extends Target<Plan> {
  /** StoreLookupPaged's `pageIndex`/`pageSize` as an item window; the index counts from `paging.legacyPageIndexBase`. */
  legacyPageWindow(pageIndex: number, pageSize: number): ItemWindow;
  /** AdvancedSearch's `startResults`/`maxResults` as an item window; null when the call names neither. */
  itemWindow(startResults: string | null, maxResults: string | null): ItemWindow | null;
  window(window: ItemWindow, params: TranslatedParams): Plan;
  /** Every page of the list, `paging.storeLookupPageSize` items each. */
  allPages(params: TranslatedParams): Plan;
}

export type TargetOf<R extends UpstreamPath, Plan> = R extends PagedPath ? PagedTarget<Plan> : Target<Plan>;

/**
 * A translator as the table keeps it: its arguments bound and typed from the row's parameters (an
 * absent string null, an absent int 0), and a target for the row's endpoint (src/translate/plan.ts).
 */
export type Translator = <Plan>(args: Readonly<Record<string, ArgValue>>, to: PagedTarget<Plan>) => Plan;

// --- Operations ------------------------------------------------------------------------------------

/**
 * One line of an operation's parameter mapping, as the help pages, the WSDL documentation and the
 * migration report show it to whoever moves a client over. `{page}` and `{size}` in `replacement`
 * stand for the page parameters of the endpoint's paging profile (`parameterMapping` fills them in).
 */
export interface ParamMapping {
  /** The legacy parameter(s), comma-separated. */
  readonly legacy: string;
  /** The replacement's parameter(s), comma-separated; empty when nothing replaces the legacy one. */
  readonly replacement: string;
  readonly note: string;
}

/** Every operation names its caller and version so (docs/upstream.md §1, §11.6, §11.7). */
const COMMON_MAPPING: readonly ParamMapping[] = [
  { legacy: 'apiKey', replacement: 'appKey', note: 'the application key of the caller' },
  { legacy: 'version', replacement: 'v', note: 'the API version of the replacement endpoint, not of the legacy service' },
];

interface OperationShape {
  readonly params: readonly ParamSpec[];
  /** The replacement endpoint the deprecated operation maps onto. */
  readonly replacement: UpstreamPath;
  /** Migration note shown in the WSDL documentation and on the help pages. */
  readonly migrationNote: string;
  /** How the parameters of a call become those of its replacement, `apiKey` and `version` included. */
  readonly mapping: readonly ParamMapping[];
  /** Call in, plan out, no I/O. */
  readonly translate: Translator;
}

export interface OperationSpec extends OperationShape {
  readonly name: OperationName;
}

interface OperationRow<N extends string, P extends readonly ParamSpec[], R extends UpstreamPath> {
  readonly name: N;
  readonly params: P;
  readonly replacement: R;
  readonly migrationNote?: string;
  /** The operation's own parameters; `apiKey` and `version` are added. */
  readonly mapping: readonly ParamMapping[];
  /** Only a paged replacement offers windows and whole lists: the type checker holds translators to that. */
  readonly translate: <Plan>(args: ArgsOf<P>, to: TargetOf<R, Plan>) => Plan;
}

/**
 * What the type checker holds a row to: parameters written out where their names are known (a list
 * typed only as `ParamSpec[]` would let any argument name through), `apiKey` and `version` among them.
 */
type RowCheck<P extends readonly ParamSpec[]> = string extends P[number]['name']
  ? { readonly params: 'write the parameters out in the row, so that their names are checked' }
  : ArgsOf<P> extends ArgsOf<CommonParams>
    ? unknown
    : { readonly missing: 'apiKey and version' };

/** A row of the table. */
function operation<const N extends string, const P extends readonly ParamSpec[], const R extends UpstreamPath>(
  row: OperationRow<N, P, R> & RowCheck<P>,
): OperationShape & { readonly name: N } {
  return {
    name: row.name,
    params: row.params,
    replacement: row.replacement,
    migrationNote: row.migrationNote ?? '',
    mapping: [...row.mapping, ...COMMON_MAPPING],
    // Sound by construction: src/translate/plan.ts passes exactly the parameters `P` declares, typed as
    // declared, and a target that offers windows and lists, which only a paged `R` lets the row see.
    translate: row.translate as unknown as Translator,
  };
}

const PRODUCT_TYPES_MAPPING: ParamMapping = {
  legacy: 'productTypes',
  replacement: 'merchandiseIds',
  note: 'the ids of the product types, comma-separated (mapping.merchandise)',
};
const STORE_MAPPING: readonly ParamMapping[] = [{ legacy: 'storeId', replacement: 'storeId', note: 'the same id' }, PRODUCT_TYPES_MAPPING];

const storeParams = <Plan>(args: { readonly storeId: string | null; readonly productTypes: string | null }, to: Target<Plan>) =>
  [
    ['storeId', present(args.storeId)],
    ['merchandiseIds', to.merchandiseIds(args.productTypes)],
  ] as const;

/** In the service's method order (the order of the WSDL and of `legacy_calls_total` dashboards). */
export const OPERATIONS = [
  operation({
    name: 'StoreLookup',
    params: [str('storeId'), str('apiKey'), str('version'), str('productTypes')],
    replacement: '/product.searchForProductsOfStore.cp',
    mapping: [
      ...STORE_MAPPING,
      {
        legacy: '',
        replacement: '{page}, {size}',
        note: 'one legacy call returned the whole store: request its pages until the total is reached',
      },
    ],
    translate: (args, to) => to.allPages(storeParams(args, to)),
  }),
  operation({
    name: 'StoreLookupPaged',
    params: [str('storeId'), str('apiKey'), str('version'), str('productTypes'), int('pageIndex'), int('pageSize')],
    replacement: '/product.searchForProductsOfStore.cp',
    mapping: [
      ...STORE_MAPPING,
      { legacy: 'pageIndex', replacement: '{page}', note: 'the same page; the legacy pageIndex counts from paging.legacyPageIndexBase' },
      { legacy: 'pageSize', replacement: '{size}', note: "the same size, up to the endpoint's largest page" },
    ],
    translate: (args, to) => to.window(to.legacyPageWindow(args.pageIndex, args.pageSize), storeParams(args, to)),
  }),
  operation({
    name: 'ProductLookup',
    params: [int('productNumber'), str('apiKey'), str('version')],
    replacement: '/product.searchForProduct.cp',
    mapping: [{ legacy: 'productNumber', replacement: 'productId', note: 'the same number' }],
    translate: (args, to) => to.single([['productId', String(args.productNumber)]]),
  }),
  operation({
    name: 'Search',
    params: [str('query'), str('apiKey'), str('version')],
    replacement: '/product.search.cp',
    mapping: [{ legacy: 'query', replacement: 'query', note: 'the same text' }],
    translate: (args, to) => to.single([['query', present(args.query)]]),
  }),
  operation({
    name: 'AdvancedSearch',
    params: [
      str('query'),
      str('apiKey'),
      str('version'),
      str('productTypes'),
      str('startResults'),
      str('maxResults'),
      str('maxProductsPerDesign'),
      str('sort'),
    ],
    replacement: '/product.search.cp',
    migrationNote: 'Use page-based requesting instead of startResults and maxResults; parameter merchandiseIds replaces productTypes.',
    mapping: [
      { legacy: 'query', replacement: 'query', note: 'the same text' },
      PRODUCT_TYPES_MAPPING,
      {
        legacy: 'startResults, maxResults',
        replacement: '{page}, {size}',
        note: 'request the pages that cover the items from startResults on, and keep maxResults of them',
      },
      { legacy: 'maxProductsPerDesign', replacement: 'maxProductsPerDesign', note: 'the same number' },
      { legacy: 'sort', replacement: 'sort', note: 'the sort names of the replacement (by_score_desc, by_date_desc)' },
    ],
    translate: (args, to) => {
      const params = [
        ['query', present(args.query)],
        ['merchandiseIds', to.merchandiseIds(args.productTypes)],
        ['maxProductsPerDesign', present(args.maxProductsPerDesign)],
        ['sort', to.sort(args.sort)],
      ] as const;
      // Neither startResults nor maxResults: the upstream's own first page, as the caller asked for no window.
      const window = to.itemWindow(args.startResults, args.maxResults);
      return window === null ? to.single(params) : to.window(window, params);
    },
  }),
] as const;

export type OperationName = (typeof OPERATIONS)[number]['name'];

const byName = new Map<string, OperationSpec>(OPERATIONS.map((op) => [op.name, op]));
const byLowerName = new Map<string, OperationSpec>(OPERATIONS.map((op) => [op.name.toLowerCase(), op]));

export function findOperation(name: string): OperationSpec | undefined {
  return byName.get(name);
}

/** The operation whose name differs from `name` only in case, for the ASMX case-mismatch error. */
export function findOperationIgnoringCase(name: string): OperationSpec | undefined {
  return byLowerName.get(name.toLowerCase());
}

/** The documentation sentence every operation carries: deprecated, and what replaces it. */
export function deprecationText(op: OperationSpec): string {
  const note = op.migrationNote === '' ? '' : ` ${op.migrationNote}`;
  return `Deprecated. Use ${op.replacement} instead.${note}`;
}

/** The operation's parameter mapping with the page parameters of its endpoint's paging profile filled in. */
export function parameterMapping(
  op: OperationSpec,
  profiles: Readonly<Record<PagedPath, { readonly pageParam: string; readonly sizeParam: string }>>,
): ParamMapping[] {
  const profile = (PAGED_PATHS as readonly UpstreamPath[]).includes(op.replacement) ? profiles[op.replacement as PagedPath] : null;
  return op.mapping.map((line) => ({
    ...line,
    replacement:
      profile === null ? line.replacement : line.replacement.replace('{page}', profile.pageParam).replace('{size}', profile.sizeParam),
  }));
}

/** The SOAP action of an operation: `{ns}/{Op}`, without a second `/` when the namespace ends in one. */
export function soapAction(namespace: string, op: OperationSpec): string {
  return namespace.endsWith('/') ? `${namespace}${op.name}` : `${namespace}/${op.name}`;
}

// --- Calls -----------------------------------------------------------------------------------------

/** What every call says about its caller: its apiKey (for the upstream and the caller's name) and version. */
export interface Credentials {
  readonly apiKey: string | null;
  readonly version: string | null;
}

/**
 * One call of a legacy operation, whatever binding it came in on; `args` holds every parameter, and
 * `credentials` what the call says of its caller, read once from them as the call is made.
 */
export interface LegacyCall {
  readonly operation: OperationSpec;
  readonly args: Readonly<Record<string, ArgValue>>;
  readonly credentials: Credentials;
}

/** The call of `operation` with `args`, as a binding read them. */
export function legacyCall(operation: OperationSpec, args: Readonly<Record<string, ArgValue>>): LegacyCall {
  const { apiKey, version } = args;
  const credentials = { apiKey: typeof apiKey === 'string' ? apiKey : null, version: typeof version === 'string' ? version : null };
  return { operation, args, credentials };
}
