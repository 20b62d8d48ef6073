// AssemblyScript, compiled to dist/src/xml/compact.wasm by `npm run build:wasm` (not by tsc).
//
// The canonical-subset check of src/xml/compact.ts over the page's UTF-8 bytes, in one pass with no
// allocation: the same decisions as the rules written there, and the compact bytes written in place
// over the input (whitespace-only text between tags dropped, white space around the root trimmed).
// The caller puts the expected root name at `base()` and the page right after it.
//
// And the HTTP GET/POST bindings' indentation of a compact document, also in one pass over its bytes.

/** Deeper documents go the slow way, which refuses them as the parser does. */
const MAX_DEPTH: i32 = 128;
/** No upstream element has more attributes: a tag with more goes the slow way. */
const MAX_ATTRIBUTES: i32 = 64;

/** Per open element: where its name starts in the output (stable once moved there) and its length. */
const OPEN_START = memory.data(MAX_DEPTH * 4);
const OPEN_LENGTH = memory.data(MAX_DEPTH * 4);
/** Per attribute of the tag being read: where its name starts in the input, and its length. */
const ATTRIBUTE_START = memory.data(MAX_ATTRIBUTES * 4);
const ATTRIBUTE_LENGTH = memory.data(MAX_ATTRIBUTES * 4);

/** Per open element while indenting: whether it holds text, or its parent did (1) or not (0). */
const MIXED = memory.data(MAX_DEPTH);

const LT: u32 = 0x3c;
const GT: u32 = 0x3e;
const AMP: u32 = 0x26;
const QUOT: u32 = 0x22;
const SLASH: u32 = 0x2f;
const SPACE: u32 = 0x20;
const EQUALS: u32 = 0x3d;

/**
 * The vectors the loops compare with, set at the start of each pass. Written as constants, V8 builds
 * each one again in every iteration, with three instructions; read from globals, it keeps them in
 * registers or reads each with one load: the pass took a fifth less time.
 */
let VEC_SPACE: v128 = i8x16.splat(0);
let VEC_TAB: v128 = i8x16.splat(0);
let VEC_LF: v128 = i8x16.splat(0);
let VEC_CR: v128 = i8x16.splat(0);
let VEC_LT: v128 = i8x16.splat(0);
let VEC_GT: v128 = i8x16.splat(0);
let VEC_AMP: v128 = i8x16.splat(0);
let VEC_QUOT: v128 = i8x16.splat(0);
let VEC_DEL: v128 = i8x16.splat(0);
let VEC_UNDERSCORE: v128 = i8x16.splat(0);
/** A name character's ranges, each moved to the bottom of the signed range by an add (see `nameEnd`). */
let VEC_LOWER: v128 = i8x16.splat(0);
let VEC_LETTER_SHIFT: v128 = i8x16.splat(0);
let VEC_LETTER_BELOW: v128 = i8x16.splat(0);
let VEC_DIGIT_SHIFT: v128 = i8x16.splat(0);
let VEC_DIGIT_BELOW: v128 = i8x16.splat(0);
let VEC_DOT_DASH_SHIFT: v128 = i8x16.splat(0);
let VEC_DOT_DASH_BELOW: v128 = i8x16.splat(0);

function setVectors(): void {
  VEC_SPACE = i8x16.splat(<i8>SPACE);
  VEC_TAB = i8x16.splat(0x09);
  VEC_LF = i8x16.splat(0x0a);
  VEC_CR = i8x16.splat(0x0d);
  VEC_LT = i8x16.splat(<i8>LT);
  VEC_GT = i8x16.splat(<i8>GT);
  VEC_AMP = i8x16.splat(<i8>AMP);
  VEC_QUOT = i8x16.splat(<i8>QUOT);
  VEC_DEL = i8x16.splat(0x7f);
  VEC_UNDERSCORE = i8x16.splat(0x5f);
  VEC_LOWER = i8x16.splat(0x20);
  VEC_LETTER_SHIFT = i8x16.splat(<i8>(0x80 - 0x61)); // `a` to -128, `z` to -103
  VEC_LETTER_BELOW = i8x16.splat(-128 + 26);
  VEC_DIGIT_SHIFT = i8x16.splat(<i8>(0x80 - 0x30)); // `0` to -128, `9` to -119
  VEC_DIGIT_BELOW = i8x16.splat(-128 + 10);
  VEC_DOT_DASH_SHIFT = i8x16.splat(<i8>(0x80 - 0x2d)); // `-` to -128, `.` to -127
  VEC_DOT_DASH_BELOW = i8x16.splat(-128 + 2);
}

/** Where the caller writes the root name and then the page. */
export function base(): usize {
  return (__heap_base + 15) & ~15;
}

/** A rejected document. */
const REJECT: i32 = -1;

@inline function at(p: usize): u32 {
  return <u32>load<u8>(p);
}

@inline function isSpace(c: u32): bool {
  return c == SPACE || c == 0x09 || c == 0x0a || c == 0x0d;
}

@inline function isNameStart(c: u32): bool {
  return ((c | 0x20) - 0x61 < 26) || c == 0x5f;
}

@inline function isNameChar(c: u32): bool {
  return isNameStart(c) || c - 0x30 < 10 || c == 0x2e || c == 0x2d;
}

/** The end of the name starting at `p` (its first character already checked), within `end`. */
@inline function nameEnd(p: usize, end: usize): usize {
  p++;
  // Sixteen bytes at a time: most names end within the first sixteen.
  while (p + 16 <= end) {
    const v = v128.load(p);
    // A range moved to the bottom of the signed range: one signed comparison says whether a byte is in it.
    const letter = i8x16.lt_s(i8x16.add(v128.or(v, VEC_LOWER), VEC_LETTER_SHIFT), VEC_LETTER_BELOW);
    const digit = i8x16.lt_s(i8x16.add(v, VEC_DIGIT_SHIFT), VEC_DIGIT_BELOW);
    const dotOrDash = i8x16.lt_s(i8x16.add(v, VEC_DOT_DASH_SHIFT), VEC_DOT_DASH_BELOW);
    const underscore = i8x16.eq(v, VEC_UNDERSCORE);
    const other = ~i8x16.bitmask(v128.or(v128.or(letter, digit), v128.or(dotOrDash, underscore))) & 0xffff;
    if (other != 0) return p + <usize>ctz(other);
    p += 16;
  }
  while (p < end && isNameChar(at(p))) p++;
  return p;
}

/** Where the white space from `p` ends: the indentation between tags of a pretty-printed page. */
@inline function skipSpace(p: usize, end: usize): usize {
  while (p + 16 <= end) {
    const v = v128.load(p);
    const space = v128.or(v128.or(i8x16.eq(v, VEC_SPACE), i8x16.eq(v, VEC_TAB)), v128.or(i8x16.eq(v, VEC_LF), i8x16.eq(v, VEC_CR)));
    const other = ~i8x16.bitmask(space) & 0xffff;
    if (other != 0) return p + <usize>ctz(other);
    p += 16;
  }
  while (p < end && isSpace(at(p))) p++;
  return p;
}

/**
 * Where the run of plain bytes from `p` ends: printable ASCII but markup, `&` and (when `quote`) `"`.
 * Sixteen bytes at a time: values and text are most of a page, and almost all plain.
 */
@inline function skipPlain(p: usize, end: usize, quote: bool): usize {
  const quot = quote ? VEC_QUOT : VEC_LT;
  while (p + 16 <= end) {
    const v = v128.load(p);
    const markup = v128.or(v128.or(i8x16.eq(v, VEC_LT), i8x16.eq(v, VEC_GT)), v128.or(i8x16.eq(v, VEC_AMP), i8x16.eq(v, quot)));
    // Below a space as a signed byte: a control, or any byte past ASCII.
    const mask = i8x16.bitmask(v128.or(markup, v128.or(i8x16.lt_s(v, VEC_SPACE), i8x16.eq(v, VEC_DEL))));
    if (mask != 0) return p + <usize>ctz(mask);
    p += 16;
  }
  while (p < end) {
    const c = at(p);
    if (c < SPACE || c > 0x7e || c == LT || c == GT || c == AMP || (quote && c == QUOT)) break;
    p++;
  }
  return p;
}

/**
 * `memory.copy` for the tags and text between two runs of white space (tens of bytes): V8 calls out
 * of the module for it, which cost more than the copy. Sixteen and eight bytes at a time, front to
 * back: safe when `to` is below `from` or the two do not overlap.
 */
@inline function copyBytes(to: usize, from: usize, length: usize): void {
  let i: usize = 0;
  for (; i + 16 <= length; i += 16) v128.store(to + i, v128.load(from + i));
  for (; i + 8 <= length; i += 8) store<u64>(to + i, load<u64>(from + i));
  for (; i < length; i++) store<u8>(to + i, load<u8>(from + i));
}

function sameBytes(a: usize, b: usize, length: usize): bool {
  for (let i: usize = 0; i < length; i++) if (load<u8>(a + i) != load<u8>(b + i)) return false;
  return true;
}

/**
 * After a `&` at `p`: the length of `amp;`, `lt;`, `gt;` (or `quot;` when `quote` is allowed) that
 * follows, or 0 when none does (the writer writes no other reference).
 */
function escapeLength(p: usize, end: usize, quote: bool): usize {
  if (p + 3 <= end && at(p + 2) == 0x3b && (at(p) == 0x6c || at(p) == 0x67) && at(p + 1) == 0x74) return 3; // lt; gt;
  if (p + 4 <= end && at(p) == 0x61 && at(p + 1) == 0x6d && at(p + 2) == 0x70 && at(p + 3) == 0x3b) return 4; // amp;
  // quot;
  if (quote && p + 5 <= end && at(p) == 0x71 && at(p + 1) == 0x75 && at(p + 2) == 0x6f && at(p + 3) == 0x74 && at(p + 4) == 0x3b) {
    return 5;
  }
  return 0;
}

/**
 * The length of the well-formed UTF-8 sequence for one character at `p` whose first byte `c` is past
 * ASCII, or 0 when it is malformed (the text decoder would make it U+FFFD: such a page goes the slow
 * way, which decodes it as before) or is U+FFFE/U+FFFF (never in XML).
 */
function multiByteLength(p: usize, end: usize, c: u32): usize {
  if (c < 0xc2) return 0;
  if (c < 0xe0) return p + 2 <= end && at(p + 1) - 0x80 < 0x40 ? 2 : 0;
  if (c < 0xf0) {
    if (p + 3 > end) return 0;
    const c1 = at(p + 1);
    const c2 = at(p + 2);
    const low: u32 = c == 0xe0 ? 0xa0 : 0x80;
    const high: u32 = c == 0xed ? 0x9f : 0xbf; // ED A0..BF would be a surrogate
    if (c1 < low || c1 > high || c2 - 0x80 >= 0x40) return 0;
    if (c == 0xef && c1 == 0xbf && c2 >= 0xbe) return 0; // U+FFFE, U+FFFF
    return 3;
  }
  if (c > 0xf4 || p + 4 > end) return 0;
  const c1 = at(p + 1);
  const low: u32 = c == 0xf0 ? 0x90 : 0x80;
  const high: u32 = c == 0xf4 ? 0x8f : 0xbf;
  if (c1 < low || c1 > high || at(p + 2) - 0x80 >= 0x40 || at(p + 3) - 0x80 >= 0x40) return 0;
  return 4;
}

/**
 * The length of the character at `p` (first byte `c`) where a plain run stopped, in text or (`value`)
 * an attribute value: an escape, a character past ASCII, or tab or line feed in text; 0 when it may
 * not be there. Never markup; in text, no `>` (the writer escapes it), CR (the parser normalises it)
 * or other control; in a value, no control at all (the parser would normalise tab and line breaks).
 * Not inlined: in the loops over values and text it made them half again as slow.
 */
function specialLength(p: usize, end: usize, c: u32, value: bool): usize {
  if (c >= 0x80) return multiByteLength(p, end, c);
  if (c == AMP) {
    const n = escapeLength(p + 1, end, value);
    return n == 0 ? 0 : n + 1;
  }
  if (c == LT || c == GT || (c < SPACE && (value || (c != 0x09 && c != 0x0a)))) return 0;
  return 1;
}

/**
 * Checks the `length` bytes of the page after the `rootLength` bytes of the expected root name and
 * writes the compact page over them from `base()`. Returns its length, or -1 when the page is not
 * in the canonical subset with that root.
 */
export function compact(rootLength: i32, length: i32): i32 {
  const root = base();
  let p = root + <usize>rootLength;
  let end = p + <usize>length;
  // What the text decoder drops (a byte order mark), then white space around the root.
  if (p + 3 <= end && at(p) == 0xef && at(p + 1) == 0xbb && at(p + 2) == 0xbf) p += 3;
  while (p < end && isSpace(at(p))) p++;
  while (end > p && isSpace(at(end - 1))) end--;

  /** The compact page so far ends at `out`; the input from `kept` on is kept too, not yet moved down to it. */
  setVectors();
  let out = root;
  let kept = p;
  let depth: i32 = 0;
  let rootClosed = false;
  /** The last tag was a start tag with nothing after it yet (`<x></x>` is written `<x />`). */
  let justOpened = false;
  let first = true;
  while (p < end) {
    const from = p;
    let c = at(p);
    if (c != LT) {
      // A run of text up to the next tag. Whitespace only: dropped (it always follows a tag here).
      p = skipSpace(p, end);
      if (p < end && at(p) == LT) {
        // Dropped: what was kept before it moves down, once for the run of tags and text between.
        if (out != kept) copyBytes(out, kept, from - kept);
        out += from - kept;
        kept = p;
        continue;
      }
      if (depth == 0) return REJECT;
      p = from;
      while ((p = skipPlain(p, end, false)) < end) {
        c = at(p);
        if (c == LT) break;
        const n = specialLength(p, end, c, false);
        if (n == 0) return REJECT;
        p += n;
      }
      justOpened = false;
    } else {
      if (rootClosed || p + 1 >= end) return REJECT;
      c = at(p + 1);
      if (c == SLASH) {
        // An end tag `</name>`, closing the element open.
        p += 2;
        if (p >= end || !isNameStart(at(p))) return REJECT;
        const nameStart = p;
        p = nameEnd(p, end);
        if (p >= end || at(p) != GT) return REJECT;
        p++;
        if (justOpened || depth == 0) return REJECT;
        depth--;
        const openLength = <usize>load<i32>(OPEN_LENGTH + (<usize>depth << 2));
        const openStart = <usize>load<i32>(OPEN_START + (<usize>depth << 2));
        // Its name is where it was moved down to, or still where it was read if it was not moved yet.
        const openName = openStart < out ? openStart : kept + (openStart - out);
        if (p - nameStart - 1 != openLength || !sameBytes(openName, nameStart, openLength)) return REJECT;
        if (depth == 0) rootClosed = true;
      } else {
        // A start tag `<name( attribute="value")*>` or `… />`. `<x />` counts towards the depth too.
        if (!isNameStart(c) || depth >= MAX_DEPTH) return REJECT;
        p++;
        const nameStart = p;
        p = nameEnd(p, end);
        const nameLength = p - nameStart;
        if (first && (nameLength != <usize>rootLength || !sameBytes(root, nameStart, nameLength))) return REJECT;
        let attributes: i32 = 0;
        let empty = false;
        while (true) {
          if (p >= end) return REJECT;
          c = at(p);
          if (c == GT) break;
          if (c != SPACE || p + 1 >= end) return REJECT;
          p++;
          c = at(p);
          if (c == SLASH) {
            if (p + 1 >= end || at(p + 1) != GT) return REJECT;
            p++;
            empty = true;
            break;
          }
          // An attribute: never a namespace declaration, never twice.
          if (!isNameStart(c)) return REJECT;
          const attributeStart = p;
          p = nameEnd(p, end);
          const attributeLength = p - attributeStart;
          // xmlns
          if (
            attributeLength >= 5 && at(attributeStart) == 0x78 && at(attributeStart + 1) == 0x6d && at(attributeStart + 2) == 0x6c &&
            at(attributeStart + 3) == 0x6e && at(attributeStart + 4) == 0x73
          ) return REJECT;
          for (let k: i32 = 0; k < attributes; k++) {
            const at_ = <usize>k << 2;
            const sameLength = <usize>load<i32>(ATTRIBUTE_LENGTH + at_) == attributeLength;
            if (sameLength && sameBytes(<usize>load<i32>(ATTRIBUTE_START + at_), attributeStart, attributeLength)) return REJECT;
          }
          if (attributes == MAX_ATTRIBUTES) return REJECT;
          store<i32>(ATTRIBUTE_START + (<usize>attributes << 2), <i32>attributeStart);
          store<i32>(ATTRIBUTE_LENGTH + (<usize>attributes << 2), <i32>attributeLength);
          attributes++;
          if (p + 2 > end || at(p) != EQUALS || at(p + 1) != QUOT) return REJECT;
          p += 2;
          // The value: not markup, quotes or controls (tab and line breaks too: the parser would normalise them).
          while (true) {
            p = skipPlain(p, end, true);
            if (p >= end) return REJECT;
            c = at(p);
            if (c == QUOT) break;
            const n = specialLength(p, end, c, true);
            if (n == 0) return REJECT;
            p += n;
          }
          p++;
        }
        p++;
        justOpened = !empty;
        if (!empty) {
          store<i32>(OPEN_START + (<usize>depth << 2), <i32>(out + (nameStart - kept)));
          store<i32>(OPEN_LENGTH + (<usize>depth << 2), <i32>nameLength);
          depth++;
        } else if (depth == 0) {
          rootClosed = true;
        }
        first = false;
      }
    }
  }
  if (!rootClosed) return REJECT;
  if (out != kept) copyBytes(out, kept, p - kept);
  return <i32>(out + (p - kept) - root);
}

// --- Indenting ------------------------------------------------------------------------------------

/** Where the next `byte` from `p` is, or `end`. */
@inline function find(p: usize, end: usize, byte: u32): usize {
  const wanted = i8x16.splat(<i8>byte);
  while (p + 16 <= end) {
    const mask = i8x16.bitmask(i8x16.eq(v128.load(p), wanted));
    if (mask != 0) return p + <usize>ctz(mask);
    p += 16;
  }
  while (p < end && at(p) != byte) p++;
  return p;
}

/** Grows the memory, if need be, so that the bytes up to `end` (and sixteen more for whole-vector stores) exist. */
@inline function reserve(end: usize): void {
  const size = <usize>memory.size() << 16;
  if (end + 16 > size) memory.grow(<i32>((end + 16 - size + 0xffff) >> 16));
}

/** Where `indent` writes: after the compact document of `length` bytes at `base()`. */
export function indentedBase(length: i32): usize {
  return (base() + <usize>length + 15) & ~15;
}

const CRLF: u16 = 0x0a0d;

/**
 * The compact document of `length` bytes at `base()` indented by XmlTextWriter's rules (docs/wire.md
 * §6.4), written from `indentedBase(length)`; returns its length. Each element goes on its own line
 * (CR LF) two spaces deeper than its parent, unless its parent holds text, from which point on
 * nothing below that parent gets line breaks. The document came from `compact` (or from pieces of
 * such documents): well nested, no deeper than MAX_DEPTH, and `<` and `>` only as markup.
 */
export function indent(length: i32): i32 {
  let p = base();
  const end = p + <usize>length;
  const start = indentedBase(length);
  let out = start;
  let depth: usize = 0;
  const spaces = i8x16.splat(<i8>SPACE);
  while (p < end) {
    if (at(p) != LT) {
      // Text: its element holds text from here on.
      const next = find(p, end, LT);
      reserve(out + (next - p));
      copyBytes(out, p, next - p);
      out += next - p;
      store<u8>(MIXED + depth - 1, 1);
      p = next;
      continue;
    }
    const close = find(p, end, GT) + 1;
    let lineDepth: usize = 0;
    let newLine = false;
    if (at(p + 1) == SLASH) {
      depth--;
      newLine = load<u8>(MIXED + depth) == 0;
      lineDepth = depth;
    } else {
      const parentMixed = depth > 0 && load<u8>(MIXED + depth - 1) != 0;
      newLine = depth > 0 && !parentMixed;
      lineDepth = depth;
      if (at(close - 2) != SLASH) {
        store<u8>(MIXED + depth, parentMixed ? 1 : 0);
        depth++;
      }
    }
    reserve(out + 2 + 2 * lineDepth + (close - p));
    if (newLine) {
      store<u16>(out, CRLF);
      out += 2;
      const indentEnd = out + 2 * lineDepth;
      // Whole vectors: the few bytes past the indentation are overwritten by the tag next.
      for (let q = out; q < indentEnd; q += 16) v128.store(q, spaces);
      out = indentEnd;
    }
    copyBytes(out, p, close - p);
    out += close - p;
    p = close;
  }
  return <i32>(out - start);
}
