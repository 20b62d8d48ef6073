import { withoutForbiddenCharacters } from '../xml/write.js';

/**
 * Plain-text and HTML answers: the HTTP GET/POST error body (docs/wire.md §6.3) and the ASP.NET
 * runtime error page for requests no protocol accepts (§1).
 */

/** .NET HttpUtility.HtmlEncode: the five markup characters, and U+00A0–U+00FF as decimal references. */
export function htmlEncode(text: string): string {
  return withoutForbiddenCharacters(text).replace(/[&<>"'\u00a0-\u00ff]/g, (ch) => HTML_ESCAPES[ch] ?? `&#${ch.charCodeAt(0)};`);
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';
export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

/** The remote-form exception chain, each message HTML-encoded, then CRLF. */
export function httpErrorBody(chain: readonly string[]): string {
  return `${chain.map(htmlEncode).join(' ---> ')}\r\n`;
}

/** The remote form of the ASP.NET error page: the message, never a stack trace. */
export function runtimeErrorPage(message: string): string {
  const text = htmlEncode(message);
  return (
    '<!DOCTYPE html>\r\n<html>\r\n<head>\r\n<title>Runtime Error</title>\r\n</head>\r\n<body>\r\n' +
    `<h1>Server Error in '/' Application.</h1>\r\n<h2><i>${text}</i></h2>\r\n` +
    '<p><b>Description:</b> An application error occurred on the server.</p>\r\n</body>\r\n</html>\r\n'
  );
}
