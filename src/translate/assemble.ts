import { UpstreamError } from '../errors.js';
import { attribute, childElements, type XmlElement } from '../xml/tree.js';
import { sliceStart, type ItemWindow, type PageRun } from './paging.js';

/**
 * Responses in, result out: several `searchResultSet` pages become one, under the first page's root,
 * with `startResult`/`resultLength` rewritten to describe what is returned. Everything else (other
 * attributes and their order, totals, searchQuery, subtopics, the items themselves) is kept as the
 * upstream wrote it.
 */

const ITEMS_CONTAINER = 'mainResults';

export function itemsOf(page: XmlElement): XmlElement[] {
  const container = childElements(page).find((child) => child.local === ITEMS_CONTAINER);
  if (!container) {
    throw new UpstreamError({ code: 'no_items', container: ITEMS_CONTAINER });
  }
  return childElements(container);
}

/** `totalDesigns` of a page: how many items all pages hold together. */
export function totalItems(page: XmlElement): number {
  const total = Number(attribute(page, 'totalDesigns'));
  if (!Number.isSafeInteger(total) || total < 0) {
    throw new UpstreamError({ code: 'bad_total' });
  }
  return total;
}

export function assembleWindow(pages: readonly XmlElement[], window: ItemWindow, run: PageRun): XmlElement {
  const items = consistentItems(pages, run.firstPage, run.pageSize);
  const from = sliceStart(window, run);
  return withItems(firstOf(pages), items.slice(from, from + window.count), window.offset);
}

/**
 * Every page of a list, in order from page 0: all its items or a failure, never fewer. The count is
 * checked against the last page's total, since a live catalog may change while the pages come in.
 */
export function assembleAll(pages: readonly XmlElement[], pageSize: number): XmlElement {
  const items = consistentItems(pages, 0, pageSize);
  const total = totalItems(pages[pages.length - 1] ?? firstOf(pages));
  if (items.length !== total) {
    throw new UpstreamError({ code: 'count_mismatch', items: items.length, total });
  }
  return withItems(firstOf(pages), items, 0);
}

/**
 * The items of consecutive pages, after checking they line up: page `k` starts at item
 * `k × pageSize` (its `startResult`, where given), and every page but the last is full. An upstream
 * that pages differently would otherwise shift or silently truncate the result.
 */
function consistentItems(pages: readonly XmlElement[], firstPage: number, pageSize: number): XmlElement[] {
  return pages.flatMap((page, index) => {
    const offset = (firstPage + index) * pageSize;
    const items = itemsOf(page);
    const start = attribute(page, 'startResult');
    const last = index === pages.length - 1;
    const fits = last ? items.length <= pageSize : items.length === pageSize || offset + items.length >= totalItems(page);
    if ((start !== undefined && Number(start) !== offset) || !fits) {
      throw new UpstreamError({ code: 'misaligned_page', offset, startResult: start, items: items.length, pageSize });
    }
    return items;
  });
}

function firstOf(pages: readonly XmlElement[]): XmlElement {
  const first = pages[0];
  if (!first) throw new RangeError('assembling a result needs at least one page');
  return first;
}

function withItems(root: XmlElement, items: XmlElement[], offset: number): XmlElement {
  const counters: Readonly<Record<string, string>> = { startResult: String(offset), resultLength: String(items.length) };
  return {
    ...root,
    attributes: root.attributes.map((attr) => (attr.name in counters ? { name: attr.name, value: counters[attr.name] as string } : attr)),
    children: root.children.map((child) =>
      child.type === 'element' && child.local === ITEMS_CONTAINER ? { ...child, children: items } : child,
    ),
  };
}
