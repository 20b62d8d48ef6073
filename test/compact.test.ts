import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startDemoUpstream } from '../src/demo/upstream.js';
import { assembleAll, assembleWindow } from '../src/translate/assemble.js';
import { planPages } from '../src/translate/paging.js';
import { compactDocument, indentedDocument, soapContent, type Page } from '../src/xml/compact.js';
import { parseXml } from '../src/xml/parse.js';
import { writeXml, writeXmlDocument } from '../src/xml/write.js';
import { SEARCH_PAGES, STORE_PAGES, pageDocument } from './support/pages.js';

/**
 * The fast path passes a canonical upstream page through as text. Whenever it does, the bytes must
 * be exactly what parsing and writing the page would give (the SOAP content and the indented HTTP
 * document), and the page must be one the parser accepts; whenever it does not, the slow path
 * decides. Checked on generated documents, canonical and not, well-formed and not.
 */

const ROOT = 'searchResultSet';
const NS = 'http://tempuri.org/';
/** Where a `searchResultSet` keeps its items. */
const SHAPE = { items: 'mainResults', item: 'searchResultItem' };

const pick = <T>(...values: T[]): fc.Arbitrary<T> => fc.constantFrom(...values);
/** Mostly `usual`, now and then `rare`: most documents canonical, some at or past its edges. */
const mostly = <T>(usual: fc.Arbitrary<T>, rare: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ weight: 40, arbitrary: usual }, { weight: 1, arbitrary: rare });

/** Characters and references, the ones at the edges of the canonical subset now and then. */
const piece = mostly(
  pick('a', 'Z', '0', ' ', 'é', '€', '😀', '&amp;', '&lt;', '&gt;', '"', "'"),
  pick('&quot;', '&apos;', '&#65;', '&#x9;', '>', '\t', '\n', '\r', '\u0001', '&', '<', ']]>', '\uFFFE', '\uD800', '\uDC00', '\uD800&lt;'),
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
    .tuple(name, fc.array(attribute, { maxLength: 3 }), mostly(pick('children', ' />'), pick('/>', 'pair')), fc.array(tie('node'), { maxLength: 4, depthIdentifier: 'tree' }))
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
    fc.array(element.chain((e) => fc.tuple(space, fc.constant(e)).map(([s, x]) => s + x)), { maxLength: 4 }),
    space,
    mostly(pick(''), pick('trailing', '<b />', '<!-- after -->')),
    mostly(fc.constant(null), fc.nat()),
  )
  .map(([lead, prolog, root, attributes, children, inner, trailing, cut]) => {
    const text = `${lead}${prolog}<${root}${attributes.join('')}>${children.join('')}${inner}</${root}>${lead}${trailing}`;
    return cut === null ? text : text.slice(0, cut % (text.length + 1));
  });

function expectSameAsSlowPath(text: string): boolean {
  const fast = compactDocument(text, ROOT);
  if (fast === null) return false;
  const tree = parseXml(text, { positions: false });
  expect(tree.local).toBe(ROOT);
  expect(soapContent(fast)).toBe(writeXml(tree, { indent: false, defaultNamespace: NS }));
  expect(indentedDocument(fast)).toBe(writeXmlDocument(tree, { indent: true }));
  return true;
}

describe('the fast path for upstream pages', () => {
  it('gives exactly the bytes of the slow path whenever it takes a document', () => {
    let taken = 0;
    let runs = 0;
    fc.assert(
      fc.property(documentText, (text) => {
        runs++;
        if (expectSameAsSlowPath(text)) taken++;
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
  ])('leaves %s to the slow path', (_case, text) => {
    expect(compactDocument(text, ROOT)).toBeNull();
  });

  it('decides in linear time, however the text before a non-canonical character can be split', () => {
    // Exponential backtracking made this take minutes: every way of cutting the titles was tried.
    const titles = '<t>Mugs and cups for dads and their dogs</t>'.repeat(40);
    const started = performance.now();
    for (const odd of ['A > B', 'Caf&#233;', '&apos;', '&quot;', 'a\rb']) {
      expect(compactDocument(`<${ROOT}>${titles}<t>${odd}</t></${ROOT}>`, ROOT)).toBeNull();
    }
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('takes a page of 12 MB without running out of stack', () => {
    const page = `<${ROOT}><mainResults>${'<i a="1">x &amp; y</i>'.repeat(600_000)}</mainResults></${ROOT}>`;
    expect(compactDocument(page, ROOT)?.text.length).toBe(page.length);
  });

  it('takes the pages the upstream writes', async () => {
    expect(expectSameAsSlowPath(pageDocument(100, new Map([['resultsPerPage', '60']]), SEARCH_PAGES))).toBe(true);
    const demo = await startDemoUpstream(loadConfig({}, { log: { level: 'silent' } }));
    try {
      const page = await (await fetch(`${demo.url}/product.search.cp?v=3&appKey=k&resultsPerPage=60`)).text();
      expect(page).toContain('&amp;amp;');
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
      ? { soap: soapContent(page), document: indentedDocument(page) }
      : { soap: writeXml(page, { indent: false, defaultNamespace: NS }), document: writeXmlDocument(page, { indent: true }) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('windows and whole lists cut and joined as text', () => {
  it('give the bytes, or the failure, of the same pages as trees', () => {
    let compared = 0;
    fc.assert(
      fc.property(fc.nat(300), fc.nat(120), fc.integer({ min: 1, max: 50 }), fc.nat(400), fc.nat(3), (offset, count, maxPageSize, total, shift) => {
        const window = { offset, count };
        const run = planPages(window, maxPageSize);
        const texts = Array.from({ length: run.pageCount }, (_, i) =>
          pageDocument(total, new Map([['pageNumber', String(run.firstPage + i + 1)], ['resultsPerPage', String(run.pageSize)]]), SEARCH_PAGES)
            // Now and then a page that does not start where it was asked to.
            .replace(/startResult="(\d+)"/, (match, start: string) => (i === 1 && shift === 0 ? `startResult="${Number(start) + 1}"` : match)),
        );
        const compact = texts.map((text) => compactDocument(text, ROOT));
        if (compact.some((page) => page === null)) return;
        compared++;
        const trees = texts.map((text) => parseXml(text, { positions: false }));
        expect(rendered(() => assembleWindow(compact as Page[], window, run, SHAPE))).toEqual(rendered(() => assembleWindow(trees, window, run, SHAPE)));
      }),
      { numRuns: 300 },
    );
    expect(compared).toBeGreaterThan(100);
  });

  it.each([0, 1, 10, 11, 25, 31])('a whole list of %i items, and one whose total changes while the pages come in', (total) => {
    const pageSize = 10;
    const pages = (grow: number): string[] =>
      Array.from({ length: Math.max(1, Math.ceil(total / pageSize)) }, (_, i) =>
        pageDocument(total + i * grow, new Map([['page', String(i)], ['pageSize', String(pageSize)]]), STORE_PAGES),
      );
    for (const texts of [pages(0), pages(1)]) {
      const compact = texts.map((text) => compactDocument(text, ROOT) ?? parseXml(text, { positions: false }));
      const trees = texts.map((text) => parseXml(text, { positions: false }));
      expect(rendered(() => assembleAll(compact, pageSize, SHAPE))).toEqual(rendered(() => assembleAll(trees, pageSize, SHAPE)));
    }
  });

  it('an empty container written `<mainResults />` takes the items of the window', () => {
    const page = `<${ROOT} totalDesigns="1" startResult="0" resultLength="0"><mainResults /><searchQuery><searchString>q &amp; r</searchString></searchQuery></${ROOT}>`;
    const compact = compactDocument(page, ROOT);
    expect(compact).not.toBeNull();
    const window = { offset: 0, count: 5 };
    const run = planPages(window, 10);
    expect(rendered(() => assembleWindow([compact as Page], window, run, SHAPE))).toEqual(rendered(() => assembleWindow([parseXml(page)], window, run, SHAPE)));
  });
});
