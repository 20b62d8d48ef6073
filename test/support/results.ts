import { expect } from 'vitest';
import type { Catalog, Design, Product } from '../../src/demo/catalog.js';
import { parseXml } from '../../src/xml/parse.js';
import { attribute, childElements, innerText, type XmlElement } from '../../src/xml/tree.js';
import { writeXml } from '../../src/xml/write.js';

/**
 * Reading the `searchResultSet` a client got back, and finding in the demo catalog what it should
 * hold: shared by the tests that drive real SOAP clients (soap npm, PHP, zeep, .NET on Mono).
 */

// --- Reading results ---------------------------------------------------------------------------------

export interface ResultProduct {
  readonly productNumber: number;
  readonly productTypeNumber: number;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface ResultItem {
  readonly mediaId: number;
  readonly products: readonly ResultProduct[];
  /** The `productNumber` of each product, in order. */
  readonly productNumbers: readonly number[];
  /** The `storeName` of each product, decoded once (the upstream's own escape left in). */
  readonly storeNames: readonly (string | undefined)[];
  /** The item re-written, for comparing items across calls of one client. */
  readonly xml: string;
}

export interface ResultSet {
  /** Every attribute of `searchResultSet` as written, namespace declarations included. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly items: readonly ResultItem[];
  /** `searchQuery/searchString`, where the result has one. */
  readonly searchString: string | undefined;
}

/** The first child element called `local`, in any namespace. */
export function childNamed(node: XmlElement, local: string): XmlElement | undefined {
  return childElements(node).find((element) => element.local === local);
}

function attributesOf(node: XmlElement): Record<string, string> {
  return Object.fromEntries(node.attributes.map((attr) => [attr.name, attr.value]));
}

/** Reads `root`, which must be the un-namespaced `searchResultSet` of docs/wire.md §4. */
export function readResultSet(root: XmlElement): ResultSet {
  expect(root.local).toBe('searchResultSet');
  expect(root.uri).toBe('');
  const items = childElements(childNamed(root, 'mainResults') ?? root).filter((item) => item.local === 'searchResultItem');
  const searchQuery = childNamed(root, 'searchQuery');
  const searchString = searchQuery ? childNamed(searchQuery, 'searchString') : undefined;
  return {
    attributes: attributesOf(root),
    items: items.map((item) => {
      const products = childElements(childNamed(item, 'products') ?? item).filter((product) => product.local === 'product');
      return {
        mediaId: Number(attribute(item, 'mediaId')),
        products: products.map((product) => ({
          productNumber: Number(attribute(product, 'productNumber')),
          productTypeNumber: Number(attribute(product, 'productTypeNumber')),
          attributes: attributesOf(product),
        })),
        productNumbers: products.map((product) => Number(attribute(product, 'productNumber'))),
        storeNames: products.map((product) => attribute(product, 'storeName')),
        xml: writeXml(item, { indent: false }),
      };
    }),
    searchString: searchString ? innerText(searchString) : undefined,
  };
}

/** `query` searched through the proxy's own HTTP GET binding: what a SOAP client's Search should match. */
export async function httpGetSearch(proxyUrl: string, query: string): Promise<ResultSet> {
  const response = await fetch(`${proxyUrl}/index.asmx/Search?query=${encodeURIComponent(query)}`);
  expect(response.status).toBe(200);
  return readResultSet(parseXml(await response.text()));
}

/** Ids in ascending order, for comparing results whose order is not the point. */
export const sorted = (ids: readonly number[]): number[] => [...ids].sort((a, b) => a - b);

// --- The catalog ---------------------------------------------------------------------------------------

export interface StoreDesigns {
  readonly id: string;
  /** In catalog order. */
  readonly designs: Design[];
}

/** The stores that hold any design, in catalog order. */
function nonEmptyStores(catalog: Catalog): StoreDesigns[] {
  return catalog.stores
    .map((store) => ({ id: store.id, designs: catalog.designs.filter((design) => design.store === store) }))
    .filter((store) => store.designs.length > 0);
}

/** The store with the most designs (the first of equals): StoreLookup takes several upstream pages. */
export function largestStore(catalog: Catalog): StoreDesigns {
  return nonEmptyStores(catalog).reduce((largest, store) => (store.designs.length > largest.designs.length ? store : largest));
}

/** The store with the fewest designs, but some (the last of equals). */
export function smallestStore(catalog: Catalog): StoreDesigns {
  return nonEmptyStores(catalog).reduce((smallest, store) => (store.designs.length <= smallest.designs.length ? store : smallest));
}

/**
 * ProductLookup's case: the second product of a multi-product design in a store whose name holds
 * `&`, so the result shows the upstream's double escaping (docs/upstream.md §5).
 */
export function ampersandProduct(catalog: Catalog): { design: Design; product: Product } {
  const design = catalog.designs.find((candidate) => candidate.store.name.includes('&') && candidate.products.length > 1);
  if (!design?.products[1]) throw new Error('the catalog should have a multi-product design in a store whose name holds "&"');
  return { design, product: design.products[1] };
}
