import type { Readable } from 'node:stream';
import { HTML_CONTENT_TYPE, TEXT_CONTENT_TYPE, httpErrorBody, runtimeErrorPage } from '../aspnet/error-page.js';

/**
 * A reply: what goes back to the legacy client for one request, decided whole before anything is
 * written, so that nothing half-written goes out.
 */
export interface Reply {
  readonly status: number;
  readonly contentType: string;
  /** Bytes when a page went through as bytes (src/xml/compact.ts). */
  readonly body: string | Buffer;
  readonly cacheControl: string;
  /** Headers beyond these, such as `Retry-After`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The fault code a SOAP fault's envelope carries (`soap:Client`, `soap:Receiver`), for the call's span. */
  readonly faultCode?: string;
}

/**
 * The legacy origin's reply to a passthrough (docs/migration.md §6), relayed as it comes: written by
 * the old service, not here, so its body streams.
 */
export interface RelayedReply {
  readonly status: number;
  /** Those of the origin's headers that are relayed (Content-Type, Cache-Control). */
  readonly headers: Readonly<Record<string, string>>;
  /** Its first bytes are in (or its end): a failure from here on can only cut it short. Errors are LegacyOriginErrors. */
  readonly body: Readable;
}

export function isRelayed(reply: Reply | RelayedReply): reply is RelayedReply {
  // The proxy's own replies are whole (text, or bytes on the fast path); only a relayed one streams.
  return typeof reply.body !== 'string' && !Buffer.isBuffer(reply.body);
}

export const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
/** ASMX's Cache-Control on replies (docs/wire.md §4); errors clear it to `private` (§5.2). */
export const CACHE_SUCCESS = 'private, max-age=0';
export const CACHE_ERROR = 'private';

export function xmlReply(body: string | Buffer): Reply {
  return { status: 200, contentType: XML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

export function htmlReply(body: string): Reply {
  return { status: 200, contentType: HTML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

/** The HTTP GET/POST and discovery error form (docs/wire.md §6.3). */
export function textError(chain: readonly string[]): Reply {
  return { status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody(chain), cacheControl: CACHE_ERROR };
}

/** The ASP.NET error page for a request no protocol accepts (docs/wire.md §1). */
export function errorPage(status: number, message: string): Reply {
  return { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(message), cacheControl: CACHE_ERROR };
}

/** Outside the service path: IIS's own plain 404. */
export const NOT_FOUND: Reply = { status: 404, contentType: TEXT_CONTENT_TYPE, body: 'Not Found\r\n', cacheControl: CACHE_ERROR };
