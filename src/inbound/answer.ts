import type { Binding } from '../deprecation/hits.js';
import type { LegacyCall } from '../operations.js';
import { HTML_CONTENT_TYPE, TEXT_CONTENT_TYPE, httpErrorBody, runtimeErrorPage } from './text-response.js';

/** What a handler decided to send; written in one place so nothing half-written goes out. */
export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  readonly cacheControl: string;
}

/** One legacy call answered, with what the deprecation hit records about it. */
export interface CallOutcome {
  readonly binding: Binding;
  readonly answer: Answer;
  /** The operation called, or `unknown` when the request never named one that exists. */
  readonly operation: string;
  readonly call: LegacyCall | null;
  /** `null` for a success; else why it failed (a FailureReason, or `bad_request`). */
  readonly failure: string | null;
}

export const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
/** ASMX's Cache-Control on answers (asmx-wire.md §4); errors clear it to `private` (§5.2). */
export const CACHE_SUCCESS = 'private, max-age=0';
export const CACHE_ERROR = 'private';

export function xmlAnswer(body: string): Answer {
  return { status: 200, contentType: XML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

export function htmlAnswer(body: string): Answer {
  return { status: 200, contentType: HTML_CONTENT_TYPE, body, cacheControl: CACHE_SUCCESS };
}

/** The HTTP GET/POST and discovery error form (asmx-wire.md §6.3). */
export function textError(chain: readonly string[]): Answer {
  return { status: 500, contentType: TEXT_CONTENT_TYPE, body: httpErrorBody(chain), cacheControl: CACHE_ERROR };
}

/** The ASP.NET error page for a request no protocol accepts (asmx-wire.md §1). */
export function errorPage(status: number, message: string): Answer {
  return { status, contentType: HTML_CONTENT_TYPE, body: runtimeErrorPage(message), cacheControl: CACHE_ERROR };
}
