import type { BindingName } from '../inbound/binding.js';
import { namesKey, redact, REDACTED } from '../redaction/redact.js';
import { parseXml, XmlSyntaxError } from '../xml/parse.js';
import { childElements, innerText, type XmlElement, type XmlNode } from '../xml/tree.js';

/**
 * Shadow comparison (docs/migration.md §6), pure: two replies to one call, the translated one and the
 * legacy origin's, normalised and compared; the first difference is the diff.
 *
 * What a SOAP client or an XmlSerializer does not see is left out: the envelope around the Body's
 * payload (SOAP) and everything around the document (HTTP GET/POST: declaration, indentation), namespace
 * prefixes and declarations (names compare by namespace URI and local name), attribute order,
 * whitespace-only text, comments, CDATA against text of the same characters. Two faults agree when
 * their codes do (`soap:Server`, or the HTTP status): their texts name different backends' failures.
 * Keys are no difference worth showing: an element or attribute named as a key compares redacted.
 * A diff shows names, namespace URIs and the path through the same redaction as texts: a reply
 * may echo a key in any of them.
 */

/** One answer as it went or would have gone to the caller. */
export interface ComparedReply {
  readonly status: number;
  readonly body: string;
}

/** Where two replies first differ, each side's value redacted and cut. */
export interface Diff {
  /** `/searchResultSet/mainResults/searchResultItem[3]/@price`; `/` when one side is not a result. */
  readonly path: string;
  readonly translated: string;
  readonly legacy: string;
}

/** Longest path or value a diff holds: a log line about a mismatch stays a line. */
export const DIFF_TEXT_LIMIT = 200;
/**
 * How much of one text of a reply a diff reads: room for a key that starts before the cut to be
 * read whole, in any spelling, while a reply of megabytes is not read at all.
 */
const READ_TEXT_LIMIT = 2 * DIFF_TEXT_LIMIT;

interface NormalElement {
  /** `local`, or `{uri}local` in a namespace. */
  readonly name: string;
  /** By name, namespace declarations left out. */
  readonly attributes: readonly (readonly [name: string, value: string])[];
  /** Adjacent text joined, comments left out. */
  readonly children: readonly NormalNode[];
}

type NormalNode = NormalElement | string;

/** What a reply holds: a result (the Result element, or the document) or a fault. */
type Normalised =
  | { readonly kind: 'result'; readonly result: NormalElement }
  | { readonly kind: 'fault'; readonly code: string; readonly text: string };

const SOAP_FAULT = 'Fault';

/** A text of a reply as a diff may show it: no key in it (src/redaction/redact.ts). */
type Show = (text: string) => string;

/**
 * The first difference between the two replies, or null when they agree. `secrets` (the caller's apiKey)
 * never appear in the diff, in any spelling, even where a reply echoes them; nor does any value of a
 * key parameter or element a reply quotes.
 */
export function compareReplies(
  binding: BindingName,
  translated: ComparedReply,
  legacy: ComparedReply,
  secrets: readonly string[] = [],
): Diff | null {
  // Every occurrence, even inside a word: unlike a fault's text (src/outbound/response.ts redacts whole tokens
  // there, for the client's sake), a diff is read by operators only, and a short key that mangles a
  // word costs nothing there. A longer text says that it goes on, however short its redacted start.
  const show: Show = (text) =>
    text.length <= READ_TEXT_LIMIT ? redact(text, secrets) : `${redact(text.slice(0, READ_TEXT_LIMIT), secrets, { truncated: true })}…`;
  const found = difference(normalise(binding, translated), normalise(binding, legacy), show);
  if (found === null) return null;
  return { path: cut(show(found.path)), translated: cut(found.translated), legacy: cut(found.legacy) };
}

function difference(translated: Normalised, legacy: Normalised, show: Show): Diff | null {
  if (translated.kind === 'result' && legacy.kind === 'result') return firstDifference(translated.result, legacy.result, '', show);
  if (translated.kind === 'fault' && legacy.kind === 'fault' && translated.code === legacy.code) return null;
  return { path: '/', translated: describe(translated, show), legacy: describe(legacy, show) };
}

function describe(side: Normalised, show: Show): string {
  return side.kind === 'fault' ? `fault ${side.code}: ${show(side.text)}` : `result ${render(side.result, show)}`;
}

// --- Normalising -----------------------------------------------------------------------------------

function normalise(binding: BindingName, { status, body }: ComparedReply): Normalised {
  const notXml: Normalised = { kind: 'fault', code: `HTTP ${status}`, text: body };
  let root: XmlElement;
  try {
    // The project's reader: no DTD, no entity expansion, bounded depth.
    root = parseXml(body, { positions: false });
  } catch (err) {
    if (err instanceof XmlSyntaxError) return notXml;
    throw err;
  }
  if (binding === 'httpGet' || binding === 'httpPost') return status === 200 ? { kind: 'result', result: normalElement(root) } : notXml;
  const payload = childElements(childElements(root).find((child) => child.local === 'Body') ?? root)[0];
  if (payload === undefined) return notXml;
  if (payload.local === SOAP_FAULT) return { kind: 'fault', ...soapFault(payload) };
  // `<{Op}Response><{Op}Result>…`: the Result element is what the client's proxy class returns.
  const result = childElements(payload)[0];
  return result === undefined ? notXml : { kind: 'result', result: normalElement(result) };
}

/** SOAP 1.1 `faultcode`/`faultstring`, SOAP 1.2 `Code/Value`/`Reason/Text`: the code's local part and the text. */
function soapFault(fault: XmlElement): { code: string; text: string } {
  const child = (parent: XmlElement | undefined, ...names: string[]): XmlElement | undefined =>
    parent === undefined ? undefined : childElements(parent).find((element) => names.includes(element.local));
  const code = child(child(fault, 'Code'), 'Value') ?? child(fault, 'faultcode');
  const text = child(child(fault, 'Reason'), 'Text') ?? child(fault, 'faultstring');
  const value = code === undefined ? '' : innerText(code).trim();
  return { code: value.slice(value.indexOf(':') + 1), text: text === undefined ? '' : innerText(text) };
}

function qualified(local: string, uri: string | undefined): string {
  return uri === undefined || uri === '' ? local : `{${uri}}${local}`;
}

function normalElement(element: XmlElement): NormalElement {
  const attributes = element.attributes
    .filter(({ name }) => name !== 'xmlns' && !name.startsWith('xmlns:'))
    .map(({ name, value, uri }) => {
      const local = name.slice(name.indexOf(':') + 1);
      return [qualified(local, uri), namesKey(local) ? REDACTED : value] as const;
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const children = namesKey(element.local) ? [REDACTED] : normalChildren(element.children);
  return { name: qualified(element.local, element.uri), attributes, children };
}

function normalChildren(nodes: readonly XmlNode[]): NormalNode[] {
  const children: NormalNode[] = [];
  for (const node of nodes) {
    if (node.type === 'comment') continue;
    if (node.type === 'element') {
      children.push(normalElement(node));
      continue;
    }
    const last = children.length - 1;
    if (typeof children[last] === 'string') children[last] += node.text;
    else children.push(node.text);
  }
  return children;
}

// --- Comparing -------------------------------------------------------------------------------------

const NONE = '(none)';

/** `parentPath` is the path of the element holding both (`''` for the roots). */
function firstDifference(
  translated: NormalNode,
  legacy: NormalNode,
  parentPath: string,
  show: Show,
  step = stepOf(translated),
): Diff | null {
  const path = `${parentPath}/${step}`;
  if (typeof translated === 'string' || typeof legacy === 'string') {
    return translated === legacy ? null : { path, translated: render(translated, show), legacy: render(legacy, show) };
  }
  if (translated.name !== legacy.name) return { path, translated: render(translated, show), legacy: render(legacy, show) };
  const names = [...new Set([...translated.attributes, ...legacy.attributes].map(([name]) => name))].sort();
  for (const name of names) {
    const ours = attributeValue(translated, name);
    const theirs = attributeValue(legacy, name);
    const shown = (value: string | undefined): string => (value === undefined ? NONE : show(value));
    if (ours !== theirs) return { path: `${path}/@${name}`, translated: shown(ours), legacy: shown(theirs) };
  }
  const steps = childSteps(translated.children.length >= legacy.children.length ? translated.children : legacy.children);
  for (const [index, childStep] of steps.entries()) {
    const ours = translated.children[index];
    const theirs = legacy.children[index];
    if (ours === undefined || theirs === undefined) {
      return {
        path: `${path}/${childStep}`,
        translated: ours === undefined ? NONE : render(ours, show),
        legacy: theirs === undefined ? NONE : render(theirs, show),
      };
    }
    const found = firstDifference(ours, theirs, path, show, childStep);
    if (found !== null) return found;
  }
  return null;
}

function attributeValue(element: NormalElement, name: string): string | undefined {
  return element.attributes.find(([attribute]) => attribute === name)?.[1];
}

function stepOf(node: NormalNode): string {
  return typeof node === 'string' ? 'text()' : localOf(node.name);
}

function localOf(name: string): string {
  return name.slice(name.lastIndexOf('}') + 1);
}

/** XPath-like steps: an element among siblings of its name gets its position (`item[3]`). */
function childSteps(children: readonly NormalNode[]): string[] {
  const counts = new Map<string, number>();
  for (const child of children) counts.set(stepOf(child), (counts.get(stepOf(child)) ?? 0) + 1);
  const seen = new Map<string, number>();
  return children.map((child) => {
    const step = stepOf(child);
    const position = (seen.get(step) ?? 0) + 1;
    seen.set(step, position);
    return counts.get(step)! > 1 ? `${step}[${position}]` : step;
  });
}

// --- Showing ---------------------------------------------------------------------------------------

/** A node as compact markup, written only as far as a diff shows it, its names, texts and values as `show` shows them. */
function render(node: NormalNode, show: Show): string {
  const parts: string[] = [];
  let length = 0;
  const write = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length <= DIFF_TEXT_LIMIT;
  };
  const visit = (current: NormalNode): boolean => {
    if (typeof current === 'string') return write(JSON.stringify(show(current)));
    const name = show(current.name);
    const attributes = current.attributes.map(([attribute, value]) => ` ${show(attribute)}=${JSON.stringify(show(value))}`).join('');
    if (current.children.length === 0) return write(`<${name}${attributes} />`);
    return write(`<${name}${attributes}>`) && current.children.every(visit) && write(`</${name}>`);
  };
  visit(node);
  return parts.join('');
}

export function cut(text: string, limit = DIFF_TEXT_LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}
