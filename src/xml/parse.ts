import { SaxesParser, type SaxesTagNS } from 'saxes';
import { XML_DTD_PROHIBITED, XML_ROOT_DATA, XML_ROOT_MISSING, xmlTooDeep } from '../messages.js';
import { parseSimpleXml } from './simple.js';
import type { XmlElement, XmlNode } from './tree.js';

/**
 * Reads untrusted XML into a tree the way a default-loaded XmlDocument would keep it: namespaces
 * resolved, whitespace-only text dropped, entities limited to the five predefined ones and character
 * references. A DOCTYPE is refused outright, so no DTD is read and no entity is ever expanded.
 */

export type XmlErrorKind = 'root-missing' | 'root-data' | 'dtd' | 'too-deep' | 'syntax';

/** Not well-formed (or refused). `message` is worded as .NET's XmlException would word it. */
export class XmlSyntaxError extends Error {
  readonly kind: XmlErrorKind;
  readonly line: number;
  readonly column: number;

  constructor(kind: XmlErrorKind, description: string, line: number, column: number) {
    super(kind === 'root-missing' ? description : `${description} Line ${line}, position ${column}.`);
    this.name = 'XmlSyntaxError';
    this.kind = kind;
    this.line = line;
    this.column = column;
  }
}

export interface ParseOptions {
  /** Deepest element nesting accepted; deeper input is refused rather than recursed into. */
  readonly maxDepth: number;
  /** Line and column in error texts (saxes counts them either way, and `end` has them). */
  readonly positions: boolean;
}

const DEFAULT_OPTIONS: ParseOptions = { maxDepth: 128, positions: true };

/** Parses a whole document and returns its root element. Throws XmlSyntaxError. */
export function parseXml(text: string, options: Partial<ParseOptions> = {}): XmlElement {
  const limits: ParseOptions = { ...DEFAULT_OPTIONS, ...options };
  // A request's envelope (read with positions) is most often in the simple subset (src/xml/simple.ts).
  const simple = limits.positions ? parseSimpleXml(text, limits.maxDepth) : null;
  return simple ?? parseXmlWithSaxes(text, limits);
}

/** Any document, read by saxes: every refusal worded and placed as parseXml's. */
export function parseXmlWithSaxes(text: string, limits: ParseOptions): XmlElement {
  const firstSignificant = text.search(/[^\s\uFEFF]/);
  if (firstSignificant < 0) throw new XmlSyntaxError('root-missing', XML_ROOT_MISSING, 0, 0);
  if (text[firstSignificant] !== '<') {
    const { line, column } = positionOf(text, firstSignificant);
    throw new XmlSyntaxError('root-data', XML_ROOT_DATA, line, column);
  }

  const parser = new SaxesParser({ xmlns: true, position: limits.positions });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  // XmlReader's LinePosition counts UTF-16 units, as `columnIndex` does (`column` counts code points).
  const here = (): [number, number] => [parser.line, parser.columnIndex + 1];

  const append = (node: XmlNode): void => {
    stack[stack.length - 1]?.children.push(node);
  };

  parser.on('doctype', () => {
    throw new XmlSyntaxError('dtd', XML_DTD_PROHIBITED, ...here());
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    if (stack.length >= limits.maxDepth) {
      throw new XmlSyntaxError('too-deep', xmlTooDeep(limits.maxDepth), ...here());
    }
    const node: XmlElement = {
      type: 'element',
      name: tag.name,
      prefix: tag.prefix,
      local: tag.local,
      uri: tag.uri,
      attributes: Object.values(tag.attributes).map((attr) => ({ name: attr.name, value: attr.value, uri: attr.uri })),
      children: [],
      end: { line: 0, column: 0 },
    };
    append(node);
    stack.push(node);
    root ??= node;
  });
  parser.on('closetag', () => {
    const node = stack.pop();
    if (node) {
      const [line, column] = here();
      node.end = { line, column };
    }
  });
  parser.on('text', (text) => {
    if (stack.length > 0 && /[^ \t\r\n]/.test(text)) append({ type: 'text', text });
  });
  parser.on('cdata', (text) => append({ type: 'cdata', text }));
  parser.on('comment', (text) => append({ type: 'comment', text }));

  try {
    parser.write(text).close();
  } catch (err) {
    if (err instanceof XmlSyntaxError) throw err;
    // saxes throws its own Error for well-formedness errors. No 'error' handler on purpose: a
    // seventh handler property makes saxes several times slower on large documents.
    throw new XmlSyntaxError('syntax', describe((err as Error).message), ...here());
  }
  if (!root) throw new XmlSyntaxError('root-missing', XML_ROOT_MISSING, 0, 0);
  return root;
}

/** saxes prefixes its messages with the position; .NET puts the position at the end instead. */
function describe(message: string): string {
  const text = message.replace(/^(?:[^:]*:)?\d+:\d+: /, '');
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return sentence.endsWith('.') ? sentence : `${sentence}.`;
}

function positionOf(text: string, index: number): { line: number; column: number } {
  const before = text.slice(0, index);
  const lines = before.split(/\r\n|\r|\n/);
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}
