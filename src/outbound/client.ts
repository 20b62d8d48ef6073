import { STATUS_CODES } from 'node:http';
import { Agent, interceptors, type Dispatcher } from 'undici';
import type { Config } from '../config.js';
import { OperationError, type FailureReason } from '../errors.js';
import type { UpstreamRequest } from '../translate/plan.js';
import { parseXml, XmlSyntaxError } from '../xml/parse.js';
import { childElements, innerText, type XmlElement } from '../xml/tree.js';

/**
 * Talks to the `.cp` upstream: an undici Agent (one keep-alive pool per origin), connect/headers/body
 * timeouts, a response size cap, redirects followed as .NET's HttpWebRequest follows them, and a
 * check that the answer is well-formed XML with the expected root before anything is embedded in a
 * legacy answer. Failures become OperationErrors worded as the .NET WebException the original would
 * have seen (cp-upstream.md §11.8).
 */

export interface UpstreamOutcome {
  readonly path: string;
  /** `cancelled`: the call no longer wanted it (its caller left, or a sibling page failed). */
  readonly outcome: 'ok' | 'cancelled' | FailureReason;
  readonly status: number | null;
  readonly seconds: number;
  /** The system or undici error code behind a failure (`ECONNREFUSED`, …), for the operators' log. */
  readonly code: string | null;
}

export interface UpstreamClient {
  /** `signal` aborts the request; a reason that is an OperationError is what the fetch then throws. */
  fetch(request: UpstreamRequest, signal?: AbortSignal): Promise<XmlElement>;
  close(): Promise<void>;
}

const EXPECTED_ROOT = 'searchResultSet';
const ERROR_ROOT = 'help';
/** HttpWebRequest.MaximumAutomaticRedirections. */
const MAX_REDIRECTS = 50;

export const TIMED_OUT = 'The operation has timed out';
export const UNABLE_TO_CONNECT = 'Unable to connect to the remote server';
export const CONNECTION_CLOSED = 'The underlying connection was closed: The connection was closed unexpectedly.';
const TOO_MANY_REDIRECTS = 'Too many automatic redirections were attempted.';

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
/** A kept-alive socket the server closed just as we reused it: safe to retry an idempotent GET. */
const RETRYABLE_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);

export function createUpstreamClient(
  upstream: Config['upstream'],
  observe: (outcome: UpstreamOutcome) => void = () => {},
): UpstreamClient {
  if (upstream.baseUrl === null) throw new Error('createUpstreamClient needs upstream.baseUrl');
  const base = new URL(upstream.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const agent = new Agent({
    connections: upstream.connections,
    connectTimeout: upstream.connectTimeoutMs,
    headersTimeout: upstream.headersTimeoutMs,
    bodyTimeout: upstream.bodyTimeoutMs,
    maxResponseSize: upstream.maxResponseBytes,
    keepAliveTimeout: 30_000,
  });
  const dispatcher: Dispatcher = agent.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS }));

  /** `answered` hears the status as soon as the headers are in, before the body is read or checked. */
  async function attempt(request: UpstreamRequest, signal: AbortSignal | undefined, answered: (status: number) => void): Promise<XmlElement> {
    const query = new URLSearchParams(request.params as [string, string][]).toString();
    const { statusCode, body } = await dispatcher.request({
      origin: base.origin,
      method: 'GET',
      path: `${basePath}${request.path}?${query}`,
      headers: { accept: 'text/xml, application/xml' },
      signal,
      // Past the limit, fail as .NET does rather than hand back the last 3xx as an answer.
      throwOnMaxRedirect: true,
    } as Dispatcher.RequestOptions);
    answered(statusCode);
    const text = await body.text();
    return readAnswer(statusCode, text, secretsOf(request));
  }

  return {
    async fetch(request, signal) {
      const started = process.hrtime.bigint();
      const done = (outcome: UpstreamOutcome['outcome'], status: number | null, code: string | null): void =>
        observe({ path: request.path, outcome, status, seconds: Number(process.hrtime.bigint() - started) / 1e9, code });
      for (let tries = 0; ; tries++) {
        /** The HTTP status of this attempt's answer; null while none has come. */
        let status: number | null = null;
        try {
          const result = await attempt(request, signal, (code) => {
            status = code;
          });
          done('ok', status, null);
          return result;
        } catch (err) {
          const code = errorCode(err);
          if (tries < upstream.retries && !signal?.aborted && RETRYABLE_CODES.has(code)) continue;
          const failure = signal?.aborted && signal.reason instanceof OperationError ? signal.reason : asOperationError(err);
          const cancelled = signal?.aborted === true && failure.reason !== 'upstream_timeout';
          done(cancelled ? 'cancelled' : failure.reason, status, code === '' ? null : code);
          throw failure;
        }
      }
    },
    async close() {
      await agent.close();
    },
  };
}

/** An upstream answer with a status outside 2xx. */
export class UpstreamStatusError extends OperationError {
  readonly status: number;

  constructor(message: string, status: number) {
    super(message, 'upstream_status');
    this.status = status;
  }
}

/** Parameters whose values must never reach a fault, a log line or a metric. */
const SECRET_PARAMS = new Set(['appKey']);
const REDACTED = '[redacted]';

function secretsOf(request: UpstreamRequest): string[] {
  return request.params.filter(([name, value]) => SECRET_PARAMS.has(name) && value !== '').map(([, value]) => value);
}

/**
 * Status and body in, result root or a named failure out. An upstream error message that echoes
 * one of `secrets` (the appKey sent) has it redacted: the message goes to legacy clients as a fault.
 */
export function readAnswer(statusCode: number, text: string, secrets: readonly string[] = []): XmlElement {
  let root: XmlElement | undefined;
  try {
    // Positions only serve error texts the client never sees for an upstream answer.
    root = parseXml(text, { positions: false });
  } catch (err) {
    if (!(err instanceof XmlSyntaxError)) throw err;
  }
  const helpMessage = root?.local === ERROR_ROOT ? redact(exceptionMessage(root), secrets) : undefined;
  if (statusCode < 200 || statusCode > 299) {
    throw new UpstreamStatusError(helpMessage ?? `The remote server returned an error: (${statusCode}) ${statusDescription(statusCode)}.`, statusCode);
  }
  if (helpMessage !== undefined) throw new OperationError(helpMessage, 'upstream_error');
  if (root === undefined) throw new OperationError('The upstream answer is not well-formed XML.', 'upstream_invalid');
  if (root.local !== EXPECTED_ROOT) {
    throw new OperationError(`The upstream answer has root element '${root.name}', expected '${EXPECTED_ROOT}'.`, 'upstream_invalid');
  }
  return root;
}

function exceptionMessage(help: XmlElement): string | undefined {
  const message = childElements(help).find((child) => child.local === 'exception-message');
  const text = message === undefined ? '' : innerText(message).trim();
  return text === '' ? undefined : text;
}

/**
 * Each secret as sent (raw, and URL-encoded as in a query string or a form), matched only as a whole
 * token so that a short key does not mangle the words around it.
 */
function redact(message: string | undefined, secrets: readonly string[]): string | undefined {
  if (message === undefined) return undefined;
  const spellings = new Set(secrets.flatMap((secret) => [secret, encodeURIComponent(secret), new URLSearchParams([['', secret]]).toString().slice(1)]));
  return [...spellings].reduce(
    // A `.` or `-` next to the key ends a sentence or a word unless a letter or digit follows it.
    (text, spelling) => text.replace(new RegExp(`(?<![\\w%+~])(?<!\\w[.-])${escapeRegExp(spelling)}(?![\\w%+~])(?![.-]\\w)`, 'g'), REDACTED),
    message,
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The reason .NET's WebException gives for a status: its own text where it has one
 * (`net_httpstatuscode_*`), else the status description, here the standard phrase.
 */
function statusDescription(status: number): string {
  return DOTNET_STATUS_TEXT[status] ?? STATUS_CODES[status] ?? 'Unknown';
}

const DOTNET_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Server Unavailable',
  504: 'Gateway Timeout',
  505: 'Http Version Not Supported',
};

function errorCode(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCode((err as { cause?: unknown }).cause);
}

function asOperationError(err: unknown): OperationError {
  if (err instanceof OperationError) return err;
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : '';
  if (message === 'max redirects' || message.startsWith('Redirect loop detected')) {
    return new OperationError(TOO_MANY_REDIRECTS, 'upstream_status', { cause: err });
  }
  if (TIMEOUT_CODES.has(code)) return new OperationError(TIMED_OUT, 'upstream_timeout', { cause: err });
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new OperationError('The upstream answer exceeded the maximum response size.', 'upstream_invalid', { cause: err });
  }
  if (RETRYABLE_CODES.has(code)) return new OperationError(CONNECTION_CLOSED, 'upstream_unreachable', { cause: err });
  return new OperationError(UNABLE_TO_CONNECT, 'upstream_unreachable', { cause: err });
}
