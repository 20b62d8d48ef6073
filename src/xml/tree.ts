/** A small XML tree: what a default-loaded XmlDocument keeps, in document order. */

export interface XmlAttribute {
  readonly name: string;
  readonly value: string;
  /** Resolved namespace of a prefixed attribute (parsed documents only). */
  readonly uri?: string;
}

export interface XmlPosition {
  /** 1-based. */
  readonly line: number;
  /** 1-based, counted in UTF-16 units as .NET's XmlReader counts them. */
  readonly column: number;
}

export interface XmlElement {
  readonly type: 'element';
  /** Qualified name as written (`soap:Body`, `searchResultSet`). */
  readonly name: string;
  readonly prefix: string;
  readonly local: string;
  /** Resolved namespace URI, `''` for none. */
  readonly uri: string;
  /** In document order, namespace declarations included. */
  readonly attributes: readonly XmlAttribute[];
  readonly children: XmlNode[];
  /** Reader position just after the element's end tag; (0, 0) for built elements. */
  end: XmlPosition;
}

export interface XmlText {
  readonly type: 'text' | 'cdata' | 'comment';
  readonly text: string;
}

export type XmlNode = XmlElement | XmlText;

/** Builds an element for a document this service writes itself (WSDL, disco, results). */
export function element(
  name: string,
  attributes: Readonly<Record<string, string>> = {},
  children: readonly (XmlNode | string)[] = [],
): XmlElement {
  const colon = name.indexOf(':');
  return {
    type: 'element',
    name,
    prefix: colon < 0 ? '' : name.slice(0, colon),
    local: colon < 0 ? name : name.slice(colon + 1),
    uri: '',
    attributes: Object.entries(attributes).map(([attrName, value]) => ({ name: attrName, value })),
    children: children.map((child) => (typeof child === 'string' ? { type: 'text', text: child } : child)),
    end: { line: 0, column: 0 },
  };
}

export function attribute(node: XmlElement, name: string): string | undefined {
  return node.attributes.find((attr) => attr.name === name)?.value;
}

export function childElements(node: XmlElement): XmlElement[] {
  return node.children.filter((child): child is XmlElement => child.type === 'element');
}

/** The element's character content, as XmlNode.InnerText reads it. */
export function innerText(node: XmlNode): string {
  if (node.type === 'comment') return '';
  if (node.type !== 'element') return node.text;
  return node.children.map(innerText).join('');
}
