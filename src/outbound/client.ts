import { STATUS_CODES } from 'node:http';
import { Pool } from 'undici';
import type { Config } from '../config.js';
import { OperationError, type FailureReason } from '../errors.js';
import type { UpstreamRequest } from '../translate/plan.js';
import { parseXml, XmlSyntaxError } from '../xml/parse.js';
import { childElements, innerText, type XmlElement } from '../xml/tree.js';

/**
 * Talks to the `.cp` upstream: one keep-alive undici Pool per origin, connect/headers/body timeouts,
 * a response size cap, and a check that the answer is well-formed XML with the expected root before
 * anything is embedded in a legacy answer. Failures become OperationErrors worded as the .NET
 * WebException the original would have seen (cp-upstream.md §11.8).
 */

export interface UpstreamOutcome {
  readonly path: string;
  readonly outcome: 'ok' | FailureReason;
  readonly status: number | null;
  readonly seconds: number;
}

export interface UpstreamClient {
  fetch(request: UpstreamRequest): Promise<XmlElement>;
  close(): Promise<void>;
}

const EXPECTED_ROOT = 'searchResultSet';
const ERROR_ROOT = 'help';

export const TIMED_OUT = 'The operation has timed out';
export const UNABLE_TO_CONNECT = 'Unable to connect to the remote server';
export const CONNECTION_CLOSED = 'The underlying connection was closed: The connection was closed unexpectedly.';

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
  const pools = new Map<string, Pool>();

  const poolFor = (origin: string): Pool => {
    let pool = pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: upstream.connections,
        connectTimeout: upstream.connectTimeoutMs,
        headersTimeout: upstream.headersTimeoutMs,
        bodyTimeout: upstream.bodyTimeoutMs,
        maxResponseSize: upstream.maxResponseBytes,
        keepAliveTimeout: 30_000,
      });
      pools.set(origin, pool);
    }
    return pool;
  };

  /** `answered` hears the status as soon as the headers are in, before the body is read or checked. */
  async function attempt(request: UpstreamRequest, answered: (status: number) => void): Promise<XmlElement> {
    const query = new URLSearchParams(request.params as [string, string][]).toString();
    const { statusCode, body } = await poolFor(base.origin).request({
      method: 'GET',
      path: `${basePath}${request.path}?${query}`,
      headers: { accept: 'text/xml, application/xml' },
    });
    answered(statusCode);
    const text = await body.text();
    return readAnswer(statusCode, text, secretsOf(request));
  }

  return {
    async fetch(request) {
      const started = process.hrtime.bigint();
      const done = (outcome: UpstreamOutcome['outcome'], status: number | null): void =>
        observe({ path: request.path, outcome, status, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
      for (let tries = 0; ; tries++) {
        /** The HTTP status of this attempt's answer; null while none has come. */
        let status: number | null = null;
        try {
          const result = await attempt(request, (code) => {
            status = code;
          });
          done('ok', status);
          return result;
        } catch (err) {
          if (tries < upstream.retries && RETRYABLE_CODES.has(errorCode(err))) continue;
          const failure = asOperationError(err);
          done(failure.reason, status);
          throw failure;
        }
      }
    },
    async close() {
      await Promise.all([...pools.values()].map((pool) => pool.close()));
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
    const reason = STATUS_CODES[statusCode] ?? 'Unknown';
    throw new UpstreamStatusError(helpMessage ?? `The remote server returned an error: (${statusCode}) ${reason}.`, statusCode);
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

function redact(message: string | undefined, secrets: readonly string[]): string | undefined {
  return secrets.reduce((text, secret) => text?.split(secret).join(REDACTED), message);
}

function errorCode(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCode((err as { cause?: unknown }).cause);
}

function asOperationError(err: unknown): OperationError {
  if (err instanceof OperationError) return err;
  const code = errorCode(err);
  if (TIMEOUT_CODES.has(code)) return new OperationError(TIMED_OUT, 'upstream_timeout', { cause: err });
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new OperationError('The upstream answer exceeded the maximum response size.', 'upstream_invalid', { cause: err });
  }
  if (RETRYABLE_CODES.has(code)) return new OperationError(CONNECTION_CLOSED, 'upstream_unreachable', { cause: err });
  return new OperationError(UNABLE_TO_CONNECT, 'upstream_unreachable', { cause: err });
}
