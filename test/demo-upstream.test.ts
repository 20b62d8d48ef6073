import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { catalogOptions, generateCatalog, storeDesignCounts, type Design, type Product } from '../src/demo/catalog.js';
import { MAX_BODY_BYTES, startDemoUpstream, type DemoUpstream } from '../src/demo/demo-server.js';
import { parseXml } from '../src/xml/parse.js';
import { attribute, childElements, innerText, type XmlElement } from '../src/xml/tree.js';

const SEARCH = '/product.search.cp';
const STORE = '/product.searchForProductsOfStore.cp';
const PRODUCT = '/product.searchForProduct.cp';

let config: Config;
let upstream: DemoUpstream;
let designs: readonly Design[];

beforeAll(async () => {
  config = loadConfig({});
  upstream = await startDemoUpstream(config);
  designs = upstream.catalog.designs;
});

afterAll(async () => {
  await upstream.close();
});

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

type Params = Record<string, string> | readonly [string, string][];

/** GET with `v=3&appKey=demo` unless the test passes its own (`null` leaves one out). */
async function get(path: string, params: Params = {}, universal: { v?: string | null; appKey?: string | null } = {}): Promise<Reply> {
  const query = new URLSearchParams(params as Record<string, string>);
  const v = universal.v === undefined ? '3' : universal.v;
  const appKey = universal.appKey === undefined ? 'demo' : universal.appKey;
  if (v !== null) query.set('v', v);
  if (appKey !== null) query.set('appKey', appKey);
  return request(`${path}?${query.toString()}`);
}

async function request(target: string, init?: RequestInit): Promise<Reply> {
  const response = await fetch(`${upstream.url}${target}`, init);
  return { status: response.status, headers: response.headers, body: await response.text() };
}

interface ParsedItem {
  readonly mediaId: number;
  readonly total: number;
  readonly products: readonly Readonly<Record<string, string>>[];
}

interface ParsedSet {
  readonly root: Readonly<Record<string, string>>;
  readonly rootAttributeNames: readonly string[];
  readonly items: readonly ParsedItem[];
  readonly searchString: string;
  readonly subtopics: readonly string[];
}

function child(node: XmlElement, name: string): XmlElement {
  const found = childElements(node).find((candidate) => candidate.name === name);
  if (!found) throw new Error(`<${node.name}> has no <${name}>`);
  return found;
}

function attributes(node: XmlElement): Record<string, string> {
  return Object.fromEntries(node.attributes.map((attr) => [attr.name, attr.value]));
}

function parseResultSet(answer: Reply): ParsedSet {
  expect(answer.status).toBe(200);
  const root = parseXml(answer.body);
  expect(root.name).toBe('searchResultSet');
  return {
    root: attributes(root),
    rootAttributeNames: root.attributes.map((attr) => attr.name),
    items: childElements(child(root, 'mainResults')).map((item) => {
      const products = child(item, 'products');
      return {
        mediaId: Number(attribute(item, 'mediaId')),
        total: Number(attribute(products, 'total')),
        products: childElements(products).map(attributes),
      };
    }),
    searchString: innerText(child(child(root, 'searchQuery'), 'searchString')),
    subtopics: childElements(child(root, 'subtopics')).map(innerText),
  };
}

function helpMessage(answer: Reply): string {
  const root = parseXml(answer.body);
  expect(root.name).toBe('help');
  return innerText(child(root, 'exception-message'));
}

const mediaIds = (set: ParsedSet): number[] => set.items.map((item) => item.mediaId);
const productsOf = (set: ParsedSet): Readonly<Record<string, string>>[] => set.items.flatMap((item) => item.products);
const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);
const byScore = (list: readonly Design[]): Design[] => [...list].sort((a, b) => b.score - a.score || a.mediaId - b.mediaId);
const newestFirst = (list: readonly Design[]): Design[] => [...list].sort((a, b) => b.mediaId - a.mediaId);

/** What the wire shows for catalog text: escaped by the upstream's store, then by its XML writer. */
function twice(text: string): string {
  return text
    .replace(/&/g, '&amp;amp;')
    .replace(/</g, '&amp;lt;')
    .replace(/>/g, '&amp;gt;')
    .replace(/"/g, '&amp;quot;')
    .replace(/'/g, '&amp;apos;');
}

describe('demo catalog', () => {
  it('is the same for the same seed and differs for another', () => {
    const options = catalogOptions(config);
    expect(generateCatalog(options)).toEqual(generateCatalog(options));
    expect(generateCatalog(options)).toEqual(upstream.catalog);
    expect(generateCatalog({ ...options, seed: options.seed + 1 }).designs[0]).not.toEqual(designs[0]);
  });

  it('spreads 480 designs unevenly over 6 stores', () => {
    expect(storeDesignCounts(6, 480)).toEqual([317, 107, 36, 13, 5, 2]);
    expect(storeDesignCounts(3, 2)).toEqual([1, 1, 0]);
    expect(sum(storeDesignCounts(100, 100_000))).toBe(100_000);
    const counts = upstream.catalog.stores.map((store) => [store.id, designs.filter((design) => design.store === store).length]);
    expect(counts).toEqual([
      ['cybersprocket', 317],
      ['spayneuter', 107],
      ['teeshack', 36],
      ['dogdaycafe', 13],
      ['pixelpress', 5],
      ['goldenpaws', 2],
    ]);
    expect(upstream.catalog.stores[1]?.name).toBe('Paws Pet Shop Promoting Spay Neuter & Rescue');
  });

  it('pins the first design, so that generator changes are deliberate', () => {
    expect(designs).toHaveLength(480);
    expect(designs[0]).toMatchObject({ mediaId: 8002557, caption: 'Pirate Retro', createdAt: '2004-01-07T00:17:00.000Z' });
  });

  it('has unique, ordered ids and 1–5 products of distinct configured merchandise types', () => {
    const products = designs.flatMap((design) => design.products);
    expect(new Set(products.map((product) => product.productNumber)).size).toBe(products.length);
    for (let i = 1; i < designs.length; i++) {
      const [previous, current] = [designs[i - 1] as Design, designs[i] as Design];
      expect(current.mediaId).toBeGreaterThan(previous.mediaId);
      expect(current.createdAt > previous.createdAt).toBe(true);
    }
    for (const design of designs) {
      expect(design.products.length).toBeGreaterThanOrEqual(1);
      expect(design.products.length).toBeLessThanOrEqual(5);
      expect(new Set(design.products.map((product) => product.merchandiseId)).size).toBe(design.products.length);
    }
    for (const product of products) {
      expect(config.mapping.merchandise[String(product.merchandiseId)]).toBe(product.merchandiseCaption);
      expect(Number.isInteger(product.productNumber)).toBe(true);
    }
  });

  it('contains the characters the double-escaping quirk doubles', () => {
    const products = designs.flatMap((design) => design.products);
    expect(products.some((product) => product.caption.includes('&'))).toBe(true);
    expect(products.some((product) => product.caption.includes("'"))).toBe(true);
    expect(products.some((product) => product.sellerDescription.includes('&'))).toBe(true);
    expect(products.some((product) => product.sellerDescription.includes("'"))).toBe(true);
  });
});

describe('product.search.cp', () => {
  it('answers a bare search with the first page of everything, by score', async () => {
    const answer = await get(SEARCH);
    expect(answer.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(answer.body.startsWith('<searchResultSet totalDesigns="480" ')).toBe(true);
    const set = parseResultSet(answer);
    expect(set.rootAttributeNames).toEqual(['totalDesigns', 'totalProducts', 'startResult', 'resultLength', 'version', 'sort']);
    expect(set.root).toEqual({
      totalDesigns: '480',
      totalProducts: String(sum(designs.map((design) => Math.min(3, design.products.length)))),
      startResult: '0',
      resultLength: '60',
      version: '3',
      sort: 'by_score_desc',
    });
    expect(mediaIds(set)).toEqual(
      byScore(designs)
        .slice(0, 60)
        .map((design) => design.mediaId),
    );
    expect(set.searchString).toBe('');
  });

  it('writes no XML declaration, LF line breaks and two-space indentation', async () => {
    const { body } = await get(SEARCH, { resultsPerPage: '2' });
    expect(body).not.toContain('<?xml');
    expect(body).not.toContain('\r');
    const lines = body.split('\n');
    expect(lines[1]).toBe('  <mainResults>');
    expect(lines[2]).toMatch(
      new RegExp(
        /^ {4}<searchResultItem type="IMAGE" mediaUrl="http:\/\/images\.cafepress\.com\/image\/\d+_125x125\.jpg" /.source +
          /marketplaceUrl="[^"]+" mediaId="\d+">$/.source,
      ),
    );
    expect(lines[3]).toBe('      <products total="3">');
    expect(lines[4]).toMatch(
      new RegExp(
        /^ {8}<product thumbnailUrl="[^"]*" marketplaceUrl="[^"]*" productTypeNumber="\d+" item="[^"]*" /.source +
          /price="\$\d+\.\d\d" marketplacePrice="\d+\.\d\d" productNumber="\d+" caption="[^"]*" /.source +
          /sellerDescription="[^"]*" storeName="[^"]*" storeUrl="[^"]*" /.source +
          /parentSectionName="[^"]*" parentSectionUrl="[^"]*">$/.source,
      ),
    );
    expect(lines.at(-1)).toBe('</searchResultSet>');
    expect(body).toContain('  <searchQuery>\n    <searchString />\n  </searchQuery>\n  <subtopics>\n    <subtopic>');
    for (const line of lines) expect(line).toMatch(/^( {2})*<[^ ]/);
  });

  it('pages by 1-based pageNumber: consecutive pages are the slices of one big page', async () => {
    const big = parseResultSet(await get(SEARCH, { resultsPerPage: '100' }));
    const pages = await Promise.all([1, 2, 3, 4].map((page) => get(SEARCH, { resultsPerPage: '25', pageNumber: String(page) })));
    const sets = pages.map(parseResultSet);
    expect(sets.map((set) => set.root.startResult)).toEqual(['0', '25', '50', '75']);
    expect(sets.map((set) => set.root.resultLength)).toEqual(['25', '25', '25', '25']);
    expect(sets.flatMap(mediaIds)).toEqual(mediaIds(big));
    expect(new Set(sets.flatMap(mediaIds)).size).toBe(100);
  });

  it('answers a short last page and an empty page past the end', async () => {
    const last = parseResultSet(await get(SEARCH, { resultsPerPage: '100', pageNumber: '5' }));
    expect(last.root).toMatchObject({ totalDesigns: '480', startResult: '400', resultLength: '80' });
    expect(mediaIds(last)).toEqual(
      byScore(designs)
        .slice(400)
        .map((design) => design.mediaId),
    );

    const past = await get(SEARCH, { resultsPerPage: '25', pageNumber: '100' });
    expect(past.body).toContain('\n  <mainResults />\n');
    expect(parseResultSet(past).root).toMatchObject({ totalDesigns: '480', startResult: '2475', resultLength: '0' });
  });

  it('sorts by_date_desc newest first', async () => {
    const set = parseResultSet(await get(SEARCH, { sort: 'by_date_desc', resultsPerPage: '100', pageNumber: '2' }));
    expect(set.root.sort).toBe('by_date_desc');
    expect(mediaIds(set)).toEqual(
      newestFirst(designs)
        .slice(100, 200)
        .map((design) => design.mediaId),
    );
  });

  it('caps the products of each design at maxProductsPerDesign, in catalog order', async () => {
    const one = parseResultSet(await get(SEARCH, { maxProductsPerDesign: '1', resultsPerPage: '100' }));
    expect(one.root.totalProducts).toBe('480');
    expect(one.items.every((item) => item.total === 1 && item.products.length === 1)).toBe(true);

    const five = parseResultSet(await get(SEARCH, { maxProductsPerDesign: '5', resultsPerPage: '100' }));
    expect(five.root.totalProducts).toBe(String(sum(designs.map((design) => design.products.length))));
    const expected = byScore(designs).slice(0, 100);
    expect(five.items.map((item) => item.products.map((product) => Number(product.productNumber)))).toEqual(
      expected.map((design) => design.products.map((product) => product.productNumber)),
    );
  });

  it('keeps only the listed merchandise types, given comma-separated or repeated', async () => {
    const mugsOrShirts = (product: Product): boolean => product.merchandiseId === 0 || product.merchandiseId === 2;
    const matching = designs.filter((design) => design.products.some(mugsOrShirts));
    const comma = await get(SEARCH, { merchandiseIds: '0,2', resultsPerPage: '100' });
    const repeated = await get(SEARCH, [
      ['merchandiseIds', '0'],
      ['merchandiseIds', '2'],
      ['resultsPerPage', '100'],
    ]);
    expect(repeated.body).toBe(comma.body);
    const set = parseResultSet(comma);
    expect(set.root.totalDesigns).toBe(String(matching.length));
    expect(set.root.totalProducts).toBe(String(sum(matching.map((design) => design.products.filter(mugsOrShirts).length))));
    expect(new Set(productsOf(set).map((product) => product.productTypeNumber))).toEqual(new Set(['0', '2']));
    expect(mediaIds(set)).toEqual(
      byScore(matching)
        .slice(0, 100)
        .map((design) => design.mediaId),
    );
  });

  it('excludes negated merchandise types and then ignores the positive ones', async () => {
    const notShirt = (product: Product): boolean => product.merchandiseId !== 2;
    const matching = designs.filter((design) => design.products.some(notShirt));
    expect(matching.length).toBeLessThan(480);
    const set = parseResultSet(await get(SEARCH, { merchandiseIds: '-2,0', resultsPerPage: '100' }));
    expect(set.root.totalDesigns).toBe(String(matching.length));
    expect(set.root.totalProducts).toBe(String(sum(matching.map((design) => Math.min(3, design.products.filter(notShirt).length)))));
    const types = new Set(productsOf(set).map((product) => product.productTypeNumber));
    expect(types.has('2')).toBe(false);
    expect(types.has('0')).toBe(true);
    expect(types.size).toBeGreaterThan(10);

    const nothingExcluded = parseResultSet(await get(SEARCH, { merchandiseIds: '-999' }));
    expect(nothingExcluded.root.totalDesigns).toBe('480');
  });

  it('matches every query word, case-insensitively, against design and product captions', async () => {
    const has = (design: Design, word: string): boolean =>
      [design.caption, ...design.products.map((product) => product.caption)].some((text) => new RegExp(`\\b${word}\\b`, 'i').test(text));
    const dogs = designs.filter((design) => has(design, 'dog'));
    expect(dogs.length).toBeGreaterThan(0);

    const set = parseResultSet(await get(SEARCH, { query: 'dog', resultsPerPage: '100' }));
    expect(set.root.totalDesigns).toBe(String(dogs.length));
    expect(set.searchString).toBe('dog');
    expect(set.subtopics.length).toBeGreaterThan(0);
    expect(set.subtopics.length).toBeLessThanOrEqual(10);
    expect(set.subtopics).not.toContain('dog');
    expect(parseResultSet(await get(SEARCH, { query: 'DoG' })).root.totalDesigns).toBe(String(dogs.length));

    const dogMugs = designs.filter((design) => has(design, 'dog') && has(design, 'mug'));
    const both = parseResultSet(await get(SEARCH, { query: 'dog mug', resultsPerPage: '100' }));
    expect(both.root.totalDesigns).toBe(String(dogMugs.length));
    expect(dogMugs.length).toBeLessThan(dogs.length);

    const none = await get(SEARCH, { query: 'xyzzy' });
    expect(parseResultSet(none).root).toMatchObject({ totalDesigns: '0', totalProducts: '0', resultLength: '0' });
  });

  it('echoes the query escaped once', async () => {
    const answer = await get(SEARCH, { query: 'cats & dogs' });
    expect(answer.body).toContain('<searchString>cats &amp; dogs</searchString>');
  });

  it('takes the same fields as a POSTed form', async () => {
    const fields = { v: '3', appKey: 'demo', query: 'cat', resultsPerPage: '7', pageNumber: '2' };
    const posted = await request(SEARCH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const got = await get(SEARCH, { query: 'cat', resultsPerPage: '7', pageNumber: '2' });
    expect(posted.status).toBe(200);
    expect(posted.body).toBe(got.body);
    expect(parseResultSet(posted).root).toMatchObject({ startResult: '7', resultLength: '7' });
  });
});

describe('product.searchForProductsOfStore.cp', () => {
  const storeDesigns = (id: string): Design[] => newestFirst(designs.filter((design) => design.store.id === id));

  it('lists the big store over two pages of the default size 256, from page 0', async () => {
    const expected = storeDesigns('cybersprocket');
    const first = parseResultSet(await get(STORE, { storeId: 'cybersprocket' }));
    const second = parseResultSet(await get(STORE, { storeId: 'cybersprocket', page: '1' }));
    expect(first.root).toMatchObject({ totalDesigns: '317', startResult: '0', resultLength: '256', sort: 'by_date_desc' });
    expect(second.root).toMatchObject({ totalDesigns: '317', startResult: '256', resultLength: '61' });
    expect([...mediaIds(first), ...mediaIds(second)]).toEqual(expected.map((design) => design.mediaId));
    expect(first.root.totalProducts).toBe(String(sum(expected.map((design) => design.products.length))));
    const products = [...productsOf(first), ...productsOf(second)];
    expect(products.every((product) => product.storeUrl === 'http://www.cafepress.com/cybersprocket')).toBe(true);
  });

  it('pages by pageSize, finds store ids case-insensitively and filters merchandise', async () => {
    const paged = parseResultSet(await get(STORE, { storeId: 'CyberSprocket', page: '2', pageSize: '10' }));
    expect(paged.root).toMatchObject({ startResult: '20', resultLength: '10' });
    expect(mediaIds(paged)).toEqual(
      storeDesigns('cybersprocket')
        .slice(20, 30)
        .map((design) => design.mediaId),
    );

    const small = parseResultSet(await get(STORE, { storeId: 'goldenpaws' }));
    expect(small.root).toMatchObject({ totalDesigns: '2', resultLength: '2' });

    const mugs = storeDesigns('spayneuter').filter((design) => design.products.some((product) => product.merchandiseId === 0));
    const filtered = parseResultSet(await get(STORE, { storeId: 'spayneuter', merchandiseIds: '0' }));
    expect(mediaIds(filtered)).toEqual(mugs.map((design) => design.mediaId));
    expect(productsOf(filtered).every((product) => product.productTypeNumber === '0')).toBe(true);
  });

  it('refuses a missing or unknown store and bad paging', async () => {
    const cases: [Params, string][] = [
      [{}, "Parameter 'storeId' is required."],
      [{ storeId: 'nosuchstore' }, "Store 'nosuchstore' was not found."],
      [{ storeId: 'cybersprocket', page: '-1' }, "Invalid page value '-1'. The first page is 0."],
      [{ storeId: 'cybersprocket', pageSize: '257' }, "Invalid pageSize value '257'. Expected an integer from 1 to 256."],
      [{ storeId: 'cybersprocket', pageSize: '0' }, "Invalid pageSize value '0'. Expected an integer from 1 to 256."],
    ];
    for (const [params, message] of cases) {
      const answer = await get(STORE, params);
      expect(answer.status).toBe(400);
      expect(helpMessage(answer)).toBe(message);
    }
  });
});

describe('product.searchForProduct.cp', () => {
  it('answers the design holding the product, with that product only, in the exact upstream shape', async () => {
    const design = designs.find(
      (candidate) =>
        candidate.store.id === 'spayneuter' &&
        candidate.section !== null &&
        /^[A-Za-z ]+$/.test(candidate.caption) &&
        candidate.products.some((product) => product.colors.length > 0 && product.sellerDescription.includes('&')),
    ) as Design;
    const product = design.products.find(
      (candidate) => candidate.colors.length > 0 && candidate.sellerDescription.includes('&'),
    ) as Product;
    const section = design.section as NonNullable<Design['section']>;
    const storeUrl = 'http://www.cafepress.com/spayneuter';
    const words = [...new Set(design.caption.toLowerCase().split(' '))].sort();
    const price = (cents: number): string => (cents / 100).toFixed(2);

    const answer = await get(PRODUCT, { productId: String(product.productNumber) });
    expect(answer.body).toBe(
      [
        '<searchResultSet totalDesigns="1" totalProducts="1" startResult="0" resultLength="1" version="3" sort="by_score_desc">',
        '  <mainResults>',
        `    <searchResultItem type="IMAGE" mediaUrl="http://images.cafepress.com/image/${design.mediaId}_125x125.jpg" ` +
          `marketplaceUrl="http://www.cafepress.com/buy/${design.caption.split(' ')[0]?.toLowerCase()}` +
          `/-/pv_design_details/pg_1/id_${design.mediaId}/hlv_1" mediaId="${design.mediaId}">`,
        '      <products total="1">',
        `        <product ` +
          `thumbnailUrl="http://www.cafepress.com/cp/search/image.aspx?p=${product.productNumber}&amp;i=${design.mediaId}" ` +
          `marketplaceUrl="${storeUrl}.${product.productNumber}" productTypeNumber="${product.merchandiseId}" ` +
          `item="${product.merchandiseCaption.replace(/"/g, '&quot;')}" price="$${price(product.priceCents)}" ` +
          `marketplacePrice="${price(product.marketplacePriceCents)}" productNumber="${product.productNumber}" ` +
          `caption="${twice(product.caption)}" sellerDescription="${twice(product.sellerDescription)}" storeName="Paws Pet Shop ` +
          `Promoting Spay Neuter &amp;amp; Rescue" storeUrl="${storeUrl}" parentSectionName="${twice(section.name)}" ` +
          `parentSectionUrl="${storeUrl}/${section.id}">`,
        '          <colors>',
        ...product.colors.map((color) => `            <color>${color}</color>`),
        '          </colors>',
        ...(product.sizes.length === 0
          ? ['          <sizes />']
          : ['          <sizes>', ...product.sizes.map((size) => `            <size>${size}</size>`), '          </sizes>']),
        '        </product>',
        '      </products>',
        '    </searchResultItem>',
        '  </mainResults>',
        '  <searchQuery>',
        '    <searchString />',
        '  </searchQuery>',
        '  <subtopics>',
        ...words.map((word) => `    <subtopic>${word}</subtopic>`),
        '  </subtopics>',
        '</searchResultSet>',
      ].join('\n'),
    );
  });

  it('answers an empty set for an unknown product', async () => {
    const answer = await get(PRODUCT, { productId: '1' });
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(
      [
        '<searchResultSet totalDesigns="0" totalProducts="0" startResult="0" resultLength="0" version="3" sort="by_score_desc">',
        '  <mainResults />',
        '  <searchQuery>',
        '    <searchString />',
        '  </searchQuery>',
        '  <subtopics />',
        '</searchResultSet>',
      ].join('\n'),
    );
  });

  it('refuses a missing or non-numeric productId', async () => {
    const missing = await get(PRODUCT);
    expect(missing.status).toBe(400);
    expect(helpMessage(missing)).toBe("Parameter 'productId' is required.");
    const word = await get(PRODUCT, { productId: 'abc' });
    expect(word.status).toBe(400);
    expect(helpMessage(word)).toBe("Invalid productId value 'abc'. Expected an integer.");
  });
});

describe('the double-escaping quirk', () => {
  it('doubles & and apostrophes of catalog text on the wire, so one decode still shows entities', async () => {
    const products = designs.flatMap((design) => design.products);
    for (const special of ["'", '"', '<']) {
      const product = products.find(
        (candidate) => candidate.caption.includes(special) || candidate.sellerDescription.includes(special),
      ) as Product;
      const answer = await get(PRODUCT, { productId: String(product.productNumber) });
      expect(answer.body).toContain(`caption="${twice(product.caption)}" sellerDescription="${twice(product.sellerDescription)}"`);
    }
    const apostrophe = products.find((candidate) => candidate.caption.includes("'")) as Product;
    const answer = await get(PRODUCT, { productId: String(apostrophe.productNumber) });
    expect(answer.body).toContain('&amp;apos;');
    expect(productsOf(parseResultSet(answer))[0]?.caption).toBe(apostrophe.caption.replace(/'/g, '&apos;'));

    const store = await get(STORE, { storeId: 'spayneuter', pageSize: '1' });
    expect(store.body).toContain('storeName="Paws Pet Shop Promoting Spay Neuter &amp;amp; Rescue"');
    const [first] = productsOf(parseResultSet(store));
    expect(first?.storeName).toBe('Paws Pet Shop Promoting Spay Neuter &amp; Rescue');
    // URLs are escaped once only: one decode gives the real URL.
    expect(first?.thumbnailUrl).toMatch(/^http:\/\/www\.cafepress\.com\/cp\/search\/image\.aspx\?p=\d+&i=\d+$/);
  });

  it('keeps the captured space padding of item', async () => {
    const set = parseResultSet(await get(SEARCH, { merchandiseIds: '0,1,2,17', resultsPerPage: '100' }));
    const items = new Map(productsOf(set).map((product) => [product.productTypeNumber, product.item]));
    expect(items.get('0')).toBe('Mug       ');
    expect(items.get('1')).toBe('Large Mug ');
    expect(items.get('2')).toBe('White T-Shirt   ');
    expect(items.get('17')).toBe('Tote Bag');
  });
});

describe('errors', () => {
  it('answers a call without appKey the way the Mashery gateway does', async () => {
    for (const appKey of [null, '']) {
      const answer = await get(SEARCH, {}, { appKey });
      expect(answer.status).toBe(403);
      expect(answer.headers.get('x-mashery-error-code')).toBe('ERR_403_DEVELOPER_INACTIVE');
      expect(answer.headers.get('content-type')).toBe('text/xml');
      expect(answer.body).toBe('<h1>Developer Inactive</h1>');
    }
    const posted = await request(STORE, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'v=3&storeId=cybersprocket',
    });
    expect(posted.status).toBe(403);
  });

  it('writes the pretty-printed <help> document with status 400', async () => {
    const answer = await get(SEARCH, { sort: 'by_price' });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(answer.body).toMatch(
      new RegExp(
        /^<help>\n {2}<exception-message>Invalid sort value 'by_price'\. /.source +
          /Acceptable values: by_score_desc, by_date_desc\.<\/exception-message>\n/.source +
          / {2}<documentation>product\.search\.cp: [^<]+<\/documentation>\n<\/help>$/.source,
      ),
    );
  });

  it('refuses bad universal and search parameters with clear messages', async () => {
    const cases: [Params, { v?: string | null }, string][] = [
      [{}, { v: null }, "Parameter 'v' is required. The only valid version is 3."],
      [{}, { v: '2' }, "Invalid version '2'. The only valid version is 3."],
      [{ sort: 'by-date-desc' }, {}, "Invalid sort value 'by-date-desc'. Acceptable values: by_score_desc, by_date_desc."],
      [{ resultsPerPage: '101' }, {}, "Invalid resultsPerPage value '101'. Expected an integer from 1 to 100."],
      [{ resultsPerPage: '0' }, {}, "Invalid resultsPerPage value '0'. Expected an integer from 1 to 100."],
      [{ pageNumber: '0' }, {}, "Invalid pageNumber value '0'. The first page is 1."],
      [{ pageNumber: '1.5' }, {}, "Invalid pageNumber value '1.5'. Expected an integer."],
      [{ resultsPerPage: 'ten' }, {}, "Invalid resultsPerPage value 'ten'. Expected an integer."],
      [{ pageNumber: '99999999999999999999' }, {}, "Invalid pageNumber value '99999999999999999999'. Expected an integer."],
      [{ maxProductsPerDesign: '0' }, {}, "Invalid maxProductsPerDesign value '0'. Expected a positive integer."],
      [{ merchandiseIds: '0,mug' }, {}, "Invalid merchandiseIds value 'mug'. Expected integer merchandise ids separated by commas."],
    ];
    for (const [params, universal, message] of cases) {
      const answer = await get(SEARCH, params, universal);
      expect(answer.status, message).toBe(400);
      expect(helpMessage(answer)).toBe(message);
    }
  });

  it('answers unknown paths with 404 and other methods with 405', async () => {
    const unknown = await get('/product.nothing.cp');
    expect(unknown.status).toBe(404);
    expect(helpMessage(unknown)).toBe("Unknown method '/product.nothing.cp'.");

    const put = await request(`${SEARCH}?v=3&appKey=demo`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(helpMessage(put)).toBe("HTTP method 'PUT' is not supported. Use GET or POST.");
  });

  it('bounds the body and refuses bodies that are not forms', async () => {
    const large = await request(SEARCH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `v=3&appKey=demo&query=${'a'.repeat(MAX_BODY_BYTES)}`,
    });
    expect(large.status).toBe(413);
    expect(helpMessage(large)).toBe('The request body exceeds 65536 bytes.');

    // Streamed (chunked, no Content-Length): refused once the limit is crossed, not read to the end.
    const chunk = new TextEncoder().encode('a'.repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 1000) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await request(SEARCH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: stream,
      duplex: 'half',
    });
    expect(streamed.status).toBe(413);
    expect(sent).toBeLessThan(1000);

    const json = await request(SEARCH, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":"3"}' });
    expect(json.status).toBe(415);
    expect(helpMessage(json)).toBe("Unsupported content type 'application/json'. Send the fields as application/x-www-form-urlencoded.");
  });

  it('survives malformed input and keeps serving', async () => {
    const garbled = await request(`${SEARCH}?v=3&appKey=demo&query=%E0%A4%A&merchandiseIds=%%`);
    expect(garbled.status).toBe(400);
    expect(helpMessage(garbled)).toBe("Invalid merchandiseIds value '%%'. Expected integer merchandise ids separated by commas.");
    const odd = await request(`${SEARCH}?v=3&appKey=demo&query=%E0%A4%A&&=&x`);
    expect(odd.status).toBe(200);
    const after = await get(SEARCH, { resultsPerPage: '1' });
    expect(parseResultSet(after).root.resultLength).toBe('1');
  });
});
