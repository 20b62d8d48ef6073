import { HTML_CONTENT_TYPE, TEXT_CONTENT_TYPE, httpErrorBody, runtimeErrorPage } from '../aspnet/error-page.js';

/**
 * An answer: what goes back to the legacy client for one request, decided whole before anything is
 * written, so that nothing half-written goes out.
 */
export interface Answer {
  readonly status: number;
  readonly contentType: string;
  /** Bytes when a page went through as bytes (src/xml/compact.ts). */
  readonly body: string | Buffer;
  readonly cacheControl: string;
  /** Headers beyond these, such as `Retry-After`. */
  readonly headers?: Readonly<Record<string, string>>;
}

export const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
/** ASMX's Cache-Control on answers (docs/wire.md §4); errors clear it to `private` (§5.2). */
export const CACHE_SUCCESS = 'private, max-age=0';
export const CACHE_ERROR = 'private';

export function xmlAnswer(body: string | Buffer): Answer {
  return { status: 200, contentType: XML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

export function htmlAnswer(body: string): Answer {
  return { status: 200, contentType: HTML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

/** The HTTP GET/POST and discovery error form (docs/wire.md §6.3). */
export function textError(chain: readonly string[]): Answer {
  return { status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody(chain), cacheControl: CACHE_ERROR };
}

/** The ASP.NET error page for a request no protocol accepts (docs/wire.md §1). */
export function errorPage(status: number, message: string): Answer {
  return { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(message), cacheControl: CACHE_ERROR };
}

/** Outside the service path: IIS's own plain 404. */
export const NOT_FOUND: Answer = { status: 404, contentType: TEXT_CONTENT_TYPE, body: 'Not Found\r\n', cacheControl: CACHE_ERROR };
