import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { startDemoUpstream } from '../src/demo/demo-server.js';
import { assembleAll, assembleWindow } from '../src/translate/assemble.js';
import { planPages } from '../src/translate/paging.js';
import { compactDocument, decodeBody, indentedDocument, soapContent, type CompactDocument, type Page } from '../src/xml/compact.js';
import { parseXml } from '../src/xml/parse.js';
import { writeXml, writeXmlDocument } from '../src/xml/write.js';
import { referenceCompact } from './support/compact-reference.js';
import { SEARCH_PAGES, STORE_PAGES, pageDocument } from './support/pages.js';

/**
 * The fast path passes a canonical upstream page through as bytes. Whenever it does, the bytes must
 * be exactly what parsing and writing the page would give (the SOAP content and the indented HTTP
 * document), and the page must be one the parser accepts; whenever it does not, the slow path
 * decides. It takes exactly the documents the JavaScript check on the decoded text took
 * (test/support/compact-reference.ts), but for malformed UTF-8, which it leaves to the slow path.
 * Checked on generated documents, canonical and not, well-formed and not.
 */

const ROOT = 'searchResultSet';
const NS = 'http://tempuri.org/';
/** Where a `searchResultSet` keeps its items. */
const SHAPE = { items: 'mainResults', item: 'searchResultItem' };

const pick = <T>(...values: T[]): fc.Arbitrary<T> => fc.constantFrom(...values);

/** Private-use characters that stand for malformed UTF-8 in generated text (`bytesOf`). */
const MALFORMED_BYTES: Readonly<Record<string, readonly number[]>> = {
  '\uE000': [0xff],
  '\uE001': [0xc0, 0xaf], // an overlong `/`
  '\uE002': [0xe2, 0x82], // cut short
  '\uE003': [0x80], // a continuation byte alone
  '\uE004': [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
};
const MALFORMED = Object.keys(MALFORMED_BYTES);

/**
 * The bytes an upstream would send for `text`: UTF-8, with a lone surrogate as the three bytes a
 * careless encoder writes for it (malformed UTF-8, as are the stand-ins of `MALFORMED_BYTES`).
 */
function bytesOf(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const pair = unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const malformed = MALFORMED_BYTES[text.charAt(i)];
    if (malformed) bytes.push(...malformed);
    else if (unit >= 0xd800 && unit <= 0xdfff && !pair) bytes.push(0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f));
    else bytes.push(...Buffer.from(text.slice(i, pair ? i + 2 : i + 1)));
    if (pair) i++;
  }
  return Buffer.from(bytes);
}
/** Mostly `usual`, now and then `rare`: most documents canonical, some at or past its edges. */
const mostly = <T>(usual: fc.Arbitrary<T>, rare: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ weight: 40, arbitrary: usual }, { weight: 1, arbitrary: rare });

/** Characters and references, the ones at the edges of the canonical subset now and then. */
const piece = mostly(
  pick('a', 'Z', '0', ' ', 'é', '€', '😀', '&amp;', '&lt;', '&gt;', '"', "'"),
  pick(
    '&quot;',
    '&apos;',
    '&#65;',
    '&#x9;',
    '>',
    '\t',
    '\n',
    '\r',
    '\u0001',
    '&',
    '<',
    ']]>',
    '\uFFFE',
    '\uFFFF',
    '\uFFFD',
    '\u0085',
    '\uD800',
    '\uDC00',
    '\uD800&lt;',
    ...MALFORMED,
  ),
);
const chars = (max: number): fc.Arbitrary<string> => fc.array(piece, { maxLength: max }).map((parts) => parts.join(''));
/** The root the fast path expects, or one whose name only starts like it. */
const rootName = mostly(pick(ROOT), pick(`${ROOT}X`, `${ROOT}.v2`, `${ROOT}-1`, 'searchResult'));
const space = mostly(pick('', '\n  ', '\r\n    '), pick(' ', '\t', '\u00A0'));
const name = mostly(pick(ROOT, 'a', 'b', 'item', 'x.y', '_z', 'Item-1'), pick('p:q', 'é'));
const attributeName = mostly(pick('id', 'name', 'a', 'b', 'x.y'), pick('xmlns', 'xmlns:p', 'p:q'));

const attribute = fc
  .tuple(mostly(pick(' '), pick('  ', '\n')), attributeName, mostly(pick('"'), pick("'")), chars(6))
  .map(([separator, key, quote, value]) => `${separator}${key}=${quote}${value.replaceAll(quote, '')}${quote}`);

const { element } = fc.letrec<{ element: string; node: string }>((tie) => ({
  element: fc
    .tuple(
      name,
      fc.array(attribute, { maxLength: 3 }),
      mostly(pick('children', ' />'), pick('/>', 'pair')),
      fc.array(tie('node'), { maxLength: 4, depthIdentifier: 'tree' }),
    )
    .map(([tag, attributes, form, children]) => {
      const open = `<${tag}${attributes.join('')}`;
      if (form === '/>' || form === ' />') return `${open}${form}`;
      if (form === 'pair') return `${open}></${tag}>`;
      return `${open}>${children.join('')}</${tag}>`;
    }),
  // Past the depth limit only the first (a leaf) is drawn.
  node: fc.oneof(
    { maxDepth: 4, depthIdentifier: 'tree' },
    { weight: 3, arbitrary: space },
    { weight: 4, arbitrary: tie('element') },
    { weight: 2, arbitrary: chars(12) },
    { weight: 1, arbitrary: mostly(chars(3), pick('<!-- c -->', '<![CDATA[x<y]]>', '<?pi x?>')) },
  ),
}));

/** A root element, sometimes with a prolog, trailing matter, or cut short. */
const documentText = fc
  .tuple(
    space,
    mostly(pick(''), pick('<?xml version="1.0"?>', '<!DOCTYPE searchResultSet>', '\uFEFF')),
    rootName,
    fc.array(attribute, { maxLength: 3 }),
    fc.array(
      element.chain((e) => fc.tuple(space, fc.constant(e)).map(([s, x]) => s + x)),
      { maxLength: 4 },
    ),
    space,
    mostly(pick(''), pick('trailing', '<b />', '<!-- after -->')),
    mostly(fc.constant(null), fc.nat()),
  )
  .map(([lead, prolog, root, attributes, children, inner, trailing, cut]) => {
    const text = `${lead}${prolog}<${root}${attributes.join('')}>${children.join('')}${inner}</${root}>${lead}${trailing}`;
    return cut === null ? text : text.slice(0, cut % (text.length + 1));
  });

/** The SOAP content of a compact page, as text. */
const soapText = (page: CompactDocument): string => Buffer.concat(soapContent(page)).toString('utf8');

/** Whether `body` is well-formed UTF-8 after the byte order mark the decoder drops. */
const wellFormed = (body: Uint8Array): boolean => isUtf8(body.subarray(body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0));

function expectSameAsSlowPath(body: Uint8Array): boolean {
  const text = decodeBody(body);
  const reference = referenceCompact(text, ROOT);
  const fast = compactDocument(body, ROOT);
  if (fast === null) {
    // What the check on text took, the bytes path takes too, unless the text came from malformed UTF-8.
    if (reference !== null) expect(wellFormed(body)).toBe(false);
    return false;
  }
  expect(fast.bytes.toString('utf8')).toBe(reference);
  const tree = parseXml(text, { positions: false });
  expect(tree.local).toBe(ROOT);
  expect(soapText(fast)).toBe(writeXml(tree, { indent: false, defaultNamespace: NS }));
  expect(indentedDocument(fast).toString('utf8')).toBe(writeXmlDocument(tree, { indent: true }));
  return true;
}

describe('the fast path for upstream pages', () => {
  it('gives exactly the bytes of the slow path whenever it takes a document', () => {
    let taken = 0;
    let runs = 0;
    fc.assert(
      fc.property(documentText, (text) => {
        runs++;
        if (expectSameAsSlowPath(bytesOf(text))) taken++;
      }),
      { numRuns: 3000 },
    );
    // Not a vacuous property: a fair share of the generated documents is canonical.
    expect(taken / runs).toBeGreaterThan(0.05);
  });

  it.each([
    ['an attribute twice', `<${ROOT} a="1" a="2" />`],
    ['an end tag that closes another element', `<${ROOT}><a></b></${ROOT}>`],
    ['a document cut short', `<${ROOT}><a>`],
    ['two roots', `<${ROOT} /><${ROOT} />`],
    ['another root', '<products />'],
    ['an element written as a pair with nothing in it', `<${ROOT}><a></a></${ROOT}>`],
    ['only white space in an element', `<${ROOT}><a>  </a></${ROOT}>`],
    ['a DOCTYPE', `<!DOCTYPE ${ROOT} [<!ENTITY e "x">]><${ROOT}>&e;</${ROOT}>`],
    ['a namespace', `<${ROOT} xmlns="urn:x" />`],
    ['text outside the root', `x<${ROOT} />`],
    ['nesting past 128 levels', `<${ROOT}>${'<a>'.repeat(130)}x${'</a>'.repeat(130)}</${ROOT}>`],
    ['an empty element at level 129', `<${ROOT}>${'<a>'.repeat(127)}<b />${'</a>'.repeat(127)}</${ROOT}>`],
    ['a root whose name only starts like the one expected', `<${ROOT}X>a</${ROOT}X>`],
    ['a root named with a dot after the expected name', `<${ROOT}.v2 />`],
    ['a lone surrogate in text', `<${ROOT}>\uDC00</${ROOT}>`],
    ['a lone surrogate in an attribute', `<${ROOT} a="\uD800" />`],
    ['a second byte order mark', `\uFEFF\uFEFF<${ROOT} />`],
    ['white space before the byte order mark', ` \uFEFF<${ROOT} />`],
    ['U+FFFE in text', `<${ROOT}>\uFFFE</${ROOT}>`],
    ['U+FFFF in an attribute', `<${ROOT} a="\uFFFF" />`],
    ['malformed UTF-8 in text', `<${ROOT}>\uE000</${ROOT}>`],
    ['an overlong sequence in an attribute', `<${ROOT} a="\uE001" />`],
    ['a sequence cut short by the end of the text', `<${ROOT}>\uE002</${ROOT}>`],
    ['a sequence cut short at the end of the body', `<${ROOT} />\uE002`],
    ['a code point past U+10FFFF', `<${ROOT}>\uE004</${ROOT}>`],
    ['65 attributes', `<${ROOT}${Array.from({ length: 65 }, (_, i) => ` a${i}="1"`).join('')} />`],
    ['an attribute that starts like a namespace declaration', `<${ROOT} xmlnsx="1" />`],
    ['a carriage return in text', `<${ROOT}>a\rb</${ROOT}>`],
    ['a carriage return in white space between text', `<${ROOT}><a /> \r x</${ROOT}>`],
  ])('leaves %s to the slow path', (_case, text) => {
    expect(compactDocument(bytesOf(text), ROOT)).toBeNull();
    expect(expectSameAsSlowPath(bytesOf(text))).toBe(false);
  });

  it.each([
    ['a byte order mark', `\uFEFF<${ROOT}>x</${ROOT}>`, `<${ROOT}>x</${ROOT}>`],
    ['a byte order mark, then white space', `\uFEFF \r\n<${ROOT} />\r\n`, `<${ROOT} />`],
    [
      'characters of two, three and four bytes',
      `<${ROOT} a="é€😀\u0085\uFFFD"> é€😀\uFDD0\uFFFD </${ROOT}>`,
      `<${ROOT} a="é€😀\u0085\uFFFD"> é€😀\uFDD0\uFFFD </${ROOT}>`,
    ],
    ['64 attributes', `<${ROOT}${Array.from({ length: 64 }, (_, i) => ` a${i}="1"`).join('')} />`, null],
    ['tabs and line feeds in text', `<${ROOT}>\n\ta\n<b />\t</${ROOT}>`, `<${ROOT}>\n\ta\n<b /></${ROOT}>`],
    ['nesting at 128 levels', `<${ROOT}>${'<a>'.repeat(127)}x${'</a>'.repeat(127)}</${ROOT}>`, null],
  ])('takes %s', (_case, text, compact) => {
    expect(compactDocument(bytesOf(text), ROOT)?.bytes.toString('utf8')).toBe(compact ?? text);
    expect(expectSameAsSlowPath(bytesOf(text))).toBe(true);
  });

  it('compares names longer than 64 KB whole', () => {
    const long = 'n'.repeat(70_000);
    expect(expectSameAsSlowPath(bytesOf(`<${ROOT}><${long}>x</${long}></${ROOT}>`))).toBe(true);
    expect(compactDocument(bytesOf(`<${ROOT}><${long}>x</${long}x></${ROOT}>`), ROOT)).toBeNull();
    expect(compactDocument(bytesOf(`<${ROOT}><${long}a>x</${long}b></${ROOT}>`), ROOT)).toBeNull();
    expect(compactDocument(bytesOf(`<${ROOT} ${long}="1" ${long}="2" />`), ROOT)).toBeNull();
    expect(expectSameAsSlowPath(bytesOf(`<${ROOT} ${long}a="1" ${long}b="2" />`))).toBe(true);
  });

  it('decides in linear time, however the text before a non-canonical character can be split', () => {
    // Exponential backtracking made this take minutes: every way of cutting the titles was tried.
    const titles = '<t>Mugs and cups for dads and their dogs</t>'.repeat(40);
    const started = performance.now();
    for (const odd of ['A > B', 'Caf&#233;', '&apos;', '&quot;', 'a\rb']) {
      expect(compactDocument(bytesOf(`<${ROOT}>${titles}<t>${odd}</t></${ROOT}>`), ROOT)).toBeNull();
    }
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('takes a page of 12 MB without running out of stack', () => {
    const page = `<${ROOT}><mainResults>${'<i a="1">x &amp; y</i>'.repeat(600_000)}</mainResults></${ROOT}>`;
    expect(compactDocument(Buffer.from(page), ROOT)?.bytes.length).toBe(page.length);
  });

  it('takes a pretty-printed page of 8 MB as the check on text did, and still one after it', () => {
    const item = '\r\n    <i a="1" b="é">x &amp; 😀 y<c /></i>';
    const page = `<${ROOT}>\r\n  <mainResults>${item.repeat((8 * 2 ** 20) / item.length)}\r\n  </mainResults>\r\n</${ROOT}>\r\n`;
    expect(Buffer.byteLength(page)).toBeGreaterThan(8_000_000);
    expect(compactDocument(Buffer.from(page), ROOT)?.bytes.toString('utf8')).toBe(referenceCompact(page, ROOT));
    expect(expectSameAsSlowPath(bytesOf(`<${ROOT}><a>x</a></${ROOT}>`))).toBe(true);
  });

  it('indents the deepest document it takes, however much longer the indentation makes it', () => {
    // Elements on all 128 levels the fast path takes (the root's is the first), 3,000 of them on the
    // last but one, indented 252 spaces: the indented document is more than ten times the page, more
    // than the memory held before.
    const below = 125;
    const leaves = Array.from({ length: 3000 }, (_, i) => (i % 2 ? `<i n="${i}">x &amp; y</i>` : '<e />')).join('');
    const text = `<${ROOT}>${'<d>'.repeat(below)}${leaves}<m>text<i>in text</i></m>${'</d>'.repeat(below)}</${ROOT}>`;
    expect(expectSameAsSlowPath(bytesOf(text))).toBe(true);
    expect(indentedDocument(compactDocument(bytesOf(text), ROOT) as CompactDocument).length).toBeGreaterThan(10 * text.length);
  });

  it('takes the pages the upstream writes', async () => {
    expect(expectSameAsSlowPath(bytesOf(pageDocument(100, new Map([['resultsPerPage', '60']]), SEARCH_PAGES)))).toBe(true);
    const demo = await startDemoUpstream(loadConfig({}, { log: { level: 'silent' } }));
    try {
      const page = Buffer.from(await (await fetch(`${demo.url}/product.search.cp?v=3&appKey=k&resultsPerPage=60`)).arrayBuffer());
      expect(page.toString('utf8')).toContain('&amp;amp;');
      expect(expectSameAsSlowPath(page)).toBe(true);
    } finally {
      await demo.close();
    }
  });
});

/** What a client would get from `assemble`: both renderings, or the failure's text. */
function rendered(assemble: () => Page): { soap: string; document: string } | { error: string } {
  try {
    const page = assemble();
    return page.type === 'compact'
      ? { soap: soapText(page), document: indentedDocument(page).toString('utf8') }
      : { soap: writeXml(page, { indent: false, defaultNamespace: NS }), document: writeXmlDocument(page, { indent: true }) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('windows and whole lists cut and joined as text', () => {
  it('give the bytes, or the failure, of the same pages as trees', () => {
    let compared = 0;
    fc.assert(
      fc.property(
        fc.nat(300),
        fc.nat(120),
        fc.integer({ min: 1, max: 50 }),
        fc.nat(400),
        fc.nat(3),
        (offset, count, maxPageSize, total, shift) => {
          const window = { offset, count };
          const run = planPages(window, maxPageSize);
          const texts = Array.from({ length: run.pageCount }, (_, i) =>
            pageDocument(
              total,
              new Map([
                ['pageNumber', String(run.firstPage + i + 1)],
                ['resultsPerPage', String(run.pageSize)],
              ]),
              SEARCH_PAGES,
            )
              // Now and then a page that does not start where it was asked to.
              .replace(/startResult="(\d+)"/, (match, start: string) =>
                i === 1 && shift === 0 ? `startResult="${Number(start) + 1}"` : match,
              ),
          );
          const compact = texts.map((text) => compactDocument(bytesOf(text), ROOT));
          if (compact.some((page) => page === null)) return;
          compared++;
          const trees = texts.map((text) => parseXml(text, { positions: false }));
          expect(rendered(() => assembleWindow(compact as Page[], window, run, SHAPE))).toEqual(
            rendered(() => assembleWindow(trees, window, run, SHAPE)),
          );
        },
      ),
      { numRuns: 300 },
    );
    expect(compared).toBeGreaterThan(100);
  });

  it.each([0, 1, 10, 11, 25, 31])('a whole list of %i items, and one whose total changes while the pages come in', (total) => {
    const pageSize = 10;
    const pages = (grow: number): string[] =>
      Array.from({ length: Math.max(1, Math.ceil(total / pageSize)) }, (_, i) =>
        pageDocument(
          total + i * grow,
          new Map([
            ['page', String(i)],
            ['pageSize', String(pageSize)],
          ]),
          STORE_PAGES,
        ),
      );
    for (const texts of [pages(0), pages(1)]) {
      const compact = texts.map((text) => compactDocument(bytesOf(text), ROOT) ?? parseXml(text, { positions: false }));
      const trees = texts.map((text) => parseXml(text, { positions: false }));
      expect(rendered(() => assembleAll(compact, pageSize, SHAPE))).toEqual(rendered(() => assembleAll(trees, pageSize, SHAPE)));
    }
  });

  it('an empty container written `<mainResults />` takes the items of the window', () => {
    const page =
      `<${ROOT} totalDesigns="1" startResult="0" resultLength="0"><mainResults /><searchQuery><searchString>q &amp; ` +
      `r</searchString></searchQuery></${ROOT}>`;
    const compact = compactDocument(bytesOf(page), ROOT);
    expect(compact).not.toBeNull();
    const window = { offset: 0, count: 5 };
    const run = planPages(window, 10);
    expect(rendered(() => assembleWindow([compact as Page], window, run, SHAPE))).toEqual(
      rendered(() => assembleWindow([parseXml(page)], window, run, SHAPE)),
    );
  });

  it('find containers and items however elements of their names (or names that start like them) nest', () => {
    // Children are found by searching for their end tags: elements of the same name inside them,
    // empty ones, look-alike names and text between them must not throw the search off.
    const names = mostly(pick(SHAPE.item, 'x'), pick(SHAPE.items, `${SHAPE.item}X`, `${SHAPE.items}X`));
    const { tree } = fc.letrec<{ tree: string }>((tie) => ({
      tree: fc.oneof(
        { maxDepth: 5, depthIdentifier: 'nest' },
        pick('t', 'q &amp; r'),
        fc.tuple(names, pick('', ' a="1"')).map(([tag, attributes]) => `<${tag}${attributes} />`),
        fc
          .tuple(names, pick('', ' a="1"'), fc.array(tie('tree'), { minLength: 1, maxLength: 4, depthIdentifier: 'nest' }))
          .map(([tag, attributes, children]) => `<${tag}${attributes}>${children.join('')}</${tag}>`),
      ),
    }));
    const trees = fc.array(tree, { maxLength: 4 }).map((parts) => parts.join(''));
    let compared = 0;
    let answered = 0;
    fc.assert(
      fc.property(trees, trees, trees, fc.nat(4), fc.nat(3), (before, items, after, offset, count) => {
        // A total of 0 lets a short page through: the window holds whatever items there are.
        const page = `<${ROOT} totalDesigns="0" startResult="0">${before}<${SHAPE.items}>${items}</${SHAPE.items}>${after}</${ROOT}>`;
        const compact = compactDocument(bytesOf(page), ROOT);
        if (compact === null) return;
        compared++;
        const window = { offset, count };
        const run = planPages(window, 50);
        const fast = rendered(() => assembleWindow([compact], window, run, SHAPE));
        if (!('error' in fast)) answered++;
        expect(fast).toEqual(rendered(() => assembleWindow([parseXml(page)], window, run, SHAPE)));
      }),
      { numRuns: 1000 },
    );
    expect(compared).toBeGreaterThan(300);
    expect(answered).toBeGreaterThan(200);
  });
});
