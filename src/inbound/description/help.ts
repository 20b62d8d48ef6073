import type { Config } from '../../config/schema.js';
import { OPERATIONS, deprecationText, soapAction, type OperationSpec } from '../../operations.js';
import { element, type XmlElement } from '../../xml/tree.js';
import { escapeText, writeXmlDocument } from '../../xml/write.js';
import { htmlEncode } from '../../aspnet/error-page.js';
import { shownMapping, type PagingProfiles } from './replacement.js';

/**
 * The HTML help pages ASMX shows for `GET /index.asmx` (docs/wire.md §7.4), modelled on .NET's
 * DefaultWsdlHelpGenerator.aspx with the HTTP POST protocol enabled: every caller gets the test form,
 * and a sample request and response per binding, generated from the operation table. Each operation
 * page also shows the replacement endpoint and its parameter mapping. Served as
 * `text/html; charset=utf-8`. Every value from configuration or the request goes through `htmlEncode`.
 *
 * Links and the form's action are relative to the page, as the generator writes them, so they stay
 * right whatever scheme and host the browser used (behind a TLS-terminating proxy, say). Only the
 * sample requests spell out the public address's path and host.
 */

type Service = Config['service'];

const NEWLINE = '\r\n';
const TEMPURI = 'http://tempuri.org/';

/** The operation list (no query, or any query that is not `?op=`, `?wsdl`, `?disco`). */
export function renderServiceHelp(service: Service, url: string): string {
  const file = fileName(url);
  // ASMX lists the operations in ordinal name order, not declaration order.
  const operations = OPERATIONS.toSorted((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return page(service, url, [
    '<p class="intro">The following operations are supported.  For a formal definition, please review the <a href="?WSDL">Service ' +
      'Description</a>. </p>',
    '<ul>',
    ...operations.map(
      (op) => `<li><a href="${file}?op=${encodeURIComponent(op.name)}">${op.name}</a><br>${htmlEncode(deprecationText(op))}</li>`,
    ),
    '</ul>',
    ...(service.namespace === TEMPURI
      ? [
          '<hr>',
          '<h3>This web service is using http://tempuri.org/ as its default namespace.</h3>',
          '<h3>Recommendation: Change the default namespace before the XML Web service is made public.</h3>',
        ]
      : []),
  ]);
}

/**
 * `?op={Op}`. The sample request lines start with the path of `url` (the public address); the `Host:`
 * line is its host name without the port, as the help generator writes it (`Uri.Host`).
 */
export function renderOperationHelp(service: Service, url: string, op: OperationSpec, profiles: PagingProfiles): string {
  const { pathname, hostname } = new URL(url);
  const context: SampleContext = { service, op, path: htmlEncode(pathname), host: htmlEncode(hostname) };
  return page(service, url, [
    linkBack(url),
    `<h2>${op.name}</h2>`,
    `<p class="intro">${htmlEncode(deprecationText(op))}</p>`,
    ...replacementTable(op, profiles),
    '<h3>Test</h3>',
    "To test the operation using the HTTP POST protocol, click the 'Invoke' button.",
    ...testForm(url, op),
    ...SAMPLES.flatMap((sample) => [
      '<span>',
      `<h3>${sample.title}</h3>`,
      `<p>The following is a sample ${sample.title} request and response.  The <font class=value>placeholders</font> shown need to be ` +
        `replaced with actual values.</p>`,
      `<pre>${sample.request(context)}</pre>`,
      `<pre>${sample.response(context)}</pre>`,
      '</span>',
    ]),
  ]);
}

/** `?op=` naming no operation. */
export function renderMethodNotFound(service: Service, url: string, name: string): string {
  return page(service, url, [
    linkBack(url),
    '<h2>Method Not Found</h2>',
    `Method '${htmlEncode(name)}' was not found in service ${htmlEncode(service.name)}.`,
  ]);
}

/**
 * The last segment of the service path (`index.asmx`), HTML-encoded: relative links start from it,
 * as the generator's do. The URL parser has %-escaped it already.
 */
function fileName(url: string): string {
  return htmlEncode(new URL(url).pathname.split('/').pop() ?? '');
}

function linkBack(url: string): string {
  return `<p class="intro">Click <a href="${fileName(url)}">here</a> for a complete list of operations.</p>`;
}

/** What replaces the operation, and each legacy parameter's counterpart there. */
function replacementTable(op: OperationSpec, profiles: PagingProfiles): string[] {
  const row = (cells: string[], tag: 'th' | 'td'): string =>
    `<tr>${cells.map((cell) => `<${tag}>${htmlEncode(cell)}</${tag}>`).join('')}</tr>`;
  return [
    `<h3>Replacement: ${htmlEncode(op.replacement)}</h3>`,
    '<table class="mapping">',
    row(['Parameter', 'Replacement parameter', 'Note'], 'th'),
    ...shownMapping(op, profiles).map(({ legacy, replacement, note }) => row([legacy, replacement, note], 'td')),
    '</table>',
  ];
}

/**
 * The generator's HTTP POST test form: one text field per parameter, in declaration order, posted to
 * `index.asmx/{Op}` into a new window, whose reply is the operation's XML document (§6.4).
 */
function testForm(url: string, op: OperationSpec): string[] {
  return [
    `<form target="_blank" action="${fileName(url)}/${encodeURIComponent(op.name)}" method="POST">`,
    '<table class="form">',
    '<tr><td class="frmHeader">Parameter</td><td class="frmHeader">Value</td></tr>',
    ...op.params.map(
      (param) =>
        `<tr><td class="frmText">${param.name}:</td><td><input class="frmInput" type="text" size="50" name="${param.name}"></td></tr>`,
    ),
    '<tr><td></td><td align="right"><input type="submit" value="Invoke" class="button"></td></tr>',
    '</table>',
    '</form>',
  ];
}

const FONT = 'Verdana, Tahoma, "DejaVu Sans", Arial, sans-serif';

/**
 * The generator's look, with font fallbacks for machines without Verdana, made to fit a narrow window
 * without sideways scrolling: the heading spans the page without overflowing it, samples wrap inside
 * their box, and form fields shrink to the room they have.
 */
const STYLESHEET = [
  `BODY { color: #000000; background-color: white; font-family: ${FONT}; margin: 0px; }`,
  // Without a doctype (ASMX writes none) browsers are in quirks mode: tables start again from the
  // default font size, and form fields take the system font.
  `table, input { font-family: ${FONT}; font-size: 1em; }`,
  // A word longer than the line (a configured service name, a sample's namespace) breaks rather than stick out.
  '#content { font-size: .70em; padding: 0px 15px 2em 30px; overflow-wrap: break-word; }',
  'A:link, A:active { color: #336699; font-weight: bold; text-decoration: underline; }',
  'A:visited { color: #6699cc; font-weight: bold; text-decoration: underline; }',
  'A:hover { color: #cc3300; font-weight: bold; text-decoration: underline; }',
  'P { color: #000000; margin-top: 0px; margin-bottom: 12px; }',
  'pre { background-color: #e5e5cc; padding: 5px; font-family: "Courier New", Courier, "DejaVu Sans Mono", monospace; font-size: ' +
    'x-small; margin-top: -5px; border: 1px #f0f0e0 solid; white-space: pre-wrap; }',
  'h2 { font-size: 1.5em; font-weight: bold; margin-top: 25px; margin-bottom: 10px; border-top: 1px solid #003366; margin-left: -15px; ' +
    'color: #003366; }',
  'h3 { font-size: 1.1em; color: #000000; margin-left: -15px; margin-top: 10px; margin-bottom: 10px; }',
  'ul { margin-top: 10px; margin-left: 20px; }',
  'li { margin-top: 10px; color: #000000; }',
  'font.value { color: darkblue; font-weight: bold; }',
  'font.key { color: darkgreen; font-weight: bold; }',
  `.heading1 { color: #ffffff; font-family: Tahoma, ${FONT}; font-size: 26px; font-weight: normal; background-color: #003366; margin: ` +
    `0px -15px 0px -30px; padding: 10px 15px 3px 15px; }`,
  '.intro { margin-left: -15px; }',
  'table.form, table.mapping { border-collapse: collapse; margin-bottom: 12px; }',
  'table.form td { padding: 4px; }',
  'table.mapping th, table.mapping td { padding: 2px 8px; text-align: left; vertical-align: top; border-bottom: 1px solid #dcdcdc; }',
  // The notes give way on a narrow window, so that the parameter names need not break.
  'table.mapping td:last-child { overflow-wrap: anywhere; }',
  '.frmHeader, table.mapping th { background-color: #dcdcdc; font-weight: normal; }',
  // A field as wide as its cell, not wider: the table still asks for the room of size="50", but takes
  // less on a narrow window (max-width alone does not shrink a field inside a table cell).
  '.frmInput { width: 100%; box-sizing: border-box; }',
  '.button { background-color: #dcdcdc; border-top: #cccccc 1px solid; border-bottom: #666666 1px solid; border-left: #cccccc 1px ' +
    'solid; border-right: #666666 1px solid; }',
];

function page(service: Service, url: string, content: string[]): string {
  const name = htmlEncode(service.name);
  return [
    '<html>',
    '<head>',
    `<link rel="alternate" type="text/xml" href="${fileName(url)}?disco" />`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<style type="text/css">',
    ...STYLESHEET,
    '</style>',
    `<title>${name} Web Service</title>`,
    '</head>',
    '<body>',
    '<div id="content">',
    `<p class="heading1">${name}</p><br>`,
    ...content,
    '</div>',
    '</body>',
    '</html>',
    '',
  ].join(NEWLINE);
}

// ---- Sample requests and responses ----------------------------------------------------------------

interface SampleContext {
  readonly service: Service;
  readonly op: OperationSpec;
  /** `path` and `host` are HTML-encoded already. */
  readonly path: string;
  readonly host: string;
}

interface Sample {
  readonly title: string;
  readonly request: (context: SampleContext) => string;
  readonly response: (context: SampleContext) => string;
}

/** A placeholder, shown highlighted; ASMX marks them up the same way. */
const value = (text: string): string => `<font class=value>${text}</font>`;
const CONTENT_LENGTH = `Content-Length: ${value('length')}`;

/**
 * Placeholders inside sample XML travel as private-use delimited words through the XML writer and the
 * HTML escaping, then become `<font>` markup (ASMX uses XML comments for the same round trip).
 */
const PLACEHOLDER_START = '\uE000';
const PLACEHOLDER_END = '\uE001';
const placeholder = (text: string): string => PLACEHOLDER_START + text + PLACEHOLDER_END;
const PLACEHOLDERS = new RegExp(`${PLACEHOLDER_START}(\\w+)${PLACEHOLDER_END}`, 'g');

/**
 * An indented sample document as text in the `<pre>`: declaration, CRLF, 2-space indentation. The
 * writer's namespace fix-up declares `xmlns="{ns}"` on the operation element, as XmlTextWriter does.
 */
function sampleXml(root: XmlElement): string {
  const xml = writeXmlDocument(root, { indent: true, defaultNamespace: '' });
  return escapeText(xml).replace(PLACEHOLDERS, (_match, word: string) => value(word));
}

/** An un-prefixed element in the service namespace. */
function qualified(name: string, namespace: string, children: (XmlElement | string)[]): XmlElement {
  return { ...element(name, {}, children), uri: namespace };
}

const lines = (...parts: string[]): string => parts.join(NEWLINE);

/** Like the help generator's UTF8EscapeString: non-ASCII characters of the action are %-escaped. */
const asciiAction = (action: string): string => action.replace(/[^\x00-\x7F]/gu, (ch) => encodeURIComponent(ch));

interface SoapVersion {
  readonly title: string;
  readonly contentType: string;
  readonly envelopeNamespace: string;
  /** The help generator writes SOAP 1.2 samples with a `soap12` prefix, unlike real 1.2 responses. */
  readonly prefix: string;
  /** Only SOAP 1.1 carries the action in a header. */
  readonly actionHeader: boolean;
}

function soapSample({ title, contentType, envelopeNamespace, prefix, actionHeader }: SoapVersion): Sample {
  const envelope = (body: XmlElement): string =>
    sampleXml(
      element(
        `${prefix}:Envelope`,
        {
          'xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance',
          'xmlns:xsd': 'http://www.w3.org/2001/XMLSchema',
          [`xmlns:${prefix}`]: envelopeNamespace,
        },
        [element(`${prefix}:Body`, {}, [body])],
      ),
    );
  const headers = [`Content-Type: ${contentType}; charset=utf-8`, CONTENT_LENGTH];
  return {
    title,
    request: (context) => {
      const { op, service } = context;
      const action = actionHeader ? [`SOAPAction: "${htmlEncode(asciiAction(soapAction(service.namespace, op)))}"`] : [];
      const call = qualified(
        op.name,
        service.namespace,
        op.params.map((param) => qualified(param.name, service.namespace, [placeholder(param.type)])),
      );
      return lines(`POST ${context.path} HTTP/1.1`, `Host: ${context.host}`, ...headers, ...action, '', envelope(call));
    },
    response: (context) => {
      const { op, service } = context;
      const result = qualified(`${op.name}Response`, service.namespace, [
        qualified(`${op.name}Result`, service.namespace, [placeholder('xml')]),
      ]);
      return lines('HTTP/1.1 200 OK', ...headers, '', envelope(result));
    },
  };
}

/** `name=string&…`: over HTTP every parameter is a string. */
function formFields(op: OperationSpec): string {
  return op.params.map((param) => `<font class=key>${param.name}</font>=${value('string')}`).join('&amp;');
}

/** The XmlNode answer of GET and POST; the help generator writes this declaration without encoding. */
function httpResponse(): string {
  return lines('HTTP/1.1 200 OK', 'Content-Type: text/xml; charset=utf-8', CONTENT_LENGTH, '', '&lt;?xml version="1.0"?&gt;', value('xml'));
}

const SAMPLES: readonly Sample[] = [
  soapSample({
    title: 'SOAP 1.1',
    contentType: 'text/xml',
    envelopeNamespace: 'http://schemas.xmlsoap.org/soap/envelope/',
    prefix: 'soap',
    actionHeader: true,
  }),
  soapSample({
    title: 'SOAP 1.2',
    contentType: 'application/soap+xml',
    envelopeNamespace: 'http://www.w3.org/2003/05/soap-envelope',
    prefix: 'soap12',
    actionHeader: false,
  }),
  {
    title: 'HTTP GET',
    request: ({ path, host, op }) => lines(`GET ${path}/${op.name}?${formFields(op)} HTTP/1.1`, `Host: ${host}`, ''),
    response: httpResponse,
  },
  {
    title: 'HTTP POST',
    request: ({ path, host, op }) =>
      lines(
        `POST ${path}/${op.name} HTTP/1.1`,
        `Host: ${host}`,
        'Content-Type: application/x-www-form-urlencoded',
        CONTENT_LENGTH,
        '',
        formFields(op),
      ),
    response: httpResponse,
  },
];
