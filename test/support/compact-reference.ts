/**
 * The fast path's check as it was written in JavaScript on the decoded text, with regular
 * expressions, before it moved to WebAssembly over bytes (src/xml/wasm/compact.ts). Kept as the
 * reference the bytes path must agree with: the same documents taken, the same compact text.
 */

/** Deeper documents go the slow way, which refuses them as the parser does. */
const MAX_DEPTH = 128;

const NAME = '[A-Za-z_][A-Za-z0-9_.-]*';
/** Attribute names as element names, but never a namespace declaration. */
const ATTRIBUTE_NAME = `(?!xmlns)${NAME}`;
/** Characters of a surrogate pair: one character outside the BMP, as the parser reads it. */
const PAIR = '[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]';
/**
 * Not in attribute values: markup, quotes, controls (tab and line breaks too: the parser would
 * normalise them), lone surrogates, U+FFFE/U+FFFF.
 */
const NOT_IN_VALUE = '"<>&\\x00-\\x1F\\uD800-\\uDFFF\\uFFFE\\uFFFF';
/** Not in text: markup, `>` (the writer escapes it), CR (the parser normalises it), controls, lone surrogates. */
const NOT_IN_TEXT = '<>&\\x00-\\x08\\x0B-\\x1F\\uD800-\\uDFFF\\uFFFE\\uFFFF';
/**
 * Written "usual* (special usual*)*", where no usual character can start a special one: there is
 * one way only to match, so a value that does not match fails in linear time, and the patterns are
 * applied to one tag or one run of text at a time, never to the whole document.
 */
const VALUE = `[^${NOT_IN_VALUE}]*(?:(?:&(?:amp|lt|gt|quot);|${PAIR})[^${NOT_IN_VALUE}]*)*`;
const START_TAG = `<${NAME}(?: ${ATTRIBUTE_NAME}="${VALUE}")*(?: />|>)`;
const END_TAG = `</${NAME}>`;
/** A run of text up to the next tag: at least one character, so that the scan always moves on. */
const TEXT_RUN = `(?:[^${NOT_IN_TEXT}]|&(?:amp|lt|gt);|${PAIR})[^${NOT_IN_TEXT}]*(?:(?:&(?:amp|lt|gt);|${PAIR})[^${NOT_IN_TEXT}]*)*`;
/** One token of the canonical subset, from where the scan stands. */
const TOKEN = new RegExp(`${START_TAG}|${END_TAG}|${TEXT_RUN}`, 'y');
const BETWEEN_TAGS = />[ \t\r\n]+</g;

/** `text` compacted, or `null` when it is outside the canonical subset with root `expectedRoot`. */
export function referenceCompact(text: string, expectedRoot: string): string | null {
  const compact = trimXmlSpace(text).replace(BETWEEN_TAGS, '><');
  return canonical(compact, expectedRoot) ? compact : null;
}
const isXmlSpace = (code: number): boolean => code === 32 || code === 9 || code === 10 || code === 13;

/** Without the white space XML allows around the root (a regular expression anchored at the end would try every run). */
function trimXmlSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isXmlSpace(text.charCodeAt(start))) start++;
  while (end > start && isXmlSpace(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * Whether the compacted `text` is in the canonical subset, with root `expectedRoot`: every tag and
 * every run of text canonical, one root, every end tag closing the element open, no attribute twice
 * in a tag, at most 128 levels, and no element that the writer would write as `<x />` written
 * `<x></x>`. Names are compared in place, not cut out.
 */
function canonical(text: string, expectedRoot: string): boolean {
  const openStart = new Int32Array(MAX_DEPTH);
  const openLength = new Int32Array(MAX_DEPTH);
  const attributes = { start: new Int32Array(64), length: new Int32Array(64) };
  let depth = 0;
  let pos = 0;
  let rootClosed = false;
  /** The last tag was a start tag with nothing after it yet. */
  let justOpened = false;
  while (pos < text.length) {
    TOKEN.lastIndex = pos;
    if (!TOKEN.test(text)) return false;
    const end = TOKEN.lastIndex;
    if (text.charCodeAt(pos) !== 60 /* < */) {
      // Text: only inside the root. A text run stops only at `<` or a character outside the subset.
      if (depth === 0 || (end < text.length && text.charCodeAt(end) !== 60)) return false;
      justOpened = false;
    } else if (rootClosed) {
      return false;
    } else if (text.charCodeAt(pos + 1) === 47 /* / */) {
      // `<x></x>`: the writer writes an element without content as `<x />`.
      if (justOpened || depth === 0) return false;
      depth--;
      const length = openLength[depth] as number;
      if (end - pos - 3 !== length || !sameChars(text, openStart[depth] as number, pos + 2, length)) return false;
      if (depth === 0) rootClosed = true;
    } else {
      // The parser counts an element written `<x />` towards the depth too.
      if (depth >= MAX_DEPTH) return false;
      const close = end - 1;
      let nameEnd = pos + 1;
      while (nameEnd < close && text.charCodeAt(nameEnd) !== 32) nameEnd++;
      if (pos === 0 && (nameEnd - 1 !== expectedRoot.length || !text.startsWith(expectedRoot, 1))) return false;
      if (nameEnd < close && !distinctAttributes(text, nameEnd, close, attributes)) return false;
      justOpened = text.charCodeAt(close - 1) !== 47; /* / */
      if (justOpened) {
        openStart[depth] = pos + 1;
        openLength[depth] = nameEnd - pos - 1;
        depth++;
      } else if (depth === 0) {
        rootClosed = true;
      }
    }
    pos = end;
  }
  return rootClosed;
}

function sameChars(text: string, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
}

/**
 * Attributes ` name="value"` from `from` to the tag's end `close`: no name twice. Names are filed by
 * first character and length, so only names that may be equal are compared.
 */
function distinctAttributes(text: string, from: number, close: number, seen: { start: Int32Array; length: Int32Array }): boolean {
  let count = 0;
  let filed = 0;
  let at = from;
  while (text.charCodeAt(at) === 32 && text.charCodeAt(at + 1) !== 47 /* / */) {
    const eq = text.indexOf('=', at);
    const start = at + 1;
    const length = eq - start;
    const bit = 1 << ((text.charCodeAt(start) + length * 7) & 31);
    if ((filed & bit) !== 0) {
      for (let k = 0; k < count; k++) {
        if (seen.length[k] === length && sameChars(text, seen.start[k] as number, start, length)) return false;
      }
    }
    filed |= bit;
    // No upstream element has that many attributes: such a tag goes the slow way.
    if (count === seen.start.length) return false;
    seen.start[count] = start;
    seen.length[count] = length;
    count++;
    at = text.indexOf('"', eq + 2) + 1;
  }
  return at === close || (text.charCodeAt(at) === 32 && at + 2 === close);
}
