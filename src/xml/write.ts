import type { XmlElement, XmlNode } from './tree.js';

/**
 * Writes a tree the way .NET's XmlTextWriter does: `<x />` for empty elements, `&`, `<`, `>`
 * escaped in text and `"` too in attributes. Indented output follows XmlTextWriter with
 * Formatting.Indented, Indentation 2 and CRLF: once an element holds text (or CDATA) it is "mixed"
 * and neither it nor anything below it gets line breaks.
 */

export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';

const NEWLINE = '\r\n';
const INDENT = '  ';

export interface WriteOptions {
  readonly indent: boolean;
  /**
   * The default namespace in scope where the node is written. When given, an un-prefixed element
   * whose namespace differs from the one in scope gets an `xmlns` declaration (`xmlns=""` inside the
   * SOAP wrapper), as XmlWriter's namespace fix-up writes it.
   */
  readonly defaultNamespace?: string;
}

export function writeXml(node: XmlElement, options: WriteOptions): string {
  const out: string[] = [];
  writeElement(out, node, options, { depth: 0, mixed: false, defaultNamespace: options.defaultNamespace });
  return out.join('');
}

/** A whole document: declaration, then the root (on its own line when indented). */
export function writeXmlDocument(node: XmlElement, options: WriteOptions): string {
  return XML_DECLARATION + (options.indent ? NEWLINE : '') + writeXml(node, options);
}

interface Scope {
  readonly depth: number;
  readonly mixed: boolean;
  readonly defaultNamespace: string | undefined;
}

function writeElement(out: string[], node: XmlElement, options: WriteOptions, scope: Scope): void {
  out.push('<', node.name);
  let defaultNamespace = scope.defaultNamespace;
  const declared = node.attributes.find((attr) => attr.name === 'xmlns');
  if (declared) {
    defaultNamespace = declared.value;
  } else if (defaultNamespace !== undefined && node.prefix === '' && node.uri !== defaultNamespace) {
    out.push(' xmlns="', escapeAttribute(node.uri), '"');
    defaultNamespace = node.uri;
  }
  for (const attr of node.attributes) out.push(' ', attr.name, '="', escapeAttribute(attr.value), '"');
  if (node.children.length === 0) {
    out.push(' />');
    return;
  }
  out.push('>');

  let mixed = scope.mixed;
  for (const child of node.children) {
    if (child.type === 'text' || child.type === 'cdata') mixed = true;
    else if (options.indent && !mixed) out.push(NEWLINE, INDENT.repeat(scope.depth + 1));
    writeChild(out, child, options, { depth: scope.depth + 1, mixed, defaultNamespace });
  }
  if (options.indent && !mixed) out.push(NEWLINE, INDENT.repeat(scope.depth));
  out.push('</', node.name, '>');
}

function writeChild(out: string[], node: XmlNode, options: WriteOptions, scope: Scope): void {
  switch (node.type) {
    case 'element':
      writeElement(out, node, options, scope);
      return;
    case 'text':
      out.push(escapeText(node.text));
      return;
    case 'cdata':
      out.push('<![CDATA[', node.text, ']]>');
      return;
    case 'comment':
      out.push('<!--', node.text, '-->');
      return;
  }
}

/**
 * Characters XML 1.0 does not allow at all (controls but tab and line breaks, U+FFFE/U+FFFF, lone
 * surrogates). Caller-supplied text can hold them (a SOAPAction of `%01` is echoed in its fault);
 * written as they are they would make the reply unreadable, so they become U+FFFD.
 */
const FORBIDDEN =
  '[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\uFFFE\\uFFFF]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const REPLACEMENT_CHARACTER = '\uFFFD';
const TEXT_SPECIALS = new RegExp(`[&<>]|${FORBIDDEN}`, 'g');
const ATTRIBUTE_SPECIALS = new RegExp(`[&<>"\\t\\n\\r]|${FORBIDDEN}`, 'g');

export function escapeText(text: string): string {
  return text.replace(TEXT_SPECIALS, (ch) => TEXT_ESCAPES[ch] ?? REPLACEMENT_CHARACTER);
}

export function escapeAttribute(text: string): string {
  return text.replace(ATTRIBUTE_SPECIALS, (ch) => ATTRIBUTE_ESCAPES[ch] ?? REPLACEMENT_CHARACTER);
}

/** Text with the characters XML forbids replaced, for markup that is not XML (HTML pages). */
export function withoutForbiddenCharacters(text: string): string {
  return text.replace(FORBIDDEN_ONLY, REPLACEMENT_CHARACTER);
}
const FORBIDDEN_ONLY = new RegExp(FORBIDDEN, 'g');

const TEXT_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };
const ATTRIBUTE_ESCAPES: Readonly<Record<string, string>> = {
  ...TEXT_ESCAPES,
  '"': '&quot;',
  '\t': '&#x9;',
  '\n': '&#xA;',
  '\r': '&#xD;',
};
