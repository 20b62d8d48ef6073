/** The Content-Type header as ASMX reads it: shared by the SOAP reader and the HTTP POST form reader. */

/**
 * A Content-Type read the way System.Web.Services' `ContentType` helper reads it (RS/Scalars.cs).
 * `base` is the text before the first `;`, lower-cased for comparison but not trimmed (`GetBase`):
 * `text/xml ; charset=utf-8` is not a SOAP type there, so it is not one here either.
 */
export interface MediaType {
  readonly base: string;
  /** The header as sent, for `parameter`. */
  readonly header: string;
}

export function parseMediaType(header: string | undefined): MediaType {
  const text = header ?? '';
  const semi = text.indexOf(';');
  return { base: (semi < 0 ? text : text.slice(0, semi)).toLowerCase(), header: text };
}

/**
 * `ContentType.GetParameter`: the **first** `;`-part that, after leading white space, starts with
 * `name` in any case, then the text after the next `=`, trimmed of spaces, tabs, `'` and `"`
 * (docs/wire.md §2.3). A repeated parameter therefore keeps its first value.
 */
export function mediaParameter(media: MediaType, name: string): string | undefined {
  for (const part of media.header.split(';').slice(1)) {
    const decl = part.trimStart();
    if (decl.slice(0, name.length).toLowerCase() !== name) continue;
    const eq = decl.indexOf('=', name.length);
    if (eq >= 0) return trimQuotesAndBlanks(decl.slice(eq + 1));
  }
  return undefined;
}

const isQuoteOrBlank = (code: number): boolean => code === 32 || code === 9 || code === 39 /* ' */ || code === 34; /* " */

/**
 * Spaces, tabs and quotes off both ends, in one pass: a pattern anchored at the end would try every
 * position of a long run of spaces inside the value, and a header of 15,000 of them cost 100 ms.
 */
function trimQuotesAndBlanks(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isQuoteOrBlank(text.charCodeAt(start))) start++;
  while (end > start && isQuoteOrBlank(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}
