/**
 * ASP.NET's URL decoding and query collection, which every binding shares: SOAPAction values, the
 * PathInfo method name, and the discovery query all go through them.
 */

/** Non-fatal, as .NET's decoder: bytes that are not UTF-8 become U+FFFD. */
const UTF8 = new TextDecoder('utf-8');

/**
 * %XX escapes as UTF-8 bytes and %uXXXX as one UTF-16 unit; a malformed escape stays as written
 * (HttpUtility.UrlDecode).
 */
export function percentDecode(text: string): string {
  return text.replace(/%u([0-9A-Fa-f]{4})|(?:%[0-9A-Fa-f]{2})+/g, (run, unit: string | undefined) =>
    unit !== undefined ? String.fromCharCode(parseInt(unit, 16)) : UTF8.decode(Buffer.from(run.replace(/%/g, ''), 'hex')),
  );
}

/** HttpUtility.UrlDecode of a query-string part or header value: as a path, and `+` is a space. */
export function urlDecode(text: string): string {
  return percentDecode(text.replace(/\+/g, ' '));
}

/**
 * ASP.NET's QueryString (HttpValueCollection): a part without `=` is a value with no name (key null),
 * names match in any case, and a repeated name reads as its values comma-joined, so `?wsdl&wsdl`
 * has the nameless value `wsdl,wsdl`. Undefined: no such name.
 */
export function queryCollection(query: string): (name: string | null) => string | undefined {
  const values = new Map<string | null, string[]>();
  if (query !== '') {
    for (const part of query.split('&')) {
      const eq = part.indexOf('=');
      const name = eq < 0 ? null : urlDecode(part.slice(0, eq)).toLowerCase();
      const value = urlDecode(eq < 0 ? part : part.slice(eq + 1));
      // Appended in place: a form of many repeated names must stay linear, not copy the list each time.
      const list = values.get(name);
      if (list) list.push(value);
      else values.set(name, [value]);
    }
  }
  return (name) => values.get(name === null ? null : name.toLowerCase())?.join(',');
}
