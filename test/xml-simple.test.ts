import { describe, expect, it } from 'vitest';
import { parseXml, parseXmlWithSaxes, type ParseOptions } from '../src/xml/parse.js';
import { parseSimpleXml } from '../src/xml/simple.js';
import type { XmlElement } from '../src/xml/tree.js';

/**
 * The simple subset's reader (src/xml/simple.ts) stands in for saxes on a request's envelope: for
 * every document it reads, the tree must be saxes's, end positions included (they place the faults
 * of a bad value); every document saxes refuses, it must leave to saxes.
 */

const LIMITS: ParseOptions = { maxDepth: 128, positions: true };

/** saxes's tree, or the refusal. */
function bySaxes(text: string): XmlElement | Error {
  try {
    return parseXmlWithSaxes(text, LIMITS);
  } catch (err) {
    return err as Error;
  }
}

/** What the subset's reader gave, checked against saxes: `true` when it read the document itself. */
function readTheSame(text: string): boolean {
  const simple = parseSimpleXml(text, LIMITS.maxDepth);
  if (simple === null) return false;
  expect(bySaxes(text), text).toEqual(simple);
  return true;
}

const SOAP11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const SOAP12 = 'http://www.w3.org/2003/05/soap-envelope';

/** Envelopes as the clients of the five stacks send them (test/support/calls.ts, docs/clients.md). */
const ENVELOPES = [
  // .NET's SoapHttpClientProtocol
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP11}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
    `xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><Search ` +
    `xmlns="http://tempuri.org/"><query>dog</query><apiKey>k-1</apiKey></Search></soap:Body></soap:Envelope>`,
  // SOAP 1.2, indented, an empty element
  `<?xml version='1.0' encoding='UTF-8' standalone='no' ?>\n<env:Envelope xmlns:env="${SOAP12}">\n  <env:Header/>\n  <env:Body>\n    ` +
    `<tns:StoreLookupPaged xmlns:tns="http://tempuri.org/">\n      <tns:storeId>123</tns:storeId>\n      ` +
    `<tns:startResults>0</tns:startResults>\n      <tns:maxResults >20</tns:maxResults>\n    </tns:StoreLookupPaged>\n  ` +
    `</env:Body>\n</env:Envelope>\n`,
  // zeep / PHP: prefixes everywhere, xsi:type on values, text with quotes and '>'
  `<SOAP-ENV:Envelope xmlns:SOAP-ENV="${SOAP11}" xmlns:ns1="http://tempuri.org/" ` +
    `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><SOAP-ENV:Body><ns1:AdvancedSearch><ns1:query xsi:type="xsd:string">"red" > ` +
    `'blue' ü 水</ns1:query><ns1:productTypes/></ns1:AdvancedSearch></SOAP-ENV:Body></SOAP-ENV:Envelope>`,
  // An inner default namespace undeclared, attributes spaced around '='
  `<a:Envelope xmlns:a="${SOAP11}"><a:Body><Search xmlns = "http://tempuri.org/" x = 'y'><query ` +
    `xmlns="">cat</query></Search></a:Body></a:Envelope>`,
];

describe('the simple subset of XML, read without saxes', () => {
  it.each(ENVELOPES.map((text, i) => [i, text]))('envelope %i: read here, into the tree saxes gives', (_i, text) => {
    expect(readTheSame(text)).toBe(true);
  });

  it('leaves documents read without positions (the pages) to saxes: the same tree as saxes without positions', () => {
    const text = ENVELOPES[0] as string;
    expect(parseXml(text, { positions: false })).toEqual(parseXmlWithSaxes(text, { ...LIMITS, positions: false }));
  });

  it('bounds the namespaces in scope: a 1 MB body of nested declarations does not cost seconds', () => {
    const declarations = Array.from({ length: 32 }, (_, i) => ` xmlns:p${i}="u${i}"`).join('');
    const open = `<a${declarations}>`.repeat(100);
    const text = `${open}${'<b xmlns:z="u"/>'.repeat(60_000)}${'</a>'.repeat(100)}`;
    const started = performance.now();
    expect(parseSimpleXml(text, 128)).toBeNull();
    expect(performance.now() - started).toBeLessThan(500);
  });

  it.each([
    ['a reference', '<a>&amp;</a>', 'reads'],
    ['a character reference', '<a>&#65;</a>', 'reads'],
    ['a comment', '<a><!-- c --></a>', 'reads'],
    ['CDATA', '<a><![CDATA[x]]></a>', 'reads'],
    ['a processing instruction', '<a><?pi x?></a>', 'reads'],
    ['a carriage return', '<a>\r\n</a>', 'reads'],
    ['a tab in a value (normalised to a space)', '<a b="\t"/>', 'reads'],
    ['a character past the Basic Multilingual Plane', '<a>😀</a>', 'reads'],
    ['a declaration of version 1.1', '<?xml version="1.1"?><a/>', 'reads'],
    ['a byte order mark', '\uFEFF<a/>', 'reads'],
    ['a name past ASCII', '<ä/>', 'reads'],
    ['the xml prefix', '<a xml:lang="en"/>', 'reads'],
    // saxes trims a namespace's value: its tree would differ from one read here.
    ['a namespace with spaces around it', '<p:a xmlns:p=" u "/>', 'reads'],
    ['a default namespace of spaces only', '<a xmlns="  "/>', 'reads'],
    ['a namespace with a no-break space after it', `<soap:Envelope xmlns:soap="${SOAP11}\u00A0"><soap:Body/></soap:Envelope>`, 'reads'],
    ['a DOCTYPE', '<!DOCTYPE a><a/>', 'refuses'],
    ['a declaration after white space', ' <?xml version="1.0"?><a/>', 'refuses'],
    ['undeclaring a prefix', '<a xmlns:p=""/>', 'refuses'],
    ['undeclaring a prefix with a space', '<a xmlns:p=" "/>', 'refuses'],
    ['an undeclared prefix', '<p:a/>', 'refuses'],
    ['an unclosed element', '<a><b></a>', 'refuses'],
    ['a wrong end tag', '<a></b>', 'refuses'],
    ['two roots', '<a/><b/>', 'refuses'],
    ['text after the root', '<a/>x', 'refuses'],
    ['text before the root', 'x<a/>', 'refuses'],
    ['a duplicate attribute', '<a b="1" b="2"/>', 'refuses'],
    ['the same attribute under two prefixes', '<a xmlns:p="u" xmlns:q="u" p:b="1" q:b="2"/>', 'refuses'],
    [']]> in text', '<a>]]></a>', 'refuses'],
    ['a control character', '<a>\u0001</a>', 'refuses'],
    ['a lone surrogate', '<a>\uD800</a>', 'refuses'],
    ['U+FFFE', '<a>\uFFFE</a>', 'refuses'],
    ['< in a value', '<a b="<"/>', 'refuses'],
    ['no root', '   ', 'refuses'],
    ['a cut document', '<a><b>', 'refuses'],
    ['a missing space between attributes', '<a b="1"c="2"/>', 'refuses'],
  ])('leaves %s to saxes, which %s it', (_what, text, saxes) => {
    expect(parseSimpleXml(text, 128)).toBeNull();
    expect(bySaxes(text) instanceof Error ? 'refuses' : 'reads').toBe(saxes);
  });

  it('leaves a document deeper than the limit to saxes, which refuses it with its own text', () => {
    const deep = `${'<a>'.repeat(5)}${'</a>'.repeat(5)}`;
    expect(parseSimpleXml(deep, 4)).toBeNull();
    expect(parseSimpleXml(deep, 5)).not.toBeNull();
  });

  it('reads a long document without newlines in time linear in its length', () => {
    const text = `<a>${'<b c="d">e</b>'.repeat(50_000)}</a>`;
    const started = performance.now();
    expect(parseSimpleXml(text, 128)?.children).toHaveLength(50_000);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  /** A small seeded generator (mulberry32): the same documents on every run. */
  function generator(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
  }

  it("agrees with saxes on 3,000 mutations of the clients' envelopes: the same tree, or saxes reads it", () => {
    const random = generator(19);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const pieces = [
      '<',
      '>',
      '/',
      '"',
      "'",
      '=',
      ' ',
      '\t',
      '\n',
      '\r',
      '\u00A0',
      '&',
      ';',
      ':',
      'a',
      'x:',
      'xmlns',
      ']]>',
      '<!--',
      '\u0001',
      'é',
      '\uD83D',
      '<a>',
      '</a>',
      '?>',
    ];
    const documents = new Set<string>();
    const readHere = new Set<string>();
    for (let i = 0; i < 3_000; i++) {
      let text = pick(ENVELOPES);
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) {
        const at = Math.floor(random() * text.length);
        const kind = random();
        if (kind < 0.4) text = text.slice(0, at) + pick(pieces) + text.slice(at);
        else if (kind < 0.7) text = text.slice(0, at) + text.slice(at + 1 + Math.floor(random() * 3));
        else text = text.slice(0, at) + pick(pieces) + text.slice(at + 1);
      }
      documents.add(text);
      if (readTheSame(text)) readHere.add(text);
    }
    // Different documents, and many of them kept in the subset (edits inside text and values): the
    // comparison is not empty.
    expect(documents.size).toBeGreaterThan(2_500);
    expect(readHere.size).toBeGreaterThan(300);
  });
});
