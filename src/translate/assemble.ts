import { UpstreamError } from '../errors.js';
import { attributesOf, itemsOf, rootSpan, treeOf, unescapeAttribute, type CompactDocument, type Page } from '../xml/compact.js';
import { joined } from '../xml/pool.js';
import { attribute, childElements, type XmlElement } from '../xml/tree.js';
import type { PageShape, ItemWindow } from '../operations.js';
import { sliceStart, type PageRun } from './paging.js';

/**
 * Responses in, result out: several `searchResultSet` pages become one, under the first page's root,
 * with `startResult`/`resultLength` rewritten to describe what is returned. Everything else (other
 * attributes and their order, totals, searchQuery, subtopics, the items themselves) is kept as the
 * upstream wrote it. Pages that came through as compact bytes are cut and joined as bytes; if any had
 * to be parsed, all are handled as trees. Both give the same bytes (test/compact.test.ts).
 */

/** Where a page keeps its items: the container element (under the root) and the items' name. */
export type ItemsShape = Pick<PageShape, 'items' | 'item'>;

/** One page as the assemblers read it, whatever its form; `I` is an item. */
interface PageView<I> {
  /** A root attribute, decoded. */
  attribute(name: string): string | undefined;
  /** The items, in order; no container is an upstream failure. */
  items(): readonly I[];
  /** This page's root with `items` in its container and its counters describing them. */
  withItems(items: readonly I[], offset: number): Page;
}

function treeView(root: XmlElement, shape: ItemsShape): PageView<XmlElement> {
  const container = (): XmlElement | undefined => childElements(root).find((child) => child.local === shape.items);
  return {
    attribute: (name) => attribute(root, name),
    items() {
      const found = container();
      if (!found) throw new UpstreamError({ code: 'no_items', container: shape.items });
      return childElements(found).filter((child) => child.local === shape.item);
    },
    withItems: (items, offset) => {
      const counters = countersFor(items.length, offset);
      return {
        ...root,
        attributes: root.attributes.map((attr) =>
          Object.hasOwn(counters, attr.name) ? { name: attr.name, value: counters[attr.name] as string } : attr,
        ),
        children: root.children.map((child) =>
          child.type === 'element' && child.local === shape.items ? { ...child, children: [...items] } : child,
        ),
      };
    },
  };
}

/** `null` when the page has more than one container: the tree form decides what that means. */
function compactView(page: CompactDocument, shape: ItemsShape): PageView<Buffer> | null {
  const { bytes } = page;
  const root = rootSpan(page);
  const { containers, items: itemSpans } = itemsOf(bytes, root, shape.items, shape.item);
  if (containers.length > 1) return null;
  const container = containers[0];
  const attributes = attributesOf(bytes, root);
  return {
    attribute(name) {
      const found = attributes.find(([key]) => key === name);
      return found === undefined ? undefined : unescapeAttribute(found[1]);
    },
    items() {
      if (!container) throw new UpstreamError({ code: 'no_items', container: shape.items });
      return itemSpans.map((item) => bytes.subarray(item.start, item.end));
    },
    withItems(items, offset) {
      const item = container as NonNullable<typeof container>;
      const counters = countersFor(items.length, offset);
      const attributeText = attributes.map(([key, value]) => ` ${key}="${Object.hasOwn(counters, key) ? counters[key] : value}"`).join('');
      const rootTag = `<${page.rootName}${attributeText}>`;
      // Its start tag without `>` or ` />`, which depend on whether items follow.
      const open = bytes.subarray(item.start, item.startTagEnd - (item.empty ? 3 : 1));
      const content = items.length === 0 ? [open, EMPTY_END] : [open, GT, ...items, Buffer.from(`</${shape.items}>`)];
      const parts = [Buffer.from(rootTag), bytes.subarray(root.startTagEnd, item.start), ...content, bytes.subarray(item.end)];
      return { type: 'compact', rootName: page.rootName, bytes: joined(parts) };
    },
  };
}

const EMPTY_END = Buffer.from(' />');
const GT = Buffer.from('>');

function countersFor(count: number, offset: number): Readonly<Record<string, string>> {
  return { startResult: String(offset), resultLength: String(count) };
}

/** Compact views of every page, or tree views when any page is not compact (or not simple). */
function viewsOf(pages: readonly Page[], shape: ItemsShape): PageView<unknown>[] {
  const compact = pages.every((page) => page.type === 'compact') ? pages.map((page) => compactView(page as CompactDocument, shape)) : [];
  if (compact.length === pages.length && compact.every((view) => view !== null)) return compact as PageView<Buffer>[];
  return pages.map((page) => treeView(treeOf(page), shape));
}

/** `totalDesigns` of a page: how many items all pages hold together. */
export function totalItems(page: Page, shape: ItemsShape): number {
  return totalOf(viewsOf([page], shape)[0] as PageView<unknown>);
}

function totalOf(view: PageView<unknown>): number {
  const total = Number(view.attribute('totalDesigns'));
  if (!Number.isSafeInteger(total) || total < 0) throw new UpstreamError({ code: 'bad_total' });
  return total;
}

export function assembleWindow(pages: readonly Page[], window: ItemWindow, run: PageRun, shape: ItemsShape): Page {
  const views = viewsOf(pages, shape);
  const items = consistentItems(views, run.firstPage, run.pageSize, window.offset + window.count);
  const from = sliceStart(window, run);
  return firstOf(views).withItems(items.slice(from, from + window.count), window.offset);
}

/**
 * Every page of a list, in order from page 0: all its items or a failure, never fewer. The count is
 * checked against the last page's total, since a live catalog may change while the pages come in.
 */
export function assembleAll(pages: readonly Page[], pageSize: number, shape: ItemsShape): Page {
  const views = viewsOf(pages, shape);
  const items = consistentItems(views, 0, pageSize, 0);
  const total = totalOf(views[views.length - 1] ?? firstOf(views));
  if (items.length !== total) throw new UpstreamError({ code: 'count_mismatch', items: items.length, total });
  return firstOf(views).withItems(items, 0);
}

/**
 * The items of consecutive pages, after checking they line up: page `k` starts at item
 * `k × pageSize` (its `startResult`, where given), every page but the last is full, and the last
 * holds the items up to `neededEnd` that exist. An upstream that pages differently, or caps its pages
 * below the size asked for, would otherwise shift or silently truncate the result.
 */
function consistentItems<I>(views: readonly PageView<I>[], firstPage: number, pageSize: number, neededEnd: number): I[] {
  return views.flatMap((view, index) => {
    const offset = (firstPage + index) * pageSize;
    const items = view.items();
    const start = view.attribute('startResult');
    const last = index === views.length - 1;
    const fits = last ? items.length <= pageSize : items.length === pageSize || offset + items.length >= totalOf(view);
    if ((start !== undefined && Number(start) !== offset) || !fits) {
      throw new UpstreamError({ code: 'misaligned_page', offset, startResult: start, items: items.length, pageSize });
    }
    if (last && items.length < pageSize && offset + items.length < neededEnd) {
      const total = totalOf(view);
      if (offset + items.length < total) throw new UpstreamError({ code: 'short_page', offset, items: items.length, pageSize, total });
    }
    return items;
  });
}

function firstOf<V>(views: readonly V[]): V {
  const first = views[0];
  if (first === undefined) throw new RangeError('assembling a result needs at least one page');
  return first;
}
