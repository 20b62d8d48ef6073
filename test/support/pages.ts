import type { Fetcher } from '../../src/proxy.js';
import type { UpstreamRequest } from '../../src/translate/plan.js';
import { parseXml } from '../../src/xml/parse.js';
import { attribute, childElements, type XmlElement } from '../../src/xml/tree.js';

/**
 * A paged `.cp` endpoint simulated in memory: `items` item ids, served page by page as
 * searchResultSet documents, every request recorded.
 */
export function pagedUpstream(
  totalItems: number,
  profile: { pageParam: string; sizeParam: string; firstPage: number },
): Fetcher & { readonly requests: UpstreamRequest[] } {
  const requests: UpstreamRequest[] = [];
  return {
    requests,
    async fetch(request) {
      requests.push(request);
      const params = new Map(request.params);
      const size = Number(params.get(profile.sizeParam) ?? 60);
      const page = Number(params.get(profile.pageParam) ?? profile.firstPage) - profile.firstPage;
      const first = page * size;
      const ids = Array.from({ length: Math.max(0, Math.min(size, totalItems - first)) }, (_, i) => first + i);
      const items = ids.map((id) => `<searchResultItem type="IMAGE" mediaId="${id}"><products total="1" /></searchResultItem>`).join('');
      return parseXml(
        `<searchResultSet totalDesigns="${totalItems}" totalProducts="${totalItems}" startResult="${first}" resultLength="${ids.length}" version="3" sort="by_score_desc"><mainResults>${items}</mainResults><searchQuery><searchString>q</searchString></searchQuery></searchResultSet>`,
      );
    },
  };
}

export function itemIds(result: XmlElement): number[] {
  const main = childElements(result).find((child) => child.local === 'mainResults');
  return main ? childElements(main).map((item) => Number(attribute(item, 'mediaId'))) : [];
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
