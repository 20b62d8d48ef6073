import { OperationError } from '../errors.js';
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
    throw new OperationError(`The upstream answer has no ${ITEMS_CONTAINER} element.`, 'upstream_invalid');
  }
  return childElements(container);
}

/** `totalDesigns` of a page: how many items all pages hold together. */
export function totalItems(page: XmlElement): number {
  const total = Number(attribute(page, 'totalDesigns'));
  if (!Number.isSafeInteger(total) || total < 0) {
    throw new OperationError('The upstream answer has no valid totalDesigns attribute.', 'upstream_invalid');
  }
  return total;
}

export function assembleWindow(pages: readonly XmlElement[], window: ItemWindow, run: PageRun): XmlElement {
  const items = pages.flatMap(itemsOf);
  const from = sliceStart(window, run);
  return withItems(firstOf(pages), items.slice(from, from + window.count), window.offset);
}

export function assembleAll(pages: readonly XmlElement[]): XmlElement {
  return withItems(firstOf(pages), pages.flatMap(itemsOf), 0);
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
