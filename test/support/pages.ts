import type { UpstreamRequest } from '../../src/translate/plan.js';
import { parseXml } from '../../src/xml/parse.js';
import { attribute, childElements, type XmlElement } from '../../src/xml/tree.js';
import type { TestUpstream } from './fetch-options.js';
import { startStubUpstream, type StubUpstream } from './stub-upstream.js';

/** How a simulated endpoint names and counts its pages. */
export interface PageNaming {
  readonly pageParam: string;
  readonly sizeParam: string;
  readonly firstPage: number;
}

export const SEARCH_PAGES: PageNaming = { pageParam: 'pageNumber', sizeParam: 'resultsPerPage', firstPage: 1 };
export const STORE_PAGES: PageNaming = { pageParam: 'page', sizeParam: 'pageSize', firstPage: 0 };

/**
 * One page of a paged `.cp` endpoint holding `totalItems` items with ids 0, 1, …, as the upstream
 * writes it (no declaration, indented).
 */
export function pageDocument(totalItems: number, params: ReadonlyMap<string, string>, naming: PageNaming): string {
  const size = Number(params.get(naming.sizeParam) ?? 60);
  const page = Number(params.get(naming.pageParam) ?? naming.firstPage) - naming.firstPage;
  const first = page * size;
  const count = Math.max(0, Math.min(size, totalItems - first));
  const items = Array.from(
    { length: count },
    (_, i) => `    <searchResultItem type="IMAGE" mediaId="${first + i}">\n      <products total="1" />\n    </searchResultItem>\n`,
  ).join('');
  return (
    `<searchResultSet totalDesigns="${totalItems}" totalProducts="${totalItems}" startResult="${first}" resultLength="${count}" ` +
    `version="3" sort="by_score_desc">\n` +
    `  <mainResults>\n${items}  </mainResults>\n  <searchQuery>\n    <searchString>q</searchString>\n  </searchQuery>\n</searchResultSet>`
  );
}

/** A paged endpoint simulated in memory, every request recorded. */
export function pagedUpstream(totalItems: number, naming: PageNaming): TestUpstream & { readonly requests: UpstreamRequest[] } {
  const requests: UpstreamRequest[] = [];
  return {
    requests,
    async fetch(request) {
      requests.push(request);
      return parseXml(pageDocument(totalItems, new Map(request.params), naming));
    },
  };
}

/**
 * A `.cp` upstream on loopback that follows docs/upstream.md with the default paging profiles and
 * records what it is asked: the search endpoints page through `totalItems` items.
 */
export function recordingUpstream(totalItems: number): Promise<StubUpstream> {
  return startStubUpstream((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const naming = url.pathname.endsWith('/product.searchForProductsOfStore.cp') ? STORE_PAGES : SEARCH_PAGES;
    res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
    res.end(pageDocument(totalItems, new Map(url.searchParams), naming));
  });
}

export function itemIds(result: XmlElement): number[] {
  const main = childElements(result).find((child) => child.local === 'mainResults');
  return main ? childElements(main).map((item) => Number(attribute(item, 'mediaId'))) : [];
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
