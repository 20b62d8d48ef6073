import type { IncomingHttpHeaders } from 'node:http';

/**
 * The stack a caller runs (docs/migration.md, "Each caller's stack"): which SOAP toolkit or HTTP
 * client made the call, and its version where the request says one. A migration lead sends a team
 * code for its own stack; the hit, the ledger and the client pages carry it.
 *
 * Read from the User-Agent first, which every stack below sends unless told otherwise, then from the
 * shape of the request where a stack sends no telling User-Agent (suds sends Python's urllib's, a
 * .NET client with its User-Agent changed still asks `Expect: 100-continue`). A new stack is one row
 * of STACKS.
 */

export const CLIENT_STACK_NAMES = [
  'php-soapclient',
  'dotnet-wsdl',
  'python-zeep',
  'python-suds',
  'java-jaxws',
  'java-axis1',
  'gsoap',
  'perl-soaplite',
  'perl-soapwsdl',
  'node-soap',
  'curl',
  'browser',
  'unknown',
] as const;

export type ClientStackName = (typeof CLIENT_STACK_NAMES)[number];

export interface ClientStack {
  readonly name: ClientStackName;
  /** As the request gave it (digits, dots, a build suffix), at most VERSION_LENGTH characters; null when it gave none. */
  readonly version: string | null;
}

/** What of a request tells its stack. */
export interface StackSignals {
  readonly headers: IncomingHttpHeaders;
  /** A SOAP binding (1.1 or 1.2), not HTTP GET or POST. */
  readonly soap: boolean;
}

interface StackRow {
  readonly name: ClientStackName;
  /** Matches the User-Agent; its first group, if any, is the version. */
  readonly userAgent?: RegExp;
  /** Only SOAP calls (a User-Agent that any HTTP client of the language sends). */
  readonly soapOnly?: boolean;
  /** A shape of the request that says the stack without a User-Agent that does. */
  readonly shape?: (signals: StackSignals) => boolean;
}

const VERSION = '([0-9][0-9A-Za-z._+-]*)';

/** First match wins: the specific User-Agents, then the generic ones, then shapes. */
const STACKS: readonly StackRow[] = [
  // .NET Framework and Mono proxies made by wsdl.exe / "Add Web Reference" (SoapHttpClientProtocol).
  { name: 'dotnet-wsdl', userAgent: new RegExp(`MS Web Services Client Protocol ${VERSION}`) },
  // PHP's ext/soap: `PHP-SOAP/8.2.7`, or `PHP-SOAP-CURL` builds.
  { name: 'php-soapclient', userAgent: new RegExp(`^PHP-SOAP(?:-CURL)?/${VERSION}`) },
  { name: 'python-zeep', userAgent: new RegExp(`^Zeep/${VERSION}`) },
  // The JAX-WS reference implementation (Metro, the JDK's own before 11) and Apache CXF.
  { name: 'java-jaxws', userAgent: new RegExp(`^(?:JAX-WS RI|Apache-CXF)[ /]${VERSION}`) },
  { name: 'java-axis1', userAgent: new RegExp(`^Axis/${VERSION}`) },
  { name: 'gsoap', userAgent: new RegExp(`^gSOAP/${VERSION}`) },
  { name: 'perl-soaplite', userAgent: new RegExp(`^SOAP::Lite/Perl/${VERSION}`) },
  { name: 'perl-soapwsdl', userAgent: new RegExp(`^SOAP::WSDL[ /]${VERSION}`) },
  { name: 'node-soap', userAgent: new RegExp(`^node-soap/${VERSION}`) },
  { name: 'curl', userAgent: new RegExp(`^curl/${VERSION}`) },
  // A page's form or a script in a browser: the help page's test form posts so. The last of these
  // names is the browser's own (Edge and Opera name Chrome before themselves, Safari its Version).
  { name: 'browser', userAgent: new RegExp(`^Mozilla/5\\.0 .*(?:Edg|OPR|CriOS|FxiOS|Firefox|Chrome|Version)/${VERSION}`) },
  // suds (which sets none) sends Python's urllib's User-Agent, a Perl SOAP call over plain LWP its own,
  // JAX-WS on the JDK's HTTP client the JDK's: on a SOAP call, that is the stack.
  { name: 'python-suds', userAgent: /^Python-urllib\//, soapOnly: true },
  { name: 'perl-soapwsdl', userAgent: /^libwww-perl\//, soapOnly: true },
  { name: 'java-jaxws', userAgent: /^Java\//, soapOnly: true },
  // .NET's HttpWebRequest asks `Expect: 100-continue` before every POST, with a quoted SOAPAction.
  {
    name: 'dotnet-wsdl',
    shape: ({ headers, soap }) => soap && headers.expect === '100-continue' && /^".*"$/.test(String(headers.soapaction ?? '')),
  },
];

/** Longer is not a version any of these stacks writes. */
const VERSION_LENGTH = 40;

export const UNKNOWN_STACK: ClientStack = { name: 'unknown', version: null };

/** The stack of the request with these signals; `unknown` when no row matches. */
export function recognizeStack(signals: StackSignals): ClientStack {
  const userAgent = signals.headers['user-agent'];
  for (const row of STACKS) {
    if (row.soapOnly === true && !signals.soap) continue;
    if (row.userAgent !== undefined) {
      if (userAgent === undefined) continue;
      const match = row.userAgent.exec(userAgent);
      if (match === null) continue;
      const version = match[1];
      return { name: row.name, version: version === undefined || version.length > VERSION_LENGTH ? null : version };
    }
    if (row.shape?.(signals) === true) return { name: row.name, version: null };
  }
  return UNKNOWN_STACK;
}

const WHOLE_VERSION = new RegExp(`^${VERSION}$`);

/** The stack a ledger record or a log line names, or null when it names none that this service could have written. */
export function stackOfRecord(name: unknown, version: unknown): ClientStack | null {
  if (typeof name !== 'string' || !(CLIENT_STACK_NAMES as readonly string[]).includes(name)) return null;
  if (version === null) return { name: name as ClientStackName, version: null };
  if (name === 'unknown' || typeof version !== 'string' || version.length > VERSION_LENGTH || !WHOLE_VERSION.test(version)) return null;
  return { name: name as ClientStackName, version };
}
