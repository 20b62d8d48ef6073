import { readFileSync } from 'node:fs';
import { parseXml } from './parse.js';
import { giveBack, lend, ownCopy } from './pool.js';
import type { XmlElement } from './tree.js';
import { XML_DECLARATION } from './write.js';

/**
 * The fast path for upstream pages: a document in the canonical subset of XML is passed through as
 * bytes, never decoded, turned into a tree and written back. The canonical subset is what the writer
 * (src/xml/write.ts) would write unchanged: no namespaces, no DTD, comments, CDATA or processing
 * instructions; attributes in double quotes, one space apart; only the escapes the writer itself
 * uses; empty elements as `<x />`. For such a document, the compact bytes (whitespace-only text
 * between tags dropped, as a default-loaded XmlDocument drops it) are byte for byte what parsing and
 * writing would give, and its checks (well-formed, no DTD, not cut short, one root) are the parser's
 * for that subset. Anything outside it returns `null`: the caller decodes and parses the whole
 * document as before, with the same results and faults.
 *
 * The check is one pass over the UTF-8 bytes in WebAssembly (src/xml/wasm/compact.ts, built from
 * AssemblyScript into dist/src/xml/compact.wasm): a regular expression per token cost a fifth of a
 * call, and the bytes never need to become a string on the way to the client.
 */

export interface CompactDocument {
  readonly type: 'compact';
  /** The root element in UTF-8, whitespace-only text between tags dropped. */
  readonly bytes: Buffer;
  readonly rootName: string;
  /**
   * The page cache's own bytes, held in this instance's memory past the call and never lent by the
   * pool: what is written from them may be kept with them (src/memo/replies.ts).
   */
  readonly kept?: true;
}

/** An upstream page: passed through as compact bytes, or parsed into a tree when it had to be. */
export type Page = XmlElement | CompactDocument;

/** What this module uses of the WebAssembly API, which @types/node 20 does not declare. */
declare const WebAssembly: {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object) => { readonly exports: object };
};

interface CompactExports {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  /** Where the root name and then the page go. */
  base(): number;
  /** The compact page's length, written from `base()`, or -1 for the slow path. */
  compact(rootLength: number, length: number): number;
  /** Where `indent` writes the document of `length` bytes at `base()`. */
  indentedBase(length: number): number;
  /** The indented document's length. */
  indent(length: number): number;
}

/**
 * Built next to this module in dist/; the TypeScript sources (run by the tests) find it there too.
 * Loaded synchronously once: a 2 KB module, compiled in well under a millisecond.
 */
const WASM_FILE = new URL(import.meta.url.endsWith('.ts') ? '../../dist/src/xml/compact.wasm' : 'compact.wasm', import.meta.url);
let instance: CompactExports | undefined;

/**
 * Loads the pass now: an instance calls ready only with it (src/server/health.ts), so a build without
 * the module fails at start, not on every call as a read error of the upstream's page.
 */
export function loadCompactPass(): void {
  exportsOf();
}

function exportsOf(): CompactExports {
  instance ??= new WebAssembly.Instance(new WebAssembly.Module(readFileSync(WASM_FILE))).exports as CompactExports;
  return instance;
}

const PAGE_SIZE = 65_536;

/** The page is as large as the response size limit lets it be: the memory grows to hold it, and stays. */
function reserve(wasm: CompactExports, end: number): void {
  const size = wasm.memory.buffer.byteLength;
  if (end > size) wasm.memory.grow(Math.ceil((end - size) / PAGE_SIZE));
}

/**
 * `body` (UTF-8 as sent, whole or in the chunks it came in) as a compact document with root
 * `expectedRoot`, or `null` when it must take the slow path.
 */
export function compactDocument(body: Uint8Array | readonly Uint8Array[], expectedRoot: string): CompactDocument | null {
  const chunks = body instanceof Uint8Array ? [body] : body;
  const length = chunks.reduce((total, chunk) => total + chunk.length, 0);
  const wasm = exportsOf();
  const base = wasm.base();
  const root = Buffer.from(expectedRoot, 'latin1');
  reserve(wasm, base + root.length + length);
  const memory = new Uint8Array(wasm.memory.buffer);
  memory.set(root, base);
  let at = base + root.length;
  for (const chunk of chunks) {
    memory.set(chunk, at);
    at += chunk.length;
  }
  const compactLength = wasm.compact(root.length, length);
  if (compactLength < 0) return null;
  // Out of the module's memory, which the next page reuses, into a lent buffer (src/xml/pool.ts).
  const bytes = lend(compactLength);
  bytes.set(memory.subarray(base, base + compactLength));
  return { type: 'compact', bytes, rootName: expectedRoot };
}

/**
 * Gives a page's bytes back to the pool once nothing reads them: what was written from it holds
 * copies. A tree, or a page whose bytes the pool did not lend, is left to the collector.
 */
export function releasePage(page: Page): void {
  if (page.type === 'compact') giveBack(page.bytes);
}

/**
 * A page kept past its call (the page cache, calls coalesced on one request): its bytes copied out of
 * the pool's buffer, which goes back. Kept as they were lent, a page would hold a buffer of the next
 * power of two (up to twice its size) that the pool could never use again.
 */
export function ownedPage(page: Page): Page {
  return page.type === 'compact' ? { ...page, bytes: ownCopy(page.bytes) } : page;
}

/**
 * The text of a page as the upstream client decodes a body that is not compact: UTF-8, a leading byte order mark dropped, malformed bytes
 * as U+FFFD (as undici's `body.text()`).
 */
export function decodeBody(body: Uint8Array | readonly Uint8Array[]): string {
  const bytes = body instanceof Uint8Array ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : Buffer.concat(body);
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  return bytes.toString('utf8', bom);
}

/** The page as a tree, for the assemblers that cut and join pages. */
export function treeOf(page: Page): XmlElement {
  return page.type === 'compact' ? parseXml(page.bytes.toString('utf8'), { positions: false }) : page;
}

const NO_NAMESPACE = Buffer.from(' xmlns=""');

/**
 * The root as the SOAP writer embeds it under a default namespace, in pieces to be joined into the
 * envelope: `xmlns=""` right after the root's name, since its elements are in no namespace
 * (docs/wire.md §4).
 */
export function soapContent(page: CompactDocument): readonly Uint8Array[] {
  const nameEnd = page.rootName.length + 1;
  return [page.bytes.subarray(0, nameEnd), NO_NAMESPACE, page.bytes.subarray(nameEnd)];
}

/** The declaration and line break the HTTP GET/POST document starts with. */
const DOCUMENT_HEAD = Buffer.from(`${XML_DECLARATION}\r\n`, 'latin1');

/**
 * The whole document as the HTTP GET/POST bindings write it: declaration, CRLF, the root indented by
 * XmlTextWriter's rules (docs/wire.md §6.4), in one pass over the bytes in WebAssembly.
 */
export function indentedDocument(page: CompactDocument): Buffer {
  const wasm = exportsOf();
  const length = page.bytes.length;
  reserve(wasm, wasm.base() + length);
  new Uint8Array(wasm.memory.buffer).set(page.bytes, wasm.base());
  const indentedLength = wasm.indent(length);
  // Read after the call: indenting may have grown the memory, which replaces its buffer.
  const from = wasm.indentedBase(length);
  const document = lend(DOCUMENT_HEAD.length + indentedLength);
  DOCUMENT_HEAD.copy(document);
  document.set(new Uint8Array(wasm.memory.buffer, from, indentedLength), DOCUMENT_HEAD.length);
  return document;
}

// --- Reading a compact document in place --------------------------------------------------------

/** Where an element of a compact document is: `bytes.subarray(start, end)` is the whole element. */
export interface ElementSpan {
  readonly start: number;
  /** Just after its start tag's `>` (for `<x />`, equal to `end`). */
  readonly startTagEnd: number;
  readonly end: number;
  /** Written `<x />`. */
  readonly empty: boolean;
}

const LT = 60;
const GT = 62;
const SLASH = 47;
const SPACE = 32;

/** The root element: the whole document. */
export function rootSpan(page: CompactDocument): ElementSpan {
  const close = page.bytes.indexOf(GT);
  return { start: 0, startTagEnd: close + 1, end: page.bytes.length, empty: page.bytes[close - 1] === SLASH };
}

/** The containers of a page (children of the root by their name), and the items of the first. */
export interface ItemSpans {
  readonly containers: ElementSpan[];
  readonly items: ElementSpan[];
}

/**
 * The children of `root` named `container`, and the children named `item` of the first of them, in
 * order, in one walk over the tags. The document is well nested (`compactDocument` checked it), and
 * markup is ASCII and never inside a value or text in the canonical subset, so the bytes are searched
 * for `<` and `>` and names compared in place.
 */
export function itemsOf(bytes: Buffer, root: ElementSpan, container: string, item: string): ItemSpans {
  const containers: ElementSpan[] = [];
  const items: ElementSpan[] = [];
  if (root.empty) return { containers, items };
  const containerName = Buffer.from(container, 'latin1');
  const itemName = Buffer.from(item, 'latin1');
  /** Levels below the root. */
  let depth = 0;
  /** Where the open child of the root and the open item start, and their start tags end; -1 when not wanted. */
  let childStart = -1;
  let childStartTagEnd = 0;
  let itemStart = -1;
  let itemStartTagEnd = 0;
  /** Inside the first container: its children are the items. */
  let inFirst = false;
  let pos = bytes.indexOf(LT, root.startTagEnd);
  while (pos >= 0 && pos < root.end) {
    const close = bytes.indexOf(GT, pos) + 1;
    if (bytes[pos + 1] === SLASH) {
      if (depth === 0) break;
      depth--;
      if (depth === 0) {
        if (childStart >= 0) containers.push({ start: childStart, startTagEnd: childStartTagEnd, end: close, empty: false });
        inFirst = false;
      } else if (depth === 1 && inFirst && itemStart >= 0) {
        items.push({ start: itemStart, startTagEnd: itemStartTagEnd, end: close, empty: false });
      }
    } else {
      const empty = bytes[close - 2] === SLASH;
      if (depth === 0) {
        const named = hasName(bytes, pos + 1, containerName);
        inFirst = named && !empty && containers.length === 0;
        if (named && empty) containers.push({ start: pos, startTagEnd: close, end: close, empty });
        childStart = named && !empty ? pos : -1;
        childStartTagEnd = close;
      } else if (depth === 1 && inFirst) {
        const named = hasName(bytes, pos + 1, itemName);
        if (named && empty) items.push({ start: pos, startTagEnd: close, end: close, empty });
        itemStart = named && !empty ? pos : -1;
        itemStartTagEnd = close;
      }
      if (!empty) depth++;
    }
    pos = bytes.indexOf(LT, close);
  }
  return { containers, items };
}

/** Whether the tag name at `at` is `name`: the same bytes, then a space, `>` or `/`. */
function hasName(bytes: Buffer, at: number, name: Buffer): boolean {
  const after = bytes[at + name.length];
  if (after !== SPACE && after !== GT && after !== SLASH) return false;
  for (let i = 0; i < name.length; i++) if (bytes[at + i] !== name[i]) return false;
  return true;
}

const ATTRIBUTE = / ([^=]+)="([^"]*)"/g;

/** The attributes of the element's start tag, names and values as written (escaped). */
export function attributesOf(bytes: Buffer, element: ElementSpan): [name: string, value: string][] {
  const tag = bytes.toString('utf8', element.start, element.startTagEnd);
  return Array.from(tag.matchAll(ATTRIBUTE), (match) => [match[1] as string, match[2] as string]);
}

const ESCAPED = /&(amp|lt|gt|quot);/g;
const UNESCAPED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"' };

/** An attribute value as written in the canonical subset, decoded. */
export function unescapeAttribute(value: string): string {
  return value.replace(ESCAPED, (_match, name: string) => UNESCAPED[name] as string);
}
