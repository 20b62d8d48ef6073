import { urlDecode } from '../aspnet/url-decode.js';

/**
 * Keys out of every text the proxy logs or shows (a log line, a fault text, a diff), found by decoding
 * the text rather than by listing spellings of a key. Pure. Three kinds of places are redacted:
 *
 * - the value of a `name=value` pair whose name ASP.NET reads as a key parameter (decoded as
 *   HttpUtility.UrlDecode does, matched in any case): a query string, a form, a URL quoted in a message,
 *   also where that URL is itself escaped once (`%26appKey%3Dvalue`, as a `returnUrl` quotes it);
 * - the content of an element named as a key parameter, whatever its prefix or attributes, with its
 *   brackets written as they are or escaped (a SOAP body, or one quoted in a message);
 * - each given secret wherever the text spells it: as it is, %-escaped (UTF-8 in either case, `%uXXXX`,
 *   `+` for a space), as XML entities or character references, as JSON `\uXXXX` escapes, or any mix of
 *   these; in any ASCII case, except in a text a client reads (`wholeTokens`).
 *
 * Where these overlap they make one `[redacted]`. A marker already in the text (a text redacted before)
 * stays as it is: a short key is not found again inside it.
 */

export const REDACTED = '[redacted]';

/** The caller's apiKey and the upstream's appKey, lower-case: ASP.NET matches parameter names in any case. */
const KEY_NAMES: readonly string[] = ['apikey', 'appkey'];

/** Whether a parameter's (decoded) name, or an element's or attribute's local name, is a key's. */
export function namesKey(name: string): boolean {
  return KEY_NAMES.includes(name.toLowerCase());
}

export interface RedactOptions {
  /**
   * A secret only where it stands as a token of its own, not inside a word or an escape: for a text
   * a client reads, where a short key must not mangle the words around it.
   */
  readonly wholeTokens?: boolean;
  /** The text is the start of a longer one: a secret whose spelling its end cuts is redacted as far as it goes. */
  readonly truncated?: boolean;
}

/** From a text position to one past its end. */
type Span = readonly [start: number, end: number];

export function redact(text: string, secrets: readonly string[], options: RedactOptions = {}): string {
  const views = viewsOf(text);
  // A text only operators read (a log line, a shadow diff) may echo a key upper-cased: any ASCII case
  // is the key there. A client's fault text keeps the case, so that a short key spares the words around it.
  const caseless = options.wholeTokens !== true;
  const searched = caseless ? views.map((view) => ({ ...view, decoded: asciiLowerCase(view.decoded) })) : views;
  const markers = markersIn(text);
  const echoed = secrets
    .flatMap((secret) => secretSpans(text, searched, caseless ? asciiLowerCase(secret) : secret, options))
    .filter(([start, end]) => !markers.some(([from, to]) => start < to && from < end));
  return replaced(text, [...views.flatMap(keyParameterValues), ...keyElementContents(text), ...echoed]);
}

/** Only A to Z: every other character keeps its length, so that a position in the text stays one. */
function asciiLowerCase(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

function markersIn(text: string): Span[] {
  const spans: Span[] = [];
  for (let at = text.indexOf(REDACTED); at >= 0; at = text.indexOf(REDACTED, at + REDACTED.length)) spans.push([at, at + REDACTED.length]);
  return spans;
}

// --- Parameters and elements ----------------------------------------------------------------------

/**
 * A name that may decode to a key's (letters, or their escapes) and its value, up to the next pair or
 * the end of the URL it is in. Not after a letter, digit or escape: that is another name. The value is
 * looked ahead at, not taken: a URL quoted in it (`returnUrl=http://…?appKey=…`) has pairs of its own.
 */
const PARAMETER = /(?<![\w%])((?:[a-z]|%[0-9a-f]{2}|%u[0-9a-f]{4})+)=(?=([^&\s"'<>]+))/gi;

/**
 * Read in each view: as it is, `apiKey=a%26b` is the key `a&b`; decoded, `appKey%3Dk%26v%3D1` is the
 * pair `appKey=k` of an escaped URL, its `=` and `&` escaped in any case or as `%u0026`.
 */
function keyParameterValues(view: View): Span[] {
  return [...view.decoded.matchAll(PARAMETER)]
    .filter(([, name]) => namesKey(urlDecode(name!)))
    .map((pair) => {
      const start = pair.index + pair[0].length;
      return view.spelling(start, start + pair[2]!.length);
    });
}

/** `<`, `>` as written in markup, or escaped in a text that quotes it. */
const LT = '(?:<|&lt;|&#0*60;|&#x0*3c;)';
const GT = '(?:>|&gt;|&#0*62;|&#x0*3e;)';
const KEY_ELEMENT = `(?:[\\w.-]+:)?(?:${KEY_NAMES.join('|')})`;
/** Group 1 is set for an empty-element tag, which has no content. */
const KEY_START_TAG = new RegExp(`${LT}\\s*${KEY_ELEMENT}(?:\\s[^<>]*?)?(/\\s*)?${GT}`, 'gi');
const KEY_END_TAG = new RegExp(`${LT}\\s*/\\s*${KEY_ELEMENT}\\s*${GT}`, 'gi');

/** An element's content up to its end tag, or to the end of a text that stops before it. */
function keyElementContents(text: string): Span[] {
  const spans: Span[] = [];
  const start = new RegExp(KEY_START_TAG);
  const end = new RegExp(KEY_END_TAG);
  for (let tag = start.exec(text); tag !== null; tag = start.exec(text)) {
    if (tag[1] !== undefined) continue;
    const from = tag.index + tag[0].length;
    end.lastIndex = from;
    const closing = end.exec(text);
    spans.push([from, closing === null ? text.length : closing.index]);
    if (closing === null) break;
    start.lastIndex = end.lastIndex;
  }
  return spans;
}

// --- Secrets, in any spelling ---------------------------------------------------------------------

/**
 * The text as read with every escape decoded, each of its UTF-16 units knowing the part of the text
 * that spells it.
 */
interface View {
  readonly decoded: string;
  /** The text that spells units `first` to `end` (exclusive). */
  spelling(first: number, end: number): Span;
}

function secretSpans(
  text: string,
  views: readonly View[],
  secret: string,
  { wholeTokens = false, truncated = false }: RedactOptions,
): Span[] {
  if (secret === '') return [];
  const spans = views.flatMap((view) => occurrences(view, secret, truncated ? text : null));
  return wholeTokens ? spans.filter(([start, end]) => standsAlone(text, start, end)) : spans;
}

/**
 * How a view reads escapes: every kind, with `+` as a space (a query or form) or as a plus (anything
 * else); or only entities and character references, as an XML writer escapes a text whose `%` (a key
 * that holds `%aa`) is its own.
 */
type Reading = 'query' | 'text' | 'markup';

/** The text as it is (a secret may hold what looks like an escape), and in each reading where it differs. */
function viewsOf(text: string): View[] {
  const asIs: View = { decoded: text, spelling: (first, end) => [first, end] };
  const escaped = /[%&\\]/.test(text);
  const readings: Reading[] = [
    ...(escaped || text.includes('+') ? (['query'] as const) : []),
    ...(escaped ? (['text'] as const) : []),
    ...(text.includes('&') && /[%\\]/.test(text) ? (['markup'] as const) : []),
  ];
  return [asIs, ...readings.map((reading) => decodedView(text, reading))];
}

/**
 * `%uXXXX` or JSON's `\uXXXX`, `%XX`, `&#xH…;`, `&#D…;` (with any leading zeros), and XML's five
 * entities, in any case.
 */
const ESCAPE = /[%\\]u([0-9a-f]{4})|%([0-9a-f]{2})|&#x0*([0-9a-f]{1,6});|&#0*(\d{1,7});|&(amp|lt|gt|quot|apos);/iy;
const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodedView(text: string, reading: Reading): View {
  // An escape is never shorter than what it decodes to: the text's length bounds the view's.
  const units = new Uint16Array(text.length);
  const starts = new Int32Array(text.length);
  const ends = new Int32Array(text.length);
  let count = 0;
  let at = 0;
  while (at < text.length) {
    const [decoded, length] = escapeAt(text, at, reading) ?? [text[at]!, 1];
    for (let index = 0; index < decoded.length; index++) {
      units[count] = decoded.charCodeAt(index);
      starts[count] = at;
      ends[count++] = at + length;
    }
    at += length;
  }
  return { decoded: fromCharCodes(units.subarray(0, count)), spelling: (first, end) => [starts[first]!, ends[end - 1]!] };
}

/** UTF-16 units as a string, lone surrogates kept (TextDecoder would replace them); in chunks the argument list takes. */
function fromCharCodes(units: Uint16Array): string {
  const chunks: string[] = [];
  for (let at = 0; at < units.length; at += 8192) chunks.push(String.fromCharCode(...units.subarray(at, at + 8192)));
  return chunks.join('');
}

/** The characters an escape at `at` stands for, and its length; null where none starts. */
function escapeAt(text: string, at: number, reading: Reading): [decoded: string, length: number] | null {
  const first = text.charAt(at);
  if (first === '+') return reading === 'query' ? [' ', 1] : null;
  if (!(reading === 'markup' ? '&' : '%&\\').includes(first)) return null;
  ESCAPE.lastIndex = at;
  const found = ESCAPE.exec(text);
  if (found === null) return null;
  const [whole, unit, byte, hex, decimal, entity] = found;
  if (unit !== undefined) return [String.fromCharCode(parseInt(unit, 16)), whole.length];
  if (byte !== undefined) return utf8At(text, at, parseInt(byte, 16));
  const codePoint = hex !== undefined ? parseInt(hex, 16) : decimal !== undefined ? Number(decimal) : null;
  if (codePoint === null) return [ENTITIES[entity!.toLowerCase()]!, whole.length];
  return codePoint <= 0x10ffff ? [String.fromCodePoint(codePoint), whole.length] : null;
}

/**
 * The character whose UTF-8 bytes are %-escaped from `at`, `lead` the first; U+FFFD for a byte that
 * starts no whole sequence, as .NET's decoder reads it.
 */
function utf8At(text: string, at: number, lead: number): [decoded: string, length: number] {
  const length = utf8Length(lead);
  if (length === 0) return ['\ufffd', 3];
  let codePoint = length === 1 ? lead : lead & (0xff >> (length + 1));
  for (let index = 1; index < length; index++) {
    const continuation = /^%([89ab][0-9a-f])/i.exec(text.slice(at + 3 * index, at + 3 * index + 3));
    if (continuation === null) return ['\ufffd', 3];
    codePoint = (codePoint << 6) | (parseInt(continuation[1]!, 16) & 0x3f);
  }
  return [String.fromCodePoint(codePoint), 3 * length];
}

/** How many bytes a UTF-8 sequence that starts with `lead` has; 0 for a byte that starts none. */
function utf8Length(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  return lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
}

/** What may follow the last whole unit of a truncated text: the start of an escape the end cut. */
const CUT_ESCAPE = /^(?:(?:%[0-9a-f]{2})*(?:%(?:u[0-9a-f]{0,3}|[0-9a-f]?))?|&[#a-z0-9]*|\\(?:u[0-9a-f]{0,3})?)$/i;
/** Longer than the longest escape CUT_ESCAPE waits for: only the end of a text is looked at. */
const CUT_ESCAPE_MAX = 16;

/**
 * Every spelling of `secret` in `view` (Knuth-Morris-Pratt: linear, whatever the key and the text).
 * With `truncated` (the text), also a start of the secret that runs into the end of the text.
 */
function occurrences(view: View, secret: string, truncated: string | null): Span[] {
  const fallback = failureFunction(secret);
  const spans: Span[] = [];
  let cutFrom: number | null = null;
  let matched = 0;
  for (let index = 0; index < view.decoded.length; index++) {
    const unit = view.decoded[index];
    while (matched > 0 && secret[matched] !== unit) matched = fallback[matched - 1]!;
    if (secret[matched] === unit) matched++;
    if (matched === secret.length) {
      spans.push(view.spelling(index + 1 - matched, index + 1));
      matched = fallback[matched - 1]!;
    }
    if (truncated !== null && matched > 0) {
      const [start, end] = view.spelling(index + 1 - matched, index + 1);
      if (end >= truncated.length - CUT_ESCAPE_MAX && CUT_ESCAPE.test(truncated.slice(end))) cutFrom = Math.min(cutFrom ?? start, start);
    }
  }
  return cutFrom === null || truncated === null ? spans : [...spans, [cutFrom, truncated.length]];
}

/** For each prefix of `pattern`, the length of its longest proper prefix that is also its suffix. */
function failureFunction(pattern: string): number[] {
  const fallback = [0];
  let length = 0;
  for (let index = 1; index < pattern.length; index++) {
    while (length > 0 && pattern[index] !== pattern[length]) length = fallback[length - 1]!;
    if (pattern[index] === pattern[length]) length++;
    fallback.push(length);
  }
  return fallback;
}

/**
 * A whole escape next to a secret, ending in a hex digit (`%3D`, `%u0020`, `\u0020`): a boundary, not
 * a letter of the word, or `appKey%3D` and `%20` would hide the key beside them. (An entity's `&` and
 * `;` are boundaries already.)
 */
const ESCAPE_BEFORE = /(?:%[0-9a-f]{2}|[%\\]u[0-9a-f]{4})$/i;
const ESCAPE_AFTER = /^(?:%[0-9a-f]{2}|[%\\]u[0-9a-f]{4})/i;

/**
 * Not inside a word, an escape or a URL-encoded run. A `.` or `-` next to it ends a sentence or a
 * word unless a letter or digit follows it.
 */
function standsAlone(text: string, start: number, end: number): boolean {
  const before = text.slice(Math.max(0, start - 6), start);
  const after = text.slice(end, end + 6);
  return (ESCAPE_BEFORE.test(before) || !/[\w%+~]$|\w[.-]$/.test(before)) && (ESCAPE_AFTER.test(after) || !/^[\w%+~]|^[.-]\w/.test(after));
}

// --- Replacing ------------------------------------------------------------------------------------

function replaced(text: string, spans: readonly Span[]): string {
  const merged: [number, number][] = [];
  for (const [start, end] of [...spans].filter(([start, end]) => end > start).sort(([a], [b]) => a - b)) {
    const last = merged.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  let shown = '';
  let at = 0;
  for (const [start, end] of merged) {
    shown += `${text.slice(at, start)}${REDACTED}`;
    at = end;
  }
  return shown + text.slice(at);
}
