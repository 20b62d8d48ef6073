import fc from 'fast-check';

/**
 * The ways a key is written where a text quotes it: in a query string or form by .NET and by browsers,
 * in XML or HTML by their writers, in JSON. Each takes the key as it is and gives the text that spells it.
 */

/** HttpUtility.UrlEncode's own characters: left as they are. */
const URL_SAFE = /^[A-Za-z0-9\-_.!*()]$/;

const utf8Escapes = (character: string, hex: (byte: number) => string): string =>
  [...Buffer.from(character, 'utf8')].map((byte) => `%${hex(byte)}`).join('');
const XML_ENTITIES: Readonly<Record<string, string>> = { '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' };
const lowerHex = (byte: number): string => byte.toString(16).padStart(2, '0');
const upperHex = (byte: number): string => lowerHex(byte).toUpperCase();
const unitEscape = (prefix: string, unit: string): string => `${prefix}${unit.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** .NET's HttpUtility.UrlEncode: `+` for a space, UTF-8 bytes as lower-case `%2b`. */
export const dotnetUrlEncode = (key: string): string =>
  [...key].map((c) => (URL_SAFE.test(c) ? c : c === ' ' ? '+' : utf8Escapes(c, lowerHex))).join('');

export const SPELLINGS: Readonly<Record<string, (key: string) => string>> = {
  'as it is': (key) => key,
  'HttpUtility.UrlEncode (%2b, + for a space)': dotnetUrlEncode,
  'upper-case escapes, %20 for a space': (key) => [...key].map((c) => (URL_SAFE.test(c) ? c : utf8Escapes(c, upperHex))).join(''),
  'HttpUtility.UrlEncodeUnicode (%u002B)': (key) => key.replace(/[\s\S]/g, (unit) => (URL_SAFE.test(unit) ? unit : unitEscape('%u', unit))),
  'JSON escapes (\\u0061)': (key) => key.replace(/[\s\S]/g, (unit) => unitEscape('\\u', unit)),
  'XML-escaped': (key) => key.replace(/[&<>"']/g, (c) => `&${XML_ENTITIES[c]!};`),
  'decimal character references (&#97;)': (key) => [...key].map((c) => `&#${c.codePointAt(0)};`).join(''),
  'hex character references (&#x2B;)': (key) => [...key].map((c) => `&#x${c.codePointAt(0)!.toString(16).toUpperCase()};`).join(''),
};

/** The spellings above, and where an operator reads the text (a log line, a diff), the key upper-cased as a writer may echo it. */
export const OPERATOR_SPELLINGS: Readonly<Record<string, (key: string) => string>> = {
  ...SPELLINGS,
  'upper case (ASCII)': (key) => key.replace(/[a-z]+/g, (letters) => letters.toUpperCase()),
};

/** Characters a key may hold: many that every spelling above escapes, and ones outside ASCII. */
const KEY_CHARACTERS = [...'aZ09-_.!*()', ' ', ...'+/=&<>"\'%#;?~,:@$', 'é', '€', '😀'];

/** Keys long enough that the words around them cannot hold them by chance. */
export const keys = (): fc.Arbitrary<string> => fc.string({ unit: fc.constantFrom(...KEY_CHARACTERS), minLength: 8, maxLength: 16 });

/** A key spelled one of the ways given, or each character its own way (as text that went through two writers). */
export const spelledKeys = (spellings = SPELLINGS): fc.Arbitrary<{ key: string; spelled: string; how: string }> =>
  fc.oneof(
    fc.tuple(keys(), fc.constantFrom(...Object.keys(spellings))).map(([key, how]) => ({ key, spelled: spellings[how]!(key), how })),
    fc.tuple(keys(), fc.infiniteStream(fc.constantFrom(...Object.keys(spellings)))).map(([key, hows]) => ({
      key,
      // A character left as it is must not read as an escape or a space in the text around it.
      spelled: [...key].map((c) => spellings[/[%&+]/.test(c) ? 'decimal character references (&#97;)' : hows.next().value]!(c)).join(''),
      how: 'mixed',
    })),
  );

/** Every way the key can be written, to look for in what was logged. */
export const everySpelling = (key: string, spellings = SPELLINGS): string[] => [
  ...new Set(Object.values(spellings).map((spell) => spell(key))),
];

/** How a writer that escapes a whole URL once escapes one character of it: either case of hex, or `%u`. */
const ONCE_ESCAPED: readonly ((character: string) => string)[] = [
  (c) => utf8Escapes(c, lowerHex),
  (c) => utf8Escapes(c, upperHex),
  (c) => c.replace(/[\s\S]/g, (unit) => unitEscape('%u', unit)),
];

/**
 * A key sent as the appKey or apiKey (any case) of a URL, the URL then quoted escaped once, each
 * character its own way (`%26appKey%3D…`, `%u0026APIKEY%u003d…`, as a `returnUrl` parameter holds it);
 * and the quote as it reads with the key's value redacted.
 */
export const escapedUrls = (): fc.Arbitrary<{ key: string; quoted: string; redacted: string }> =>
  fc
    .tuple(keys(), fc.constantFrom('appKey', 'APIKEY', 'apikey'), fc.infiniteStream(fc.constantFrom(...ONCE_ESCAPED)))
    .map(([key, name, styles]) => {
      const escaped = (text: string): string => [...text].map((c) => (URL_SAFE.test(c) ? c : styles.next().value(c))).join('');
      const [before, after] = [escaped(`http://upstream/product.search.cp?v=3&${name}=`), escaped('&productId=1')];
      return { key, quoted: `${before}${escaped(dotnetUrlEncode(key))}${after}`, redacted: `${before}[redacted]${after}` };
    });
