import type { XmlElement } from './tree.js';

/**
 * The fast path for small documents that need a tree (a SOAP request's envelope): a document in the
 * simple subset of XML is read here with a few regular expressions, where saxes reads it a character
 * at a time (about a twentieth of a call's CPU time under load, for a 300-byte envelope). The simple
 * subset: an optional `<?xml version="1.0" …?>` declaration at the very start, then elements with
 * ASCII names, attributes in either quotes, and text, separated by spaces, tabs and line feeds only;
 * no references of any kind, no comments, CDATA, processing instructions or DOCTYPE, no carriage
 * return, no character outside the Basic Multilingual Plane, every prefix declared in scope.
 *
 * Anything outside it returns `null`, and the caller parses the document with saxes as before: so
 * every document refused, and every error text and position, is saxes's. A document inside it gets
 * the tree saxes would have given, end positions included (test/xml-simple.test.ts compares the two).
 */

/** An NCName in ASCII: what the subset allows on either side of a prefix's colon. */
const NAME = '[A-Za-z_][A-Za-z0-9._-]*';
const QNAME = `${NAME}(?::${NAME})?`;
/** Markup white space, carriage return left out (saxes turns it into a line feed, and counts lines by it). */
const WHITE = '[ \\t\\n]';
/**
 * A character of a value: an XML character but markup, a reference, a quote, a control (values
 * normalise tab and line feed to a space) or a surrogate; text adds the quotes, tab and line feed.
 */
const VALUE_CHAR = '\\x20\\x21\\x23-\\x25\\x28-\\x3b\\x3d-\\ud7ff\\ue000-\\ufffd';
/** A value in either quotes, the other allowed inside: captured (double, single) or not. */
const quoted = (capture: boolean): string => {
  const [open, close] = capture ? ['(', ')'] : ['', ''];
  return `(?:"${open}[${VALUE_CHAR}']*${close}"|'${open}[${VALUE_CHAR}"]*${close}')`;
};

/** The declaration saxes accepts, in its plainest forms. */
const DECLARATION = new RegExp(
  `<\\?xml${WHITE}+version=(["'])1\\.0\\1(?:${WHITE}+encoding=(["'])[A-Za-z][A-Za-z0-9._-]*\\2)?` +
    `(?:${WHITE}+standalone=(["'])(?:yes|no)\\3)?${WHITE}*\\?>`,
  'y',
);
/** A start tag: its name, its attributes (to be split by ATTRIBUTE), and `/` when it is empty. */
const START_TAG = new RegExp(`<(${QNAME})((?:${WHITE}+${QNAME}${WHITE}*=${WHITE}*${quoted(false)})*)${WHITE}*(/?)>`, 'y');
const ATTRIBUTE = new RegExp(`${WHITE}+(${QNAME})${WHITE}*=${WHITE}*${quoted(true)}`, 'g');
const END_TAG = new RegExp(`</(${QNAME})${WHITE}*>`, 'y');
/** Text up to the next tag (`]]>` is not allowed in it, checked apart). */
const TEXT = new RegExp(`[\\t\\n"'>${VALUE_CHAR}]+`, 'y');
const SPACE_ONLY = new RegExp(`^${WHITE}*$`);

/** More attributes on one tag go to saxes, which keeps them in a map: here they are compared in pairs. */
const MAX_ATTRIBUTES = 32;
/** More namespaces in scope go to saxes (an envelope declares a handful). */
const MAX_DECLARATIONS = 16;

const XMLNS_URI = 'http://www.w3.org/2000/xmlns/';

/** The namespaces in scope: prefix (`''` for the default) to URI, each element's over its parent's. */
type Scope = ReadonlyMap<string, string>;
const ROOT_SCOPE: Scope = new Map();

interface Open {
  readonly element: XmlElement;
  readonly scope: Scope;
}

/** The document's root element, or `null` when the document is not in the simple subset. */
export function parseSimpleXml(text: string, maxDepth: number): XmlElement | null {
  DECLARATION.lastIndex = 0;
  let at = DECLARATION.test(text) ? DECLARATION.lastIndex : 0;
  const lines = new LineCounter(text);
  const stack: Open[] = [];
  let root: XmlElement | null = null;
  while (at < text.length) {
    if (text.charCodeAt(at) !== 0x3c) {
      TEXT.lastIndex = at;
      if (!TEXT.test(text)) return null;
      const content = text.slice(at, TEXT.lastIndex);
      if (content.includes(']]>')) return null;
      if (!SPACE_ONLY.test(content)) {
        // Text outside the root is not well-formed: saxes says so.
        const parent = stack[stack.length - 1];
        if (!parent) return null;
        parent.element.children.push({ type: 'text', text: content });
      }
      at = TEXT.lastIndex;
      continue;
    }
    if (text.charCodeAt(at + 1) === 0x2f) {
      END_TAG.lastIndex = at;
      const match = END_TAG.exec(text);
      const open = stack.pop();
      if (!match || !open || match[1] !== open.element.name) return null;
      at = END_TAG.lastIndex;
      open.element.end = lines.positionAt(at);
      continue;
    }
    START_TAG.lastIndex = at;
    const match = START_TAG.exec(text);
    // One root, and no deeper than the parser allows (it refuses deeper documents with its own text).
    if (!match || (root !== null && stack.length === 0) || stack.length >= maxDepth) return null;
    const parent = stack[stack.length - 1];
    const opened = openElement(match[1] as string, match[2] as string, parent?.scope ?? ROOT_SCOPE);
    if (opened === null) return null;
    parent?.element.children.push(opened.element);
    root ??= opened.element;
    at = START_TAG.lastIndex;
    if (match[3] === '/') opened.element.end = lines.positionAt(at);
    else stack.push(opened);
  }
  return root !== null && stack.length === 0 ? root : null;
}

/**
 * Positions as saxes reports them once it has read up to an index: the line (1-based, counted by line
 * feeds) and the column (1-based, in UTF-16 units). Asked in order, so the text is scanned once.
 */
class LineCounter {
  private line = 1;
  private lineStart = 0;
  private nextLineFeed: number;

  constructor(private readonly text: string) {
    this.nextLineFeed = text.indexOf('\n');
  }

  positionAt(index: number): { line: number; column: number } {
    while (this.nextLineFeed >= 0 && this.nextLineFeed < index) {
      this.line++;
      this.lineStart = this.nextLineFeed + 1;
      this.nextLineFeed = this.text.indexOf('\n', this.lineStart);
    }
    return { line: this.line, column: index - this.lineStart + 1 };
  }
}

/** The element of a start tag, with the scope its content is in; `null` when saxes would refuse it or it leaves the subset. */
function openElement(name: string, attributeText: string, parentScope: Scope): Open | null {
  const attributes: ReadAttribute[] = [];
  let scope = parentScope;
  ATTRIBUTE.lastIndex = 0;
  for (let match = ATTRIBUTE.exec(attributeText); match !== null; match = ATTRIBUTE.exec(attributeText)) {
    if (attributes.length === MAX_ATTRIBUTES) return null;
    const attributeName = match[1] as string;
    const value = match[2] ?? (match[3] as string);
    const [prefix, local] = split(attributeName);
    for (const other of attributes) if (other.name === attributeName) return null;
    if (prefix === 'xml' || (prefix === '' && local === 'xml')) return null;
    if (attributeName === 'xmlns' || prefix === 'xmlns') {
      // Declarations of the reserved prefixes, or undeclaring a prefix, have rules of their own; saxes
      // trims a namespace's value (JavaScript's trim) before it binds and checks it.
      if (prefix === 'xmlns' && (local === 'xml' || local === 'xmlns' || value === '')) return null;
      if (value === 'http://www.w3.org/XML/1998/namespace' || value === XMLNS_URI || value !== value.trim()) return null;
      // Each element that declares copies its scope: bounded, or nested declarations would make a 1 MB
      // body cost seconds.
      if (scope.size >= MAX_DECLARATIONS) return null;
      if (scope === parentScope) scope = new Map(parentScope);
      (scope as Map<string, string>).set(prefix === 'xmlns' ? local : '', value);
    }
    attributes.push({ name: attributeName, prefix, local, value, uri: '' });
  }
  for (const [i, attribute] of attributes.entries()) {
    if (attribute.name === 'xmlns' || attribute.prefix === 'xmlns') attribute.uri = XMLNS_URI;
    else if (attribute.prefix !== '') {
      const declared = scope.get(attribute.prefix);
      if (declared === undefined) return null;
      attribute.uri = declared;
      // The same name in the same namespace under two prefixes is one attribute twice.
      for (let j = 0; j < i; j++) {
        const other = attributes[j] as ReadAttribute;
        if (other.local === attribute.local && other.uri === declared && other.prefix !== '' && other.prefix !== 'xmlns') return null;
      }
    }
  }
  const [prefix, local] = split(name);
  if (prefix === 'xml' || prefix === 'xmlns' || (prefix === '' && local === 'xmlns')) return null;
  const uri = scope.get(prefix);
  if (prefix !== '' && uri === undefined) return null;
  const element: XmlElement = {
    type: 'element',
    name,
    prefix,
    local,
    uri: uri ?? '',
    attributes: attributes.map(({ name, value, uri }) => ({ name, value, uri })),
    children: [],
    end: { line: 0, column: 0 },
  };
  return { element, scope };
}

interface ReadAttribute {
  readonly name: string;
  readonly prefix: string;
  readonly local: string;
  readonly value: string;
  /** Resolved once the tag's declarations are all read. */
  uri: string;
}

function split(name: string): [prefix: string, local: string] {
  const colon = name.indexOf(':');
  return colon < 0 ? ['', name] : [name.slice(0, colon), name.slice(colon + 1)];
}
