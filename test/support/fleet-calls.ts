import type { Catalog } from '../../src/demo/catalog.js';
import { CONNECTION_CLOSED, TIMED_OUT, UNABLE_TO_CONNECT } from '../../src/messages.js';
import { type CallBinding, CALL_BINDINGS } from './calls.js';
import type { CallResult } from './fleet.js';

/**
 * The calls a fleet is loaded with, and what their replies are (test/fleet.test.ts, test/fleet-kills.test.ts,
 * bench/chaos.ts): every operation over every binding, and the tests of a reply a caller gets.
 */

export const API_KEY = 'fleet-caller-key';

export interface CallSpec {
  readonly op: string;
  readonly binding: CallBinding;
  readonly params: Readonly<Record<string, string>>;
}

export const nameOf = (spec: CallSpec): string => `${spec.op} over ${spec.binding} ${JSON.stringify(spec.params)}`;

/**
 * Every operation over every binding (twenty calls), with a store and a product the demo catalog has:
 * the smallest store, and a search of 30 items rather than the largest pages, so that two cores shared
 * with the rest of the suite carry 200 calls a second.
 */
export function everyCall(catalog: Catalog): CallSpec[] {
  const designs = (storeId: string): number => catalog.designs.filter((design) => design.store.id === storeId).length;
  const storeId = catalog.stores.map((store) => store.id).sort((a, b) => designs(a) - designs(b))[0]!;
  const productNumber = String(catalog.designs[42]!.products[0]!.productNumber);
  const operations: readonly [string, Record<string, string>][] = [
    ['Search', { query: 'love', apiKey: API_KEY }],
    ['AdvancedSearch', { query: 'dog', apiKey: API_KEY, productTypes: 'Mug', startResults: '5', maxResults: '10', sort: 'by-date-desc' }],
    ['StoreLookup', { storeId, apiKey: API_KEY }],
    ['StoreLookupPaged', { storeId, apiKey: API_KEY, pageIndex: '0', pageSize: '10' }],
    ['ProductLookup', { productNumber, apiKey: API_KEY }],
  ];
  return operations.flatMap(([op, params]) => CALL_BINDINGS.map((binding) => ({ op, binding, params })));
}

/** The operation's result, as its binding frames it (docs/wire.md §4). */
export function succeeded(spec: CallSpec, result: CallResult): boolean {
  if (result.status !== 200 || !result.body.includes('<searchResultSet ') || !result.body.includes('</searchResultSet>')) return false;
  if (spec.binding === 'soap11' || spec.binding === 'soap12') return result.body.includes(`<${spec.op}Result>`);
  return true;
}

/** ASP.NET's 503 Server Too Busy with Retry-After: a call shed, which a legacy client retries. */
export function shed(result: CallResult): boolean {
  return result.status === 503 && /^\d+$/.test(result.headers?.get('retry-after') ?? '');
}

/** The legacy fault `message` (a WebException's text), as each binding says it (docs/wire.md §5). */
function legacyFault(spec: CallSpec, result: CallResult, message: string): boolean {
  if (result.status !== 500) return false;
  if (spec.binding === 'httpGet' || spec.binding === 'httpPost') return result.body === `${message}\r\n`;
  return result.body.includes(`Server was unable to process request. ---&gt; ${message}</`);
}

/** The legacy fault for an upstream that cannot be connected to (docs/wire.md §5). */
export function unreachableFault(spec: CallSpec, result: CallResult): boolean {
  return legacyFault(spec, result, UNABLE_TO_CONNECT);
}

/**
 * The legacy fault for an upstream that is not there: refused, its connection closed under a request,
 * or too slow; what a caller of the old service got when the backend behind it was down.
 */
export function upstreamDownFault(spec: CallSpec, result: CallResult): boolean {
  return [UNABLE_TO_CONNECT, CONNECTION_CLOSED, TIMED_OUT].some((message) => legacyFault(spec, result, message));
}

/** A line per call for a failure message: what, when, and what came back. */
export function told(result: CallResult): string {
  const reply = result.status === null ? result.error : `${result.status} ${result.body.slice(0, 160).replace(/\s+/g, ' ')}`;
  return `${result.what} sent at ${Math.round(result.sentAt)} ms, ${Math.round(result.durationMs)} ms: ${reply}`;
}
