/**
 * The one table of the legacy service: its five web methods, their parameters in declaration order,
 * and the replacement endpoint each one is answered from (legacy-interface.md §4, §9).
 *
 * Routing, SOAP and HTTP parameter binding, the WSDL, the help pages and the translators all read
 * this table; adding a parameter is one line here.
 */

/** XSD type of a parameter. `int` parameters are required (minOccurs=1); `string` ones optional. */
export type ParamType = 'string' | 'int';

export interface ParamSpec {
  readonly name: string;
  readonly type: ParamType;
}

export type UpstreamPath =
  | '/product.search.cp'
  | '/product.searchForProductsOfStore.cp'
  | '/product.searchForProduct.cp';

export type OperationName = 'StoreLookup' | 'StoreLookupPaged' | 'ProductLookup' | 'Search' | 'AdvancedSearch';

export interface OperationSpec {
  readonly name: OperationName;
  readonly params: readonly ParamSpec[];
  /** The replacement request the deprecated operation maps onto. */
  readonly replacement: UpstreamPath;
  /** Migration note shown in the WSDL documentation and on the help pages. */
  readonly migrationNote: string;
}

const str = (name: string): ParamSpec => ({ name, type: 'string' });
const int = (name: string): ParamSpec => ({ name, type: 'int' });

export const OPERATIONS: readonly OperationSpec[] = [
  {
    name: 'StoreLookup',
    params: [str('storeId'), str('apiKey'), str('version'), str('productTypes')],
    replacement: '/product.searchForProductsOfStore.cp',
    migrationNote: '',
  },
  {
    name: 'StoreLookupPaged',
    params: [str('storeId'), str('apiKey'), str('version'), str('productTypes'), int('pageIndex'), int('pageSize')],
    replacement: '/product.searchForProductsOfStore.cp',
    migrationNote: '',
  },
  {
    name: 'ProductLookup',
    params: [int('productNumber'), str('apiKey'), str('version')],
    replacement: '/product.searchForProduct.cp',
    migrationNote: '',
  },
  {
    name: 'Search',
    params: [str('query'), str('apiKey'), str('version')],
    replacement: '/product.search.cp',
    migrationNote: '',
  },
  {
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
    migrationNote:
      'Use page-based requesting instead of startResults and maxResults; parameter merchandiseIds replaces productTypes.',
  },
];

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

/** A bound argument: `null` is an absent string (or xsi:nil); ints are always numbers. */
export type ArgValue = string | number | null;

/** One call of a legacy operation, whatever binding it came in on. */
export interface LegacyCall {
  readonly operation: OperationSpec;
  readonly args: Readonly<Record<string, ArgValue>>;
}

export function stringArg(call: LegacyCall, name: string): string | null {
  const value = call.args[name];
  return typeof value === 'string' ? value : null;
}

export function intArg(call: LegacyCall, name: string): number {
  const value = call.args[name];
  return typeof value === 'number' ? value : 0;
}

/** The SOAP action of an operation: `{ns}/{Op}`, without a second `/` when the namespace ends in one. */
export function soapAction(namespace: string, op: OperationSpec): string {
  return namespace.endsWith('/') ? `${namespace}${op.name}` : `${namespace}/${op.name}`;
}
